#include "collectors/adaptive_routing_collector.h"

#include "collectors/framework/render.h"
#include "collectors/framework/table_retry.h"
#include "topology/adaptive_routing.h"

namespace ibfabric::collectors {
namespace {

using prometheus::MetricType;

class AdaptiveRoutingCollector final : public Collector {
 public:
  Schedule schedule() const override { return Schedule::kDiscovery; }

  Outcome Update(const Cycle& cycle) override {
    Outcome out;
    if (!cycle.scope.reports_topology()) return out;
    topology::AdaptiveSwitches now = *switches_;
    DropGone(cycle, &now, [](std::uint64_t g) { return g; });
    std::set<std::uint64_t> read;
    for (std::uint64_t g : NodesToRead(cycle, &retry_)) {
      const topology::Node* n = cycle.fabric->FindNode(g);
      if (n && topology::AsksAdaptiveRouting(*n)) read.insert(g);
    }
    bool read_any = false;
    if (!read.empty()) {
      auto got = topology::ReadAdaptiveRouting(topology::Part(*cycle.fabric, read), *cycle.engine);
      out.problems.insert(out.problems.end(), got.problems.begin(), got.problems.end());
      // What is asked again is as it answers now: one that does not is
      // unknown (absent) until it does, and asked again.
      for (std::uint64_t g : read) now.erase(g);
      for (const auto& [g, a] : got.switches) now[g] = a;
      read_any = !got.switches.empty();
      retry_.Note(*cycle.fabric, read, [&](const topology::Node& n) { return !now.count(n.guid); });
    }
    if (now != *switches_) switches_ = std::make_shared<const topology::AdaptiveSwitches>(std::move(now));
    out.again = retry_.pending();
    out.ok = health_.Judge(cycle, !read.empty(), read_any);
    return out;
  }

  void Publish(Snapshot* parts) const override { parts->by_collector.Set(kAdaptiveRoutingCollector, switches_); }

 private:
  std::shared_ptr<const topology::AdaptiveSwitches> switches_ = std::make_shared<const topology::AdaptiveSwitches>();
  TableRetry retry_;
  TablePhaseHealth health_;
};

}  // namespace

std::unique_ptr<Collector> MakeAdaptiveRoutingCollector(const CollectorOptions&) {
  return std::make_unique<AdaptiveRoutingCollector>();
}

void RenderAdaptiveRouting(const Snapshot& s, const Emit& out) {
  const auto* switches = s.by_collector.Get<topology::AdaptiveSwitches>(kAdaptiveRoutingCollector);
  if (!switches || !s.fabric || !s.scope.reports_topology()) return;
  auto enabled = Family("infiniband_switch_adaptive_routing_enabled",
                        "NVIDIA adaptive routing on the switch (AdaptiveRoutingInfo, SMP 0xFF20): 1 on, its "
                        "forwarding table then only a fallback; 0 supported but off",
                        MetricType::Gauge);
  for (const auto& [guid, a] : *switches) {
    if (a == topology::AdaptiveRouting::kUnsupported) continue;
    Add(enabled, {{"guid", topology::FormatGuid(guid)}, {"switch", topology::NodeName(*s.fabric, guid)}},
        a == topology::AdaptiveRouting::kOn ? 1 : 0);
  }
  EmitNonEmpty(out, enabled);
}

CollectorInfo AdaptiveRoutingCollectorInfo() {
  return {
      .name = "adaptive_routing",
      .help = "NVIDIA switches' AdaptiveRoutingInfo: where the forwarding tables are only a fallback.",
      .make = MakeAdaptiveRoutingCollector,
      .render = RenderAdaptiveRouting,
      .after_publication = true,
  };
}

}  // namespace ibfabric::collectors
