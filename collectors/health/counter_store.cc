#include "collectors/health/counter_store.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <iterator>
#include <stdexcept>

#include "topology/link_rate.h"

namespace ibfabric::collectors {

void PortTotals::SetTotal(std::size_t i, std::uint64_t v) {
  if (i < kMainCounterCount) {
    main_[i] = v;
    return;
  }
  if (!details_) {
    if (v == 0) return;
    details_ = std::make_shared<std::array<std::uint64_t, kCounterCount - kMainCounterCount>>();
  } else if (details_.use_count() > 1) {
    details_ = std::make_shared<std::array<std::uint64_t, kCounterCount - kMainCounterCount>>(*details_);
  } else {
    // The last other holder (a snapshot an HTTP thread read) let go: its
    // reads happen before this write.
    std::atomic_thread_fence(std::memory_order_acquire);
  }
  (*details_)[i - kMainCounterCount] = v;
}

void PortTotals::SetLastRaw(std::size_t i, std::uint64_t raw) {
  const std::uint64_t below = Total(i) - raw;
  if (below == (below_ ? (*below_)[i] : 0)) return;
  std::array<std::uint64_t, kCounterCount> next{};
  if (below_) next = *below_;
  next[i] = below;
  if (std::all_of(next.begin(), next.end(), [](std::uint64_t b) { return b == 0; })) {
    below_.reset();
  } else {
    below_ = std::make_shared<const std::array<std::uint64_t, kCounterCount>>(next);
  }
}

PortTable& CounterStore::Mutable() {
  // Only this store hands the table out, so a count of 1 stays 1; a holder
  // letting go meanwhile costs at most a copy that was not needed.
  if (ports_.use_count() > 1) {
    ports_ = std::make_shared<PortTable>(*ports_);
  } else {
    std::atomic_thread_fence(std::memory_order_acquire);  // as in SetTotal
  }
  return *ports_;
}

namespace {
bool ByPort(const PortTable::value_type& a, const topology::PortRef& b) { return a.first < b; }
bool ByEntry(const PortTable::value_type& a, const PortTable::value_type& b) { return a.first < b.first; }
}  // namespace

PortTable::PortTable(std::initializer_list<value_type> items) {
  std::vector<value_type> all(items);
  Merge(std::move(all));
}

PortTable::const_iterator PortTable::find(const topology::PortRef& port) const {
  const auto it = std::lower_bound(items_.begin(), items_.end(), port, ByPort);
  return it != items_.end() && it->first == port ? it : items_.end();
}

PortTable::iterator PortTable::find(const topology::PortRef& port) {
  const auto it = std::lower_bound(items_.begin(), items_.end(), port, ByPort);
  return it != items_.end() && it->first == port ? it : items_.end();
}

const PortTotals& PortTable::at(const topology::PortRef& port) const {
  const auto it = find(port);
  if (it == end()) throw std::out_of_range("no totals for the port");
  return it->second;
}

PortTotals& PortTable::operator[](const topology::PortRef& port) {
  auto it = std::lower_bound(items_.begin(), items_.end(), port, ByPort);
  if (it == items_.end() || it->first != port) it = items_.insert(it, {port, PortTotals{}});
  return it->second;
}

void PortTable::Merge(std::vector<value_type> fresh) {
  if (!std::is_sorted(fresh.begin(), fresh.end(), ByEntry)) std::stable_sort(fresh.begin(), fresh.end(), ByEntry);
  // Ports it holds already keep their totals; a port given twice counts
  // once, as given last.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < fresh.size(); ++i) {
    if (i + 1 < fresh.size() && fresh[i + 1].first == fresh[i].first) continue;
    if (kept != i) fresh[kept] = std::move(fresh[i]);
    ++kept;
  }
  fresh.resize(kept);
  std::erase_if(fresh, [this](const value_type& v) { return find(v.first) != end(); });
  if (fresh.empty()) return;
  if (items_.empty()) {  // the first sweep: every port at once, taken whole
    items_ = std::move(fresh);
    if (items_.capacity() > items_.size() + items_.size() / 8) items_.shrink_to_fit();
    return;
  }
  std::vector<value_type> merged;
  merged.reserve(items_.size() + fresh.size());
  std::merge(std::make_move_iterator(items_.begin()), std::make_move_iterator(items_.end()),
             std::make_move_iterator(fresh.begin()), std::make_move_iterator(fresh.end()), std::back_inserter(merged),
             ByEntry);
  items_ = std::move(merged);
}

