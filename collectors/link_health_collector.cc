#include "collectors/link_health_collector.h"

#include "collectors/framework/render.h"
#include "collectors/health/alerts.h"
#include "collectors/health/link_health.h"
#include "collectors/parts/adaptive_routing.h"
#include "collectors/parts/fec.h"
#include "collectors/parts/xmit_wait_tick.h"
#include "collectors/reads/batch.h"
#include "topology/adaptive_routing.h"

namespace ibfabric::collectors {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricType;
using topology::FormatGuid;

class LinkHealthCollector final : public Collector {
 public:
  explicit LinkHealthCollector(const AlertConfig& alerts)
      : window_(alerts.window), link_health_({alerts.window}), alerts_(alerts) {
    unread_.multiplier = alerts.xmit_wait_tick_multiplier;
  }

  Schedule schedule() const override { return Schedule::kSweep; }

  Outcome Update(const Cycle& cycle) override {
    const SweepResult& sweep = *cycle.sweep;
    // How long a PortXmitWait count lasts: by each device's Tick where
    // xmit_wait_tick read it, else as if it had not been read.
    const auto* read = cycle.parts->by_collector.Get<XmitWaitTicks>(kXmitWaitTickCollector);
    const XmitWaitTicks& ticks = read ? *read : unread_;
    const WaitCountSeconds wait_count = [&](const topology::Node& n, const topology::Port& p) {
      return ticks.CountSeconds(n, p);
    };
    link_health_.Observe(*cycle.fabric, cycle.parts->topology.get(), *cycle.parts->ports, sweep.links, cycle.now,
                         cycle.wall, /*counters_read=*/!sweep.readings.empty(), wait_count);
    auto report = std::make_shared<HealthReport>();
    report->events = link_health_.Events();
    report->event_counts = link_health_.EventCounts();
    LogEvents(*report, cycle);
    // The cables this exporter reads an end of: in a sharded or local
    // deployment each cable is judged (and its link_up stated) once, by
    // the exporter that reads it, not by every exporter whose walk saw it.
    // Judged a part at a time, each cable whole only while its part is
    // (at 32k GPUs all at once were 68 MiB); the report keeps less of each.
    const FecEnds fec(cycle);
    std::vector<CableHealth> part;
    const auto judge = [&] {
      fec.Add(cycle.now, &part);
      alerts_.Judge(part, cycle.describe);
      for (const CableHealth& c : part) report->cables.emplace_back(c);
      part.clear();
    };
    report->cables.reserve(link_health_.cables());
    alerts_.Begin(cycle.wall);
    link_health_.ForEachCable([&](CableHealth&& c) {
      if (cycle.read_port && !cycle.read_port(c.cable.a) && !cycle.read_port(c.cable.b)) return;
      part.push_back(std::move(c));
      if (part.size() == kCablesAPart) judge();
    });
    judge();
    report->cables.shrink_to_fit();  // a shard keeps its share
    // Congestion trees follow the forwarding tables; where adaptive routing
    // is on they say the tables are static.
    const auto* ar = cycle.parts->by_collector.Get<topology::AdaptiveSwitches>(kAdaptiveRoutingCollector);
    const std::set<std::uint64_t> adaptive = ar ? topology::AdaptiveOn(*ar) : std::set<std::uint64_t>{};
    alerts_.Finish(cycle.parts->topology.get(), cycle.wall, cycle.describe, cycle.fabric, cycle.parts->forwarding.get(),
                   &adaptive);
    report->congestion = alerts_.Congestion();
    report->active = alerts_.Active();
    report->cleared.assign(alerts_.Cleared().begin(), alerts_.Cleared().end());
    report->raised = alerts_.Raised();
    report->window = window_;
    LogTransitions(*report, *cycle.log);
    report_ = std::move(report);
    return {};
  }

  void Publish(Snapshot* parts) const override { parts->health = report_; }

 private:
  static constexpr std::size_t kCablesAPart = 4096;

  // Each end's FEC ratios, where the fec collector read them: a ratio it
  // does not have now, or a reading older than two intervals (its reads
  // stopped answering, or stopped), is unknown: by it the end is judged
  // neither clean nor bad.
  class FecEnds {
   public:
    explicit FecEnds(const Cycle& cycle) {
      const auto* fec = cycle.parts->by_collector.Get<FecReadings>(kFecCollector);
      if (!fec) return;
      for (const FecPort& f : *fec->ports) {
        if (f.counted) by_port_[f.port] = &f;
      }
      stale_after_ = IntervalShare::StaleAfter(fec->interval);
    }
    void Add(std::chrono::steady_clock::time_point now, std::vector<CableHealth>* cables) const {
      if (by_port_.empty()) return;
      for (CableHealth& c : *cables) {
        for (EndRates* end : {&c.a, &c.b}) Add(now, end);
      }
    }

