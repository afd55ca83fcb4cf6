#include "collectors/fat_tree_collector.h"

#include "collectors/framework/render.h"
#include "collectors/parts/partitions.h"
#include "topology/findings.h"

namespace ibfabric::collectors {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricType;
using topology::FormatGuid;

class FatTreeCollector final : public Collector {
 public:
  FatTreeCollector(std::optional<topology::CablingPlan> plan, std::optional<topology::HostPattern> pattern)
      : plan_(std::move(plan)), pattern_(pattern ? std::move(*pattern) : topology::HostPattern{}) {}

  Schedule schedule() const override { return Schedule::kDiscovery; }

  Outcome Update(const Cycle& cycle) override {
    Outcome out;
    if (analysis_due_.Due(cycle, cycle.trigger == Trigger::kFullWalk)) {
      auto hosts = std::make_shared<topology::HostAnalysis>();
      analysis_ = std::make_shared<topology::Analysis>(Analyze(*cycle.fabric, cycle.scope, hosts.get()));
      hosts_ = std::move(hosts);
      if (cycle.trigger == Trigger::kFullWalk && cycle.scope.reports_topology()) {
        if (!analysis_->is_tree) cycle.log->Warn("topology", "not_a_tree=\"" + analysis_->not_tree_reason + "\"");
        LogFindings(*cycle.log, analysis_->findings);
      }
    }
    out.again = analysis_due_.pending();
    return out;
  }

  void Publish(Snapshot* parts) const override {
    parts->topology = analysis_;
    parts->hosts = hosts_;
  }

 private:
  // topology::AnalyzeWiring: what the offline analysis prints too.
  topology::Analysis Analyze(const topology::Fabric& fabric, const topology::Scope& scope,
                             topology::HostAnalysis* hosts) const {
    if (scope.kind == topology::ScopeKind::kLocal) {
      // Its own host by name (the host view, its series' `host`); rail
      // findings need the whole fabric and are never a local exporter's.
      *hosts = topology::AnalyzeHosts(fabric, pattern_);
      hosts->findings.clear();
    }
    if (!scope.reports_topology()) return {};
    return topology::AnalyzeWiring(fabric, pattern_, plan_ ? &*plan_ : nullptr, hosts);
  }

  std::optional<topology::CablingPlan> plan_;
  topology::HostPattern pattern_;
  PendingAnalysis analysis_due_;
  std::shared_ptr<const topology::Analysis> analysis_;
  std::shared_ptr<const topology::HostAnalysis> hosts_;
};

// Hosts and rails: the layout recognised, each host, each HCA port's rail.
void RenderHosts(const Snapshot& s, const Emit& out) {
  if (!s.hosts) return;
  const topology::HostAnalysis& h = *s.hosts;
  const topology::Fabric& f = *s.fabric;
  const auto unit = [&h](int u) { return u < 0 ? std::string() : h.units[static_cast<std::size_t>(u)]; };
  auto layout = Family("infiniband_host_layout_info",
                       "1, labelled with how hosts are cabled (rail_optimized, host_per_leaf, single_hca, mixed, "
                       "no_hosts), and the rails and scalable units found",
                       MetricType::Gauge);
  Add(layout,
      {{"layout", topology::ToString(h.layout)},
       {"rails", std::to_string(h.rails.size())},
       {"units", std::to_string(h.units.size())}},
      1);
  out(std::move(layout));
  auto info =
      Family("infiniband_host_info", "1 for each host, its HCAs grouped by node description", MetricType::Gauge);
  auto rail = Family("infiniband_hca_rail_info",
                     "1 for each cabled HCA port of a host: its device, the leaf port it reaches, its rail and unit",
                     MetricType::Gauge);
  for (const topology::Host& host : h.hosts) {
    Add(info, {{"host", host.name}, {"hcas", std::to_string(host.hcas.size())}, {"unit", unit(host.unit)}}, 1);
    for (const topology::Hca& x : host.hcas) {
      for (const topology::HcaPort& p : x.ports) {
        Add(rail,
            {{"host", host.name},
             {"hca", topology::NodeName(f, x.guid)},
             {"device", x.device},
             {"port", std::to_string(p.port)},
             {"leaf", topology::NodeName(f, p.leaf.node_guid)},
             {"leaf_port", std::to_string(p.leaf.port)},
             {"rail", p.rail < 0 ? "" : h.rails[static_cast<std::size_t>(p.rail)]},
             {"unit", h.leaf_unit.count(p.leaf.node_guid) ? unit(h.leaf_unit.at(p.leaf.node_guid)) : ""}},
            1);
      }
    }
  }
  EmitNonEmpty(out, info);
  EmitNonEmpty(out, rail);
}

}  // namespace

std::unique_ptr<Collector> MakeFatTreeCollector(const CollectorOptions& options) {
  return std::make_unique<FatTreeCollector>(options.plan, options.host_pattern);
}

