#include "collectors/port_counters_collector.h"

#include <algorithm>
#include <array>
#include <optional>
#include <set>
#include <vector>

#include "collectors/framework/render.h"
#include "collectors/health/counter_store.h"

namespace ibfabric::collectors {
namespace {

using prometheus::MetricType;
using topology::NodeKind;

// An optional attribute (a breakdown of a counter, IBTA 16.1.4) is read
// where the PMA has it, and only when it can have moved: the first time,
// and in the sweep after the counter it breaks down moved or while that is
// pinned. On a quiet fabric it costs nothing per sweep.
class OptionalRead {
 public:
  // `never`: the port has not answered it yet.
  bool Due(const topology::PortRef& port, bool never) const {
    if (unsupported_.count(port.node_guid)) return false;
    return never || due_.count(port) > 0;
  }
  void Note(const topology::PortRef& port, DetailsRead read, bool moved) {
    if (read == DetailsRead::kUnsupported) unsupported_.insert(port.node_guid);
    if (moved || read == DetailsRead::kLost) {
      due_.insert(port);
    } else if (read == DetailsRead::kRead) {
      due_.erase(port);
    }
  }

 private:
  std::set<std::uint64_t> unsupported_;  // nodes whose PMA answered it with an error status
  std::set<topology::PortRef> due_;      // ports to ask next sweep
};

class PortCountersCollector final : public Collector {
 public:
  explicit PortCountersCollector(const CollectorOptions& o)
      : clear_threshold_percent_(o.clear_threshold_percent), window_(o.alerts.window) {
    store_.Restore(o.restored_ports);
  }

  Schedule schedule() const override { return Schedule::kSweep; }

  void Plan(const Cycle& cycle, SweepPlan* plan) override {
    // What each PMA supports decides what is asked (capabilities' part).
    auto targets = SweepTargets(*cycle.fabric, *cycle.remembered, *cycle.parts->pma);
    std::erase_if(targets, [&](const SweepTarget& t) { return !cycle.read_port(t.port); });
    // The ports of the congestion trees link_health found last sweep.
    std::set<topology::PortRef> congested;
    if (cycle.parts->health) {
      for (const CongestionReport& c : cycle.parts->health->congestion) {
        congested.insert(c.tree.root);
        congested.insert(c.tree.victims.begin(), c.tree.victims.end());
      }
    }
    std::erase_if(waits_by_value_, [&](std::uint64_t g) { return !cycle.fabric->FindNode(g); });
    for (SweepTarget& t : targets) {
      // PortXmitWait is read wherever it has been seen filled, whatever
      // ClassPortInfo claims (mlx5 HCAs fill it without the bit).
      if (waits_by_value_.count(t.port.node_guid)) t.caps.mask |= transport::pma_cap::kXmitWait;
      const auto it = store_.ports().find(t.port);
      const PortTotals* totals = it == store_.ports().end() ? nullptr : &it->second;
      auto never = [&](Counter c) { return !totals || !totals->present.test(Index(c)); };
      t.rcv_error_details = rcv_details_.Due(t.port, never(Counter::kLocalPhysicalErrors));
      t.xmit_discard_details = discard_details_.Due(t.port, never(Counter::kInactiveDiscards));
      // The per-VL form of PortXmitWait, which tells the congested service
      // level: from the ports of a congestion tree only, where the PMA has
      // PortXmitWait (a busy fabric's ports all wait a little: asking every
      // one whose PortXmitWait moved would double the sweep's PMA reads).
      t.vl_xmit_wait = t.caps.XmitWait() && congested.count(t.port) && vl_wait_.Due(t.port, true);
    }
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
    std::map<std::uint64_t, bool> node_ok;    // node -> any of its ports answered
    std::vector<topology::PortRef> targeted;  // sorted below
    targeted.reserve(sweep.readings.size());
    store_.Expect(sweep.readings.size());
    std::set<topology::PortRef> rejected;  // this sweep's rejected readings: nothing of them is cleared
    const double since_last_sweep =
        last_sweep_steady_ ? std::chrono::duration<double>(cycle.now - *last_sweep_steady_).count() : 0;
    last_sweep_steady_ = cycle.now;
    for (const auto& r : sweep.readings) {
      targeted.push_back(r.target.port);
      bool& ok = node_ok[r.target.port.node_guid];
      const std::optional<PortSample> sample = sweep.SampleOf(r);
      if (!sample) {
        store_.MarkStale(r.target.port);
        continue;
      }
      ok = true;
      if (!r.target.caps.XmitWait() && sample->present.test(Index(Counter::kXmitWait))) {
        waits_by_value_.insert(r.target.port.node_guid);  // counted though its PMA does not say so
      }
      const auto before = store_.ports().find(r.target.port);
      const bool known = before != store_.ports().end();
      const auto total = [&](Counter c) { return known ? before->second.Total(Index(c)) : 0; };
      const std::uint64_t rcv_errors = total(Counter::kRcvErrors), discards = total(Counter::kXmitDiscards);
      const topology::Node* node = cycle.fabric->FindNode(r.target.port.node_guid);
      PortLimits limits = LimitsOf(node ? node->FindPort(r.target.port.port) : nullptr);
      limits.seconds_at_least = since_last_sweep;
      const Folded folded = store_.Update(r.target.port, *sample, cycle.wall, &limits);
      if (folded.rejected) {
        Rejected(r.target.port, *folded.rejected, folded.counter, cycle);
        rejected.insert(r.target.port);
      }
      const PortTotals& now = *folded.totals;
      // Whether a counter moved since the last reading (or sits pinned,
      // where its moves cannot be seen).
      auto moved = [&](Counter c, std::uint64_t was) { return now.Total(Index(c)) != was || now.Pinned(Index(c)); };
      rcv_details_.Note(r.target.port, r.details, moved(Counter::kRcvErrors, rcv_errors));
      discard_details_.Note(r.target.port, r.discard_details, moved(Counter::kXmitDiscards, discards));
      vl_wait_.Note(r.target.port, r.vl_wait, false);
    }
    store_.Commit();  // the ports read for the first time
    if (!sweep.vl_xmit_wait.empty()) AddVlWait(sweep);
    // A node that did not answer is stale, unless the exporter is cut off
    // (its own link down, or nothing answered): then the down link, or the
    // exporter's own stale sweeps, are the news (the nodes keep their state).
    for (const auto& [guid, ok] : node_ok) {
      NodeHealth& h = health_[guid];
      h.counted = true;
      if (ok) {
        h.stale = false;
        h.last_success = cycle.wall;
      } else if (cycle.reaches_fabric) {
        h.stale = true;
        ++h.failures;
      }
    }
    // Ports and nodes read before that are no target now (they vanished).
    std::vector<topology::PortRef> vanished;  // marked after the walk: marking may copy the table
    if (!std::is_sorted(targeted.begin(), targeted.end())) std::sort(targeted.begin(), targeted.end());
    for (const auto& [ref, totals] : store_.ports()) {
      if (!totals.stale && !std::binary_search(targeted.begin(), targeted.end(), ref)) vanished.push_back(ref);
    }
    for (const auto& ref : vanished) store_.MarkStale(ref);
    for (auto& [guid, h] : health_) {
      if (h.counted && !node_ok.count(guid) && cycle.reaches_fabric) h.stale = true;
    }
    Collected(sweep, cycle);
    last_sweep_ = cycle.wall;
    targets_ = sweep.readings.size();
    failed_ports_ = sweep.failed_ports;
    if (clear_threshold_percent_ > 0) Clear(sweep, cycle, rejected);
    out.ok = targets_ > 0 && failed_ports_ < targets_;
    return out;
  }

