#pragma once
// Per-port 64-bit monotonic totals built from raw readings across sweeps.
//
// Rules: the first reading of a counter is its total. Afterwards the total
// grows by the difference to the previous reading. A reading whose data or
// packet counters fell means the port's counters restarted (a reset, a
// reboot, a clear of everything): each reading below the one before is all
// new counts. A counter that fell while the data went on (an error counter
// cleared by ibclearerrors, or a reading that is wrong) is held: the next
// reading says which (still below: cleared, all new counts; back at or above
// the one before the fall: the fallen reading was wrong, and is rejected).
// A change of source width (32-bit to 64-bit field) re-bases without adding.
// So no exported total ever goes backwards.
//
// Readings no link can produce are never folded in (a firmware bug, a
// counter reset by another tool, a corrupted MAD, the test bed's unfilled
// answer: issue 63): a rise, over the time since the port's last reading
// folded in, of PortXmitWait above one count per byte time of the port (no
// Tick is finer than that: IBTA 16.1.3.2, one symbol time; the Quantum
// family counts per byte of the port), of the data or packet counters above
// the port's data rate in bytes, or of an error counter above its
// signalling rate in symbols. The rate is the fastest the port supports
// (PortInfo LinkWidthSupported and the speeds, topology/link_rate.h), the
// fastest IBTA link (12x XDR) where unknown; the time is 2 x elapsed + 1 s,
// since a sweep's readings are folded at its end and one port's two
// readings may lie a sweep's length further apart than the sweeps.

#include <array>
#include <bitset>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collectors/reads/counters.h"
#include "topology/fabric.h"

namespace ibfabric::collectors {

// The counters of PortCounters and PortCountersExtended (every port's),
// before the details' (PortRcvErrorDetails, PortXmitDiscardDetails: read
// only where their counter moved).
inline constexpr std::size_t kMainCounterCount = static_cast<std::size_t>(Counter::kLocalPhysicalErrors);

struct PortTotals {
  // Counter i's total (0 where never read).
  std::uint64_t Total(std::size_t i) const {
    return i < kMainCounterCount ? main_[i] : details_ ? (*details_)[i - kMainCounterCount] : 0;
  }
  void SetTotal(std::size_t i, std::uint64_t v);
  std::bitset<kCounterCount> present;
  // The last reading of counter i came from a 64-bit field (its width:
  // LastBits).
  std::bitset<kCounterCount> last_wide;
  // Counter i's last reading fell while the data went on: not folded yet
  // (LastRaw is the reading before the fall).
  std::bitset<kCounterCount> held;
  std::chrono::system_clock::time_point last_update{};
  bool stale = false;  // the last sweep got no reading for this port
  // The port's last reading was rejected as no link can produce it (a
  // second in a row re-bases: CounterStore::Update).
  bool rejected = false;
  // Readings in which the data or packet counters went backwards without
  // our clearing them: the port's counters restarted (a reset, a reboot,
  // someone else's clear).
  std::uint32_t resets = 0;

  // The last raw reading of counter i. Kept as how far it lies below the
  // total: nothing until the counter wraps, is cleared or changes field
  // (the first reading is the total), so most ports hold no copy of their
  // readings (at 80k ports, 17 MB, and again while a sweep runs). Set it
  // after the total it belongs with.
  std::uint64_t LastRaw(std::size_t i) const { return Total(i) - (below_ ? (*below_)[i] : 0); }
  void SetLastRaw(std::size_t i, std::uint64_t raw);

  // The last raw reading of counter i sat at its field's maximum: a sticky
  // counter that stopped, so the total is a lower bound until it is cleared.
  bool Pinned(std::size_t i) const { return present.test(i) && LastBits(i) < 64 && LastRaw(i) == MaxOf(LastBits(i)); }
  std::uint8_t LastBits(std::size_t i) const { return FieldBits(i, last_wide.test(i)); }

