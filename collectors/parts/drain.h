#pragma once
// What the drain collector publishes (collectors/drain_collector.h), for
// those that read it (kubernetes_node; listed in its CollectorInfo::reads)
// and the API: DrainList under this name in Snapshot::by_collector.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ibfabric::collectors {

inline constexpr std::string_view kDrainCollector = "drain";

// One fault of a host's own cable.
struct DrainFault {
  std::string alert_id;  // as /api/v1/alerts ids it; "link_down:<ends>" ("port_disabled:<ends>") read down
  std::string cause;     // bad_cable, flapping_link, degraded_link, link_down, port_disabled
  std::string severity;  // warning, critical
  std::string cable;     // "cn0001[1] - ib-leaf01[1]", the host's end first
  std::optional<std::chrono::system_clock::time_point> since;
};

struct DrainHost {
  std::string host;  // as the fabric names it
  std::string node;  // as Slurm knows it
  enum class State : std::uint8_t { kFaulty, kHolding, kResume } state = State::kFaulty;
  std::vector<DrainFault> faults;                                    // faulty: now; holding, resume: none
  std::string reason;                                                // one line
  std::optional<std::chrono::system_clock::time_point> since;        // faulty: its oldest fault's
  std::optional<std::chrono::system_clock::time_point> clean_since;  // holding, resume: its last fault gone
};
const char* ToString(DrainHost::State s);  // "faulty", "holding", "resume"

struct DrainList {
  std::vector<DrainHost> hosts;  // faulty and holding (to drain), then resume; by name within each
  std::chrono::milliseconds resume_after{};
  // Since when this exporter has judged the cables: a host it has not
  // listed since this plus resume_after has had no fault for the hold.
  std::chrono::system_clock::time_point judging_since{};
  std::size_t fabric_hosts = 0;  // hosts (and CAs in none) of the fabric: what a cap in percent is of
  // This exporter judges every host's cables (--scope=fabric, one shard):
  // a cap may be counted on its list.
  bool every_host = false;
};

}  // namespace ibfabric::collectors
