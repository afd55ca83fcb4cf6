#include "collectors/health/link_health.h"

#include <algorithm>

#include "collectors/common/varint.h"
#include "topology/link_rate.h"
#include "topology/xmit_wait.h"
#include "transport/attributes.h"

namespace ibfabric::collectors {
namespace {

constexpr std::size_t kMaxDowns = 1024;  // per cable, within the window
constexpr std::size_t kMaxEvents = 256;
// Observations after a host's counters were seen restarted in which a down
// of its cable is still that reset.
constexpr std::uint64_t kResetSlack = 2;
constexpr std::uint8_t kPhysDisabled = 3;  // IBTA PortPhysicalState: Disabled
// A switch rebooted when at least this share of its cables (and two) went
// down within the window.
constexpr double kRebootShare = 0.9;

std::size_t I(Signal s) { return static_cast<std::size_t>(s); }

// LEB128 varints of zigzag-coded differences (modulo 2^64, so any pair of
// values round-trips; small ones of either sign take a byte).
std::uint64_t ZigZag(std::uint64_t newer, std::uint64_t older) {
  const auto d = static_cast<std::int64_t>(newer - older);
  return (static_cast<std::uint64_t>(d) << 1) ^ static_cast<std::uint64_t>(d >> 63);
}
std::uint64_t Older(std::uint64_t newer, std::uint64_t zigzag) { return newer - ((zigzag >> 1) ^ (~(zigzag & 1) + 1)); }
std::uint64_t Ticks(std::chrono::steady_clock::time_point t) {
  return static_cast<std::uint64_t>(t.time_since_epoch().count());
}
std::chrono::steady_clock::time_point FromTicks(std::uint64_t ticks) {
  return std::chrono::steady_clock::time_point(
      std::chrono::steady_clock::duration(static_cast<std::chrono::steady_clock::rep>(ticks)));
}

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
    case Signal::kXmitHoqDiscards: return Counter::kSwitchHoqLifetimeLimitDiscards;
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
    case Signal::kXmitHoqDiscards: return "hoq_lifetime_discards";
  }
  return "unknown";
}

const char* ToString(DownKind k) {
  switch (k) {
    case DownKind::kFlap: return "flap";
    case DownKind::kHostReset: return "host_reset";
    case DownKind::kSwitchReboot: return "switch_reboot";
    case DownKind::kPortDisabled: return "port_disabled";
  }
  return "unknown";
}

void LinkHealth::Track(const topology::Fabric& fabric) {
  for (const auto& n : fabric.nodes()) kinds_[n.guid] = n.kind;
  std::map<topology::PortRef, topology::Link> cable_of;  // made when a port turns out cabled elsewhere
  for (const topology::Link& l : topology::Links(fabric)) {
    if (cables_.count(l)) continue;
    // A port cabled elsewhere now: its old cable is gone for good.
    for (const auto& end : {l.a, l.b}) {
      auto it = history_.find(end);
      if (it == history_.end() || !it->second.on_cable) continue;
      if (cable_of.empty()) {  // the cables by end, once for all the moves of this fabric
        for (const auto& [cable, state] : cables_) cable_of[cable.a] = cable_of[cable.b] = cable;
      }
      const auto old = cable_of.find(end);
      if (old == cable_of.end()) continue;
      for (const auto& old_end : {old->second.a, old->second.b}) {
        if (auto h = history_.find(old_end); h != history_.end()) h->second.on_cable = false;
      }
      cables_.erase(old->second);
    }
    CableState& c = cables_[l];
    c.health.cable = l;
    c.health.up = true;
    for (const auto& end : {l.a, l.b}) history_[end].on_cable = true;
  }
  // Histories only for ports on a cable.
  std::erase_if(history_, [](const auto& e) { return !e.second.on_cable; });
}

