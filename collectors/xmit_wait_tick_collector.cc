#include "collectors/xmit_wait_tick_collector.h"

#include <algorithm>
#include <vector>

#include "collectors/framework/render.h"

namespace ibfabric::collectors {
namespace {

// What one sweep's batch asked and got: PortSamplesControl of each node
// chosen, through one of its ports that counted PortXmitWait.
struct TickRead {
  enum class Got : std::uint8_t { kNothing, kTick, kUnsupported, kFailed };
  std::uint64_t node = 0;
  std::uint16_t lid = 0;
  std::uint8_t port = 0;
  Got got = Got::kNothing;
  std::uint8_t tick = 0;
};
class TickReads final : public ReadList<TickRead> {
 public:
  using Read = TickRead;
  using Got = TickRead::Got;

  void AddRequests(std::vector<transport::MadRequest>* out) override {
    for (const Read& r : reads_) out->push_back(transport::PortSamplesControlQuery(r.lid, r.port));
  }
  std::uint64_t NodeOf(std::size_t i) const override { return reads_[i].node; }
  void Take(std::size_t i, transport::MadResult&& m) override {
    Read& r = reads_[i];
    if (m.outcome == transport::MadOutcome::kOk) {
      r.got = Got::kTick;
      r.tick = transport::DecodePortSamplesControl(m.response).tick;
    } else {
      r.got = transport::Unsupported(m) ? Got::kUnsupported : Got::kFailed;
    }
  }
};

class XmitWaitTickCollector final : public Collector {
 public:
  static constexpr int kTries = 5;  // the first ask and 4 more, 1, 2, 4 and 8 sweeps apart

  XmitWaitTickCollector(std::optional<double> multiplier, std::vector<PortWait> restored) {
    ticks_.multiplier = multiplier;
    ticks_.waits = std::make_shared<const std::vector<PortWait>>(std::move(restored));
    published_ = std::make_shared<const XmitWaitTicks>(ticks_);  // restored seconds, before the first sweep
  }

  Schedule schedule() const override { return Schedule::kSweep; }

  // Each port's seconds and the total they count to: [[guid, port,
  // seconds, counted], ...].
  std::optional<nlohmann::json> Saved() const override {
    nlohmann::json out = nlohmann::json::array();
    for (const PortWait& w : *ticks_.waits) out.push_back({w.port.node_guid, w.port.port, w.seconds, w.counted});
    return out;
  }

  void Plan(const Cycle& cycle, SweepPlan* plan) override {
    ++sweep_;
    std::vector<TickReads::Read> reads;
    std::uint64_t last = 0;
    // Last sweep's totals (port_counters' part); ports in node order.
    for (const auto& [ref, totals] : *cycle.parts->ports) {
      const std::size_t wait = Index(Counter::kXmitWait);
      if (ref.node_guid == last || !totals.present.test(wait) || totals.Total(wait) == 0) continue;
      if (!Due(ref.node_guid)) continue;
      const topology::Node* n = cycle.fabric->FindNode(ref.node_guid);
      const topology::Port* p = cycle.fabric->FindPort(ref);
      const std::uint16_t lid = !n ? 0 : n->kind == topology::NodeKind::kSwitch ? n->lid : p ? p->lid : 0;
      if (lid == 0) continue;
      reads.push_back({ref.node_guid, lid, ref.port});
      last = ref.node_guid;
    }
    if (reads.empty()) return;
    part_.Ask(std::move(reads));
    plan->parts.push_back(&part_);
  }

  Outcome Update(const Cycle& cycle) override {
    Outcome out;
    bool changed = DropGone(*cycle.fabric);
    if (part_.finished()) {
      for (const auto& r : part_.reads()) changed |= Note(r, cycle, &out);
      part_.Ask({});
    }
    changed |= Convert(*cycle.parts->ports, *cycle.fabric, cycle.sweep ? &cycle.sweep->links : nullptr);
    if (changed || !published_) published_ = std::make_shared<const XmitWaitTicks>(ticks_);
    return out;
  }

  void Publish(Snapshot* parts) const override { parts->by_collector.Set(kXmitWaitTickCollector, published_); }

 private:
  struct Hold {
    int tries = 0;
    std::uint64_t next = 0;  // the sweep it may be asked again in
  };

  bool Due(std::uint64_t node) const {
    if (ticks_.tick.count(node) || ticks_.unsupported.count(node)) return false;
    const auto h = holds_.find(node);
    return h == holds_.end() || (h->second.tries < kTries && sweep_ >= h->second.next);
  }

