#pragma once
// Everything one publication of the exporter knows: the fabric as last
// discovered, every port's totals, and the exporter's own health. Built by
// the sweeping thread, then shared read-only (std::shared_ptr<const Snapshot>).

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <typeindex>
#include <typeinfo>
#include <vector>

#include "collectors/health/alerts.h"
#include "collectors/health/counter_store.h"
#include "collectors/health/link_health.h"
#include "collectors/health/subnet_managers.h"
#include "collectors/reads/counters.h"
#include "collectors/reads/sweep.h"
#include "topology/analysis.h"
#include "topology/fabric.h"
#include "topology/hosts.h"
#include "topology/partitions.h"
#include "topology/routing.h"
#include "topology/scope.h"
#include "transport/attributes.h"
#include "transport/mad_engine.h"

namespace ibfabric::collectors {

// How a node is labelled, kept for every node ever seen so that a port whose
// node vanished keeps its series under the same labels.
struct NodeLabel {
  topology::NodeKind kind = topology::NodeKind::kUnknown;
  std::string name;  // topology::NodeName: as operators say it, a shared one with its GUID
  // A CA's port GUIDs as last seen, by port number: its series' `guid`
  // (treydock/infiniband_exporter names an HCA port by its port GUID).
  std::map<std::uint8_t, std::uint64_t> port_guids;
};
using NodeLabels = std::map<std::uint64_t, NodeLabel>;  // by node GUID
// Each node's kind and name (topology::NodeName; a hand-made snapshot's labels).
inline std::shared_ptr<const NodeLabels> LabelsOf(const topology::Fabric& fabric) {
  auto labels = std::make_shared<NodeLabels>();
  for (const auto& n : fabric.nodes()) (*labels)[n.guid] = {n.kind, topology::NodeName(fabric, n.guid), {}};
  return labels;
}

// One device's last collection, in treydock/infiniband_exporter's shape:
// a switch (port 0 of its PortRef), or one HCA port.
struct CollectHealth {
  bool up = false;       // the last sweep read its counters
  bool error = false;    // a read answered with an error status
  bool timeout = false;  // a read got no answer
  double seconds = 0;    // from its first read sent to its last outcome
};

// Freshness of one node's data.
struct NodeHealth {
  // Its ports' counters are read (it has been a sweep target); a node only
  // asked for other things (the local node's PortInfo) has no health of
  // its own to state.
  bool counted = false;
  bool stale = false;          // no port of the node answered the last sweep
  std::uint64_t failures = 0;  // sweeps in which no port of the node answered
  std::chrono::system_clock::time_point last_success{};
  // The sweeps' MADs to the node in this half of the window and the one
  // before: how far its readings can be trusted.
  MadTally mads_now, mads_before;
  // The fraction of those that needed a retry or got no answer (0 when none asked).
  double MadTroubleRatio() const {
    const double asked = mads_now.asked + mads_before.asked;
    return asked > 0 ? (mads_now.troubled + mads_before.troubled) / asked : 0;
  }
};

struct PhaseHealth {
  bool ran = false;
  bool success = false;
  double duration_seconds = 0;  // of the last run
  double total_seconds = 0;     // of every run: a slow run stays visible to rate()
};

// Where the last full discovery spent its time: the walk (NodeInfo,
// NodeDescription, PortInfo: what ibnetdiscover does), the tables read
// after it (the discovery collectors that sent MADs: ClassPortInfo,
// forwarding and P_Key tables, AdaptiveRoutingInfo) and the analyses
// (those that sent none: tiers, wiring, the cables' view).
struct DiscoveryPhases {
  bool ran = false;
  double walk_seconds = 0;
  double tables_seconds = 0;
  double analysis_seconds = 0;
};

// Link health and alerts as of one sweep.
struct HealthReport {
  std::vector<CableSummary> cables;  // the cables this exporter reads an end of
  std::deque<FabricEvent> events;    // link downs that were no flap, oldest first
  std::map<DownKind, std::uint64_t> event_counts;
  std::vector<Alert> active;   // by severity, cause, cable
  std::vector<Alert> cleared;  // newest first
  std::map<Cause, std::uint64_t> raised;
  std::chrono::milliseconds window{};
  // The congestion trees of this sweep, raised or not yet (alerts.h).
  std::vector<CongestionReport> congestion;
};

// The parts of collectors that no other code needs a field of the Snapshot
// for: each under its collector's name, of the type the collector's header
// declares. A collector publishes its own without editing this file (Set
// in its Publish); whoever reads one names the collector and the type, and
// gets null when the collector is off, has published nothing yet, or
// published another type.
class CollectorParts {
 public:
  template <typename T>
  void Set(std::string_view collector, std::shared_ptr<const T> part) {
    Slot& slot = parts_[std::string(collector)];
    slot.type = typeid(T);
    slot.part = std::move(part);
  }
  template <typename T>
  std::shared_ptr<const T> Share(std::string_view collector) const {
    const auto it = parts_.find(collector);
    if (it == parts_.end() || it->second.type != typeid(T)) return nullptr;
    return std::static_pointer_cast<const T>(it->second.part);
  }
  template <typename T>
  const T* Get(std::string_view collector) const {
    return Share<T>(collector).get();
  }

