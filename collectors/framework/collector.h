#pragma once
// A collector: one concern of the exporter (port counters, the fat-tree
// analysis, routing, partitions, link health, subnet managers, ...), in the
// spirit of node_exporter's collectors. Each holds its reads, its analysis
// and its state; the scheduler (exporter/poller.h) runs it when it is due
// and puts the immutable part it publishes into the Snapshot; its metric
// families are rendered from that part alone (registry.h: each collector's
// Render).
//
// When a collector runs (Schedule):
//   kDiscovery  after every full walk and every re-walk that changed nodes,
//               with the nodes to read; and on the next sweep again when its
//               last run asked for it (Outcome::again: tables that did not
//               answer, an analysis put off to once a sweep).
//   kSweep      every sweep, after the sweep's one batch of reads (SweepPlan:
//               what the collector wants in it), and after the PortInfo
//               re-reads of the ports a trap named (Trigger::kTrap).
//
// Who reads what (docs/architecture.md): NodeInfo, NodeDescription and
// PortInfo are the scheduler's (walks, re-walks, the sweep's PortInfo slice
// and LID checks); SwitchInfo is SharedReads'; a collector sends only the
// MADs of its own concern, and none when it is disabled.

#include <prometheus/metric_family.h>

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
#include "collectors/framework/options.h"
#include "collectors/framework/snapshot.h"
#include "collectors/health/alerts.h"
#include "collectors/health/counter_store.h"
#include "collectors/reads/sweep.h"
#include "topology/analysis.h"
#include "topology/fabric.h"
#include "topology/scope.h"
#include "transport/attributes.h"
#include "transport/mad_engine.h"

namespace ibfabric::collectors {

enum class Schedule { kDiscovery, kSweep };

// Why a collector runs now.
enum class Trigger {
  kFullWalk,  // the fabric was walked whole: read everything
  kRewalk,    // a re-walk changed `fresh` and `gone` nodes
  kSweep,     // a counter sweep (kSweep collectors), or a kDiscovery collector's `again`
  kTrap,      // the PortInfo of ports a trap named was read again (kSweep collectors)
};

// Reads several collectors need, each made once per discovery by whoever
// asks first and handed to the others.
// Thread-safety: the scheduler's thread only.
class SharedReads {
 public:
  explicit SharedReads(transport::MadEngine& engine) : engine_(engine) {}
  // SwitchInfo of the switches of `fabric` in `nodes` (every switch when
  // null) that have not answered since the last Forget; what did not
  // answer is added to `problems`, one line each, and asked again next
  // time. Returns every SwitchInfo known.
  const std::map<std::uint64_t, transport::SwitchInfo>& SwitchInfo(const topology::Fabric& fabric,
                                                                   const std::set<std::uint64_t>* nodes,
                                                                   std::vector<std::string>* problems);
  // Nodes whose reads are stale (re-walked, gone): read again when asked.
  void Forget(const std::set<std::uint64_t>& nodes);
  void ForgetAll() { switch_info_.clear(); }