  // Takes one read's answer; true when the published part changes.
  bool Note(const TickReads::Read& r, const Cycle& cycle, Outcome* out) {
    using Got = TickReads::Got;
    switch (r.got) {
      case Got::kNothing: return false;
      case Got::kTick:
        holds_.erase(r.node);
        ticks_.tick[r.node] = r.tick;
        return true;
      case Got::kUnsupported:
        holds_.erase(r.node);
        ticks_.unsupported.insert(r.node);
        return true;
      case Got::kFailed: {
        Hold& h = holds_[r.node];
        h.next = sweep_ + (1ULL << h.tries);
        if (++h.tries == kTries) {
          out->problems.push_back("PortSamplesControl of " + cycle.name_of(r.node) + " did not answer " +
                                  std::to_string(kTries) + " times: its PortXmitWait tick stays unknown");
        }
        return false;
      }
    }
    return false;
  }

  // Whether the length of the node's counts is as good as it gets: its
  // Tick read, or known not to be, or overridden.
  bool Settled(std::uint64_t node) const {
    if (ticks_.multiplier || ticks_.tick.count(node) || ticks_.unsupported.count(node)) return true;
    const auto h = holds_.find(node);
    return h != holds_.end() && h->second.tries >= kTries;
  }

  // Each port's new PortXmitWait counts into seconds, where its node's
  // Tick is settled and its link up (as this sweep's PortInfo `links`
  // read it, else as discovered); true when any port's seconds moved. One
  // pass over the ports and the last waits, both sorted by port.
  bool Convert(const PortTable& ports, const topology::Fabric& fabric,
               const std::map<topology::PortRef, topology::Port>* links) {
    const std::size_t wait = Index(Counter::kXmitWait);
    const std::vector<PortWait>& was = *ticks_.waits;
    auto next = std::make_shared<std::vector<PortWait>>();
    next->reserve(was.size());
    auto old = was.begin();
    for (const auto& [ref, totals] : ports) {
      if (!totals.present.test(wait)) continue;
      while (old != was.end() && old->port < ref) ++old;
      const std::uint64_t total = totals.Total(wait);
      // First read: counts from here on.
      PortWait w = old != was.end() && old->port == ref ? *old : PortWait{ref, 0, total};
      if (total < w.counted) w.counted = total;  // the totals started again: counts from here
      if (total > w.counted && Settled(ref.node_guid)) {
        const topology::Node* n = fabric.FindNode(ref.node_guid);
        const topology::Port* p = nullptr;
        if (links) {
          const auto read = links->find(ref);
          if (read != links->end()) p = &read->second;
        }
        if (!p) p = fabric.FindPort(ref);
        const double length = n && p ? ticks_.CountSeconds(*n, *p) : 0;
        if (length > 0) {  // else not up: converted once it is
          w.seconds += static_cast<double>(total - w.counted) * length;
          w.counted = total;
        }
      }
      next->push_back(w);
    }
    const bool changed = *next != was;
    if (changed) ticks_.waits = std::move(next);
    return changed;
  }

  bool DropGone(const topology::Fabric& fabric) {
    bool changed = false;
    for (auto it = ticks_.tick.begin(); it != ticks_.tick.end();) {
      changed |= !fabric.FindNode(it->first);
      it = fabric.FindNode(it->first) ? std::next(it) : ticks_.tick.erase(it);
    }
    for (auto it = ticks_.unsupported.begin(); it != ticks_.unsupported.end();) {
      changed |= !fabric.FindNode(*it);
      it = fabric.FindNode(*it) ? std::next(it) : ticks_.unsupported.erase(it);
    }
    std::erase_if(holds_, [&](const auto& h) { return !fabric.FindNode(h.first); });
    return changed;
  }

