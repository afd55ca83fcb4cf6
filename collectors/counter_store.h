#pragma once
// Per-port 64-bit monotonic totals built from raw readings across sweeps.
//
// Rules: the first reading of a counter is its total. Afterwards the total
// grows by the difference to the previous reading. A reading below the
// previous one means the counter was cleared out of band: the new reading is
// all new counts. A change of source width (32-bit to 64-bit field) re-bases
// without adding. So no exported total ever goes backwards.

#include <array>
#include <bitset>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "collectors/counters.h"
#include "topology/fabric.h"

namespace ibfabric::collectors {

struct PortTotals {
  std::array<std::uint64_t, kCounterCount> total{};
  std::bitset<kCounterCount> present;
  std::array<std::uint64_t, kCounterCount> last_raw{};
  std::array<std::uint8_t, kCounterCount> last_bits{};
  std::chrono::system_clock::time_point last_update{};
  bool stale = false;  // the last sweep got no reading for this port
  // Readings in which the data or packet counters went backwards without
  // our clearing them: the port's counters restarted (a reset, a reboot,
  // someone else's clear).
  std::uint32_t resets = 0;

  // The last raw reading of counter i sat at its field's maximum: a sticky
  // counter that stopped, so the total is a lower bound until it is cleared.
  bool Pinned(std::size_t i) const {
    return present.test(i) && last_bits[i] < 64 && last_raw[i] == MaxOf(last_bits[i]);
  }
};

// Every port's totals, by port.
using PortTable = std::map<topology::PortRef, PortTotals>;

// Thread-safety: none; the sweeping thread owns it. What it publishes
// (Share) is immutable and shared: it is copied once, at the first change
// after it was shared, never per reader (at 80k ports one table is tens of
// MB, and a snapshot, the scheduler's parts and the store all hold it).
class CounterStore {
 public:
  CounterStore() : ports_(std::make_shared<PortTable>()) {}

  void Update(const topology::PortRef& port, const PortSample& sample, std::chrono::system_clock::time_point now);
  // The port was a target but did not answer: keep totals, mark stale.
  void MarkStale(const topology::PortRef& port);
  // These counters of the port were just cleared by us: the next reading is
  // all new counts (the total itself is untouched, so it stays continuous).
  void NoteCleared(const topology::PortRef& port, const std::bitset<kCounterCount>& counters);

  const PortTable& ports() const { return *ports_; }
  // The totals as they are now; later changes leave what it points to as it is.
  std::shared_ptr<const PortTable> Share() const { return ports_; }
  // Replaces everything, e.g. with totals saved before a re-exec.
  void Restore(PortTable ports) { ports_ = std::make_shared<PortTable>(std::move(ports)); }

 private:
  // The table to change: a copy first when it is shared.
  PortTable& Mutable();

  std::shared_ptr<PortTable> ports_;
};

}  // namespace ibfabric::collectors
