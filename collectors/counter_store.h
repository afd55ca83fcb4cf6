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

// Thread-safety: none; the sweeping thread owns it and publishes copies.
class CounterStore {
 public:
  void Update(const topology::PortRef& port, const PortSample& sample, std::chrono::system_clock::time_point now);
  // The port was a target but did not answer: keep totals, mark stale.
  void MarkStale(const topology::PortRef& port);
  // These counters of the port were just cleared by us: the next reading is
  // all new counts (the total itself is untouched, so it stays continuous).
  void NoteCleared(const topology::PortRef& port, const std::bitset<kCounterCount>& counters);

  const std::map<topology::PortRef, PortTotals>& ports() const { return ports_; }
  // Replaces everything, e.g. with totals saved before a re-exec.
  void Restore(std::map<topology::PortRef, PortTotals> ports) { ports_ = std::move(ports); }

 private:
  std::map<topology::PortRef, PortTotals> ports_;
};

}  // namespace ibfabric::collectors
