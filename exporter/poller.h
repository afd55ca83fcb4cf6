#pragma once
// The scheduler: a full walk of the fabric on its own (slow) interval,
// counter sweeps on theirs, each cycle ending in a published Snapshot; in
// between, what changed is re-walked incrementally (topology/discovery.h
// Rediscover), and traps the SM reports (link state changes, ports in and
// out of service) are acted on as they arrive. What is read and judged
// besides the fabric itself is the collectors' (collectors/registry.h):
// after each walk the kDiscovery ones run, after each sweep the kSweep
// ones, each timed; the Snapshot is the scheduler's part and theirs.
//
// What a sweep reads besides the counters: PortInfo of the switch ports
// with news (a LinkDownedCounter that moved or is pinned at its maximum, a
// port that stopped answering, a degraded or recently changed link, a
// remembered port that is down) and of a slice of the rest, so that every
// switch port is read once per `sweep_rotation`; NodeInfo of a slice of the
// LIDs likewise (all of them after the master SM changed). A changed port is
// re-walked; LIDs that answer for another node, a re-walk that cannot be
// trusted, or many changes at once make the next cycle walk everything.
//
// Lost MADs are never evidence: a full walk that missed answers is merged
// into the last fabric (topology/merge.h), and the next walk forced by
// anything but the schedule waits longer after each such walk (twice the
// sweep interval, doubling up to the rotation); a re-walk whose far end
// did not answer keeps the link and asks again over the next sweeps
// (1, 2, 4, ... sweeps apart, five times); a port that stopped answering is
// re-walked for that at most once in ten sweeps. What each node's MADs
// went through (retries, no answer) over the alert window is kept with its
// health, so readings and alerts say how far they can be trusted.

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <set>
#include <stop_token>

#include "collectors/collector.h"
#include "collectors/log.h"
#include "collectors/registry.h"
#include "collectors/snapshot.h"
#include "collectors/state.h"
#include "collectors/sweep.h"
#include "exporter/snapshot_holder.h"
#include "topology/discovery.h"
#include "topology/node_name_map.h"
#include "topology/scope.h"
#include "transport/mad_engine.h"

