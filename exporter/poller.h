#pragma once
// The scheduler: each cycle a full walk when one is due, the traps that
// came in, one sweep, then a published Snapshot. Keeping the fabric
// current (walks, re-walks, the sweep's PortInfo and LID checks, traps) is
// the FabricTracker's (exporter/fabric_tracker.h); what is read and judged
// besides is the collectors' (collectors/registry.h): after each walk the
// kDiscovery ones run, after each sweep the kSweep ones, each timed. The
// Snapshot is the tracker's part, the scheduler's (MADs and time by phase)
// and each collector's.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "collectors/common/log.h"
#include "collectors/framework/collector.h"
#include "collectors/framework/snapshot.h"
#include "collectors/registry.h"
#include "exporter/fabric_tracker.h"
#include "exporter/http_stats.h"
#include "exporter/publisher.h"
#include "exporter/snapshot_holder.h"
#include "exporter/state.h"
#include "transport/mad_engine.h"

namespace ibfabric::exporter {

struct PollerOptions {
  TrackerOptions fabric;  // intervals, traps, names, scope
  // Called from the polling thread after this many cycles in a row in which
  // not even the local port answered (the HCA or the simulator went away).
  int transport_down_cycles = 3;
  std::function<void()> on_transport_down;
  std::string version;  // for infiniband_exporter_build_info
  // On every series, where one exporter reads several fabrics
  // (exporter/fabric_set.h): subnet_prefix; none where it reads one.
  collectors::FabricLabels fabric_labels;
  // The collectors on, in registry order (collectors::EnabledCollectors);
  // nullopt: the registry's defaults.
  std::optional<std::vector<std::string>> collectors;
  collectors::CollectorOptions collector;  // the plans, alert thresholds, ... (collectors/registry.h)
  // The HTTP endpoint's error replies, copied into each Snapshot (null: none).
  const HttpStats* http = nullptr;
  // Gives the heap's free pages back after publications (null: never);
  // one for the process, shared by the pipelines.
  HeapTrimmer* heap_trimmer = nullptr;
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
  struct Entry {
    const collectors::CollectorInfo* info;
    std::unique_ptr<collectors::Collector> collector;
    bool again = false;     // kDiscovery: asked to run at the next sweep
    bool deferred = false;  // kDiscovery, after_publication: a full walk's, due once its first sweep is published
    bool in_batch = false;  // kSweep: put reads in this sweep's batch (its time is theirs)
  };

  // The sweep (one batch), the kSweep collectors over it, the re-walks and
  // put-off analyses it calls for. Returns whether it read any port.
  bool SweepOnce();
  // A full walk, then the kDiscovery collectors.
  void Discover(std::chrono::steady_clock::time_point now);
  // Re-walks what is behind `changes`, then the kDiscovery collectors.
  void Rewalk(const std::vector<topology::PortChange>& changes);
  // Re-reads the switch ports the Reports received so far name, runs the
  // kSweep collectors on that and re-walks what changed. Returns whether
  // any Report was taken.
  bool HandleReports();
  // The collectors' cycle: what each is handed.
  collectors::Cycle MakeCycle(collectors::Trigger trigger);
  // A walk's discovery cycle: its trigger, the nodes it found and lost.
  collectors::Cycle CycleOf(const FabricTracker::Walked& walked);
  // Runs `e` (timed, unless a trap's re-read), takes its part, logs its
  // problems.
  void RunCollector(Entry& e, const collectors::Cycle& cycle, double batch_seconds = 0);
  // The kDiscovery collectors after a walk (all, with the nodes to read);
  // after a full walk, those that read tables after it
  // (CollectorInfo::after_publication) are put off to RunDeferred. `phases`
  // (a full walk's) gets each one's time, as tables (it sent MADs) or
  // analysis (it sent none).
  void RunDiscoveryCollectors(const FabricTracker::Walked& walked, collectors::DiscoveryPhases* phases = nullptr);
  // The collectors a full walk put off, once its first sweep is published;
  // their time is the walk's tables'. Returns whether any ran.
  bool RunDeferred();
  // The kDiscovery collectors that asked to run again (tables that did not
  // answer, analyses a re-walk put off), and those that read the part of
  // one that ran (collectors/registry.h `reads`); their MADs count as
  // re-walks'.
  void RunPending();
  // The kSweep collectors over `sweep`; its samples are let go after the
  // last collector that reads them (CollectorInfo::reads_samples).
  void RunSweepCollectors(collectors::Trigger trigger, collectors::SweepResult& sweep, double batch_seconds);
  // MADs sent since `before`, added to `phase`; returns them.
  transport::KindCounts CountMads(const std::string& phase, const transport::KindCounts& before);
  void Publish();

  transport::MadEngine& engine_;
  PollerOptions options_;
  collectors::Logger& log_;
  Publisher publisher_;  // renders and compresses each Snapshot, hands it to the holder
  FabricTracker tracker_;

  std::vector<Entry> collectors_;  // the collectors on, in registry order
  collectors::SharedReads reads_;
  // The collectors' parts as they published them last; the tracker's and
  // the scheduler's are filled in at Publish.
  collectors::Snapshot parts_;
  bool rewalked_ = false;                               // a re-walk since the pending collectors last ran
  std::optional<FabricTracker::Walked> deferred_walk_;  // the full walk whose table readers wait

  collectors::PhaseHealth discovery_;             // the walk and the kDiscovery collectors after it
  collectors::DiscoveryPhases discovery_phases_;  // of the last full walk
  transport::KindCounts discovery_mads_{};
  transport::KindCounts sweep_mads_{};
  // Cumulative MADs by phase: full walks, re-walks, sweeps, trap re-reads.
  std::map<std::string, transport::KindCounts> phase_mads_;
  double sweep_seconds_ = 0;
  std::chrono::system_clock::time_point last_success_{};
  int local_down_cycles_ = 0;
};

}  // namespace ibfabric::exporter