LinkHealth::Points LinkHealth::Unpack(const History& h) {
  Points v;
  v.size = h.count;
  if (v.size == 0) return v;
  const std::uint8_t* in = h.points.data();
  v.back().t = FromTicks(GetVarint(&in));
  for (std::size_t s = 0; s < kSignalCount; ++s) v.back().total[s] = GetVarint(&in);
  for (std::size_t i = v.size - 1; i-- > 0;) {
    const Point& newer = v.at[i + 1];
    Point& p = v.at[i];
    p.t = FromTicks(Older(Ticks(newer.t), GetVarint(&in)));
    for (std::size_t s = 0; s < kSignalCount; ++s) p.total[s] = Older(newer.total[s], GetVarint(&in));
  }
  return v;
}

void LinkHealth::Pack(const Points& v, History* h) {
  h->count = static_cast<std::uint8_t>(v.size);
  if (v.size == 0) {
    h->points = {};
    return;
  }
  std::array<std::uint8_t, kKeptPoints*(1 + kSignalCount) * kMaxVarint> buffer;
  std::uint8_t* out = buffer.data();
  const Point& newest = v.at[v.size - 1];
  out = PutVarint(Ticks(newest.t), out);
  for (std::size_t s = 0; s < kSignalCount; ++s) out = PutVarint(newest.total[s], out);
  for (std::size_t i = v.size - 1; i-- > 0;) {
    const Point& newer = v.at[i + 1];
    const Point& p = v.at[i];
    out = PutVarint(ZigZag(Ticks(newer.t), Ticks(p.t)), out);
    for (std::size_t s = 0; s < kSignalCount; ++s) out = PutVarint(ZigZag(newer.total[s], p.total[s]), out);
  }
  const auto bytes = static_cast<std::size_t>(out - buffer.data());
  // Written over in place while it fits and wastes little (a sweep
  // reallocating 80k small blocks would scatter the heap).
  if (h->points.capacity() < bytes || h->points.capacity() > bytes + 32) {
    h->points = std::vector<std::uint8_t>(buffer.data(), out);
  } else {
    h->points.assign(buffer.data(), out);
  }
}

LinkHealth::Reading LinkHealth::Record(const topology::PortRef& port, const PortTotals& totals,
                                       std::chrono::steady_clock::time_point now) {
  History& h = history_[port];
  Point p{now, {}};
  for (std::size_t s = 0; s < kSignalCount; ++s) {
    const std::size_t c = Index(CounterOf(static_cast<Signal>(s)));
    if (totals.present.test(c)) p.total[s] = totals.Total(c);
  }
  Points v = Unpack(h);
  Reading r;
  if (v.size > 0) {
    r.previous = v.back().t;
    const std::uint64_t was = v.back().total[I(Signal::kLinkDowned)];
    r.link_downed = p.total[I(Signal::kLinkDowned)] > was ? p.total[I(Signal::kLinkDowned)] - was : 0;
    r.reset = totals.resets > h.resets;
  }
  h.resets = totals.resets;
  // After a gap longer than the window (the port, or the exporter's port,
  // out of reach for a sweep or more) the window starts afresh: a rate over
  // the gap cannot say when it happened, and would dilute into "clean" a
  // fault that went on throughout. What the counters moved in the gap stays
  // in the totals. A port read in the sweep before this one has no gap,
  // however long the sweep took: where sweeps come further apart than the
  // window (a loaded host, a window as short as the interval), its rates
  // are over its last two readings, the shortest span the exporter sees,
  // not never judged.
  const bool missed_a_sweep = v.size > 0 && (!sweeps_[0] || v.back().t < *sweeps_[0]);
  if (missed_a_sweep && now - v.back().t > options_.window) v.size = 0;
  // The newest reading is always the last point; it stays as a kept one
  // when it came window/5 after the kept one before it, else the next
  // reading takes its place.
  if (v.size > 0 && !h.last_kept) --v.size;
  h.last_kept = v.size == 0 || now - v.back().t >= options_.window / 5;
  if (v.size == kKeptPoints) {  // cannot happen (see kKeptPoints); the oldest would go first
    std::move(v.at.begin() + 1, v.at.end(), v.at.begin());
    --v.size;
  }
  v.at[v.size++] = p;
  std::size_t old = 0;  // points with a newer one that is already older than the window
  while (old + 1 < v.size && v.at[old + 1].t <= now - options_.window) ++old;
  std::move(v.at.begin() + static_cast<std::ptrdiff_t>(old), v.at.begin() + static_cast<std::ptrdiff_t>(v.size),
            v.at.begin());
  v.size -= old;
  Pack(v, &h);
  return r;
}

