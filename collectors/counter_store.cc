#include "collectors/counter_store.h"

namespace ibfabric::collectors {

void CounterStore::Update(const topology::PortRef& port, const PortSample& sample,
                          std::chrono::system_clock::time_point now) {
  PortTotals& t = ports_[port];
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
  auto it = ports_.find(port);
  if (it == ports_.end()) return;
  for (std::size_t i = 0; i < kCounterCount; ++i) {
    if (counters.test(i)) it->second.last_raw[i] = 0;
  }
}

void CounterStore::MarkStale(const topology::PortRef& port) {
  auto it = ports_.find(port);
  if (it != ports_.end()) it->second.stale = true;
}

}  // namespace ibfabric::collectors