   private:
    void Add(std::chrono::steady_clock::time_point now, EndRates* end) const {
      const auto it = by_port_.find(end->port);
      if (it == by_port_.end()) return;
      const FecPort& f = *it->second;
      const bool stale = now - f.read_at > stale_after_;
      end->raw_unknown = stale || !f.raw_ber;
      end->effective_unknown = stale || !f.effective_ber;
      if (stale) return;
      end->raw_bit_error_ratio = f.raw_ber;
      end->effective_bit_error_ratio = f.effective_ber;
      end->fec_window_seconds = f.window_seconds;
      end->fec_mode = f.mode_known ? std::optional(f.mode) : std::nullopt;
      end->worst_lane = f.worst_lane;
      end->raw_bit_error_ratio_baseline = f.raw_ber_baseline;
      end->baseline_parts = f.baseline_parts;
      end->baseline_seconds = f.baseline_seconds;
    }

    std::map<topology::PortRef, const FecPort*> by_port_;
    std::chrono::milliseconds stale_after_{};
  };

  // Link downs that were no flap, as they are first told apart.
  void LogEvents(const HealthReport& report, const Cycle& cycle) {
    std::uint64_t events = 0;
    for (const auto& [kind, n] : report.event_counts) events += n;
    const auto fresh = static_cast<std::size_t>(std::min<std::uint64_t>(events - events_logged_, report.events.size()));
    for (auto it = report.events.end() - static_cast<std::ptrdiff_t>(fresh); it != report.events.end(); ++it) {
      cycle.log->Warn("link down explained", std::string("kind=") + ToString(it->kind) + " node=\"" +
                                                 cycle.name_of(it->node_guid) +
                                                 "\" links=" + std::to_string(it->links));
    }
    events_logged_ = events;
  }

  // Alerts raised and cleared since the last report.
  void LogTransitions(const HealthReport& report, Logger& log) const {
    auto key = [](const Alert& a) { return std::make_pair(a.cable, a.cause); };
    std::set<std::pair<topology::Link, Cause>> before, after;
    if (report_) {
      for (const auto& a : report_->active) before.insert(key(a));
    }
    for (const auto& a : report.active) {
      after.insert(key(a));
      if (!before.count(key(a))) {
        log.Warn("alert raised", std::string("cause=") + ToString(a.cause) + " severity=" + ToString(a.severity) +
                                     " summary=\"" + a.summary + "\"");
      }
    }
    if (report_) {
      for (const auto& a : report_->active) {
        if (!after.count(key(a))) {
          log.Info("alert cleared", std::string("cause=") + ToString(a.cause) + " summary=\"" + a.summary + "\"");
        }
      }
    }
  }

  std::chrono::milliseconds window_;
  XmitWaitTicks unread_;  // no Tick read (xmit_wait_tick off): the alerts config's multiplier, if any
  LinkHealth link_health_;
  AlertEngine alerts_;
  std::shared_ptr<const HealthReport> report_;
  std::uint64_t events_logged_ = 0;  // link-health events already logged
};

// The congestion trees of the last sweep: each root with its victims and
// depth, and each congested port's part in its tree.
void RenderCongestion(const Snapshot& s, const Emit& out) {
  const HealthReport& h = *s.health;
  auto roots = Family("infiniband_congestion_root",
                      "1 for each port at the root of a congestion tree (its transmit waits and none of the ports "
                      "its traffic goes on to does), with what is behind it and the tree's size",
                      MetricType::Gauge);
  auto victims = Family("infiniband_congestion_root_victims",
                        "Congested ports waiting behind this root (by the forwarding tables)", MetricType::Gauge);
  auto depth =
      Family("infiniband_congestion_root_depth", "The most hops from a victim to this root", MetricType::Gauge);
  auto role = Family("infiniband_port_congestion_role",
                     "1 for each congested port: role root (the cause) or victim (waits behind root_guid:root_port)",
                     MetricType::Gauge);
  for (const CongestionReport& c : h.congestion) {
    const topology::CongestionTree& t = c.tree;
    // The root's cable, root first; its far end empty when not known.
    const topology::Port* p = s.fabric->FindPort(t.root);
    const bool known = p && p->remote;
    auto labels = known ? CableLabels(s, {t.root, *p->remote}) : EndLabels(s, t.root);
    if (!known) {
      for (const char* remote : {"remote_guid", "remote_node", "remote_port"}) labels.push_back({remote, ""});
    }
    labels.push_back({"loop", t.loop ? "true" : "false"});
    Add(roots, std::move(labels), 1);
    Add(victims, EndLabels(s, t.root), static_cast<double>(t.victims.size()));
    Add(depth, EndLabels(s, t.root), t.depth);
    const auto add_role = [&](const topology::PortRef& port, const char* what) {
      auto l = EndLabels(s, port);
      l.push_back({"role", what});
      l.push_back({"root_guid", FormatGuid(t.root.node_guid)});
      l.push_back({"root_port", std::to_string(t.root.port)});
      Add(role, std::move(l), 1);
    };
    add_role(t.root, "root");
    for (const topology::PortRef& v : t.victims) add_role(v, "victim");
  }
  EmitNonEmpty(out, roots);
  EmitNonEmpty(out, victims);
  EmitNonEmpty(out, depth);
  EmitNonEmpty(out, role);
  EmitOne(out, "infiniband_congestion_trees", "Congestion trees in the fabric as of the last sweep", MetricType::Gauge,
          static_cast<double>(h.congestion.size()));
}

}  // namespace