std::chrono::steady_clock::time_point LinkHealth::WindowStart(std::chrono::steady_clock::time_point now,
                                                              bool counters_read) const {
  const auto start = now - options_.window;
  const auto& before = sweeps_[counters_read ? 0 : 1];
  return before && *before <= start ? *before : start + std::chrono::steady_clock::duration(1);
}

int LinkHealth::Reclassify(CableState* c, std::chrono::steady_clock::time_point since, DownKind kind) {
  int n = 0;
  for (Down& d : c->downs) {
    if (d.t < since || d.kind != DownKind::kFlap) continue;
    d.kind = kind;
    ++n;
  }
  if (n > 0) c->health.last_down_kind = kind;
  return n;
}

void LinkHealth::Emit(FabricEvent e) {
  ++event_counts_[e.kind];
  events_.push_back(std::move(e));
  while (events_.size() > kMaxEvents) events_.pop_front();
}

EndSummary::EndSummary(const EndRates& r)
    : EndWindow(r),
      bit_error_rate_(r.bit_error_rate.value_or(std::nan(""))),
      packet_drop_rate_(r.packet_drop_rate.value_or(std::nan(""))),
      xmit_wait_fraction_(r.xmit_wait_fraction.value_or(std::nan(""))) {}

EndRates LinkHealth::RatesOf(const topology::PortRef& port, double wait_count_seconds, double signal_gbps) const {
  EndRates r;
  r.port = port;
  auto it = history_.find(port);
  if (it == history_.end() || it->second.count == 0) return r;
  const Points points = Unpack(it->second);
  const Point& last = points.at[points.size - 1];
  const Point& base = points.at[0];
  r.window_seconds = std::chrono::duration<double>(last.t - base.t).count();
  for (std::size_t s = 0; s < kSignalCount; ++s) {
    r.delta[s] = last.total[s] >= base.total[s] ? last.total[s] - base.total[s] : 0;
  }
  if (r.window_seconds <= 0) return r;
  r.bits_carried = signal_gbps * 1e9 * r.window_seconds;
  r.packets_received = static_cast<double>(r.Delta(Signal::kRcvPkts));
  if (r.bits_carried > 0) r.bit_error_rate = static_cast<double>(r.Delta(Signal::kSymbolErrors)) / r.bits_carried;
  if (r.packets_received > 0) {
    r.packet_drop_rate = static_cast<double>(r.Delta(Signal::kRcvErrors)) / r.packets_received;
  }
  if (wait_count_seconds > 0) {
    r.xmit_wait_fraction =
        std::min(1.0, static_cast<double>(r.Delta(Signal::kXmitWait)) * wait_count_seconds / r.window_seconds);
  }
  return r;
}

void LinkHealth::Observe(const topology::Fabric& fabric, const topology::Analysis* analysis, const PortTable& ports,
                         const std::map<topology::PortRef, topology::Port>& links,
                         std::chrono::steady_clock::time_point now, std::chrono::system_clock::time_point wall,
                         bool counters_read, const WaitCountSeconds& wait_count) {
  Track(fabric);
  ++observation_;
  const auto window_start = WindowStart(now, counters_read);
  for (auto& [link, c] : cables_) {
    const Ends ends = ReadEnds(link, ports, counters_read, now);
    const LinkRead read = ReadLink(link, c.health, fabric, links);
    CableStatus& h = c.health;
    h.reachable = read.known;
    h.active = read.up && read.active;
    h.disabled = read.disabled && !read.up;
    const bool went_down = read.known && h.up && !read.up;
    const std::uint64_t events = CountDowns(&c, ends, read.read_now && read.up, went_down);
    const DownKind kind = Classify(link, &c, ends, h.disabled, read.disabled_node, events, wall);
    for (std::uint64_t i = 0; i < events && c.downs.size() < kMaxDowns; ++i) c.downs.push_back({now, kind});
    if (events > 0) {
      h.last_down = wall;
      h.last_down_kind = kind;
    }
    h.downs_total += events;
    std::erase_if(c.downs, [&](const Down& d) { return d.t < window_start; });
    h.up = read.up;
    NoteRates(link, &c, read, analysis, fabric, links, wait_count);
    for (int k = 0; k < 2; ++k) {
      c.present[k] = ends.present[k];
      c.pinned[k] = ends.pinned[k];
    }
  }
  FindReboots(now, wall, window_start);
  if (counters_read) sweeps_ = {now, sweeps_[0]};
  for (auto& [link, c] : cables_) {
    c.health.downs_in_window = static_cast<int>(
        std::count_if(c.downs.begin(), c.downs.end(), [](const Down& d) { return d.kind == DownKind::kFlap; }));
  }
}