namespace {

bool IsDataOrPackets(Counter c) {
  return c == Counter::kXmitData || c == Counter::kRcvData || c == Counter::kXmitPkts || c == Counter::kRcvPkts ||
         c == Counter::kUnicastXmitPkts || c == Counter::kUnicastRcvPkts || c == Counter::kMulticastXmitPkts ||
         c == Counter::kMulticastRcvPkts;
}

// Counter `i` in the sample, read from the field of its last reading.
bool Comparable(const PortTotals& before, const PortSample& sample, std::size_t i) {
  return sample.present.test(i) && before.present.test(i) && before.last_wide.test(i) == sample.wide.test(i);
}

// Why a rise of counter `c` by `rise` in `seconds` cannot be, if it cannot.
std::optional<Implausible> Judge(Counter c, std::uint64_t rise, double seconds, const PortLimits& limits) {
  const auto over = [&](double per_second, double units) {
    return static_cast<double>(rise) * units > per_second * seconds;
  };
  if (c == Counter::kXmitWait) {
    if (over(limits.bytes_per_second, 1)) return Implausible::kXmitWait;
  } else if (c == Counter::kXmitData || c == Counter::kRcvData) {
    if (over(limits.bytes_per_second, 4)) return Implausible::kData;  // 4-octet words (IBTA 16.1.3.5)
  } else if (IsDataOrPackets(c)) {
    if (over(limits.bytes_per_second, 1)) return Implausible::kData;  // a packet is a byte at least
  } else if (over(limits.symbols_per_second, 1)) {
    return Implausible::kErrors;
  }
  return std::nullopt;
}

}  // namespace

const char* ToString(Implausible reason) {
  switch (reason) {
    case Implausible::kXmitWait: return "xmit_wait_over_elapsed_time";
    case Implausible::kErrors: return "errors_over_symbol_rate";
    case Implausible::kData: return "data_over_link_rate";
    case Implausible::kFellAndRose: return "fell_and_rose";
  }
  return "unknown";
}

PortLimits LimitsOf(const topology::Port* port) {
  int lanes = port ? topology::MaxLanes(port->width_supported) : 0;
  topology::Speed speed = port ? topology::MaxSupportedSpeed(*port) : topology::Speed::kUnknown;
  if (lanes == 0 || speed == topology::Speed::kUnknown) {
    lanes = 12;
    speed = topology::Speed::kXdr;
  }
  return {lanes * topology::LaneGbps(speed) * 1e9 / 8, lanes * topology::LaneSignalGbps(speed) * 1e9};
}

bool Restarted(const PortTotals& before, const PortSample& sample) {
  for (const Counter c : {Counter::kXmitData, Counter::kRcvData, Counter::kXmitPkts, Counter::kRcvPkts}) {
    const std::size_t i = Index(c);
    if (Comparable(before, sample, i) && sample.value[i] < before.LastRaw(i)) return true;
  }
  return false;
}

namespace {

// Whether a counter the port held is still below the reading before its
// fall: the port's counters were cleared, all of those held (ibclearerrors
// clears them together; one of them may have counted back up meanwhile).
bool ClearedSince(const PortTotals& before, const PortSample& sample) {
  if (before.held.none()) return false;
  for (std::size_t i = 0; i < kCounterCount; ++i) {
    if (before.held.test(i) && Comparable(before, sample, i) && sample.value[i] < before.LastRaw(i)) return true;
  }
  return false;
}

}  // namespace

std::uint64_t Increase(const PortTotals& before, const PortSample& sample, std::size_t i) {
  // Absent, or another field now feeds this counter: re-based, nothing added.
  if (!Comparable(before, sample, i)) return 0;
  const std::uint64_t raw = sample.value[i];
  const std::uint64_t last = before.LastRaw(i);
  const bool held = before.held.test(i);
  if (raw >= last) {
    // Held and back: counted back up since a clear (another held counter
    // still below, or a restart), else the fall was a wrong reading.
    return held && (Restarted(before, sample) || ClearedSince(before, sample)) ? raw : RiseOf(last, raw);
  }
  // Below: cleared since (a restart, or a held fall confirmed), all of it is
  // new (RiseOf); a first fall while the data went on is held.
  return held || Restarted(before, sample) ? RiseOf(last, raw) : 0;
}

