#pragma once
// What the xmit_wait_tick collector publishes, for those that read it
// (link_health; listed in its CollectorInfo::reads) and the scheduler's
// saved state: XmitWaitTicks under this name in Snapshot::by_collector.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "collectors/health/counter_store.h"
#include "topology/xmit_wait.h"

namespace ibfabric::collectors {

inline constexpr std::string_view kXmitWaitTickCollector = "xmit_wait_tick";

struct XmitWaitTicks {
  std::map<std::uint64_t, std::uint8_t> tick;  // node GUID -> PortSamplesControl.Tick
  std::set<std::uint64_t> unsupported;         // answered "unsupported attribute"
  std::optional<double> multiplier;            // the operator's Tick + 1 for every device
  // Every port that reports PortXmitWait, by port (sorted).
  std::shared_ptr<const std::vector<PortWait>> waits = std::make_shared<const std::vector<PortWait>>();

  // Tick + 1 of the node's counts, and where it came from.
  topology::TickLength TickOf(const topology::Node& node) const;
  // Seconds one PortXmitWait count of `port` stands for now (0: not up).
  double CountSeconds(const topology::Node& node, const topology::Port& port) const {
    return topology::XmitWaitCountSeconds(node, port, TickOf(node));
  }
};

}  // namespace ibfabric::collectors
