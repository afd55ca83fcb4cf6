#pragma once
// Keeps the fabric current between full walks: the scheduler's reads of
// NodeInfo, NodeDescription and PortInfo (docs/architecture.md, "Who owns
// which read"). A full walk of the fabric on its own (slow) interval; in
// between, what changed is re-walked incrementally (topology/discovery.h
// Rediscover), and the traps the SM reports (link state changes, ports in
// and out of service) name the ports to read again. It sends no MAD of a
// collector's concern: the scheduler (exporter/poller.h) runs the
// collectors after each walk and each sweep, and tells the tracker what
// they saw.
//
// What a sweep reads besides the collectors' reads: PortInfo of the local
// port (its MasterSMLID) and of the switch ports with news (a LinkDownedCounter that moved or is pinned at its
// maximum, a port that stopped answering, a degraded or recently changed
// link, a remembered port that is down) and of a slice of the rest, so that
// every switch port is read once per `sweep_rotation`; NodeInfo of a slice
// of the LIDs likewise (all of them after the master SM changed). A changed
// port is re-walked; LIDs that answer for another node, a re-walk that
// cannot be trusted, or many changes at once make the next cycle walk
// everything.
//
// Its parts, each with tests of its own: WalkSchedule (when the next full
// walk runs, the wait after lossy walks), RewalkHolds (re-walks asked
// again, ports that stopped answering held off), TrapSubscription (the
// InformInfo Sets and the Reports counted); the tracker keeps the fabric
// view and the sweep's watch and rotation.
//
// Lost MADs are never evidence: a full walk that missed answers is merged
// into the last fabric (topology/merge.h), and the next walk forced by
// anything but the schedule waits longer after each such walk (twice the
// sweep interval, doubling up to the rotation); a re-walk whose far end
// did not answer keeps the link and asks again over the next sweeps
// (1, 2, 4, ... sweeps apart, five times); a port that stopped answering is
// re-walked for that at most once in ten sweeps, then ever less often.
//
// SMPs dropped where GMPs answer (M_Key protection without the right key,
// exporter/smp_watch.h): a walk that missed answers probes the nodes it
// missed (and the local node, the SM) with one SMP and one GMP each, and
// every sweep compares its SMPs with its PMA reads to the same LIDs. Once
// that is the diagnosis (a probe of the same LIDs in a later sweep
// confirms it; said once in the log, published): no walk, no
// re-walk, the last fabric kept whole, SMPs only to LIDs that answer them
// and a probe of the others now and then; when they answer again, the
// next cycle walks everything.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "collectors/common/log.h"
#include "collectors/framework/collector.h"
#include "collectors/framework/snapshot.h"
#include "collectors/reads/sweep.h"
#include "exporter/rewalk_holds.h"
#include "exporter/smp_watch.h"
#include "exporter/trap_subscription.h"
#include "exporter/walk_schedule.h"
#include "topology/discovery.h"
#include "topology/fabric.h"
#include "topology/node_name_map.h"
#include "topology/scope.h"
#include "transport/mad_engine.h"