Folded CounterStore::Update(const topology::PortRef& port, const PortSample& sample,
                            std::chrono::system_clock::time_point now, const PortLimits* limits) {
  const auto known = ports_->find(port);
  // What each counter adds, by Increase's rule, asked of the totals as they
  // were: judged before anything changes (nor is the table copied for it),
  // then folded.
  std::array<std::uint64_t, kCounterCount> rise{};
  if (known != ports_->end()) {
    for (std::size_t i = 0; i < kCounterCount; ++i) rise[i] = Increase(known->second, sample, i);
  }
  if (limits && known != ports_->end() && now > known->second.last_update) {
    const double elapsed =
        std::max(std::chrono::duration<double>(now - known->second.last_update).count(), limits->seconds_at_least);
    const double seconds = 2 * elapsed + 1;
    for (std::size_t i = 0; i < kCounterCount; ++i) {
      const auto why = Judge(static_cast<Counter>(i), rise[i], seconds, *limits);
      if (!why) continue;
      PortTotals& t = Mutable().find(port)->second;
      if (!t.rejected) {
        t.rejected = true;
        return {&t, why, i};
      }
      // Rejected twice in a row: the reading the rises are over was the
      // wrong one (a fall of the data taken as a restart). Re-based on
      // this one, nothing added, rather than stuck until enough time
      // passed.
      for (std::size_t c = 0; c < kCounterCount; ++c) {
        if (!Comparable(t, sample, c)) continue;
        t.SetLastRaw(c, sample.value[c]);
        t.held.reset(c);
      }
      t.rejected = false;
      t.last_update = now;
      t.stale = false;
      return {&t, std::nullopt, 0};
    }
  }
  PortTotals& t = known != ports_->end() ? Mutable().find(port)->second : Fresh(port);
  Folded out{&t, std::nullopt, 0};
  t.rejected = false;
  const bool restarted = Restarted(t, sample);
  for (std::size_t i = 0; i < kCounterCount; ++i) {
    if (!sample.present.test(i)) continue;
    const std::uint64_t raw = sample.value[i];
    if (!t.present.test(i)) {
      t.SetTotal(i, raw);
    } else if (Comparable(t, sample, i)) {
      const std::uint64_t last = t.LastRaw(i);
      if (raw < last && !restarted && !t.held.test(i)) {
        t.held.set(i);  // the next reading tells a clear from a wrong reading
        continue;
      }
      // Held and back by no more than the difference: the fall was wrong.
      if (t.held.test(i) && raw >= last && rise[i] == raw - last && !out.rejected) {
        out = {&t, Implausible::kFellAndRose, i};
      }
      t.SetTotal(i, t.Total(i) + rise[i]);
    }
    t.held.reset(i);
    t.SetLastRaw(i, raw);
    t.last_wide.set(i, sample.wide.test(i));
    t.present.set(i);
  }
  if (restarted) ++t.resets;
  t.last_update = now;
  t.stale = false;
  return out;
}

PortTotals& CounterStore::Fresh(const topology::PortRef& port) {
  if (!fresh_.empty() && fresh_.back().first == port) return fresh_.back().second;
  if (fresh_.empty()) fresh_.reserve(expected_);
  return fresh_.emplace_back(port, PortTotals{}).second;
}

void CounterStore::Commit() {
  if (fresh_.empty()) return;
  Mutable().Merge(std::move(fresh_));
  fresh_ = {};
}

void CounterStore::NoteCleared(const topology::PortRef& port, const std::bitset<kCounterCount>& counters) {
  if (!ports_->count(port)) return;
  const auto it = Mutable().find(port);  // found: it was there before the copy
  for (std::size_t i = 0; i < kCounterCount; ++i) {
    if (!counters.test(i)) continue;
    it->second.SetLastRaw(i, 0);
    it->second.held.reset(i);
  }
}

void CounterStore::MarkStale(const topology::PortRef& port) {
  const auto found = ports_->find(port);
  if (found == ports_->end() || found->second.stale) return;
  Mutable().find(port)->second.stale = true;
}

void VlWaitTotals::Add(const std::array<std::uint16_t, transport::kVlCount>& raw) {
  for (std::size_t v = 0; v < raw.size(); ++v) {
    if (!read) {
      total[v] = raw[v];
    } else {
      total[v] += raw[v] >= last[v] ? raw[v] - last[v] : raw[v];
    }
    last[v] = raw[v];
  }
  read = true;
}

}  // namespace ibfabric::collectors
