#include "collectors/counter_store.h"

namespace ibfabric::collectors {

PortTable& CounterStore::Mutable() {
  // Only this store hands the table out, so a count of 1 stays 1; a holder
  // letting go meanwhile costs at most a copy that was not needed.
  if (ports_.use_count() > 1) ports_ = std::make_shared<PortTable>(*ports_);
  return *ports_;
}

void CounterStore::Update(const topology::PortRef& port, const PortSample& sample,
                          std::chrono::system_clock::time_point now) {
  PortTotals& t = Mutable()[port];
  bool restarted = false;
  for (std::size_t i = 0; i < kCounterCount; ++i) {
    if (!sample.present.test(i)) continue;
    const std::uint64_t raw = sample.value[i];
    if (!t.present.test(i)) {
      t.total[i] = raw;
    } else if (t.last_bits[i] != sample.bits[i]) {
      // Another field now feeds this counter: re-base, add nothing.
    } else if (raw >= t.last_raw[i]) {
      t.total[i] += raw - t.last_raw[i];
    } else {
      t.total[i] += raw;  // cleared since the last reading
      const auto c = static_cast<Counter>(i);
      restarted = restarted || c == Counter::kXmitData || c == Counter::kRcvData || c == Counter::kXmitPkts ||
                  c == Counter::kRcvPkts;
    }
    t.last_raw[i] = raw;
    t.last_bits[i] = sample.bits[i];
    t.present.set(i);
  }
  if (restarted) ++t.resets;
  t.last_update = now;
  t.stale = false;
}

void CounterStore::NoteCleared(const topology::PortRef& port, const std::bitset<kCounterCount>& counters) {
  if (!ports_->count(port)) return;
  const auto it = Mutable().find(port);
  for (std::size_t i = 0; i < kCounterCount; ++i) {
    if (counters.test(i)) it->second.last_raw[i] = 0;
  }
}

void CounterStore::MarkStale(const topology::PortRef& port) {
  const auto found = ports_->find(port);
  if (found == ports_->end() || found->second.stale) return;
  Mutable()[port].stale = true;
}

}  // namespace ibfabric::collectors
