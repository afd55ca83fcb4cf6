#pragma once
// Subnet manager health. Every port whose PortInfo.CapabilityMask has IsSM
// (found by discovery) is asked for its SMInfo (IBTA 14.2.5.13) every
// sweep: GUID, priority, state and ActCount. The monitor keeps, across
// sweeps, which SM is master, whether the master's ActCount still moves (an
// SM that stopped sweeping), the failovers (master changes, when, from, to),
// and the conditions on-call cares about: no master, no standby, master not
// sweeping, several masters, a recent failover.

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "collectors/health/alerts.h"
#include "topology/fabric.h"
#include "transport/attributes.h"
#include "transport/mad_engine.h"

namespace ibfabric::collectors {

struct SmTarget {
  topology::PortRef port;
  std::uint16_t lid = 0;
};
// Ports with IsSM and a LID (a switch's SM is on port 0, with the switch's LID).
std::vector<SmTarget> SmTargets(const topology::Fabric& fabric);
// The ports behind `lids` that no target in `known` has (a switch's port 0,
// or a CA port), by LID; a LID of 0 or of no port is skipped. An SM started
// since the last walk is named by the local port's MasterSMLID or by the
// SA's SMInfoRecords before a walk finds its IsSM port.
std::vector<SmTarget> UnknownSmTargets(const topology::Fabric& fabric, const std::vector<SmTarget>& known,
                                       const std::set<std::uint16_t>& lids);

struct SmReading {
  SmTarget target;
  std::optional<transport::SmInfo> info;  // nullopt: did not answer
  transport::MadOutcome outcome = transport::MadOutcome::kOk;
};
struct SmRound {
  std::vector<SmReading> readings;  // one per target, in their order
  // The LIDs of the SA's SMInfoRecords; nullopt when the SA was not asked
  // or did not answer.
  std::optional<std::set<std::uint16_t>> listed;
};
// One SMInfo Get per target and, when `sa_lid` is not 0, one
// SubnAdmGetTable(SMInfoRecord) to the SA there, pipelined together.
// Thread-safety: uses the engine exclusively for its duration.
SmRound ReadSubnetManagers(const std::vector<SmTarget>& targets, std::uint16_t sa_lid, transport::MadEngine& engine);

struct SmMonitorOptions {
  // The master's ActCount may show no activity of its own this long before
  // it counts as not sweeping (opensm light-sweeps every 10 s by default).
  // ActCount counts every SMP the SM sends, the replies to SMInfo Gets
  // included: this exporter's, and other readers' (other exporters, a
  // standby's polls, sminfo), which rise it steadily. A light sweep sends
  // at least one SMP to every switch (opensm osm_state_mgr.c: SwitchInfo
  // Get to each, state_mgr_get_sw_info), so activity of its own is a rise,
  // beyond our Gets, of at least a sweep's worth (the switch count, 3 at
  // least) over what the readers rise it by: above the median rate of the
  // rounds in this window, or in every round of it (an SM that sweeps as
  // often as we read). Readers that alone rise it by a sweep's worth each
  // round (more readers than switches) are indistinguishable from a sweep.
  std::chrono::milliseconds stall_after{60'000};
  // A failover stays a condition this long after it happened.
  std::chrono::milliseconds failover_hold{1'800'000};
  std::size_t keep_events = 50;
};

// One SM as last seen. Keyed by the SM's port GUID (from SMInfo, or the
// port's own GUID when it stopped answering).
struct SmStatus {
  std::uint64_t guid = 0;
  topology::PortRef port;
  std::string node;  // the node's name
  std::uint16_t lid = 0;
  bool answering = false;
  transport::SmState state = transport::SmState::kNotActive;  // as last answered
  std::uint8_t priority = 0;
  std::uint32_t act_count = 0;
  bool act_count_moving = false;  // showed activity of its own within stall_after (meaningful for the master)
  std::chrono::system_clock::time_point last_answer{};
  std::chrono::system_clock::time_point last_act_change{};
};

struct SmEvent {
  std::chrono::system_clock::time_point when{};
  std::optional<SmStatus> from;  // the previous master (nullopt: none was known)
  SmStatus to;
};

enum class SmCondition { kNoMaster, kNoStandby, kMasterNotSweeping, kMultipleMasters, kFailover };
const char* ToString(SmCondition c);  // "no_master", ...

struct SmConditionState {
  SmCondition condition;
  Severity severity = Severity::kWarning;
  std::chrono::system_clock::time_point since{};
  std::string summary;
  std::string action;                  // what on-call should do about it
  std::vector<topology::PortRef> sms;  // the SM ports concerned (none for no_master)
};

// Immutable result of the monitor after a sweep.
struct SmReport {
  std::vector<SmStatus> sms;    // by state (masters first), then GUID
  std::vector<SmEvent> events;  // newest first
  std::vector<SmConditionState> conditions;
  std::uint64_t master_changes = 0;
  std::size_t masters = 0;       // answering SMs in state master
  std::size_t standbys = 0;      // answering SMs in state standby
  bool master_sweeping = false;  // the single master's ActCount moves
};

// Thread-safety: none; the sweeping thread owns it.
class SmMonitor {
 public:
  explicit SmMonitor(SmMonitorOptions options = {}) : options_(options) {}

  // Folds one round of readings in; `fabric` names the SMs' nodes.
  void Update(const std::vector<SmReading>& readings, const topology::Fabric& fabric,
              std::chrono::steady_clock::time_point now, std::chrono::system_clock::time_point wall);
  SmReport Report() const;

 private:
  // One answered round of an SM: how far its ActCount rose beyond our own
  // Gets since the last answer, over how long.
  struct Rise {
    std::chrono::steady_clock::time_point at{};
    std::uint32_t foreign = 0;
    double seconds = 0;
  };
  struct Tracked {
    SmStatus status;
    std::chrono::steady_clock::time_point last_act_change_steady{};
    std::chrono::steady_clock::time_point last_answer_steady{};
    std::uint32_t asked = 0;  // our Gets since the last answer (each moves ActCount once if it arrived)
    std::deque<Rise> rises;   // the answered rounds within stall_after, oldest first
  };
  // The latest round of `rises` that shows the SM's own activity (see
  // SmMonitorOptions::stall_after), if any.
  static std::optional<std::chrono::steady_clock::time_point> LastActivity(const std::deque<Rise>& rises,
                                                                           std::uint32_t sweep_smps);
  // The steps of Update: each SM's reading taken in (and those gone
  // forgotten after a while); the master followed (a change is a
  // failover), the answering masters returned and the standbys counted;
  // the conditions held or cleared.
  void TakeReadings(const std::vector<SmReading>& readings, const topology::Fabric& fabric,
                    std::chrono::steady_clock::time_point now, std::chrono::system_clock::time_point wall);
  std::vector<const SmStatus*> FollowMaster(std::chrono::steady_clock::time_point now,
                                            std::chrono::system_clock::time_point wall, std::size_t* standbys);
  void Judge(const std::vector<const SmStatus*>& masters, std::size_t standbys,
             std::chrono::steady_clock::time_point now, std::chrono::system_clock::time_point wall);
  SmMonitorOptions options_;
  std::map<std::uint64_t, Tracked> sms_;
  std::optional<std::uint64_t> master_;  // the last single master seen
  std::deque<SmEvent> events_;
  std::uint64_t master_changes_ = 0;
  std::optional<std::chrono::steady_clock::time_point> last_failover_steady_;
  std::map<SmCondition, std::chrono::system_clock::time_point> since_;
  std::vector<SmConditionState> conditions_;
};

}  // namespace ibfabric::collectors
