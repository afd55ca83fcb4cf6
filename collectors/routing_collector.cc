#include "collectors/routing_collector.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <vector>

#include "collectors/framework/render.h"
#include "collectors/framework/table_retry.h"
#include "collectors/parts/adaptive_routing.h"
#include "topology/adaptive_routing.h"
#include "topology/routing.h"

namespace ibfabric::collectors {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricType;
using topology::FormatGuid;

class RoutingCollector final : public Collector {
 public:
  explicit RoutingCollector(bool from_sa) : from_sa_(from_sa) {}
  Schedule schedule() const override { return Schedule::kDiscovery; }

  Outcome Update(const Cycle& cycle) override {
    Outcome out;
    if (!cycle.scope.reports_topology()) return out;
    // Copied (Mutable) only when a switch is gone: a snapshot shares them.
    std::vector<std::uint64_t> gone = tables_->Switches();
    std::erase_if(gone, [&](std::uint64_t g) { return !Gone(cycle, g); });
    if (!gone.empty()) {
      topology::ForwardingTables& tables = Mutable();
      for (std::uint64_t g : gone) tables.Erase(g);
      std::erase_if(sa_switches_, [&](std::uint64_t g) { return Gone(cycle, g); });
    }
    // An SA that did not answer is asked again at the next full walk.
    if (cycle.trigger == Trigger::kFullWalk) sa_silent_ = false;
    std::set<std::uint64_t> read;
    bool read_any = false;
    for (std::uint64_t g : NodesToRead(cycle, &retry_)) {
      const topology::Node* n = cycle.fabric->FindNode(g);
      if (n && n->kind == topology::NodeKind::kSwitch && n->lid != 0) read.insert(g);
    }
    if (!read.empty()) {
      // The forwarding tables of these switches (all at a full walk); a
      // re-walk keeps the others'.
      const auto& info = cycle.reads->SwitchInfo(*cycle.fabric, &read, &out.problems);
      const auto read_start = std::chrono::steady_clock::now();
      topology::TableSource source;
      if (from_sa_ && !sa_silent_) source.sa_lid = cycle.sa_lid;
      auto lft = topology::ReadForwardingTables(topology::Part(*cycle.fabric, read), info, *cycle.engine, source);
      out.problems.insert(out.problems.end(), lft.problems.begin(), lft.problems.end());
      if (lft.sa_queries > 0 && !lft.sa_answered) {
        sa_silent_ = true;
        // Said once while it stays so (each full walk asks again).
        const std::string why = "the SA at LID " + std::to_string(source.sa_lid) +
                                " gave no LinearForwardingTableRecords: every table read from its switch until the "
                                "next full walk";
        if (sa_said_silent_) {
          cycle.log->Debug("routing tables", "why=\"" + why + "\"");
        } else {
          out.problems.push_back(why);
        }
        sa_said_silent_ = true;
      } else if (lft.sa_answered) {
        sa_said_silent_ = false;
      }
      // Where each table held now came from (a switch that gave none keeps
      // its old table and its old source).
      for (std::uint64_t g : read) {
        if (lft.from_sa.count(g)) {
          sa_switches_.insert(g);
        } else if (lft.tables.Has(g)) {
          sa_switches_.erase(g);
        }
      }
      read_any = !lft.tables.empty();
      if (read_any) {
        // The tables just read, and the others as they were: new tables,
        // so that a full walk copies none of the old ones a snapshot holds.
        auto tables = std::make_shared<topology::ForwardingTables>(std::move(lft.tables));
        tables->Merge(*tables_);  // keeps the new ones
        tables->Compact();
        tables_ = std::move(tables);
      }
      retry_.Note(*cycle.fabric, read, [&](const topology::Node& n) { return !tables_->Has(n.guid); });
      cycle.log->Debug(
          "routing tables read",
          "switches=" + std::to_string(read.size()) + " from_sa=" + std::to_string(lft.from_sa.size()) +
              " sa_queries=" + std::to_string(lft.sa_queries) + " smps=" + std::to_string(lft.smps) +
              " distinct_blocks=" + std::to_string(tables_->distinct_blocks()) +
              " table_bytes=" + std::to_string(tables_->bytes()) + " seconds=" +
              std::to_string(std::chrono::duration<double>(std::chrono::steady_clock::now() - read_start).count()));
    }
    // Where the tables held now came from (after the gone were dropped and
    // the new read).
    auto sources = std::make_shared<TableSources>();
    for (std::uint64_t guid : tables_->Switches()) ++(sa_switches_.count(guid) ? sources->sa : sources->switches);
    sources_ = std::move(sources);
    // Switches that route adaptively: their tables are fallbacks. One that
    // answered after the walk changes the analysis too (the scheduler runs
    // this again whenever adaptive_routing ran again).
    const auto* ar = cycle.parts->by_collector.Get<topology::AdaptiveSwitches>(kAdaptiveRoutingCollector);
    std::set<std::uint64_t> adaptive = ar ? topology::AdaptiveOn(*ar) : std::set<std::uint64_t>{};
    const bool adaptive_changed = adaptive != adaptive_;
    if (analysis_due_.Due(cycle, !read.empty() || (adaptive_changed && analysis_))) {
      // The tiers are fat_tree's; without it, ranked here.
      std::optional<topology::Analysis> own;
      const topology::Analysis& tree =
          cycle.parts->topology ? *cycle.parts->topology : own.emplace(topology::Analyze(*cycle.fabric));
      const auto analysis_start = std::chrono::steady_clock::now();
      analysis_ = std::make_shared<topology::RoutingAnalysis>(
          topology::AnalyzeRouting(*cycle.fabric, *tables_, tree, adaptive));
      cycle.log->Debug(
          "routing analyzed",
          "routes=" + std::to_string(analysis_->routes_traced) + " seconds=" +
              std::to_string(std::chrono::duration<double>(std::chrono::steady_clock::now() - analysis_start).count()));
      adaptive_ = std::move(adaptive);
      if (cycle.trigger == Trigger::kFullWalk) LogFindings(*cycle.log, analysis_->findings);
    }
    out.again = retry_.pending() || analysis_due_.pending();
    out.ok = health_.Judge(cycle, !read.empty(), read_any);
    return out;
  }