 private:
  struct Slot {
    std::type_index type = typeid(void);
    std::shared_ptr<const void> part;
  };
  std::map<std::string, Slot, std::less<>> parts_;
};

// The scheduler's parts (the fabric, its walks, the MAD engine) and each
// collector's (collectors/registry.h; a collector disabled leaves its part
// empty or null).
// The local port MADs leave from (transport/umad_port.h): the device of
// its GMPs and that of its SMPs (another on a multi-plane HCA: its SMI
// sub-device), its subnet prefix, and the agents it could not register
// (transport::AgentName: "smp_lid", "smp_directed", "perf", "sa"). Empty
// `ca`: not known (tests on a fake port).
struct LocalPortSummary {
  std::string ca;
  int port = 0;
  std::string smi_ca;
  int smi_port = 0;
  std::uint64_t subnet_prefix = 0;
  std::vector<std::string> agents_missing;
  int plane = 0;  // a multi-plane HCA's plane read (0: none)
  // In local scope, the host's other Active ports on this fabric whose
  // cables the last walk could not read ("ca/port": no SA to name their
  // far ends, no answer by LID; topology::DiscoverOptions::host_ports).
  std::vector<std::string> unread_ports;
  // Whether the MAD agent of a class (transport::AgentName: "vendor", ...)
  // was registered.
  bool has_agent(std::string_view name) const {
    return std::find(agents_missing.begin(), agents_missing.end(), name) == agents_missing.end();
  }
};

struct Snapshot {
  std::shared_ptr<const topology::Fabric> fabric;  // never null once published
  // Every node ever seen; shared with the tracker, which makes a new map
  // when a walk changes it.
  std::shared_ptr<const NodeLabels> nodes = std::make_shared<const NodeLabels>();
  // fat_tree: the tree analysis of `fabric` with the plan diff; null before a discovery.
  std::shared_ptr<const topology::Analysis> topology;
  // fat_tree: hosts grouped from the CAs' descriptions and, on a
  // rail-optimized fabric, their rails and units (its findings are in
  // `topology`'s); null before a discovery.
  std::shared_ptr<const topology::HostAnalysis> hosts;
  std::shared_ptr<const topology::RoutingAnalysis> routing;  // routing; null: tables not read
  // routing: every switch's forwarding table read so far (congestion
  // trees follow them); null or empty where routing does not run.
  std::shared_ptr<const topology::ForwardingTables> forwarding;
  // port_counters: every port's totals, shared with the collector's store
  // (collectors/health/counter_store.h); never null.
  std::shared_ptr<const PortTable> ports = std::make_shared<const PortTable>();
  // port_counters: PortVLXmitWaitCounters totals of the ports read for
  // them (those whose PortXmitWait moved); never null.
  std::shared_ptr<const VlWaitTable> vl_xmit_wait = std::make_shared<const VlWaitTable>();
  // The groups of per-port series exported (--counters.groups; with "auto"
  // as the fabric's size decides).
  PortGroups port_groups = PortGroups().set();
  // Shared: each is copied once a publication, not once a snapshot (at 32k
  // GPUs, some 35k nodes: tens of MB in all). Never null.
  std::shared_ptr<const std::map<std::uint64_t, NodeHealth>> node_health =
      std::make_shared<const std::map<std::uint64_t, NodeHealth>>();  // every node ever read
  std::size_t targets = 0;                                            // ports read in the last sweep
  std::size_t failed_ports = 0;                                       // of which did not answer
  std::uint64_t counter_clears = 0;                                   // ports whose counters this exporter cleared
  // Readings no link can produce, not folded in, by Implausible reason
  // (counter_store.h).
  std::array<std::uint64_t, kImplausibleCount> readings_rejected{};
  // The last sweep, per switch and HCA port.
  std::shared_ptr<const std::map<topology::PortRef, CollectHealth>> collect =
      std::make_shared<const std::map<topology::PortRef, CollectHealth>>();
  std::chrono::system_clock::time_point last_sweep{};  // end of the last sweep, good or not
  // capabilities: ClassPortInfo of the nodes that answered.
  std::shared_ptr<const std::map<std::uint64_t, PmaCapabilities>> pma =
      std::make_shared<const std::map<std::uint64_t, PmaCapabilities>>();
  // capabilities: NVIDIA's vendor GeneralInfo of the NVIDIA nodes that
  // answered it (access_register false also where the class or attribute
  // is not supported); absent: not known (yet).
  std::shared_ptr<const std::map<std::uint64_t, transport::GeneralInfo>> vendor =
      std::make_shared<const std::map<std::uint64_t, transport::GeneralInfo>>();
  std::shared_ptr<const HealthReport> health;  // link_health: null before the first sweep
  // The collectors' parts that have no field above, by collector:
  // partitions (topology::PartitionAnalysis: null where the tables were not read).
  CollectorParts by_collector;
  std::shared_ptr<const SmReport> subnet_managers;  // subnet_managers: null when this exporter does not watch SMs
  std::vector<std::string> collectors;              // the collectors on, in registry order
  std::map<std::string, PhaseHealth> runs;          // collector -> its last run
  transport::EngineStats mad;
  PhaseHealth discovery;
  DiscoveryPhases discovery_phases;  // of the last full walk
  double sweep_seconds = 0;          // the last sweep's batch of reads
  // MADs of the last discovery (graph, tables, capabilities) and of the last
  // sweep (counters, link states, LID checks, SMs, clearing), by kind.
  transport::KindCounts discovery_mads{};
  transport::KindCounts sweep_mads{};
  topology::Scope scope;  // which ports this exporter reads
  // The ports it reads (in scope, or switch ports once seen up there);
  // null when it reads every port. Facts about a port, a switch or an HCA
  // come from one exporter only (collectors/framework/render.h Owns*).
  std::shared_ptr<const std::set<topology::PortRef>> read_ports;
  std::uint64_t sweeps = 0;
  std::uint64_t discoveries = 0;  // full walks
  std::uint64_t rewalks = 0;      // incremental discoveries (topology/discovery.h Rediscover)
  // Cumulative MADs by phase ("discovery": full walks, "rewalk", "sweep",
  // "trap": re-reads of the ports traps named), by kind.
  std::map<std::string, transport::KindCounts> phase_mads;
  std::map<std::uint16_t, std::uint64_t> traps;      // trap number -> Reports received
  std::map<std::uint16_t, bool> trap_subscriptions;  // trap number -> the SA accepted it
  // Whether the accepted subscription brings Reports (nullopt: not known
  // yet; exporter/trap_subscription.h).
  std::optional<bool> traps_delivering;
  std::uint64_t lid_moves = 0;                           // nodes found answering under another LID
  std::chrono::system_clock::time_point last_success{};  // end of the last good sweep
  std::chrono::system_clock::time_point published{};
  std::size_t discovery_unanswered = 0;      // what the last full walk got no answer to (merged from the one before)
  std::uint64_t incomplete_discoveries = 0;  // full walks that missed answers
  // The fabric drops this exporter's SMPs while answering its GMPs (M_Key
  // protection without the right key; exporter/smp_watch.h), at how many
  // LIDs, and whether a key was given (never which).
  bool smps_blocked = false;
  std::size_t smp_blocked_lids = 0;
  bool m_key_given = false;
  LocalPortSummary local;
  // HTTP replies with a status of 400 or more since start, by status (as of
  // this publication; exporter/http_stats.h).
  std::map<int, std::uint64_t> http_errors;
  bool http_known = true;  // false: this snapshot carries no HTTP counts (another fabric's does)
  // The metrics exposition of this snapshot, rendered once when it is
  // published straight into gzip (exporter/gzip.h), and kept only so: a
  // gzip scrape is served these bytes, a plain one streams them inflated.
  std::string exposition_gz;
  std::size_t exposition_bytes = 0;  // the text's size

  bool Enabled(std::string_view collector) const {
    return std::find(collectors.begin(), collectors.end(), collector) != collectors.end();
  }
};

}  // namespace ibfabric::collectors