  void Publish(Snapshot* parts) const override {
    parts->ports = store_.Share();
    parts->node_health = std::make_shared<const std::map<std::uint64_t, NodeHealth>>(health_);
    parts->targets = targets_;
    parts->failed_ports = failed_ports_;
    parts->counter_clears = clears_;
    parts->readings_rejected = rejected_;
    parts->collect = std::make_shared<const std::map<topology::PortRef, CollectHealth>>(collect_);
    parts->last_sweep = last_sweep_;
    parts->vl_xmit_wait = vl_wait_totals_;
  }

 private:
  // Each device's collection this sweep: a switch as a whole, an HCA port
  // by itself (treydock/infiniband_exporter's devices).
  void Collected(const SweepResult& sweep, const Cycle& cycle) {
    // A device read before that is no target now (it stopped answering
    // and a re-walk lost it, or its cable was pulled) stays, down: as
    // infiniband_exporter_node_stale, until the exporter restarts.
    for (auto& [key, c] : collect_) c = CollectHealth{};
    std::map<topology::PortRef, MadSpan> spans;
    for (const auto& r : sweep.readings) {
      const topology::Node* n = cycle.fabric->FindNode(r.target.port.node_guid);
      const bool sw = n != nullptr && n->kind == NodeKind::kSwitch;
      const topology::PortRef key = sw ? topology::PortRef{r.target.port.node_guid, 0} : r.target.port;
      CollectHealth& c = collect_[key];
      c.up |= r.answered();
      c.error |= r.error;
      c.timeout |= r.timeout;
      spans[key].Add(r.span.first, r.span.last);
    }
    for (const auto& [key, span] : spans) collect_[key].seconds = span.seconds();
  }

  // Each port's PortVLXmitWaitCounters as totals across readings.
  void AddVlWait(const SweepResult& sweep) {
    auto totals = std::make_shared<VlWaitTable>(*vl_wait_totals_);
    for (const auto& [port, raw] : sweep.vl_xmit_wait) (*totals)[port].Add(raw);
    vl_wait_totals_ = std::move(totals);
  }