LinkHealth::Ends LinkHealth::ReadEnds(const topology::Link& link, const PortTable& ports, bool counters_read,
                                      std::chrono::steady_clock::time_point now) {
  Ends e;
  const topology::PortRef ends[2] = {link.a, link.b};
  for (int k = 0; k < 2; ++k) {
    auto pt = ports.find(ends[k]);
    if (pt == ports.end()) continue;
    e.totals[k] = &pt->second;
    if (pt->second.stale) continue;
    if (counters_read) e.fresh[k] = Record(ends[k], pt->second, now);
    for (std::size_t s = 0; s < kSignalCount; ++s) {
      const std::size_t ci = Index(CounterOf(static_cast<Signal>(s)));
      e.present[k].set(s, pt->second.present.test(ci));
      e.pinned[k].set(s, pt->second.Pinned(ci));
    }
  }
  return e;
}

// The link's state, only as a PortInfo gave it: read now at an end, else
// as discovery last read it. A cable no end of which is known (both nodes
// out of reach) keeps its last state: unreachable.
LinkHealth::LinkRead LinkHealth::ReadLink(const topology::Link& link, const CableStatus& was,
                                          const topology::Fabric& fabric,
                                          const std::map<topology::PortRef, topology::Port>& links) {
  LinkRead r;
  const topology::PortRef ends[2] = {link.a, link.b};
  for (const auto& end : ends) {
    auto it = links.find(end);
    if (it == links.end()) continue;
    r.known = r.read_now = true;
    r.up = r.up && it->second.link_up();
    r.active = r.active && it->second.state == transport::kPortStateActive;
    if (it->second.phys_state == kPhysDisabled) {
      r.disabled = true;
      r.disabled_node = end.node_guid;
    }
    if (!r.state) r.state = &it->second;
  }
  if (r.known) return r;
  bool names_other = false;
  for (int k = 0; k < 2; ++k) {
    const topology::Port* p = fabric.FindPort(ends[k]);
    if (!p) continue;
    if (!p->link_up()) {
      r.known = true;  // a PortInfo said down
      r.up = false;
      if (p->phys_state == kPhysDisabled) {
        r.disabled = true;
        r.disabled_node = ends[k].node_guid;
      }
      r.state = p;
    } else if (p->remote == ends[1 - k]) {
      names_other = true;
      r.active = r.active && p->state == transport::kPortStateActive;
      if (!r.state) r.state = p;
    }
  }
  r.known = r.known || names_other;
  if (!r.known) {
    r.up = was.up;
    r.active = was.active;
    r.state = nullptr;
  }
  return r;
}