  XmitWaitTicks ticks_;
  std::map<std::uint64_t, Hold> holds_;
  std::uint64_t sweep_ = 0;
  TickReads part_;
  std::shared_ptr<const XmitWaitTicks> published_;
};

}  // namespace

namespace {

// What Saved wrote before a re-exec, by port; nothing where it cannot be
// read (the seconds then count from the first sweep, as on a first start).
std::vector<PortWait> RestoredWaits(const CollectorOptions& options) {
  const auto it = options.restored.find(std::string(kXmitWaitTickCollector));
  if (it == options.restored.end()) return {};
  std::vector<PortWait> out;
  try {
    for (const auto& w : it->second) {
      out.push_back({{w.at(0).get<std::uint64_t>(), w.at(1).get<std::uint8_t>()},
                     w.at(2).get<double>(),
                     w.at(3).get<std::uint64_t>()});
    }
  } catch (const nlohmann::json::exception&) {
    return {};
  }
  std::sort(out.begin(), out.end(), [](const PortWait& a, const PortWait& b) { return a.port < b.port; });
  return out;
}

}  // namespace

std::unique_ptr<Collector> MakeXmitWaitTickCollector(const CollectorOptions& options) {
  return std::make_unique<XmitWaitTickCollector>(options.alerts.xmit_wait_tick_multiplier, RestoredWaits(options));
}

namespace {

// Seconds waited per port: one family per role, as the raw counts'.
void RenderWaitSeconds(const Snapshot& s, const XmitWaitTicks& ticks, const Emit& out) {
  if (!Has(s.port_groups, PortGroup::kCongestion)) return;  // left out (--counters.groups)
  for (const bool sw : {false, true}) {
    const std::string role = sw ? "switch" : "hca";
    FamilyParts f(out, "infiniband_" + role + "_port_transmit_wait_seconds_total",
                  "Time the " + role +
                      " port had data to send and sent none: PortXmitWait counts, each as long as the device's "
                      "PortSamplesControl.Tick and its generation make it (infiniband_node_transmit_wait_unit_info)",
                  prometheus::MetricType::Counter);
    for (const PortWait& w : *ticks.waits) {
      const NodeLabel& label = LabelOf(s, w.port.node_guid);
      if ((label.kind == topology::NodeKind::kSwitch) != sw) continue;
      f.Add(PortLabels(w.port, label), w.seconds);
    }
    f.Finish();
  }
}

// How each node whose ports waited (since the exporter read them) has its
// counts converted.
void RenderWaitUnits(const Snapshot& s, const XmitWaitTicks& ticks, const Emit& out) {
  auto family = Family("infiniband_node_transmit_wait_unit_info",
                       "How the node's PortXmitWait counts become seconds: family (quantum: Tick+1 bytes of the "
                       "port a count; switch-ib and ibta: of one lane), and where Tick came from (device, "
                       "documented for the family, override from the alerts config, or minimum: none known)",
                       prometheus::MetricType::Gauge);
  std::uint64_t last = 0;
  for (const PortWait& w : *ticks.waits) {
    if (w.seconds <= 0 || w.port.node_guid == last) continue;
    last = w.port.node_guid;
    const topology::Node* n = s.fabric->FindNode(w.port.node_guid);
    if (!n || !OwnsNode(s, n->guid)) continue;
    const topology::XmitWaitUnit unit = topology::XmitWaitUnitOf(*n);
    Add(family,
        {{"guid", topology::FormatGuid(n->guid)},
         {"family", unit.family},
         {"counting", unit.counting == topology::WaitCounting::kPort ? "port" : "lane"},
         {"tick_source", topology::ToString(ticks.TickOf(*n).source)}},
        1);
  }
  EmitNonEmpty(out, family);
}

}  // namespace

void RenderXmitWaitTick(const Snapshot& s, const Emit& out) {
  const auto* ticks = s.by_collector.Get<XmitWaitTicks>(kXmitWaitTickCollector);
  if (!ticks) return;
  RenderWaitSeconds(s, *ticks, out);
  RenderWaitUnits(s, *ticks, out);
  if (ticks->tick.empty()) return;
  auto family = Family("infiniband_node_pma_samples_tick",
                       "PMA PortSamplesControl.Tick of the node as it reports it (perfquery -c): one PortXmitWait "
                       "count is Tick+1 bytes of one lane (IBTA 16.1.3.2) or, on Quantum-family switches, of the "
                       "whole port; read once a port of the node counted PortXmitWait",
                       prometheus::MetricType::Gauge);
  for (const auto& [guid, tick] : ticks->tick) {
    if (OwnsNode(s, guid)) Add(family, {{"guid", topology::FormatGuid(guid)}}, tick);
  }
  out(std::move(family));
}

CollectorInfo XmitWaitTickCollectorInfo() {
  return {
      .name = "xmit_wait_tick",
      .help =
          "PMA PortSamplesControl.Tick of each node once a port of it counted PortXmitWait, and each port's "
          "PortXmitWait in seconds by its device's Tick and generation.",
      .make = MakeXmitWaitTickCollector,
      .render = RenderXmitWaitTick,
      .reads = {"port_counters"},
  };
}

}  // namespace ibfabric::collectors