 private:
  std::array<std::uint64_t, kMainCounterCount> main_{};
  // The details' totals; null while none was read (most ports: at 32k GPUs
  // 80 bytes a port, in each copy of the table). Shared by copies, changed
  // in place only where no copy shares it.
  std::shared_ptr<std::array<std::uint64_t, kCounterCount - kMainCounterCount>> details_;
  // Total - last raw reading, per counter; null while all are 0. Shared by
  // copies (the published table) and never changed in place.
  std::shared_ptr<const std::array<std::uint64_t, kCounterCount>> below_;
};

// A device counter's rise from its last raw reading to `raw`: the
// difference, or all of `raw` after a fall (the counter was cleared, or
// its device restarted). The rule every source's totals add by: the PMA
// counters here (Increase, which first holds a single fall while the data
// go on), the FEC and PPCNT counters (FoldTotal).
constexpr std::uint64_t RiseOf(std::uint64_t last, std::uint64_t raw) { return raw >= last ? raw - last : raw; }

// A total kept from a device counter read whole each time (the FEC and
// PPCNT counters, collectors/fec_collector.cc): the first reading (`last`
// null) is what the device counted since it was last cleared; each later
// one adds its rise (RiseOf). Returns the rise, 0 at the first reading.
constexpr std::uint64_t FoldTotal(const std::uint64_t* last, std::uint64_t raw, std::uint64_t* total) {
  if (!last) {
    *total = raw;
    return 0;
  }
  const std::uint64_t rise = RiseOf(*last, raw);
  *total += rise;
  return rise;
}

// How much counter `i` of a port grows with `sample`, by the rules above:
// the difference to the last reading, the whole reading after a restart or
// a clear (a held fall confirmed), 0 for a first reading, a changed field,
// a fall held or a counter the sample lacks. The
// one place that decides whether a counter moved: CounterStore folds with
// it, and the fabric tracker asks it whether a LinkDownedCounter moved
// (a flap to look at), so the two never disagree.
std::uint64_t Increase(const PortTotals& before, const PortSample& sample, std::size_t i);

// Whether the sample's data or packet counters fell below the last
// readings of the same fields: the port's counters restarted.
bool Restarted(const PortTotals& before, const PortSample& sample);

// The most a port's counters can move in a second (the rules above).
struct PortLimits {
  double bytes_per_second = 0;    // data rate
  double symbols_per_second = 0;  // signalling rate, a bit a symbol
  // The time since the port's last reading is at least this (a steady
  // clock's time since the sweep before: a step of the wall clock back
  // never narrows what is allowed).
  double seconds_at_least = 0;
};
// The fastest `port` supports; the fastest IBTA link's when it is null or
// its width or speed is unknown.
PortLimits LimitsOf(const topology::Port* port);

// Why a reading was not folded in.
enum class Implausible : std::uint8_t {
  kXmitWait,    // PortXmitWait over the time elapsed
  kErrors,      // an error counter over the signalling rate
  kData,        // a data or packet counter over the data rate
  kFellAndRose  // a counter fell and came back: the fallen reading (held, then rejected)
};
inline constexpr std::size_t kImplausibleCount = 4;
// The metric's `reason`: xmit_wait_over_elapsed_time, errors_over_symbol_rate,
// data_over_link_rate, fell_and_rose.
const char* ToString(Implausible reason);

// What Update did with a reading.
struct Folded {
  const PortTotals* totals = nullptr;   // the port's totals after it
  std::optional<Implausible> rejected;  // a reading rejected (this one, or a held fall)
  std::size_t counter = 0;              // the counter that told
};

// PortVLXmitWaitCounters of one port as totals across readings, by the
// rules above: the first reading is the total, then the difference to the
// previous one, a lower reading all new counts. Its raw counters are 16
// bits and sticky: a VL whose reading sits at 0xFFFF has a lower bound.
struct VlWaitTotals {
  std::array<std::uint64_t, transport::kVlCount> total{};
  std::array<std::uint16_t, transport::kVlCount> last{};
  bool read = false;
  void Add(const std::array<std::uint16_t, transport::kVlCount>& raw);
};
using VlWaitTable = std::map<topology::PortRef, VlWaitTotals>;

// A port's PortXmitWait in seconds (xmit_wait_tick): what it waited since
// the exporter first read it, and the PortXmitWait total converted so far
// (the total when first read: what it counted before is in the raw total,
// not here, so that the series never jumps by a port's whole past).
struct PortWait {
  topology::PortRef port;
  double seconds = 0;
  std::uint64_t counted = 0;
  bool operator==(const PortWait&) const = default;
};

// Every port's totals, by port: one sorted array, so that a copy (one a
// sweep: see CounterStore) is one block the system takes back whole when it
// is let go, not 80k small ones left scattered in the heap. Read like a
// std::map (find, at, count, ordered iteration over pairs).
class PortTable {
 public:
  using value_type = std::pair<topology::PortRef, PortTotals>;
  using iterator = std::vector<value_type>::iterator;
  using const_iterator = std::vector<value_type>::const_iterator;

