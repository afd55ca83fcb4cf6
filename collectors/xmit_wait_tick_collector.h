#pragma once
// xmit_wait_tick: how long one PortXmitWait tick of each device is, read
// where it matters: PMA PortSamplesControl.Tick (IBTA 16.1.3.2, mandatory
// for every PMA; transport/attributes.h) of a node once one of its ports
// has counted PortXmitWait, in the sweep's one batch. Devices differ
// (Quantum-family switches report 7, Switch-IB 2 and earlier 31, NVIDIA's
// ibdiagnet manual), so no multiplier for the whole fabric can turn ticks
// into time; a quiet node, whose ticks need no converting, is never asked.
//
// A node is asked once: its answer holds until it leaves the fabric. An
// answer of "unsupported attribute" (MAD status 0x000C) is kept as such
// and the node is not asked again; no answer, or any other status (Busy
// past its retries, a Redirect), is asked again 1, 2, 4 and 8 sweeps
// later, then left until the node is walked again.
//
// With the Tick and the device's family (topology/xmit_wait.h) it turns
// each port's PortXmitWait into seconds waited: each sweep's new counts at
// the length one count has at the speed the port runs then, so a link that
// retrains does not rescale its past. A port's counts are converted once
// its node's Tick is settled (read, unsupported, given up, or the alerts
// config's xmit_wait_tick_multiplier overrides every device's), so the
// first total is converted at the device's own Tick, not a guess.
//
// Part: XmitWaitTicks under "xmit_wait_tick" (Snapshot::by_collector).
// Metrics: infiniband_node_pma_samples_tick{guid}, absent where not read;
// infiniband_{switch,hca}_port_transmit_wait_seconds_total per port that
// reports PortXmitWait (0 while it never waited; a port whose waits wait
// for their Tick keeps its last value); and
// infiniband_node_transmit_wait_unit_info{guid,family,counting,tick_source}
// for each node with a port that waited.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "collectors/collector.h"
#include "topology/xmit_wait.h"

namespace ibfabric::collectors {

inline constexpr std::string_view kXmitWaitTickCollector = "xmit_wait_tick";

struct XmitWaitTicks {
  std::map<std::uint64_t, std::uint8_t> tick;  // node GUID -> PortSamplesControl.Tick
  std::set<std::uint64_t> unsupported;         // answered "unsupported attribute"
  std::optional<double> multiplier;            // the operator's Tick + 1 for every device
  // Seconds waited, of each port that counted PortXmitWait since the start.
  std::map<topology::PortRef, double> wait_seconds;

  // Tick + 1 of the node's counts, and where it came from.
  topology::TickLength TickOf(const topology::Node& node) const;
  // Seconds one PortXmitWait count of `port` stands for now (0: not up).
  double CountSeconds(const topology::Node& node, const topology::Port& port) const {
    return topology::XmitWaitCountSeconds(node, port, TickOf(node));
  }
};

std::unique_ptr<Collector> MakeXmitWaitTickCollector(const CollectorOptions& options);
void RenderXmitWaitTick(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