  void Publish(Snapshot* parts) const override {
    parts->routing = analysis_;
    parts->forwarding = tables_;
    parts->by_collector.Set<TableSources>(kRoutingCollector, sources_);
  }

 private:
  // The tables to change: a copy first while a snapshot shares them (at
  // 16k hosts they are tens of MB; they change only at discovery).
  topology::ForwardingTables& Mutable() {
    if (tables_.use_count() > 1) tables_ = std::make_shared<topology::ForwardingTables>(*tables_);
    return *tables_;
  }

  const bool from_sa_;                   // --routing.tables=sa
  bool sa_silent_ = false;               // the SA gave no records this walk
  bool sa_said_silent_ = false;          // and that was logged
  std::set<std::uint64_t> sa_switches_;  // the switches whose table came from the SA
  std::shared_ptr<const TableSources> sources_ = std::make_shared<TableSources>();  // of tables_, as last read
  std::shared_ptr<topology::ForwardingTables> tables_ = std::make_shared<topology::ForwardingTables>();
  TableRetry retry_;
  TablePhaseHealth health_;
  PendingAnalysis analysis_due_;
  std::shared_ptr<const topology::RoutingAnalysis> analysis_;
  std::set<std::uint64_t> adaptive_;  // the switches with AR on that analysis_ knew of
};

}  // namespace

std::unique_ptr<Collector> MakeRoutingCollector(const CollectorOptions& options) {
  return std::make_unique<RoutingCollector>(options.Get<RoutingOptions>().tables_from_sa);
}