std::unique_ptr<Collector> MakeLinkHealthCollector(const CollectorOptions& options) {
  return std::make_unique<LinkHealthCollector>(options.alerts);
}

void RenderLinkHealth(const Snapshot& s, const Emit& out) {
  if (!s.health || !s.fabric) return;
  const HealthReport& h = *s.health;
  std::size_t unreachable = 0;
  {
    FamilyParts up(out, "infiniband_link_up",
                   "1 while the cable's link is up; 0 for a cable seen up before that is down now", MetricType::Gauge);
    for (const CableSummary& c : h.cables) {
      up.Add(CableLabels(s, c.cable), c.up ? 1 : 0);
      unreachable += c.reachable ? 0 : 1;
    }
    up.Finish();
  }
  FamilyParts downs(out, "infiniband_link_down_events_total",
                    "Times the cable went down (flaps, host resets, switch reboots, ports disabled): "
                    "LinkDownedCounter increments and Down states PortInfo read, each event once",
                    MetricType::Counter);
  for (const CableSummary& c : h.cables) downs.Add(CableLabels(s, c.cable), static_cast<double>(c.downs_total));
  downs.Finish();
  EmitOne(out, "infiniband_exporter_unreachable_links",
          "Cables neither end of which can be read or is known to discovery (state unknown, not down)",
          MetricType::Gauge, static_cast<double>(unreachable));
  auto events = Family("infiniband_link_down_explained_total",
                       "Link-down events that were no flap, by what they were: host_reset (the host's counters "
                       "restarted), switch_reboot (nearly every cable of one switch), port_disabled (on purpose)",
                       MetricType::Counter);
  for (DownKind k : {DownKind::kHostReset, DownKind::kSwitchReboot, DownKind::kPortDisabled}) {
    auto it = h.event_counts.find(k);
    Add(events, {{"kind", ToString(k)}}, it == h.event_counts.end() ? 0 : static_cast<double>(it->second));
  }
  out(std::move(events));

  // Per end of each cable, over the link-health window: what dashboards
  // and rules need without knowing each link's symbol time.
  const auto per_end = [&](const char* name, const char* help, std::optional<double> (EndSummary::*value)() const) {
    FamilyParts f(out, name, help, MetricType::Gauge);
    for (const CableSummary& c : h.cables) {
      for (const auto& [port, end] : {std::pair{c.cable.a, &c.a}, std::pair{c.cable.b, &c.b}}) {
        if (const std::optional<double> v = (end->*value)()) f.Add(EndLabels(s, port), *v);
      }
    }
    f.Finish();
  };
  per_end("infiniband_port_transmit_wait_ratio",
          "Fraction of the window the port had data to send but no credits (PortXmitWait counts times how long "
          "one lasts on that device at the link's speed)",
          &EndSummary::xmit_wait_fraction);
  per_end("infiniband_port_bit_error_ratio",
          "Estimated bit error ratio of what the port received over the window (symbol errors over the bits its "
          "link carried: the signalling rate times the window)",
          &EndSummary::bit_error_rate);

  RenderCongestion(s, out);

  auto active = Family("infiniband_alert_active", "1 for each active alert, on its cable, with cause and severity",
                       MetricType::Gauge);
  std::map<std::pair<Cause, Severity>, int> count;
  for (const Alert& a : h.active) {
    auto labels = CableLabels(s, a.cable);
    labels.insert(labels.begin(), {{"cause", ToString(a.cause)}, {"severity", ToString(a.severity)}});
    Add(active, std::move(labels), 1);
    ++count[{a.cause, a.severity}];
  }
  EmitNonEmpty(out, active);
  auto counts = Family("infiniband_alerts", "Active alerts by cause and severity", MetricType::Gauge);
  auto raised = Family("infiniband_alerts_raised_total", "Alerts raised since the exporter started, by cause",
                       MetricType::Counter);
  for (Cause c : kAllCauses) {
    for (Severity sev : {Severity::kWarning, Severity::kCritical}) {
      Add(counts, {{"cause", ToString(c)}, {"severity", ToString(sev)}}, count[{c, sev}]);
    }
    auto it = h.raised.find(c);
    Add(raised, {{"cause", ToString(c)}}, it == h.raised.end() ? 0 : static_cast<double>(it->second));
  }
  out(std::move(counts));
  out(std::move(raised));
}

CollectorInfo LinkHealthCollectorInfo() {
  return {
      .name = "link_health",
      .help = "Link state, flaps and error rates per cable, and the alerts they raise.",
      .make = MakeLinkHealthCollector,
      .render = RenderLinkHealth,
      .reads = {"port_counters", "fat_tree", "adaptive_routing", "routing", "xmit_wait_tick", "fec"},
  };
}

}  // namespace ibfabric::collectors