// One flap, one event: an end's increment first pays for events it is
// still expected to show; what is left is new. An end read again, with the
// link read up, without showing what it was expected to stops being
// expected to (its counter never will: ibsim, a pinned counter). Likewise
// a Down state read after a counter already showed its flap is that flap,
// until the link is read up again.
std::uint64_t LinkHealth::CountDowns(CableState* c, const Ends& ends, bool read_up, bool went_down) {
  std::uint64_t counted = 0;
  std::array<std::uint64_t, 2> shown{};
  for (int k = 0; k < 2; ++k) {
    if (!ends.fresh[k]) continue;
    const std::uint64_t paid = std::min(ends.fresh[k]->link_downed, c->pending[k]);
    shown[k] = ends.fresh[k]->link_downed - paid;
    c->pending[k] -= paid;
    if (read_up) c->pending[k] = 0;
    counted = std::max(counted, shown[k]);
  }
  std::uint64_t events = std::max<std::uint64_t>(counted, went_down ? 1 : 0);
  if (went_down && counted == 0 && c->seen_by_counter > 0) {
    --c->seen_by_counter;  // its counter showed this flap already
    events = 0;
  }
  c->seen_by_counter += counted - std::min<std::uint64_t>(counted, went_down ? 1 : 0);
  if (read_up) c->seen_by_counter = 0;
  const std::size_t ld = Index(Counter::kLinkDowned);
  for (int k = 0; k < 2; ++k) {
    // Whether this end's counter will show it, read now or later.
    const PortTotals* t = ends.totals[k];
    if (t && t->present.test(ld) && !t->Pinned(ld)) c->pending[k] += events - shown[k];
  }
  return events;
}

// Why: a host whose counters restarted while its cable went down was
// reset; a port read Disabled was isolated on purpose.
DownKind LinkHealth::Classify(const topology::Link& link, CableState* c, const Ends& ends, bool disabled,
                              std::uint64_t disabled_node, std::uint64_t events,
                              std::chrono::system_clock::time_point wall) {
  const topology::PortRef at[2] = {link.a, link.b};
  DownKind kind = disabled ? DownKind::kPortDisabled : DownKind::kFlap;
  for (int k = 0; k < 2; ++k) {
    if (!ends.fresh[k] || !ends.fresh[k]->reset) continue;
    auto kit = kinds_.find(at[k].node_guid);
    if (kit == kinds_.end() || kit->second != topology::NodeKind::kCa) continue;
    c->reset_seen = observation_;
    // Downs since this end was read before (while it was out) were the reset.
    const int earlier = ends.fresh[k]->previous ? Reclassify(c, *ends.fresh[k]->previous, DownKind::kHostReset) : 0;
    if (earlier > 0 || events > 0) {
      Emit({DownKind::kHostReset, wall, at[k].node_guid, link, earlier + static_cast<int>(events)});
    }
  }
  if (kind == DownKind::kFlap && c->reset_seen && observation_ - *c->reset_seen <= kResetSlack) {
    if (events > 0 && *c->reset_seen != observation_ && !events_.empty()) {
      // The same reset, seen late at the switch end.
      for (auto e = events_.rbegin(); e != events_.rend(); ++e) {
        if (e->kind == DownKind::kHostReset && e->cable == link) {
          e->links += static_cast<int>(events);
          break;
        }
      }
    }
    kind = DownKind::kHostReset;
  }
  if (kind == DownKind::kPortDisabled && events > 0) {
    Emit({DownKind::kPortDisabled, wall, disabled_node, link, static_cast<int>(events)});
  }
  return kind;
}