namespace ibfabric::exporter {

struct TrackerOptions {
  std::chrono::milliseconds sweep_interval{10'000};
  std::chrono::milliseconds discovery_interval{3'600'000};  // full walks
  // Every switch port's PortInfo and every LID's NodeInfo at least this often.
  std::chrono::milliseconds sweep_rotation{300'000};
  bool subscribe_traps = true;  // InformInfo to the SA for traps 64, 65, 128, 144
  topology::NodeNameMap names;  // applied to every discovered fabric
  topology::Scope scope;        // which ports are read (topology/scope.h)
  // The local port's LID and its SM's as the kernel knew them at start
  // (sysfs): whom to probe when not even the local node answers an SMP.
  std::uint16_t local_lid = 0;
  std::uint16_t sm_lid = 0;
  collectors::LocalPortSummary local;  // published as it is (unread_ports: from the walks)
  // Local scope: the host's other Active ports on this fabric, asked at
  // each walk (their LIDs may have changed); each is read with the far end
  // of its cable (topology::DiscoverOptions::host_ports). Empty: none.
  std::function<std::vector<topology::HostPort>()> host_ports;
};

// Ownership: borrows engine and log; they outlive the tracker.
// Thread-safety: the scheduler's thread only.
class FabricTracker {
 public:
  // `nodes` and `remembered`: saved before a re-exec (exporter/state.h).
  FabricTracker(transport::MadEngine& engine, TrackerOptions options, collectors::Logger& log,
                std::map<std::uint64_t, collectors::NodeLabel> nodes = {}, std::set<topology::PortRef> remembered = {});

  // What a walk did, for the kDiscovery collectors and the log.
  struct Walked {
    bool ok = false;  // a full walk: the local port answered; a re-walk: its view can be trusted
    collectors::Trigger trigger = collectors::Trigger::kFullWalk;
    std::set<std::uint64_t> fresh;  // the nodes to read: every node after a full walk
    std::set<std::uint64_t> gone;
    std::string summary;  // "key=value ..." of what it found, for "discovery done"
  };

  // Whether the next cycle walks everything: on schedule, or forced (and
  // the wait after walks that missed answers is over). Never while SMPs
  // are dropped (smps_blocked): then probes.
  bool WalkDue(std::chrono::steady_clock::time_point now) const;
  // A full walk, merged into the last fabric where answers were lost. When
  // not even the local port answers (!ok), the last fabric is kept and the
  // next cycle walks again. A walk that missed answers probes what it
  // missed (the SMPs dropped where GMPs answer).
  Walked Walk(std::chrono::steady_clock::time_point now);
  // Re-walks what is behind `changes`. nullopt when nothing was walked:
  // no changes, or a full walk is the better deal (local scope, too many at
  // once), which the next cycle then makes.
  std::optional<Walked> Rewalk(const std::vector<topology::PortChange>& changes);
  // The next cycle walks everything (a collector found the view untrustworthy).
  void WalkNext() { schedule_.Force(); }

  // The sweep's PortInfo and LID-check reads.
  struct SweepReads {
    std::vector<collectors::LinkTarget> links;  // watched ports and this sweep's slice of the rest
    std::vector<collectors::LidCheck> checks;
  };
  // `parts`: the collectors' last parts (degraded links and pinned
  // LinkDownedCounters are watched).
  SweepReads PlanSweep(const collectors::Snapshot& parts);
  // The local port's PortInfo, for every sweep's batch (one LID-routed SMP
  // to itself): its MasterSMLID names a master SM that started after the
  // last walk, its link state whether the exporter is cut off. nullopt
  // before the local port has a LID.
  std::optional<collectors::LinkTarget> LocalTarget() const;
  // What the sweep's batch showed before the collectors judge it.
  struct News {
    std::set<topology::PortRef> newly_failing;  // answered before and not now
    // Not answering, and their switch end is due a re-walk for it (newly,
    // or still and their hold is over).
    std::set<topology::PortRef> silent;
    std::set<topology::PortRef> flapped;  // LinkDownedCounter moved
  };
  // Takes in the batch: silent ports, flaps against `before` (port_counters'
  // totals as of the last sweep), and reads into `sweep` the PortInfo of
  // their switch ends that it missed, so that a flap is seen within the
  // sweep that counted it. Judges reaches_fabric() from the batch.
  News Observe(const collectors::PortTable& before, collectors::SweepResult* sweep);
  // Ends the sweep after the collectors ran: a changed master SM rereads
  // every LID and subscribes again; LIDs answering for other nodes make the
  // next cycle walk everything. Returns the switch ports to re-walk.
  std::vector<topology::PortChange> EndSweep(const collectors::SweepResult& sweep, const News& news,
                                             bool master_changed);

  // Subscribes to the SM's traps when due (after a full walk, a new master
  // SM, or once per rotation); the master is the subnet_managers part's
  // when there is one, else the local port's MasterSMLID.
  void Subscribe(std::chrono::steady_clock::time_point now, const collectors::Snapshot& parts);
  bool subscribed() const { return traps_.subscribed(); }
  // The Reports received so far: the switch ports they name, to read again.
  struct TrapReads {
    std::vector<collectors::LinkTarget> links;
    std::map<topology::PortRef, std::string> why;  // "trap 128"
  };
  // nullopt when no Report came in.
  std::optional<TrapReads> TakeReports();
  // The ports of a trap's re-read that changed, to re-walk.
  std::vector<topology::PortChange> ChangesOf(const TrapReads& trap, const collectors::SweepResult& reread) const;

  // What the collectors are handed (collectors::Cycle).
  const std::shared_ptr<const topology::Fabric>& fabric() const { return fabric_; }
  // How many graphs it has adopted (Cycle::fabric_generation).
  std::uint64_t fabric_generation() const { return fabric_generation_; }
  const topology::Scope& scope() const { return options_.scope; }
  // Whether any port of `node` is read (always, when the scope is everything).
  bool InScope(const topology::Node& node) const;
  // Whether `port` is read: in scope, or a switch port once seen up there.
  bool ReadsPort(const topology::PortRef& port) const;
  const std::set<topology::PortRef>& remembered() const { return remembered_; }
  // The local port's PortInfo.MasterSMLID as of the last sweep (every sweep
  // reads it); 0 before one answered.
  std::uint16_t master_sm_lid() const { return master_sm_lid_; }
  // The SA's LID (the local port's SM LID, else --sm.lid; 0: unknown).
  std::uint16_t sa_lid() const { return sa_lid_ != 0 ? sa_lid_ : options_.sm_lid; }
  // Whether the last sweep reached the fabric (true before one ran): false
  // when the local port's link was read down, or when nothing at all
  // answered (a hung fabric, or the exporter's own HCA or port dropping
  // every MAD: from here one cannot tell which). Cut off, what does not
  // answer says nothing about the nodes.
  bool reaches_fabric() const { return reaches_fabric_; }
  // Whether the fabric drops this exporter's SMPs while answering its GMPs
  // (the diagnosis), and whether any LID was seen doing so (gathering
  // evidence, or diagnosed): then the local port is not down.
  bool smps_blocked() const { return smp_watch_.diagnosed(); }
  // Whether the LIDs seen dropping SMPs are due a probe (one SMP and one
  // GMP each): to check the first evidence, and now and then while
  // diagnosed; when they answer SMPs again, the next cycle walks.
  bool ProbeDue() const;
  void ProbeSmps();
  bool smps_dropped() const { return !smp_watch_.blocked().empty(); }
  const collectors::NodeLabels& nodes() const { return *nodes_; }
  // A node's name as last seen, else its GUID; a port as "name[port]".
  std::string NameOf(std::uint64_t guid) const;
  std::string Describe(const topology::PortRef& port) const;

  // Its part of the Snapshot: the fabric, names, scope, walks, traps, LID
  // moves, sweeps.
  void Publish(collectors::Snapshot* s) const;

 private:
  // Takes `walked` as the current fabric: names, scope, remembered ports,
  // the ports read, LID owners.
  void Adopt(const topology::Fabric& walked, const topology::Unanswered* unanswered);
  // read_ports_ from in_scope_ and remembered_.
  void UpdateReadPorts();
  // `walked` with the names nodes had where their NodeDescription did not
  // answer (a node back after it was gone keeps its name).
  topology::Fabric Named(const topology::Fabric& walked, const topology::Unanswered* unanswered) const;
  // Schedules the changes a re-walk could not finish to be asked again.
  void Retry(const std::vector<topology::PortChange>& changes, const std::vector<topology::PortChange>& retry);
  // The switch ports a sweep must read PortInfo of, whatever the rotation.
  std::set<topology::PortRef> Watched(const collectors::Snapshot& parts) const;
  // The switch end of the cable at `port` (itself when it is a switch port).
  std::optional<topology::PortRef> SwitchEnd(const topology::PortRef& port) const;
  // The local port's LID: the fabric's, else as the kernel said at start.
  std::uint16_t LocalLid() const;
  // Local scope: the host's other ports now, a down one with where its
  // cable led (host_far_), a down one never seen cabled left out.
  std::vector<topology::HostPort> HostPortsNow() const;
  // host_far_ from the fabric just adopted.
  void RememberHostFarEnds();
  // One SMP and one GMP to each of `lids`, judged by the SmpWatch.
  void ProbeAccess(const std::vector<std::uint16_t>& lids);
  // Takes in evidence (marked sure where the local port's LID or the master
  // SM's drops): says a diagnosis once; one that ends walks.
  void Judge(SmpWatch::Evidence e);
  // After a walk that missed answers: probes the local node (it did not
  // answer), or the far ends the last fabric knows behind the ports that
  // got no answer, and the master SM.
  void ProbeMissed(const topology::DiscoveryResult& r);
  // Tells the trap subscription the switch ports a sweep found gone down or
  // come up (each once until a walk takes it in), for its delivery check.
  void NoteTrapChanges(const collectors::LinkChanges& changed);
  // The switch ports to re-walk after a sweep: changed state, width or
  // speed; a flap that is over; a port that stopped answering; retries due.
  std::vector<topology::PortChange> ChangesOf(const collectors::SweepResult& sweep, const News& news);

  transport::MadEngine& engine_;
  TrackerOptions options_;
  collectors::Logger& log_;

  std::shared_ptr<const topology::Fabric> fabric_;
  // Every node ever seen; a new map when a walk changes it (snapshots share it).
  std::shared_ptr<const collectors::NodeLabels> nodes_;
  std::set<topology::PortRef> remembered_;  // switch ports once up (in scope)
  std::set<topology::PortRef> in_scope_;    // of the last walk; unused when scope is everything
  // The ports read: in_scope_ and remembered_ (both change only when a
  // walk is adopted); null when the scope is everything. Published as is.
  std::shared_ptr<const std::set<topology::PortRef>> read_ports_;
  // Of the current fabric: every switch port's PortInfo target, those
  // read, and the LIDs' owners of the ports read (counters read or not).
  std::vector<collectors::LinkTarget> links_;
  std::vector<collectors::LinkTarget> read_links_;
  std::vector<collectors::SweepTarget> owners_;
  std::uint64_t local_guid_ = 0;
  std::uint8_t local_port_ = 0;
  std::uint16_t master_sm_lid_ = 0;
  std::set<std::uint64_t> host_port_guids_;     // local scope: the host's other ports given to the last walk
  std::set<topology::PortRef> host_far_ends_;   // the switch ports at their far ends it read
  std::vector<std::string> host_ports_unread_;  // and those it could not read
  // Where each host port's cable led when last read (port GUID -> the
  // switch port and its LID): a port gone down is read down there.
  std::map<std::uint64_t, std::pair<topology::PortRef, std::uint16_t>> host_far_;
  std::uint16_t sa_lid_ = 0;   // the SM LID the local port last gave (its own where this host is the master)
  bool local_link_up_ = true;  // as the local port's PortInfo last said
  bool reaches_fabric_ = true;

  // Walks: when the next full one runs; lost answers: incomplete walks in
  // a row that missed each node.
  WalkSchedule schedule_;
  std::map<std::uint64_t, int> misses_;
  std::size_t unanswered_ = 0;  // what the last full walk asked and got no answer to
  std::uint64_t incomplete_walks_ = 0;
  std::uint64_t walks_ = 0;
  std::uint64_t fabric_generation_ = 0;  // graphs adopted
  std::uint64_t rewalks_ = 0;

  // Sweeps: their number, the changed ports watched (sweeps left), LID checks.
  std::uint64_t sweeps_ = 0;
  std::map<topology::PortRef, int> recent_;
  bool check_all_lids_ = true;
  std::uint64_t lid_moves_ = 0;
  // Ports whose failure already led to a re-walk: a node that stays dead
  // costs one, not one every sweep.
  std::set<topology::PortRef> known_failing_;
  // Re-walks asked again, and ports re-walked for not answering.
  RewalkHolds holds_;

  // Traps: the subscription and the Reports counted.
  TrapSubscription traps_;
  // SMPs dropped where GMPs answer.
  SmpWatch smp_watch_;
  // Switch ports whose change the trap subscription was told of, until a walk takes them in.
  std::set<topology::PortRef> trap_counted_;
};

}  // namespace ibfabric::exporter
