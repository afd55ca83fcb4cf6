#include "collectors/port_counters_collector.h"

#include "collectors/counter_store.h"
#include "collectors/render.h"

namespace ibfabric::collectors {
namespace {

using prometheus::MetricType;
using topology::NodeKind;

class PortCountersCollector final : public Collector {
 public:
  explicit PortCountersCollector(const CollectorOptions& o)
      : clear_threshold_percent_(o.clear_threshold_percent), window_(o.alerts.window) {
    store_.Restore(o.restored_ports);
  }

  Schedule schedule() const override { return Schedule::kSweep; }

  void Plan(const Cycle& cycle, SweepPlan* plan) override {
    // What each PMA supports decides what is asked (capabilities' part).
    auto targets = SweepTargets(*cycle.fabric, *cycle.remembered, cycle.parts->pma);
    std::erase_if(targets, [&](const SweepTarget& t) { return !cycle.read_port(t.port); });
    plan->counters = std::move(targets);
  }

  Outcome Update(const Cycle& cycle) override {
    Outcome out;
    if (cycle.trigger != Trigger::kSweep) return out;  // a trap's re-read has no counters
    const SweepResult& sweep = *cycle.sweep;
    // What the MADs to each node went through, over two halves of the window.
    if (cycle.now - mad_half_start_ >= window_ / 2) {
      for (auto& [guid, h] : health_) {
        h.mads_before = h.mads_now;
        h.mads_now = {};
      }
      mad_half_start_ = cycle.now;
    }
    for (const auto& [guid, t] : sweep.mads) health_[guid].mads_now += t;
    std::map<std::uint64_t, bool> node_ok;  // node -> any of its ports answered
    std::set<topology::PortRef> targeted;
    for (const auto& r : sweep.readings) {
      targeted.insert(r.target.port);
      bool& ok = node_ok[r.target.port.node_guid];
      if (!r.sample) {
        store_.MarkStale(r.target.port);
        continue;
      }
      ok = true;
      store_.Update(r.target.port, *r.sample, cycle.wall);
    }
    for (const auto& [guid, ok] : node_ok) {
      NodeHealth& h = health_[guid];
      h.stale = !ok;
      if (ok) {
        h.last_success = cycle.wall;
      } else {
        ++h.failures;
      }
    }
    // Ports and nodes read before that are no target now (they vanished).
    for (const auto& [ref, totals] : store_.ports()) {
      if (!targeted.count(ref)) store_.MarkStale(ref);
    }
    for (auto& [guid, h] : health_) {
      if (!node_ok.count(guid)) h.stale = true;
    }
    targets_ = sweep.readings.size();
    failed_ports_ = sweep.failed_ports;
    if (clear_threshold_percent_ > 0) Clear(sweep, cycle);
    out.ok = targets_ > 0 && failed_ports_ < targets_;
    return out;
  }

  void Publish(Snapshot* parts) const override {
    parts->ports = store_.ports();
    parts->node_health = health_;
    parts->targets = targets_;
    parts->failed_ports = failed_ports_;
    parts->counter_clears = clears_;
  }

 private:
  void Clear(const SweepResult& sweep, const Cycle& cycle) {
    std::vector<ClearRequest> reqs;
    for (const auto& r : sweep.readings) {
      if (!r.sample) continue;
      if (auto c = ClearNeeded(r.target, *r.sample, clear_threshold_percent_)) reqs.push_back(*c);
    }
    if (reqs.empty()) return;
    const auto ok = ClearCounters(reqs, *cycle.engine);
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      if (!ok[i]) continue;
      store_.NoteCleared(reqs[i].target.port, reqs[i].counters);
      ++clears_;
    }
    cycle.log->Info("cleared counters near their maximum", "ports=" + std::to_string(reqs.size()));
  }

  int clear_threshold_percent_;
  std::chrono::milliseconds window_;
  CounterStore store_;
  std::map<std::uint64_t, NodeHealth> health_;
  std::chrono::steady_clock::time_point mad_half_start_{};
  std::size_t targets_ = 0;
  std::size_t failed_ports_ = 0;
  std::uint64_t clears_ = 0;
};

}  // namespace

std::unique_ptr<Collector> MakePortCountersCollector(const CollectorOptions& options) {
  return std::make_unique<PortCountersCollector>(options);
}

// One family per (role, counter), built and emitted one at a time, so that
// memory holds a single family and not the whole exposition's worth.
void RenderPortCounters(const Snapshot& s, const Emit& out) {
  const auto& specs = CounterSpecs();
  for (const bool sw : {false, true}) {
    const std::string role = sw ? "switch" : "hca";
    auto mine = [&](std::uint64_t guid) { return (LabelOf(s, guid).kind == NodeKind::kSwitch) == sw; };
    for (std::size_t i = 0; i < kCounterCount; ++i) {
      auto f = Family("infiniband_" + role + "_port_" + specs[i].metric + "_total",
                      "InfiniBand " + role + " port " + specs[i].ibta_name, MetricType::Counter);
      for (const auto& [ref, totals] : s.ports) {
        if (!mine(ref.node_guid) || !totals.present.test(i)) continue;  // never read: absent, not 0
        Add(f, PortLabels(ref, LabelOf(s, ref.node_guid)),
            static_cast<double>(totals.total[i]) * static_cast<double>(specs[i].scale));
      }
      EmitNonEmpty(out, f);
    }
    // Sticky counters stopped at their maximum: the total is a lower bound.
    auto pinned =
        Family("infiniband_" + role + "_port_pinned_counters",
               "Raw counters of the port stopped at their maximum (totals are lower bounds)", MetricType::Gauge);
    auto which = Family("infiniband_" + role + "_port_counter_pinned",
                        "1 for each raw counter of the port stopped at its maximum", MetricType::Gauge);
    for (const auto& [ref, totals] : s.ports) {
      if (!mine(ref.node_guid)) continue;
      const auto labels = PortLabels(ref, LabelOf(s, ref.node_guid));
      int count = 0;
      for (std::size_t i = 0; i < kCounterCount; ++i) {
        if (!totals.Pinned(i)) continue;
        ++count;
        auto with = labels;
        with.push_back({"counter", specs[i].metric});
        Add(which, std::move(with), 1);
      }
      Add(pinned, labels, count);
    }
    EmitNonEmpty(out, pinned);
    EmitNonEmpty(out, which);
  }
}

}  // namespace ibfabric::collectors