void RenderFatTree(const Snapshot& s, const Emit& out) {
  // A local exporter, or a shard other than the first, reports no fabric-wide
  // topology (see topology/scope.h): its analysis would be partial or a copy.
  if (!s.topology || !s.fabric || !s.scope.reports_topology()) return;
  const topology::Analysis& a = *s.topology;
  const topology::Fabric& f = *s.fabric;
  auto name = [&f](std::uint64_t guid) { return topology::NodeName(f, guid); };

  EmitOne(out, "infiniband_topology_is_tree",
          "1 when the fabric ranks as a fat tree (else see infiniband_topology_finding)", MetricType::Gauge,
          a.is_tree ? 1 : 0);
  EmitOne(out, "infiniband_topology_tiers", "Switch tiers found", MetricType::Gauge, a.tiers);

  // Every pass's findings: the tree's, the plan's, routing's, partitions'.
  const std::vector<topology::Finding> findings =
      topology::AllFindings(a, s.routing.get(), s.by_collector.Get<topology::PartitionAnalysis>(kPartitionsCollector));
  auto by_kind = Family("infiniband_topology_findings",
                        "Topology findings of the last discovery, by kind; level: information (no fault), warning, "
                        "miswiring or missing_cable (a cable alert too)",
                        MetricType::Gauge);
  std::map<topology::FindingKind, int> count;
  for (const auto& x : findings) ++count[x.kind];
  for (topology::FindingKind k : topology::kAllFindingKinds) {
    Add(by_kind, {{"kind", topology::ToString(k)}, {"level", topology::ToString(topology::LevelOf(k))}}, count[k]);
  }
  out(std::move(by_kind));
  // With a plan: what it has as its design (topology::AnalyzeWiring).
  auto accepted = Family("infiniband_topology_findings_accepted",
                         "Findings of the fat tree's or the rails' pattern that the cabling plan has as its design, "
                         "by kind: they raise nothing",
                         MetricType::Gauge);
  std::map<topology::FindingKind, int> accepted_count;
  for (const auto& x : a.accepted) ++accepted_count[x.kind];
  for (const auto& [k, n] : accepted_count) Add(accepted, {{"kind", topology::ToString(k)}}, n);
  EmitNonEmpty(out, accepted);
  // One series per finding, named by node and port, for alerts that say where.
  auto each = Family("infiniband_topology_finding", "1 for each topology finding, where it is", MetricType::Gauge);
  for (const auto& x : findings) {
    Add(each,
        {{"kind", topology::ToString(x.kind)},
         {"node", x.a      ? name(x.a->node_guid)
                  : x.node ? name(x.node)
                           : ""},
         {"port", x.a ? std::to_string(x.a->port) : ""},
         {"remote_node", x.b ? name(x.b->node_guid) : ""},
         {"remote_port", x.b ? std::to_string(x.b->port) : ""}},
        1);
  }
  EmitNonEmpty(out, each);

  auto degraded = Family("infiniband_link_degraded",
                         "1 for each link running below what both its ends allow (reason below_enabled) or below the "
                         "cabling plan's rate (plan_rate_mismatch)",
                         MetricType::Gauge);
  for (const auto& [l, why] : a.degraded) {
    auto labels = CableLabels(s, l);
    labels.push_back({"reason", topology::ToString(why)});
    Add(degraded, std::move(labels), 1);
  }
  EmitNonEmpty(out, degraded);

  auto tier =
      Family("infiniband_switch_tier", "Tier of the switch, from 0 at the leaves (-1: not ranked)", MetricType::Gauge);
  auto up = Family("infiniband_switch_uplinks", "Links from the switch to the tier above", MetricType::Gauge);
  auto down = Family("infiniband_switch_downlinks", "Links from the switch to the tier below (CA links not counted)",
                     MetricType::Gauge);
  auto blocking = Family("infiniband_leaf_blocking_factor",
                         "Down bandwidth over up bandwidth of a leaf (1: non-blocking, 2: 2:1)", MetricType::Gauge);
  for (const auto& [guid, sw] : a.switches) {
    const std::vector<ClientMetric::Label> labels{{"guid", FormatGuid(guid)}, {"switch", name(guid)}};
    auto with_tier = labels;
    with_tier.push_back({"tier", topology::TierName(sw.tier)});
    Add(tier, with_tier, sw.tier);
    Add(up, labels, sw.up_links);
    Add(down, labels, sw.down_links);
    if (auto bf = topology::BlockingFactor(sw)) Add(blocking, labels, *bf);
  }
  for (auto* fam : {&tier, &up, &down, &blocking}) out(std::move(*fam));

  RenderHosts(s, out);

  // Gb/s of data to bytes/s: 1e9 / 8.
  EmitOne(out, "infiniband_topology_bisection_bandwidth_bytes_per_second",
          "Estimated bisection bandwidth: sum over leaves of min(up, down) bandwidth", MetricType::Gauge,
          a.bisection_gbps * 1e9 / 8);
  EmitOne(out, "infiniband_topology_bisection_ratio",
          "Estimated bisection bandwidth over a non-blocking build of the same tiers", MetricType::Gauge,
          a.nonblocking_gbps > 0 ? a.bisection_gbps / a.nonblocking_gbps : 0);
}

CollectorInfo FatTreeCollectorInfo() {
  return {
      .name = "fat_tree",
      .help = "Tiers, wiring faults, asymmetry, degraded links and bisection; the cabling plan diff.",
      .make = MakeFatTreeCollector,
      .render = RenderFatTree,
  };
}

}  // namespace ibfabric::collectors
