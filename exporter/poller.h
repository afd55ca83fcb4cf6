#pragma once
// The schedule: discovery on its own (slower) interval and again when the
// fabric changed, counter sweeps on theirs, each cycle ending in a published
// Snapshot. Rediscovery is triggered by a port that stops answering, a LID
// that answers with another node's GUID, or a LinkDownedCounter that moved.

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <set>
#include <stop_token>

#include "collectors/alerts.h"
#include "collectors/counter_store.h"
#include "collectors/link_health.h"
#include "collectors/snapshot.h"
#include "collectors/state.h"
#include "collectors/sweep.h"
#include "topology/node_name_map.h"
#include "topology/partitions.h"
#include "topology/plan.h"
#include "topology/scope.h"
#include "exporter/log.h"
#include "exporter/snapshot_holder.h"
#include "transport/mad_engine.h"

namespace ibfabric::exporter {

struct PollerOptions {
  std::chrono::milliseconds sweep_interval{10'000};
  std::chrono::milliseconds discovery_interval{300'000};
  int clear_threshold_percent = 0;  // 0: never clear counters on the fabric
  // Called from the polling thread after this many cycles in a row in which
  // not even the local port answered (the HCA or the simulator went away).
  int transport_down_cycles = 3;
  std::function<void()> on_transport_down;
  std::string version;  // for infiniband_exporter_build_info
  topology::NodeNameMap names;  // applied to every discovered fabric
  std::optional<topology::CablingPlan> plan;  // every discovery is compared with it
  std::optional<topology::PartitionPlan> partition_plan;  // the CA ports' P_Keys are compared with it
  collectors::AlertConfig alerts;              // thresholds, window, hysteresis
  topology::Scope scope;                       // which ports are read (topology/scope.h)
  collectors::SmMonitorOptions subnet_managers;  // when the master counts as not sweeping
};

// Ownership: borrows engine, holder and logger; they outlive the poller.
// Thread-safety: Cycle/Run/SaveState from one thread at a time.
class Poller {
 public:
  Poller(transport::MadEngine& engine, PollerOptions options, SnapshotHolder& holder, Logger& log,
         collectors::PersistedState restored = {});

  // One discovery (when due) and one sweep, then publish. Returns whether
  // the sweep read at least one port.
  bool Cycle();
  // Cycles every sweep interval until `stop` is requested. Never overlaps
  // cycles: a cycle that overruns delays the next one.
  void Run(std::stop_token stop);
  collectors::PersistedState SaveState() const;

 private:
  // What one sweep changed that the cycle decides on.
  struct Absorbed {
    std::size_t newly_failing = 0;  // ports that answered before and not now
    bool link_flapped = false;      // a LinkDownedCounter moved
  };
  // Folds a sweep into the totals and the node health.
  Absorbed Absorb(const collectors::SweepResult& sweep, std::chrono::system_clock::time_point wall);
  void Discover();
  void ClearSaturated(const collectors::SweepResult& sweep);
  // Link health and alerts after a sweep; logs alerts raised and cleared.
  void Judge(const collectors::SweepResult& sweep, std::chrono::steady_clock::time_point now,
             std::chrono::system_clock::time_point wall);
  // SMInfo from every IsSM port; logs failovers and conditions that change.
  void WatchSubnetManagers(std::chrono::steady_clock::time_point now, std::chrono::system_clock::time_point wall);
  std::string Describe(const topology::PortRef& port) const;
  void Publish();

  transport::MadEngine& engine_;
  PollerOptions options_;
  SnapshotHolder& holder_;
  Logger& log_;

  std::shared_ptr<const topology::Fabric> fabric_;
  std::shared_ptr<const topology::Analysis> analysis_;
  collectors::CapabilityMap caps_;
  std::map<std::uint64_t, collectors::NodeLabel> nodes_;  // every node ever seen
  std::map<std::uint64_t, collectors::NodeHealth> health_;
  std::set<topology::PortRef> remembered_;               // switch ports once up (in scope)
  std::set<topology::PortRef> in_scope_;                 // of the last discovery; unused when scope is everything
  // Ports whose failure already led to a rediscovery: a node that stays dead
  // costs one rediscovery, not one every sweep.
  std::set<topology::PortRef> known_failing_;
  collectors::CounterStore store_;
  collectors::LinkHealth link_health_;
  collectors::AlertEngine alerts_;
  collectors::SmMonitor sm_monitor_;
  std::shared_ptr<const collectors::SmReport> sm_report_;
  std::shared_ptr<const collectors::HealthReport> health_report_;
  collectors::PhaseHealth discovery_;
  collectors::PhaseHealth port_counters_;
  transport::KindCounts discovery_mads_{};
  transport::KindCounts sweep_mads_{};
  std::vector<std::string> discovery_problems_;
  bool rediscover_ = true;
  std::chrono::steady_clock::time_point next_discovery_{};
  std::chrono::system_clock::time_point last_success_{};
  std::uint64_t sweeps_ = 0;
  std::uint64_t discoveries_ = 0;
  std::uint64_t clears_ = 0;
  std::uint64_t lid_moves_ = 0;
  std::size_t targets_ = 0;
  std::size_t failed_ports_ = 0;
  int local_down_cycles_ = 0;
};

}  // namespace ibfabric::exporter