 private:
  transport::MadEngine& engine_;
  std::map<std::uint64_t, transport::SwitchInfo> switch_info_;
};

// What a collector is handed for one run. Everything is borrowed for the
// run's duration.
struct Cycle {
  Trigger trigger = Trigger::kSweep;
  transport::MadEngine* engine = nullptr;
  const topology::Fabric* fabric = nullptr;  // as of now, never null
  // Counts the graphs the tracker adopted: a collector that keeps what it
  // derived from `fabric` compares it (never the pointer, whose address a
  // later graph may take again).
  std::uint64_t fabric_generation = 0;
  topology::Scope scope;
  // kFullWalk: every node; kRewalk: the nodes a re-walk brought, and those
  // it found gone.
  std::set<std::uint64_t> fresh;
  std::set<std::uint64_t> gone;
  // kSweep: what the sweep's batch read (counters, PortInfo, LID checks);
  // kTrap: the PortInfo of the ports a trap named, read again. Its samples
  // (SampleOf) are there only for the collectors registered as reading
  // them (CollectorInfo::reads_samples) and those before: after the last
  // of them they are let go.
  const SweepResult* sweep = nullptr;
  // The local port's PortInfo.MasterSMLID as of this sweep (0: unknown): a
  // master SM that started after the last walk is seen here first.
  std::uint16_t master_sm_lid = 0;
  // The SA's LID: the local port's SM LID, this host's own LID where its SM
  // is the master (0: unknown).
  std::uint16_t sa_lid = 0;
  // Whether this sweep reached the fabric (true before one ran): false when
  // the local port's link was read down or nothing answered at all. Cut
  // off, what does not answer says nothing about the fabric.
  bool reaches_fabric = true;
  // Whether the fabric drops this exporter's SMPs while answering its GMPs
  // (M_Key protection without the right key): an SMP that goes unanswered
  // then says nothing about the node.
  bool smps_blocked = false;
  std::chrono::steady_clock::time_point now{};
  std::chrono::system_clock::time_point wall{};
  // The parts published so far, this cycle's by the collectors before
  // this one in the registry's order.
  const Snapshot* parts = nullptr;
  SharedReads* reads = nullptr;
  Logger* log = nullptr;
  // Whether a node is read at all (any of its ports is in scope), and a
  // port (in scope, or a switch port once seen up there).
  std::function<bool(const topology::Node&)> in_scope;
  std::function<bool(const topology::PortRef&)> read_port;
  // Switch ports once seen up: read while they are down, so that a link
  // that went down keeps its series.
  const std::set<topology::PortRef>* remembered = nullptr;
  // A node as logs name it (its name as last seen, else its GUID), and a
  // port: "name[port]".
  std::function<std::string(std::uint64_t)> name_of;
  std::function<std::string(const topology::PortRef&)> describe;
};

// What one run says.
struct Outcome {
  bool ok = true;
  std::vector<std::string> problems;  // one line each; the scheduler logs them
  bool rediscover = false;            // the view cannot be trusted: walk everything next cycle
  bool again = false;                 // kDiscovery: run again at the next sweep
};

// What a kSweep collector wants in the sweep's one batch: the counter
// reads of ports (port_counters), and reads of its own, each a part of the
// batch (batch.h) that the collector owns and keeps until its Update reads
// what the part took in. Adding such a read changes nothing outside the
// collector: the scheduler runs every part in the same batch.
struct SweepPlan {
  std::vector<SweepTarget> counters;
  std::vector<BatchPart*> parts;  // borrowed until the collector's Update
};

// An analysis a kDiscovery collector keeps: a re-walk puts it off to the
// next sweep (on a large fabric it is seconds of CPU, and several traps in
// a row need it once); any other run makes it when what it analyzes changed
// or it was put off.
class PendingAnalysis {
 public:
  // Whether to analyze now; `changed`: what it analyzes changed in this run.
  bool Due(const Cycle& cycle, bool changed) {
    pending_ = pending_ || changed || cycle.trigger == Trigger::kRewalk;
    if (!pending_ || cycle.trigger == Trigger::kRewalk) return false;
    pending_ = false;
    return true;
  }
  // Put off: the collector asks to run again (Outcome::again).
  bool pending() const { return pending_; }

 private:
  bool pending_ = false;
};

// Logs each finding as "topology finding" (after a full walk).
void LogFindings(Logger& log, const std::vector<topology::Finding>& findings);

// Called with each metric family as soon as it is complete, or with
// consecutive parts of one (render.h FamilyParts): a family of the name of
// the one just emitted continues it.
using Emit = std::function<void(prometheus::MetricFamily&&)>;

class Collector {
 public:
  virtual ~Collector() = default;
  virtual Schedule schedule() const = 0;
  // Adds what it reads in the sweep's batch (kSweep collectors).
  virtual void Plan(const Cycle&, SweepPlan*) {}
  virtual Outcome Update(const Cycle& cycle) = 0;
  // Puts its immutable part into `parts` (shared pointers or copies: never
  // changed after).
  virtual void Publish(Snapshot* parts) const = 0;
  // What must survive a re-exec of the exporter for what it exports to stay
  // continuous (totals it keeps beyond the counter store's), as JSON its
  // factory reads back from CollectorOptions::restored under its name;
  // nothing by default. A factory given what it cannot read starts afresh.
  virtual std::optional<nlohmann::json> Saved() const { return std::nullopt; }
};

}  // namespace ibfabric::collectors
