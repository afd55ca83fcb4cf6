#include "collectors/link_health.h"

#include <algorithm>

#include "topology/link_rate.h"
#include "transport/attributes.h"

namespace ibfabric::collectors {
namespace {

constexpr std::size_t kMaxDowns = 1024;  // per cable, within the window

std::size_t I(Signal s) { return static_cast<std::size_t>(s); }

}  // namespace

Counter CounterOf(Signal s) {
  switch (s) {
    case Signal::kSymbolErrors: return Counter::kSymbolError;
    case Signal::kLinkErrorRecoveries: return Counter::kLinkErrorRecovery;
    case Signal::kLinkDowned: return Counter::kLinkDowned;
    case Signal::kRcvErrors: return Counter::kRcvErrors;
    case Signal::kRcvRemotePhysicalErrors: return Counter::kRcvRemotePhysicalErrors;
    case Signal::kLocalLinkIntegrityErrors: return Counter::kLocalLinkIntegrityErrors;
    case Signal::kExcessiveBufferOverrunErrors: return Counter::kExcessiveBufferOverrunErrors;
    case Signal::kXmitDiscards: return Counter::kXmitDiscards;
    case Signal::kXmitWait: return Counter::kXmitWait;
    case Signal::kRcvData: return Counter::kRcvData;
    case Signal::kRcvPkts: return Counter::kRcvPkts;
  }
  return Counter::kSymbolError;
}

const char* ToString(Signal s) {
  switch (s) {
    case Signal::kSymbolErrors: return "symbol_errors";
    case Signal::kLinkErrorRecoveries: return "link_error_recoveries";
    case Signal::kLinkDowned: return "link_downed";
    case Signal::kRcvErrors: return "rcv_errors";
    case Signal::kRcvRemotePhysicalErrors: return "rcv_remote_physical_errors";
    case Signal::kLocalLinkIntegrityErrors: return "local_link_integrity_errors";
    case Signal::kExcessiveBufferOverrunErrors: return "excessive_buffer_overrun_errors";
    case Signal::kXmitDiscards: return "xmit_discards";
    case Signal::kXmitWait: return "xmit_wait";
    case Signal::kRcvData: return "rcv_data";
    case Signal::kRcvPkts: return "rcv_packets";
  }
  return "unknown";
}

void LinkHealth::Track(const topology::Fabric& fabric) {
  for (const topology::Link& l : topology::Links(fabric)) {
    if (cables_.count(l)) continue;
    // A port cabled elsewhere now: its old cable is gone for good.
    for (const auto& end : {l.a, l.b}) {
      auto it = cable_of_.find(end);
      if (it == cable_of_.end()) continue;
      const topology::Link old = it->second;
      cable_of_.erase(old.a);
      cable_of_.erase(old.b);
      cables_.erase(old);
    }
    CableState& c = cables_[l];
    c.health.cable = l;
    c.health.up = true;
    cable_of_[l.a] = l;
    cable_of_[l.b] = l;
  }
  // Histories only for ports on a cable.
  for (auto it = history_.begin(); it != history_.end();) {
    it = cable_of_.count(it->first) ? std::next(it) : history_.erase(it);
  }
}

std::uint64_t LinkHealth::Record(const topology::PortRef& port, const PortTotals& totals,
                                 std::chrono::steady_clock::time_point now) {
  History& h = history_[port];
  Point p{now, {}};
  for (std::size_t s = 0; s < kSignalCount; ++s) {
    const std::size_t c = Index(CounterOf(static_cast<Signal>(s)));
    if (totals.present.test(c)) p.total[s] = totals.total[c];
  }
  const std::uint64_t downed = h.latest && p.total[I(Signal::kLinkDowned)] > h.latest->total[I(Signal::kLinkDowned)]
                                   ? p.total[I(Signal::kLinkDowned)] - h.latest->total[I(Signal::kLinkDowned)]
                                   : 0;
  h.latest = p;
  if (h.kept.empty() || now - h.kept.back().t >= options_.window / 5) h.kept.push_back(p);
  while (h.kept.size() >= 2 && h.kept[1].t <= now - options_.window) h.kept.pop_front();
  return downed;
}

EndRates LinkHealth::RatesOf(const topology::PortRef& port, const topology::Port* state) const {
  EndRates r;
  r.port = port;
  auto it = history_.find(port);
  if (it == history_.end() || !it->second.latest || it->second.kept.empty()) return r;
  const Point& base = it->second.kept.front();
  const Point& last = *it->second.latest;
  r.window_seconds = std::chrono::duration<double>(last.t - base.t).count();
  for (std::size_t s = 0; s < kSignalCount; ++s) {
    r.delta[s] = last.total[s] >= base.total[s] ? last.total[s] - base.total[s] : 0;
  }
  if (r.window_seconds <= 0) return r;
  r.bits_received = static_cast<double>(r.Delta(Signal::kRcvData)) * 32;  // 4-octet words
  r.packets_received = static_cast<double>(r.Delta(Signal::kRcvPkts));
  if (r.bits_received > 0) r.bit_error_rate = static_cast<double>(r.Delta(Signal::kSymbolErrors)) / r.bits_received;
  if (r.packets_received > 0) {
    r.packet_drop_rate = static_cast<double>(r.Delta(Signal::kRcvErrors)) / r.packets_received;
  }
  if (state && state->link_up()) {
    // One tick: the time one byte takes on one lane (4 ns at SDR), times
    // the multiplier.
    const double lane_gbps = topology::LaneGbps(topology::ActiveSpeed(*state));
    if (lane_gbps > 0) {
      const double tick = options_.xmit_wait_tick_multiplier * 8 / (lane_gbps * 1e9);
      r.xmit_wait_fraction =
          std::min(1.0, static_cast<double>(r.Delta(Signal::kXmitWait)) * tick / r.window_seconds);
    }
  }
  return r;
}

void LinkHealth::Observe(const topology::Fabric& fabric, const topology::Analysis* analysis,
                         const std::map<topology::PortRef, PortTotals>& ports,
                         const std::map<topology::PortRef, topology::Port>& links,
                         std::chrono::steady_clock::time_point now, std::chrono::system_clock::time_point wall,
                         bool counters_read) {
  Track(fabric);
  for (auto& [link, c] : cables_) {
    CableHealth& h = c.health;
    std::uint64_t downed = 0;
    std::bitset<kSignalCount> present[2], pinned[2];
    int k = 0;
    for (const auto& end : {link.a, link.b}) {
      auto pt = ports.find(end);
      if (pt != ports.end() && !pt->second.stale) {
        if (counters_read) downed = std::max(downed, Record(end, pt->second, now));
        for (std::size_t s = 0; s < kSignalCount; ++s) {
          const std::size_t ci = Index(CounterOf(static_cast<Signal>(s)));
          present[k].set(s, pt->second.present.test(ci));
          pinned[k].set(s, pt->second.Pinned(ci));
        }
      }
      ++k;
    }
    // The link's state: what this sweep read at its switch end(s), else
    // what discovery saw.
    const topology::Port* state = nullptr;
    bool read = false, up = true, active = true;
    for (const auto& end : {link.a, link.b}) {
      auto it = links.find(end);
      if (it == links.end()) continue;
      read = true;
      up = up && it->second.link_up();
      active = active && it->second.state == transport::kPortStateActive;
      if (!state) state = &it->second;
    }
    if (!read) {
      const topology::Port* pa = fabric.FindPort(link.a);
      up = pa && pa->link_up() && pa->remote == link.b;
      active = up && pa->state == transport::kPortStateActive;
      state = pa;
    }
    h.active = up && active;
    const bool went_down = h.up && !up;
    // A Down state and the LinkDownedCounter increment it caused are one
    // event, in the same sweep or a trap's read before it.
    std::uint64_t events = went_down ? 1 : 0;
    if (counters_read) {
      events = std::max(events, downed > c.unmatched_downs ? downed - c.unmatched_downs : 0);
      c.unmatched_downs = 0;
    } else {
      c.unmatched_downs += events;
    }
    for (std::uint64_t i = 0; i < events && c.downs.size() < kMaxDowns; ++i) c.downs.push_back(now);
    if (events > 0) h.last_down = wall;
    h.downs_total += events;
    while (!c.downs.empty() && c.downs.front() <= now - options_.window) c.downs.pop_front();
    h.downs_in_window = static_cast<int>(c.downs.size());
    h.up = up;
    h.rate = up && state ? topology::RateString(*state) : "";
    const double gbps = up && state ? topology::ActiveGbps(*state) : 0;
    if (gbps > c.best_gbps) {
      c.best_gbps = gbps;
      h.best_rate = h.rate;
    }
    h.dropped = up && gbps > 0 && gbps < c.best_gbps;
    h.degraded.reset();
    if (analysis) {
      auto d = analysis->degraded.find(link);
      if (d != analysis->degraded.end()) h.degraded = d->second;
    }
    // Each end's speed sets its XmitWait tick: as read this sweep, else as
    // discovered, else the link's.
    auto speed_of = [&](const topology::PortRef& end) {
      auto it = links.find(end);
      const topology::Port* p = it != links.end() ? &it->second : fabric.FindPort(end);
      return p && p->link_up() ? p : state;
    };
    h.a = RatesOf(link.a, speed_of(link.a));
    h.b = RatesOf(link.b, speed_of(link.b));
    h.a.present = present[0];
    h.a.pinned = pinned[0];
    h.b.present = present[1];
    h.b.pinned = pinned[1];
  }
}

std::vector<CableHealth> LinkHealth::Cables() const {
  std::vector<CableHealth> out;
  out.reserve(cables_.size());
  for (const auto& [link, c] : cables_) out.push_back(c.health);
  return out;
}

}  // namespace ibfabric::collectors