namespace ibfabric::exporter {

struct PollerOptions {
  std::chrono::milliseconds sweep_interval{10'000};
  std::chrono::milliseconds discovery_interval{3'600'000};  // full walks
  // Every switch port's PortInfo and every LID's NodeInfo at least this often.
  std::chrono::milliseconds sweep_rotation{300'000};
  bool subscribe_traps = true;  // InformInfo to the SA for traps 64, 65, 128, 144
  // Called from the polling thread after this many cycles in a row in which
  // not even the local port answered (the HCA or the simulator went away).
  int transport_down_cycles = 3;
  std::function<void()> on_transport_down;
  std::string version;  // for infiniband_exporter_build_info
  topology::NodeNameMap names;  // applied to every discovered fabric
  topology::Scope scope;        // which ports are read (topology/scope.h)
  // The collectors on, in registry order (collectors::EnabledCollectors);
  // nullopt: the registry's defaults.
  std::optional<std::vector<std::string>> collectors;
  collectors::CollectorOptions collector;  // the plans, alert thresholds, ... (collectors/registry.h)
};

// Ownership: borrows engine, holder and logger; they outlive the poller.
// Thread-safety: Cycle/Run/SaveState from one thread at a time.
class Poller {
 public:
  Poller(transport::MadEngine& engine, PollerOptions options, SnapshotHolder& holder, collectors::Logger& log,
         collectors::PersistedState restored = {});

  // One discovery (when due) and one sweep, then publish. Returns whether
  // the sweep read at least one port.
  bool Cycle();
  // Cycles every sweep interval until `stop` is requested. Never overlaps
  // cycles: a cycle that overruns delays the next one.
  void Run(std::stop_token stop);
  collectors::PersistedState SaveState() const;

 private:
  // Ports of one sweep that stopped answering.
  struct Silence {
    std::set<topology::PortRef> newly_failing;  // ports that answered before and not now
    // Ports not answering whose switch end is due a re-walk for it: newly,
    // or still and their hold is over (SilenceDue).
    std::set<topology::PortRef> silent;
  };
  struct Entry {
    const collectors::CollectorInfo* info;
    std::unique_ptr<collectors::Collector> collector;
    bool again = false;     // kDiscovery: asked to run at the next sweep
    bool in_batch = false;  // kSweep: put reads in this sweep's batch (its time is theirs)
  };

  // The collectors' cycle: what each is handed.
  collectors::Cycle MakeCycle(collectors::Trigger trigger);
  // Runs `e` (timed, unless a trap's re-read), takes its part, logs its
  // problems.
  void RunCollector(Entry& e, const collectors::Cycle& cycle, double batch_seconds = 0);
  // The kDiscovery collectors after a walk (all, with the nodes to read),
  // or at a sweep (those that asked to run again).
  void RunDiscoveryCollectors(collectors::Trigger trigger, std::set<std::uint64_t> fresh,
                              std::set<std::uint64_t> gone);
  // The kDiscovery collectors that asked to run again (tables that did not
  // answer, analyses a re-walk put off); their MADs count as re-walks'.
  void RunPending();
  // The kSweep collectors over `sweep`.
  void RunSweepCollectors(collectors::Trigger trigger, const collectors::SweepResult& sweep, double batch_seconds);

  // Ports that stopped answering in `sweep`; LinkDownedCounters that moved.
  Silence SilenceOf(const collectors::SweepResult& sweep);
  std::set<topology::PortRef> Flapped(const collectors::SweepResult& sweep) const;
  // PortInfo of the switch ends of links that flapped or stopped answering
  // that `sweep` did not read, added to it: a flap is seen within the sweep
  // that counted it.
  void ReadSwitchEnds(const std::set<topology::PortRef>& flapped, const Silence& silence,
                      const std::vector<collectors::LinkTarget>& all_links, collectors::SweepResult* sweep);
  // The switch ports to re-walk after a sweep: changed state, width or
  // speed; a flap that is over; a port that stopped answering.
  std::vector<topology::PortChange> ChangesOf(const collectors::SweepResult& sweep,
                                              const std::set<topology::PortRef>& flapped, const Silence& silence);
  // A full walk, then the kDiscovery collectors.
  void Discover();
  // Re-walks what is behind `changes`; a view it cannot trust makes the
  // next cycle walk everything.
  void Rewalk(const std::vector<topology::PortChange>& changes);
  // Takes `fabric` as the current one: names, scope, remembered ports.
  void Adopt(const topology::Fabric& fabric, const topology::Unanswered* unanswered);
  // `walked` with the names nodes had where their NodeDescription did not
  // answer (a node back after it was gone keeps its name).
  topology::Fabric Named(const topology::Fabric& walked, const topology::Unanswered* unanswered) const;
  // Schedules the changes a re-walk could not finish to be asked again.
  void Retry(const std::vector<topology::PortChange>& changes, const std::vector<topology::PortChange>& retry);
  // Whether any port of `node` is read (always, when the scope is everything).
  bool InScope(const topology::Node& node) const;
  // Whether `port` is read: in scope, or a switch port once seen up there.
  bool ReadsPort(const topology::PortRef& port) const;
  // The switch ports a sweep must read PortInfo of, whatever the rotation.
  std::set<topology::PortRef> Watched() const;
  // The switch end of the cable at `port` (itself when it is a switch port).
  std::optional<topology::PortRef> SwitchEnd(const topology::PortRef& port) const;
  // Subscribes to the SM's traps when due (after a full walk, a new master
  // SM, or once per rotation).
  void Subscribe(std::chrono::steady_clock::time_point now);
  // Re-reads the switch ports the Reports received so far name and re-walks
  // those that changed. Returns whether any Report was taken.
  bool HandleReports();
  bool SilenceDue(const topology::PortRef& end) const;
  void NoteSilenceRewalk(const topology::PortRef& end);
  // A node's name as last seen, else its GUID; a port as "name[port]".
  std::string NameOf(std::uint64_t guid) const;
  std::string Describe(const topology::PortRef& port) const;
  void Publish();

  transport::MadEngine& engine_;
  PollerOptions options_;
  SnapshotHolder& holder_;
  collectors::Logger& log_;

  std::vector<Entry> collectors_;  // the collectors on, in registry order
  collectors::SharedReads reads_;
  // The collectors' parts as they published them last; the scheduler's
  // own are filled in at Publish.
  collectors::Snapshot parts_;

  std::shared_ptr<const topology::Fabric> fabric_;
  std::map<std::uint64_t, collectors::NodeLabel> nodes_;  // every node ever seen
  std::set<topology::PortRef> remembered_;               // switch ports once up (in scope)
  std::set<topology::PortRef> in_scope_;                 // of the last discovery; unused when scope is everything
  // Ports whose failure already led to a re-walk: a node that stays dead
  // costs one, not one every sweep.
  std::set<topology::PortRef> known_failing_;
  // Switch ports that changed lately -> sweeps left to read them every sweep.
  std::map<topology::PortRef, int> recent_;
  std::uint64_t local_guid_ = 0;
  std::uint8_t local_port_ = 0;
  // Traps: the SM LID subscribed at (0: none), when, and what came in.
  std::uint16_t subscribed_sm_ = 0;
  std::chrono::steady_clock::time_point subscribed_at_{};
  bool subscribe_due_ = true;
  std::map<std::uint16_t, bool> subscriptions_;  // trap -> accepted by the SA
  std::map<std::uint16_t, std::uint64_t> traps_;  // trap -> Reports taken
  bool check_all_lids_ = true;
  collectors::PhaseHealth discovery_;
  transport::KindCounts discovery_mads_{};
  transport::KindCounts sweep_mads_{};
  // Cumulative MADs by phase: full walks, re-walks, sweeps, trap re-reads.
  std::map<std::string, transport::KindCounts> phase_mads_;
  bool rediscover_ = true;  // the next cycle walks everything
  bool rewalked_ = false;   // a re-walk since the pending collectors last ran
  // Lost answers: incomplete walks in a row that missed each node, the
  // earliest a forced walk may run and how long the last wait was.
  std::map<std::uint64_t, int> misses_;
  std::chrono::steady_clock::time_point forced_not_before_{};
  std::chrono::milliseconds forced_backoff_{0};
  std::size_t unanswered_ = 0;  // what the last full walk asked and got no answer to
  std::uint64_t incomplete_walks_ = 0;
  struct RetryState {
    topology::PortChange change;
    int attempts = 0;
    std::uint64_t due = 0;  // sweep number
  };
  std::map<topology::PortRef, RetryState> retry_;
  // Switch ports re-walked because what is behind them stopped answering:
  // the sweep it was and the sweeps to wait before the next (doubling).
  std::map<topology::PortRef, std::pair<std::uint64_t, std::uint64_t>> silent_rewalked_;
  std::chrono::steady_clock::time_point next_discovery_{};
  std::chrono::system_clock::time_point last_success_{};
  std::uint64_t sweeps_ = 0;
  std::uint64_t discoveries_ = 0;
  std::uint64_t rewalks_ = 0;
  std::uint64_t lid_moves_ = 0;
  double sweep_seconds_ = 0;
  int local_down_cycles_ = 0;
};

}  // namespace ibfabric::exporter