  // A reading no link can produce: counted, and logged once per port.
  void Rejected(const topology::PortRef& port, Implausible why, std::size_t counter, const Cycle& cycle) {
    ++rejected_[static_cast<std::size_t>(why)];
    if (!rejected_logged_.insert(port).second) return;
    cycle.log->Warn(
        "implausible counter reading rejected (logged once per port)",
        "port=\"" + cycle.describe(port) + "\" reason=" + ToString(why) + " counter=" + CounterSpecs()[counter].metric);
  }

  void Clear(const SweepResult& sweep, const Cycle& cycle, const std::set<topology::PortRef>& rejected) {
    std::vector<ClearRequest> reqs;
    for (const auto& r : sweep.readings) {
      const std::optional<PortSample> sample = sweep.SampleOf(r);
      if (!sample || rejected.count(r.target.port)) continue;
      if (auto c = ClearNeeded(r.target, *sample, clear_threshold_percent_)) reqs.push_back(*c);
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
  std::array<std::uint64_t, kImplausibleCount> rejected_{};
  std::set<topology::PortRef> rejected_logged_;
  std::optional<std::chrono::steady_clock::time_point> last_sweep_steady_;
  std::map<topology::PortRef, CollectHealth> collect_;
  std::chrono::system_clock::time_point last_sweep_{};
  // When to ask the optional attributes: PortRcvErrorDetails when
  // PortRcvErrors moved, PortXmitDiscardDetails when PortXmitDiscards
  // did; PortVLXmitWaitCounters of congested ports (and not where a PMA
  // said it lacks it).
  OptionalRead rcv_details_, discard_details_, vl_wait_;
  // Nodes whose PMA lacks the PortXmitWait capability bit but filled the
  // counter: it is theirs from then on, zero included.
  std::set<std::uint64_t> waits_by_value_;
  std::shared_ptr<const VlWaitTable> vl_wait_totals_ = std::make_shared<const VlWaitTable>();
};

}  // namespace

std::unique_ptr<Collector> MakePortCountersCollector(const CollectorOptions& options) {
  return std::make_unique<PortCountersCollector>(options);
}

namespace {

// Each switch's and HCA port's last collection and the sums by kind, in
// treydock/infiniband_exporter's names (its dashboards and alerts use them).
void RenderCollectHealth(const Snapshot& s, const Emit& out) {
  std::map<std::string, std::pair<int, int>> sums{{"hca", {0, 0}}, {"switch", {0, 0}}};  // errors, timeouts
  for (const bool sw : {false, true}) {
    const std::string role = sw ? "switch" : "hca";
    struct Device {
      std::string guid;  // the series'
      const NodeLabel* label;
      const CollectHealth* health;
    };
    std::vector<Device> devices;
    for (const auto& [key, c] : *s.collect) {
      const NodeLabel& label = LabelOf(s, key.node_guid);
      if ((label.kind == NodeKind::kSwitch) != sw) continue;
      if (sw && !OwnsSwitch(s, key.node_guid)) continue;  // its owner reports it
      devices.push_back({topology::FormatGuid(SeriesGuid(key, label)), &label, &c});
      sums[role].first += c.error ? 1 : 0;
      sums[role].second += c.timeout ? 1 : 0;
    }
    // One family after the other (FamilyParts).
    const auto family = [&](const std::string& name, const std::string& help, bool named,
                            double (*value)(const CollectHealth&)) {
      FamilyParts f(out, "infiniband_" + role + "_" + name, help, MetricType::Gauge);
      for (const Device& d : devices) {
        if (named) {
          f.Add({{"guid", d.guid}, {role, d.label->name}}, value(*d.health));
        } else {
          f.Add({{"collector", role}, {"guid", d.guid}}, value(*d.health));
        }
      }
      f.Finish();
    };
    family("up", "1 when the last sweep read the " + role + "'s counters", true,
           [](const CollectHealth& c) { return c.up ? 1.0 : 0.0; });
    family("collect_error", "1 when a counter read of the last sweep answered with an error status", false,
           [](const CollectHealth& c) { return c.error ? 1.0 : 0.0; });
    family("collect_timeout", "1 when a counter read of the last sweep got no answer", false,
           [](const CollectHealth& c) { return c.timeout ? 1.0 : 0.0; });
    family("collect_duration_seconds", "From the first counter read sent to the last answer, in the last sweep", false,
           [](const CollectHealth& c) { return c.seconds; });
  }
  if (s.last_sweep == std::chrono::system_clock::time_point{}) return;
  auto rejected = Family("infiniband_exporter_readings_rejected_total",
                         "Counter readings no link can produce, not folded into any total, rate or alert, by reason",
                         MetricType::Counter);
  for (std::size_t r = 0; r < kImplausibleCount; ++r) {
    Add(rejected, {{"reason", ToString(static_cast<Implausible>(r))}}, static_cast<double>(s.readings_rejected[r]));
  }
  out(std::move(rejected));
  auto errors =
      Family("infiniband_exporter_collect_errors",
             "Devices whose counter reads answered with an error status in the last sweep", MetricType::Gauge);
  auto timeouts = Family("infiniband_exporter_collect_timeouts",
                         "Devices whose counter reads got no answer in the last sweep", MetricType::Gauge);
  for (const auto& [role, n] : sums) {
    Add(errors, {{"collector", role}}, n.first);
    Add(timeouts, {{"collector", role}}, n.second);
  }
  out(std::move(errors));
  out(std::move(timeouts));
  EmitOne(out, "infiniband_exporter_last_execution", "End of the last sweep (Unix seconds), good or not",
          MetricType::Gauge, Seconds(s.last_sweep));
}

}  // namespace

// One family per (role, counter), built and emitted one at a time, so that
// memory holds a single family and not the whole exposition's worth.
void RenderPortCounters(const Snapshot& s, const Emit& out) {
  const auto& specs = CounterSpecs();
  for (const bool sw : {false, true}) {
    const std::string role = sw ? "switch" : "hca";
    auto mine = [&](std::uint64_t guid) { return (LabelOf(s, guid).kind == NodeKind::kSwitch) == sw; };
    for (std::size_t i = 0; i < kCounterCount; ++i) {
      if (!Has(s.port_groups, GroupOf(static_cast<Counter>(i)))) continue;  // left out (--counters.groups)
      FamilyParts f(out, "infiniband_" + role + "_port_" + specs[i].metric + "_total",
                    "InfiniBand " + role + " port " + specs[i].ibta_name, MetricType::Counter);
      for (const auto& [ref, totals] : *s.ports) {
        if (!mine(ref.node_guid) || !totals.present.test(i)) continue;  // never read: absent, not 0
        f.Add(PortLabels(ref, LabelOf(s, ref.node_guid)),
              static_cast<double>(totals.Total(i)) * static_cast<double>(specs[i].scale));
      }
      f.Finish();
    }
    if (Has(s.port_groups, PortGroup::kCongestion)) {
      // Read only from the ports of congestion trees: every VL of those.
      FamilyParts vl(
          out, "infiniband_" + role + "_port_transmit_wait_vl_total",
          "InfiniBand " + role + " port PortVLXmitWait: PortXmitWait by virtual lane (PortVLXmitWaitCounters)",
          MetricType::Counter);
      for (const auto& [ref, totals] : *s.vl_xmit_wait) {
        if (!mine(ref.node_guid)) continue;
        for (std::size_t v = 0; v < transport::kVlCount; ++v) {
          auto labels = PortLabels(ref, LabelOf(s, ref.node_guid));
          labels.push_back({"vl", std::to_string(v)});
          vl.Add(std::move(labels), static_cast<double>(totals.total[v]));
        }
      }
      vl.Finish();
    }
    // Sticky counters stopped at their maximum: the total is a lower bound.
    FamilyParts pinned(out, "infiniband_" + role + "_port_pinned_counters",
                       "Raw counters of the port stopped at their maximum (totals are lower bounds)",
                       MetricType::Gauge);
    for (const auto& [ref, totals] : *s.ports) {
      if (!mine(ref.node_guid)) continue;
      int count = 0;
      for (std::size_t i = 0; i < kCounterCount; ++i) count += totals.Pinned(i) ? 1 : 0;
      pinned.Add(PortLabels(ref, LabelOf(s, ref.node_guid)), count);
    }
    pinned.Finish();
    FamilyParts which(out, "infiniband_" + role + "_port_counter_pinned",
                      "1 for each raw counter of the port stopped at its maximum", MetricType::Gauge);
    for (const auto& [ref, totals] : *s.ports) {
      if (!mine(ref.node_guid)) continue;
      for (std::size_t i = 0; i < kCounterCount; ++i) {
        if (!totals.Pinned(i)) continue;
        auto labels = PortLabels(ref, LabelOf(s, ref.node_guid));
        labels.push_back({"counter", specs[i].metric});
        which.Add(std::move(labels), 1);
      }
    }
    which.Finish();
  }
  RenderCollectHealth(s, out);
}

CollectorInfo PortCountersCollectorInfo() {
  return {
      .name = "port_counters",
      .help = "PortCounters and PortCountersExtended of every port, each sweep.",
      .make = MakePortCountersCollector,
      .render = RenderPortCounters,
      .reads = {"capabilities"},
      .reads_samples = true,
  };
}

}  // namespace ibfabric::collectors