  PortTable() = default;
  PortTable(std::initializer_list<value_type> items);

  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  const_iterator find(const topology::PortRef& port) const;
  iterator find(const topology::PortRef& port);
  std::size_t count(const topology::PortRef& port) const { return find(port) != end() ? 1 : 0; }
  // Throws std::out_of_range for a port it does not hold.
  const PortTotals& at(const topology::PortRef& port) const;
  // The port's totals, added in order when new (one at a time: Merge for many).
  PortTotals& operator[](const topology::PortRef& port);
  // Adds ports it does not hold yet, in one pass.
  void Merge(std::vector<value_type> fresh);

 private:
  std::vector<value_type> items_;  // ascending by port
};

// Thread-safety: none; the sweeping thread owns it. What it publishes
// (Share) is immutable and shared: it is copied once, at the first change
// after it was shared, never per reader (at 80k ports one table is tens of
// MB, and a snapshot, the scheduler's parts and the store all hold it).
class CounterStore {
 public:
  CounterStore() : ports_(std::make_shared<PortTable>()) {}

  // Folds in a reading; returns the port's totals after it. A port read for
  // the first time is held apart until Commit (read again before it, with
  // other ports between, it starts over from that reading). With `limits`,
  // a reading no link can produce (the rules above) changes nothing, the
  // port's next plausible reading going on from its last one; a second such
  // reading in a row re-bases the port on it, adding nothing (the one
  // before was the wrong one: a fall of the data taken as a restart).
  // Without limits, or when `now` is not after the port's last reading,
  // rises are not judged.
  Folded Update(const topology::PortRef& port, const PortSample& sample, std::chrono::system_clock::time_point now,
                const PortLimits* limits = nullptr);
  // Adds the ports read for the first time since the last Commit to the
  // table (one pass for all: the first sweep reads every port).
  void Commit();
  // `ports` are about to be read: room for those read for the first time,
  // made when the first comes (the first sweep's table grows once, not by
  // doubling: at 32k GPUs it is 67 MB).
  void Expect(std::size_t ports) { expected_ = ports > ports_->size() ? ports - ports_->size() : 0; }
  // The port was a target but did not answer: keep totals, mark stale.
  void MarkStale(const topology::PortRef& port);
  // These counters of the port were just cleared by us: the next reading is
  // all new counts (the total itself is untouched, so it stays continuous).
  void NoteCleared(const topology::PortRef& port, const std::bitset<kCounterCount>& counters);

  // The table as of the last Commit.
  const PortTable& ports() const { return *ports_; }
  // The totals as they are now; later changes leave what it points to as it is.
  std::shared_ptr<const PortTable> Share() const { return ports_; }
  // Replaces everything, e.g. with totals saved before a re-exec.
  void Restore(PortTable ports) { ports_ = std::make_shared<PortTable>(std::move(ports)); }

 private:
  // The table to change: a copy first when it is shared.
  PortTable& Mutable();
  // The totals of a port read for the first time, added at the end.
  PortTotals& Fresh(const topology::PortRef& port);

  std::shared_ptr<PortTable> ports_;
  // Read for the first time, not committed yet, in the order read (sorted
  // once, at Commit).
  std::vector<PortTable::value_type> fresh_;
  std::size_t expected_ = 0;  // Expect's, reserved at the first new port
};

}  // namespace ibfabric::collectors