void RenderRouting(const Snapshot& s, const Emit& out) {
  if (!s.routing || !s.fabric || !s.scope.reports_topology()) return;
  const topology::RoutingAnalysis& a = *s.routing;
  const topology::Fabric& f = *s.fabric;
  auto dests = Family("infiniband_routing_port_destinations",
                      "CA LIDs the switch's forwarding table sends out of each uplink (leaves) or downlink (above)",
                      MetricType::Gauge);
  auto spread = Family("infiniband_routing_spread",
                       "Most minus fewest destinations over the switch's uplinks (leaves) or downlinks (above)",
                       MetricType::Gauge);
  auto ratio =
      Family("infiniband_routing_max_min_ratio",
             "Most over fewest destinations over those ports (absent when a port carries none)", MetricType::Gauge);
  auto unrouted = Family("infiniband_routing_unrouted_destinations",
                         "CA LIDs the switch cannot forward (LFT holes, 0xFF, down ports)", MetricType::Gauge);
  int adaptive = 0;
  for (const auto& [guid, r] : a.switches) {
    const std::vector<ClientMetric::Label> labels{{"guid", FormatGuid(guid)}, {"switch", topology::NodeName(f, guid)}};
    Add(unrouted, labels, r.unrouted);
    // Adaptive routing on: the table is no picture of where traffic goes.
    if (r.adaptive) {
      ++adaptive;
      continue;
    }
    for (const auto& [port, n] : r.destinations) {
      auto l = labels;
      l.push_back({"port", std::to_string(port)});
      l.push_back({"direction", r.direction});
      Add(dests, l, n);
    }
    if (!r.destinations.empty()) Add(spread, labels, r.spread);
    if (r.max_min_ratio) Add(ratio, labels, *r.max_min_ratio);
  }
  for (auto* family : {&dests, &spread, &ratio, &unrouted}) EmitNonEmpty(out, *family);
  const topology::RoutingTotals totals = topology::SummarizeRouting(a);
  EmitOne(out, "infiniband_routing_fabric_max_spread",
          "Fabric-wide: the largest spread of destinations over any switch's uplinks or downlinks", MetricType::Gauge,
          totals.max_spread);
  if (totals.worst_max_min_ratio) {
    EmitOne(out, "infiniband_routing_fabric_max_min_ratio",
            "Fabric-wide: the largest most-over-fewest destinations ratio of any switch", MetricType::Gauge,
            *totals.worst_max_min_ratio);
  }
  // Only where adaptive routing was looked for: 0 must mean none found.
  if (s.by_collector.Get<topology::AdaptiveSwitches>(kAdaptiveRoutingCollector)) {
    EmitOne(out, "infiniband_routing_adaptive_switches",
            "Switches whose balance is withheld: adaptive routing is on there, their forwarding table is only its "
            "fallback (infiniband_switch_adaptive_routing_enabled)",
            MetricType::Gauge, adaptive);
  }
  if (const auto* sources = s.by_collector.Get<TableSources>(kRoutingCollector)) {
    auto from = Family("infiniband_routing_tables",
                       "Switches whose forwarding table is held, by where it was read: sa (the SA's "
                       "LinearForwardingTableRecords, the SM's copy) or switch (its own blocks)",
                       MetricType::Gauge);
    Add(from, {{"source", "sa"}}, static_cast<double>(sources->sa));
    Add(from, {{"source", "switch"}}, static_cast<double>(sources->switches));
    out(std::move(from));
  }
  EmitOne(out, "infiniband_routing_down_up_routes",
          "Leaf-to-CA routes that go down a tier and up again, or never arrive", MetricType::Gauge, a.down_up_routes);
}

CollectorInfo RoutingCollectorInfo() {
  return {
      .name = "routing",
      .help = "The switches' forwarding tables: balance, unrouted destinations, down-up routes.",
      .make = MakeRoutingCollector,
      .render = RenderRouting,
      .reads = {"fat_tree", "adaptive_routing"},
      .after_publication = true,
      .flags = {{"routing.tables",
                 "Where the switches' forwarding tables are read: sa (each switch's LinearForwardingTableRecords from "
                 "the SA, the subnet manager's copy of what it programmed, one query a switch; a switch the SA has no "
                 "whole table of is read itself) or switches (every block from each switch: what the switch holds, "
                 "even where it is not what the SM set).",
                 "SOURCE",
                 [](CollectorOptions& o, const std::string& v) {
                   return FromSaValue(v, &o.Own<RoutingOptions>().tables_from_sa);
                 }}},
  };
}

}  // namespace ibfabric::collectors