// The rate it runs at against the best it ran at, the analysis's degraded
// verdict, and how long each end's PortXmitWait count lasts at the speed
// it runs: as read this sweep, else as discovered, else the link's.
void LinkHealth::NoteRates(const topology::Link& link, CableState* c, const LinkRead& read,
                           const topology::Analysis* analysis, const topology::Fabric& fabric,
                           const std::map<topology::PortRef, topology::Port>& links,
                           const WaitCountSeconds& wait_count) {
  CableStatus& h = c->health;
  if (read.known) {
    h.rate = read.up && read.state ? topology::RateString(*read.state) : "";
    const double gbps = read.up && read.state ? topology::ActiveGbps(*read.state) : 0;
    if (gbps > c->best_gbps) {
      c->best_gbps = gbps;
      h.best_rate = h.rate;
    }
    h.dropped = read.up && gbps > 0 && gbps < c->best_gbps;
  }
  h.degraded.reset();
  if (analysis) {
    auto d = analysis->degraded.find(link);
    if (d != analysis->degraded.end()) h.degraded = d->second;
  }
  const topology::PortRef ends[2] = {link.a, link.b};
  for (int k = 0; k < 2; ++k) {
    auto it = links.find(ends[k]);
    const topology::Port* p = it != links.end() ? &it->second : fabric.FindPort(ends[k]);
    if (!p || !p->link_up()) p = read.state;
    const topology::Node* n = fabric.FindNode(ends[k].node_guid);
    c->signal_gbps[k] = p && p->link_up() ? topology::ActiveSignalGbps(*p) : 0;
    c->speed[k] = p && p->link_up() ? topology::ActiveSpeed(*p) : topology::Speed::kUnknown;
    c->asic[k] = n ? AsicProcessOf(n->vendor_id, n->device_id) : AsicProcess::kUnknown;
    if (!p || !p->link_up() || !n) {
      c->wait_count_seconds[k] = 0;
    } else {
      c->wait_count_seconds[k] =
          wait_count ? wait_count(*n, *p)
                     : topology::XmitWaitCountSeconds(*n, *p, topology::TickOf(*n, std::nullopt, std::nullopt));
    }
  }
}

void LinkHealth::FindReboots(std::chrono::steady_clock::time_point now, std::chrono::system_clock::time_point wall,
                             std::chrono::steady_clock::time_point window_start) {
  // Per switch: its cables, and those with a down in the window that is a
  // flap or already this reboot.
  std::map<std::uint64_t, std::pair<int, std::vector<CableState*>>> of;
  for (auto& [link, c] : cables_) {
    const bool down = std::any_of(c.downs.begin(), c.downs.end(), [](const Down& d) {
      return d.kind == DownKind::kFlap || d.kind == DownKind::kSwitchReboot;
    });
    for (const auto& end : {link.a, link.b}) {
      auto kit = kinds_.find(end.node_guid);
      if (kit == kinds_.end() || kit->second != topology::NodeKind::kSwitch) continue;
      auto& [total, downs] = of[end.node_guid];
      ++total;
      if (down) downs.push_back(&c);
    }
  }
  for (auto& [guid, counts] : of) {
    auto& [total, downs] = counts;
    if (downs.size() < 2 || static_cast<double>(downs.size()) < kRebootShare * total) continue;
    int links = 0;
    for (CableState* c : downs) links += Reclassify(c, window_start, DownKind::kSwitchReboot);
    if (links == 0) continue;  // this reboot was already reported, with every cable in it
    // One event per reboot: cables that join it later add to it.
    FabricEvent* last = nullptr;
    for (auto e = events_.rbegin(); e != events_.rend(); ++e) {
      if (e->kind == DownKind::kSwitchReboot && e->node_guid == guid) {
        last = &*e;
        break;
      }
    }
    // Joined within the window of downs (reaching the sweep before, as they do).
    const auto window = std::chrono::duration_cast<std::chrono::system_clock::duration>(now - window_start);
    if (last && last->when >= wall - window) {
      last->links += links;
    } else {
      Emit({DownKind::kSwitchReboot, wall, guid, std::nullopt, links});
    }
  }
}

std::vector<CableHealth> LinkHealth::Cables() const {
  std::vector<CableHealth> out;
  out.reserve(cables_.size());
  ForEachCable([&](CableHealth&& h) { out.push_back(std::move(h)); });
  return out;
}

void LinkHealth::ForEachCable(const std::function<void(CableHealth&&)>& take) const {
  for (const auto& [link, c] : cables_) {
    CableHealth h;
    static_cast<CableStatus&>(h) = c.health;
    const topology::PortRef ends[2] = {link.a, link.b};
    EndRates* rates[2] = {&h.a, &h.b};
    for (int k = 0; k < 2; ++k) {
      *rates[k] = RatesOf(ends[k], c.wait_count_seconds[k], c.signal_gbps[k]);
      rates[k]->speed = c.speed[k];
      rates[k]->asic = c.asic[k];
      rates[k]->present = c.present[k];
      rates[k]->pinned = c.pinned[k];
    }
    take(std::move(h));
  }
}

}  // namespace ibfabric::collectors
