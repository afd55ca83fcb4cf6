#include "collectors/fec_collector.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <span>

#include "collectors/framework/render.h"
#include "topology/link_rate.h"

namespace ibfabric::collectors {
namespace {

using transport::ExtendedSpeedsRsFec;
using transport::FecMode;

// "Unsupported attribute", or a status saying the request itself is wrong
// for this port (an invalid field: IBTA 13.4.7 code 7), is for good.
bool ForGood(const transport::MadResult& m) { return transport::Unsupported(m) || transport::StatusCode(m) == 0x001c; }

// One sweep's asks: PortInfoExtended (the FEC mode) of some ports,
// PortExtendedSpeedsCounters or PPCNT of others.
struct FecRead {
  enum class Kind : std::uint8_t { kMode, kCounters, kPpcnt };
  enum class Got : std::uint8_t { kNothing, kAnswer, kUnsupported, kFailed };
  Kind kind = Kind::kMode;
  topology::PortRef port;
  std::uint16_t lid = 0;
  Got got = Got::kNothing;
  transport::PortInfoExtended mode{};
  ExtendedSpeedsRsFec counters{};
  transport::PhysLayerStatistics phys{};
  std::chrono::steady_clock::time_point at{};  // when the answer came
};
class FecReads final : public ReadList<FecRead> {
 public:
  using Read = FecRead;
  using Kind = FecRead::Kind;
  using Got = FecRead::Got;
  using ReadList<FecRead>::Ask;
  static Read Ask(Kind kind, const topology::PortRef& port, std::uint16_t lid) {
    Read r;
    r.kind = kind;
    r.port = port;
    r.lid = lid;
    return r;
  }

  void AddRequests(std::vector<transport::MadRequest>* out) override {
    for (const Read& r : reads_) {
      switch (r.kind) {
        case Kind::kMode:
          out->push_back(transport::PortInfoExtendedQuery(transport::MadAddress::Lid(r.lid), r.port.port));
          break;
        case Kind::kCounters: out->push_back(transport::ExtendedSpeedsCountersQuery(r.lid, r.port.port)); break;
        case Kind::kPpcnt:
          out->push_back(transport::AccessRegisterQuery(
              r.lid, transport::reg::kPpcnt,
              transport::PpcntRequest(r.port.port, transport::kPpcntPhysLayerStatistics)));
          break;
      }
    }
  }
  std::uint64_t NodeOf(std::size_t i) const override { return reads_[i].port.node_guid; }
  void Take(std::size_t i, transport::MadResult&& m) override {
    Read& r = reads_[i];
    if (m.outcome == transport::MadOutcome::kOk) {
      r.got = Got::kAnswer;
      r.at = m.done;
      switch (r.kind) {
        case Kind::kMode: r.mode = transport::DecodePortInfoExtended(m.response); break;
        case Kind::kCounters: r.counters = transport::DecodeExtendedSpeedsRsFec(m.response); break;
        case Kind::kPpcnt:
          r.phys = transport::DecodePhysLayerStatistics(transport::AccessRegisterData(m.response));
          // Another port's counters (or none) are no answer for this one.
          if (r.phys.port != r.port.port) r.got = Got::kFailed;
          break;
      }
    } else {
      // Unsupported is for good; no answer, Busy past its retries, or
      // another status is asked again next interval.
      const bool for_good = r.kind == Kind::kPpcnt ? transport::VendorUnsupported(m) || ForGood(m) : ForGood(m);
      r.got = for_good ? Got::kUnsupported : Got::kFailed;
    }
  }
};

// The raw ratio over the last trend period, in 24 parts: each part's
// ratio (the corrected symbols over the bits of the windows that ended in
// it; none where no window did), for the lowest of them.
inline constexpr std::size_t kTrendParts = 24;
class RawTrend {
 public:
  void Add(std::chrono::steady_clock::time_point at, double symbols, double bits,
           std::chrono::steady_clock::duration part) {
    if (start_ == std::chrono::steady_clock::time_point{}) start_ = at;
    const auto passed = (at - start_) / part;  // whole parts since the current one began
    if (passed > 0) {
      // The current part is complete, and so is every part that passed
      // without a window (none once the whole period passed so).
      Close(bits_ > 0 ? static_cast<float>(symbols_ / bits_) : kNone);
      const auto empty = std::min<std::int64_t>(passed - 1, kTrendParts);
      for (std::int64_t i = 0; i < empty; ++i) Close(kNone);
      symbols_ = bits_ = 0;
      start_ += part * passed;
    }
    symbols_ += symbols;
    bits_ += bits;
  }
  std::optional<double> Lowest() const {
    std::optional<double> out;
    for (float p : parts_) {
      if (!std::isnan(p) && (!out || p < *out)) out = p;
    }
    return out;
  }
  // Complete parts within the period that hold a window.
  int with_data() const {
    return static_cast<int>(std::count_if(parts_.begin(), parts_.end(), [](float p) { return !std::isnan(p); }));
  }

 private:
  static constexpr float kNone = std::numeric_limits<float>::quiet_NaN();
  void Close(float ratio) {
    parts_[next_] = ratio;
    next_ = static_cast<std::uint8_t>((next_ + 1) % kTrendParts);
  }
  std::chrono::steady_clock::time_point start_{};   // the current part's
  double symbols_ = 0, bits_ = 0;                   // the current part's windows
  std::array<float, kTrendParts> parts_ = Empty();  // complete parts, a ring (NaN: no window)
  std::uint8_t next_ = 0;
  static std::array<float, kTrendParts> Empty() {
    std::array<float, kTrendParts> a;
    a.fill(kNone);
    return a;
  }
};

// What is kept of one port between reads.
struct PortState {
  std::optional<FecMode> mode;
  double mode_gbps = 0;  // the signalling rate its mode was read at
  bool mode_unsupported = false;
  bool counters_unsupported = false;
  bool ppcnt_unsupported = false;
  bool clear_unsupported = false;                      // a Set answered "unsupported": not sent again
  std::optional<ExtendedSpeedsRsFec> last;             // the PMA counters last read
  std::optional<transport::PhysLayerStatistics> phys;  // PPCNT as last read
  std::chrono::steady_clock::time_point last_at{};     // when they came (the window's end)
  std::chrono::steady_clock::time_point asked_at{};    // the sweep that last asked them
  // No answer (or a failed one): not asked again before this.
  std::chrono::steady_clock::time_point not_before{};
  // The link went down since the last read: the next one counts, but
  // starts the window (no rate over the time it was down).
  bool window_broken = false;
  RawTrend trend;
  FecPort out;
};

// IBTA performance counters stop at their maximum: a 32-bit one there
// counts no more until cleared.
constexpr std::uint32_t kPinned = 0xffffffffu;
bool AnyPinned(const ExtendedSpeedsRsFec& c) {
  if (c.corrected_blocks == kPinned || c.uncorrectable_blocks == kPinned || c.corrected_symbols == kPinned) return true;
  return std::any_of(c.corrected_symbols_lane.begin(), c.corrected_symbols_lane.end(),
                     [](std::uint32_t v) { return v == kPinned; });
}

// Whether a counter reached `percent` of its 32-bit maximum (0: never).
bool NearMax(const ExtendedSpeedsRsFec& c, int percent) {
  if (percent <= 0) return false;
  const std::uint64_t at = std::uint64_t{kPinned} * static_cast<std::uint64_t>(percent) / 100;
  const auto over = [at](std::uint32_t v) { return v >= at; };
  return over(c.corrected_blocks) || over(c.uncorrectable_blocks) || over(c.corrected_symbols) ||
         std::any_of(c.corrected_symbols_lane.begin(), c.corrected_symbols_lane.end(), over);
}

// Reads asked at once outside the share (modes, and counters never read
// yet) at least: a small fabric is read whole at once, a large one over
// the interval.
constexpr std::size_t kFirstReadsPerSweep = 512;

class FecCollector final : public Collector {
 public:
  FecCollector(std::chrono::milliseconds interval, int clear_threshold_percent, std::chrono::milliseconds trend_period)
      : interval_(interval),
        clear_threshold_percent_(clear_threshold_percent),
        trend_part_(std::max<std::chrono::steady_clock::duration>(trend_period / static_cast<int>(kTrendParts),
                                                                  std::chrono::milliseconds(1))) {}

  Schedule schedule() const override { return Schedule::kSweep; }

  void Plan(const Cycle& cycle, SweepPlan* plan) override {
    const double share = share_.Next(cycle.now);
    IntervalPicks<FecReads::Read> picks;  // never read: modes to read, and counters never read
    std::size_t eligible = 0;             // ports of nodes whose PMA has the counters
    std::size_t counted = 0;              // ports whose counters are read at all
    const bool vendor_agent = cycle.parts->local.has_agent("vendor");
    for (const topology::Node& n : cycle.fabric->nodes()) {
      // A SHARP Aggregation Node's link is inside its switch: no cable.
      if (!cycle.in_scope(n) || topology::IsAggregationNode(n)) continue;
      const auto caps = cycle.parts->pma->find(n.guid);
      const bool pma = n.port_info_extended && caps != cycle.parts->pma->end() && caps->second.known &&
                       (caps->second.mask & transport::pma_cap::kRsFecCounters) != 0;
      const auto info = cycle.parts->vendor->find(n.guid);
      const bool ppcnt = vendor_agent && info != cycle.parts->vendor->end() && info->second.access_register;
      if (!pma && !ppcnt) continue;
      for (const topology::Port& p : n.ports) {
        const topology::PortRef ref{n.guid, p.number};
        if (p.number == 0 || !cycle.read_port(ref) || topology::FacesAggregationNode(*cycle.fabric, p)) continue;
        if (!p.link_up()) {
          // Down: its rates say nothing now, and the next window starts
          // when it is read again.
          const auto it = ports_.find(ref);
          if (it != ports_.end() && (it->second.last || it->second.phys)) {
            FecPort& f = it->second.out;
            it->second.window_broken = true;
            broke_ |= f.raw_ber.has_value() || f.effective_ber.has_value() || f.symbol_ber.has_value();
            f.raw_ber.reset();
            f.effective_ber.reset();
            f.symbol_ber.reset();
          }
          continue;
        }
        const std::uint16_t lid = n.kind == topology::NodeKind::kSwitch ? n.lid : p.lid;
        if (lid == 0) continue;
        ++eligible;
        PortState& st = ports_[ref];
        if (cycle.now < st.not_before) continue;
        const double gbps = topology::ActiveSignalGbps(p);
        const bool by_ppcnt = ppcnt && !st.ppcnt_unsupported;
        if (n.port_info_extended && !st.mode_unsupported && (!st.mode || st.mode_gbps != gbps)) {
          if (!cycle.smps_blocked) picks.Never(FecReads::Ask(FecReads::Kind::kMode, ref, lid));
          if (!by_ppcnt) continue;  // the PMA's counters wait for the mode; PPCNT does not
        }
        if (!by_ppcnt && (!pma || !st.mode || !transport::RsFecLayout(*st.mode) || st.counters_unsupported))
          continue;  // no mode read (unsupported), not RS-FEC, or no counters
        const auto kind = by_ppcnt ? FecReads::Kind::kPpcnt : FecReads::Kind::kCounters;
        ++counted;
        if (by_ppcnt ? !st.phys : !st.last) {
          picks.Never(FecReads::Ask(kind, ref, lid));
          continue;
        }
        if (cycle.now - st.asked_at >= interval_) picks.Due(st.asked_at, FecReads::Ask(kind, ref, lid));
      }
    }
    // Spread over the interval (IntervalPicks): the share of the ports
    // whose counters are read at all, of those never read of the eligible.
    std::vector<FecReads::Read> reads = picks.Take(share, eligible, counted, kFirstReadsPerSweep);
    for (const FecReads::Read& r : reads) ports_[r.port].asked_at = cycle.now;
    if (reads.empty()) return;
    part_.Ask(std::move(reads));
    plan->parts.push_back(&part_);
  }

  Outcome Update(const Cycle& cycle) override {
    Outcome out;
    bool changed = broke_;
    broke_ = false;
    for (auto it = ports_.begin(); it != ports_.end();) {
      const topology::Port* p = cycle.fabric->FindPort(it->first);
      changed |= !p && (it->second.out.mode_known || it->second.out.counted);
      it = p ? std::next(it) : ports_.erase(it);
    }
    if (part_.finished()) {
      std::vector<FecReads::Read> full;  // counters near their maximum: cleared after the read
      for (const FecReads::Read& r : part_.reads()) {
        changed |= Note(r, *cycle.fabric, cycle.now);
        const auto st = ports_.find(r.port);
        if (r.kind == FecReads::Kind::kCounters && r.got == FecReads::Got::kAnswer && st != ports_.end() &&
            !st->second.clear_unsupported && NearMax(r.counters, clear_threshold_percent_))
          full.push_back(r);
      }
      part_.Ask({});
      if (!full.empty() && cycle.engine) changed |= Clear(full, cycle);
    }
    if (changed || !published_) Rebuild();
    return out;
  }

  void Publish(Snapshot* parts) const override { parts->by_collector.Set(kFecCollector, published_); }

 private:
  // Takes one answer in; true when the published part changes.
  bool Note(const FecReads::Read& r, const topology::Fabric& fabric, std::chrono::steady_clock::time_point now_at) {
    using Got = FecReads::Got;
    const auto it = ports_.find(r.port);
    const topology::Port* p = fabric.FindPort(r.port);
    if (it == ports_.end() || !p || r.got == Got::kNothing) return false;
    PortState& st = it->second;
    if (r.got == Got::kFailed) {
      st.not_before = now_at + interval_;  // no answer: again next interval, not every sweep
      return false;
    }
    if (r.kind == FecReads::Kind::kMode) return NoteMode(r, *p, &st);
    if (r.kind == FecReads::Kind::kPpcnt) return NotePpcnt(r, *p, &st);
    return NotePma(r, *p, &st);
  }

  // Takes a PortInfoExtended answer in: the port's FEC mode.
  static bool NoteMode(const FecReads::Read& r, const topology::Port& p, PortState* state) {
    PortState& st = *state;
    if (r.got == FecReads::Got::kUnsupported) {
      st.mode_unsupported = true;
      return false;
    }
    st.mode = r.mode.Mode();
    st.mode_gbps = topology::ActiveSignalGbps(p);
    const bool rs_fec = r.mode.RsFecActive();
    const bool was = st.out.mode_known && st.out.mode == *st.mode && st.out.port == r.port;
    st.out.port = r.port;
    st.out.mode = *st.mode;
    st.out.mode_known = true;
    if (st.out.source == FecSource::kPpcnt) return !was;  // PPCNT counts whatever the mode
    if (!rs_fec && st.out.counted) {
      // No RS-FEC any more (the link retrained): its counters stay as
      // they were, its rates and source go.
      st.out.counted = false;
      st.out.raw_ber.reset();
      st.out.effective_ber.reset();
      return true;
    }
    st.window_broken |= st.last.has_value();  // another speed: a new window
    return !was;
  }

  // Takes a PortExtendedSpeedsCounters answer in (RS-FEC layout): its
  // totals, and the ratios over the bits the link carried in the window.
  bool NotePma(const FecReads::Read& r, const topology::Port& port, PortState* state) {
    PortState& st = *state;
    const topology::Port* p = &port;
    if (r.got == FecReads::Got::kUnsupported) {
      st.counters_unsupported = true;
      return false;
    }
    const ExtendedSpeedsRsFec& now = r.counters;
    FecPort& f = st.out;
    if (f.source != FecSource::kPmaExtendedSpeeds) StartOver(FecSource::kPmaExtendedSpeeds, &st);
    f.port = r.port;
    f.lanes = std::min<int>(topology::MaxLanes(p->width_active), static_cast<int>(transport::kFecLanes));
    // Totals by the one rule (counter_store.h FoldTotal): the first read is
    // what the device counted since it was last cleared.
    const ExtendedSpeedsRsFec* was = st.last ? &*st.last : nullptr;
    const auto fold = [&](std::uint32_t ExtendedSpeedsRsFec::*field, std::uint64_t* total) {
      const std::uint64_t last = was ? was->*field : 0;
      return FoldTotal(was ? &last : nullptr, now.*field, total);
    };
    fold(&ExtendedSpeedsRsFec::corrected_blocks, &f.corrected_blocks);
    const std::uint64_t uncorrectable = fold(&ExtendedSpeedsRsFec::uncorrectable_blocks, &f.uncorrectable_blocks);
    const std::uint64_t symbols = fold(&ExtendedSpeedsRsFec::corrected_symbols, &f.corrected_symbols);
    std::array<std::uint64_t, transport::kFecLanes> lane_delta{};
    for (std::size_t lane = 0; lane < transport::kFecLanes; ++lane) {
      const std::uint64_t last = was ? was->corrected_symbols_lane[lane] : 0;
      lane_delta[lane] = FoldTotal(was ? &last : nullptr, now.corrected_symbols_lane[lane], &f.lane_symbols[lane]);
    }
    if (was) {
      std::uint64_t most = 0;
      f.worst_lane = -1;
      for (std::size_t lane = 0; lane < transport::kFecLanes; ++lane) {
        if (lane_delta[lane] > most) {
          most = lane_delta[lane];
          f.worst_lane = static_cast<int>(lane);
        }
      }
      f.window_seconds = std::chrono::duration<double>(r.at - st.last_at).count();
      const double bits = topology::ActiveSignalGbps(*p) * 1e9 * f.window_seconds;
      // A window across a link down, or with a counter stopped at its
      // maximum (it counted less than happened), has no rate.
      f.pinned = AnyPinned(now);
      // Each ratio from its own counter: one stopped at its maximum that
      // did not move says nothing (what it counted since is unknown); one
      // that still moved before it stopped gives a lower bound, as
      // symbol errors do.
      const bool symbols_dark = now.corrected_symbols == kPinned && symbols == 0;
      const bool blocks_dark = now.uncorrectable_blocks == kPinned && uncorrectable == 0;
      f.raw_ber.reset();
      f.effective_ber.reset();
      if (bits > 0 && !st.window_broken) {
        if (!symbols_dark) f.raw_ber = static_cast<double>(symbols) / bits;
        if (!blocks_dark) f.effective_ber = static_cast<double>(uncorrectable) / bits;
      }
      f.lane_raw_ber = {};
      if (f.raw_ber) {
        const double lane_bits = bits / std::max(f.lanes, 1);
        for (std::size_t lane = 0; lane < transport::kFecLanes; ++lane)
          f.lane_raw_ber[lane] = static_cast<float>(static_cast<double>(lane_delta[lane]) / lane_bits);
        NoteTrend(r.at, static_cast<double>(symbols), bits, &st);
      }
    }
    st.window_broken = false;
    f.counted = true;
    f.read_at = r.at;
    st.last = now;
    st.last_at = r.at;
    return true;
  }

  // A port read from another source than before: its totals start again
  // from that source's first read.
  static void StartOver(FecSource source, PortState* st) {
    FecPort& f = st->out;
    const FecPort kept = f;
    f = FecPort{};
    f.port = kept.port;
    f.mode = kept.mode;
    f.mode_known = kept.mode_known;
    f.source = source;
    st->last.reset();
    st->phys.reset();
    st->trend = RawTrend{};
  }

  // Takes one PPCNT answer in (group 0x16): its 64-bit counters' totals
  // and the ratios over the bits the port received in the window.
  bool NotePpcnt(const FecReads::Read& r, const topology::Port& p, PortState* st) {
    if (r.got == FecReads::Got::kUnsupported) {
      // Read by the PMA from now on where it can be.
      st->ppcnt_unsupported = true;
      const bool had = st->out.source == FecSource::kPpcnt;
      if (had) StartOver(FecSource::kNone, st);
      return had;
    }
    const transport::PhysLayerStatistics& now = r.phys;
    FecPort& f = st->out;
    if (f.source != FecSource::kPpcnt) StartOver(FecSource::kPpcnt, st);
    f.port = r.port;
    f.lanes = std::min<int>(topology::MaxLanes(p.width_active), static_cast<int>(transport::kPhysLayerLanes));
    // Totals by the one rule (counter_store.h FoldTotal), as the PMA's.
    const transport::PhysLayerStatistics* was = st->phys ? &*st->phys : nullptr;
    const auto fold = [&](std::uint64_t transport::PhysLayerStatistics::*field, std::uint64_t* total) {
      return FoldTotal(was ? &(was->*field) : nullptr, now.*field, total);
    };
    const std::uint64_t bits = fold(&transport::PhysLayerStatistics::received_bits, &f.received_bits);
    const std::uint64_t corrected = fold(&transport::PhysLayerStatistics::corrected_bits, &f.corrected_bits);
    const std::uint64_t effective = fold(&transport::PhysLayerStatistics::effective_errors, &f.effective_errors);
    const std::uint64_t symbols = fold(&transport::PhysLayerStatistics::symbol_errors, &f.symbol_errors);
    std::array<std::uint64_t, transport::kPhysLayerLanes> lane_delta{};
    for (std::size_t lane = 0; lane < transport::kPhysLayerLanes; ++lane) {
      lane_delta[lane] =
          FoldTotal(was ? &was->raw_errors_lane[lane] : nullptr, now.raw_errors_lane[lane], &f.lane_raw_errors[lane]);
    }
    if (was) {
      std::uint64_t most = 0;
      f.worst_lane = -1;
      for (std::size_t lane = 0; lane < transport::kPhysLayerLanes; ++lane) {
        if (lane_delta[lane] > most) {
          most = lane_delta[lane];
          f.worst_lane = static_cast<int>(lane);
        }
      }
      f.window_seconds = std::chrono::duration<double>(r.at - st->last_at).count();
      f.raw_ber.reset();
      f.effective_ber.reset();
      f.symbol_ber.reset();
      f.lane_raw_ber = {};
      if (bits > 0 && !st->window_broken) {
        const auto b = static_cast<double>(bits);
        f.raw_ber = static_cast<double>(corrected) / b;
        f.effective_ber = static_cast<double>(effective) / b;
        f.symbol_ber = static_cast<double>(symbols) / b;
        const double lane_bits = b / std::max(f.lanes, 1);
        for (std::size_t lane = 0; lane < transport::kPhysLayerLanes; ++lane)
          f.lane_raw_ber[lane] = static_cast<float>(static_cast<double>(lane_delta[lane]) / lane_bits);
        NoteTrend(r.at, static_cast<double>(corrected), b, st);
      }
    }
    st->window_broken = false;
    f.counted = true;
    f.read_at = r.at;
    st->phys = now;
    st->last_at = r.at;
    return true;
  }

  // The raw ratio's window into the trend, and its baseline out.
  void NoteTrend(std::chrono::steady_clock::time_point at, double errors, double bits, PortState* st) const {
    st->trend.Add(at, errors, bits, trend_part_);
    st->out.raw_ber_baseline = st->trend.Lowest();
    st->out.baseline_parts = st->trend.with_data();
    st->out.baseline_seconds = std::chrono::duration<double>(trend_part_).count() * st->out.baseline_parts;
  }

  // Clears the ports' counters (--counters.clear-threshold). True when
  // any was acknowledged.
  bool Clear(const std::vector<FecReads::Read>& full, const Cycle& cycle) {
    std::vector<transport::MadRequest> sets;
    for (const FecReads::Read& r : full) sets.push_back(transport::ExtendedSpeedsCountersClear(r.lid, r.port.port));
    const auto results = cycle.engine->Run(sets);
    std::size_t cleared = 0;
    for (std::size_t i = 0; i < results.size() && i < full.size(); ++i) {
      PortState& st = ports_[full[i].port];
      if (results[i].outcome != transport::MadOutcome::kOk) {
        // A device that takes no Set of it ("method not supported", IBTA
        // 13.4.7 code 2) is not asked again either.
        st.clear_unsupported |= ForGood(results[i]) || transport::StatusCode(results[i]) == 0x0008;
        continue;
      }
      // The last reading stays: the next one, lower, counts from its own
      // value (a clear), and one that did not go down (a device that
      // acknowledged but kept counting) from the last, never the whole
      // counter again.
      st.out.pinned = false;
      ++clears_;
      ++cleared;
    }
    if (cycle.log && cleared > 0)
      cycle.log->Info("cleared FEC counters near their maximum", "ports=" + std::to_string(cleared));
    return cleared > 0;
  }

  void Rebuild() {
    auto list = std::make_shared<std::vector<FecPort>>();
    for (const auto& [ref, st] : ports_) {
      if (st.out.mode_known || st.out.counted) list->push_back(st.out);
    }
    auto next = std::make_shared<FecReadings>();
    next->ports = std::move(list);
    next->interval = interval_;
    next->clears = clears_;
    published_ = std::move(next);
  }

  std::chrono::milliseconds interval_;
  int clear_threshold_percent_;                     // 0: never
  std::chrono::steady_clock::duration trend_part_;  // a 24th of the degrading period
  std::uint64_t clears_ = 0;
  std::map<topology::PortRef, PortState> ports_;
  IntervalShare share_{interval_};
  bool broke_ = false;  // Plan dropped a rate: publish again
  FecReads part_;
  std::shared_ptr<const FecReadings> published_;
};

}  // namespace

std::unique_ptr<Collector> MakeFecCollector(const CollectorOptions& options) {
  return std::make_unique<FecCollector>(options.phy_interval, options.clear_threshold_percent,
                                        options.alerts.degrading.period);
}

namespace {

struct Total {
  const char* name;
  const char* help;
  std::uint64_t FecPort::*field;
};
constexpr Total kCounters[] = {
    {"fec_corrected_blocks_total",
     "FEC blocks with errors FEC corrected (PortExtendedSpeedsCounters PortFECCorrectableBlockCtr; from what the "
     "device counted when the exporter first read it)",
     &FecPort::corrected_blocks},
    {"fec_uncorrectable_blocks_total",
     "FEC blocks with more errors than FEC corrects (PortFECUncorrectableBlockCtr): errors that reached the link "
     "layer",
     &FecPort::uncorrectable_blocks},
    {"fec_corrected_symbols_total",
     "Symbols FEC corrected (PortFECCorrectedSymbolCtr): raw errors that did no harm yet, the first sign of a "
     "cable going bad",
     &FecPort::corrected_symbols},
};
constexpr Total kPhysCounters[] = {
    {"phy_received_bits_total",
     "Bits received (PPCNT physical layer counters phy_received_bits; from what the device counted when the "
     "exporter first read it)",
     &FecPort::received_bits},
    {"phy_corrected_bits_total", "Bits FEC corrected (phy_corrected_bits): the raw errors that did no harm yet",
     &FecPort::corrected_bits},
    {"phy_effective_errors_total", "Errors FEC left uncorrected (phy_effective_errors)", &FecPort::effective_errors},
    {"phy_symbol_errors_total", "Symbol errors at the link layer, after FEC (phy_symbol_errors)",
     &FecPort::symbol_errors},
};

// The ratios per port, as the link health ratios are (infiniband_port_*_ratio).
struct Rate {
  const char* name;
  const char* help;
  std::optional<double> FecPort::*field;
};
constexpr Rate kRates[] = {
    {"infiniband_port_raw_bit_error_ratio",
     "Raw (pre-FEC) bit error ratio of the port over the window between its last two FEC reads: corrected bits "
     "per bit received (PPCNT), or corrected symbols per bit its link carried (PortExtendedSpeedsCounters, a "
     "lower bound); absent across a link down or a pinned counter",
     &FecPort::raw_ber},
    {"infiniband_port_effective_bit_error_ratio",
     "Effective (post-FEC) bit error ratio over the same window: errors FEC left per bit received (PPCNT), or "
     "uncorrectable FEC blocks per bit the link carried (a lower bound)",
     &FecPort::effective_ber},
    {"infiniband_port_symbol_bit_error_ratio",
     "Symbol bit error ratio over the same window: symbol errors per bit received (PPCNT only)", &FecPort::symbol_ber},
    {"infiniband_port_raw_bit_error_ratio_baseline",
     "The lowest raw bit error ratio of the port in any 24th of the last cable_degrading period (default 24h: "
     "its lowest hour of the day), what a cable_degrading alert compares the current one with",
     &FecPort::raw_ber_baseline},
};

// The port's FEC mode and source, and its pinned 32-bit counters.
void RenderFecInfo(const Snapshot& s, const std::vector<const FecPort*>& ports, const Emit& out) {
  {
    FamilyParts info(
        out, "infiniband_port_fec_info",
        "The forward error correction the port runs (PortInfoExtended.FECModeActive: none, fire_code, "
        "rs_fec, low_latency_rs_fec, rs_fec2, mlnx_strong_rs_fec, mlnx_low_latency_rs_fec, mlnx_adaptive_rs_fec, "
        "mlnx_cod_fec, mlnx_zero_latency_fec, mlnx_rs_fec_544_514_plr, mlnx_rs_fec_271_257_plr; unknown: "
        "not read, another value, or the node has no PortInfoExtended) and "
        "where its "
        "FEC series come from (ppcnt: the PPCNT register's physical layer counters; "
        "pma_extended_speeds: PortExtendedSpeedsCounters, RS-FEC layout; none: not read)",
        prometheus::MetricType::Gauge);
    for (const FecPort* f : ports) {
      auto labels = EndLabels(s, f->port);
      labels.push_back({"fec_mode", f->mode_known ? transport::ToString(f->mode) : "unknown"});
      labels.push_back({"source", ToString(f->counted ? f->source : FecSource::kNone)});
      info.Add(std::move(labels), 1);
    }
    info.Finish();
  }
  {
    FamilyParts pinned(out, "infiniband_port_fec_counter_pinned",
                       "1 where a 32-bit FEC counter of the port stopped at its maximum: its totals count no more "
                       "and it has no bit error ratio until the counter is cleared",
                       prometheus::MetricType::Gauge);
    for (const FecPort* f : ports) {
      if (f->counted && f->source == FecSource::kPmaExtendedSpeeds && f->pinned) pinned.Add(EndLabels(s, f->port), 1);
    }
    pinned.Finish();
  }
}

// The totals of each source, per role (switch, hca), and their lanes.
void RenderFecTotals(const Snapshot& s, const std::vector<const FecPort*>& ports, const Emit& out) {
  for (const bool sw : {false, true}) {
    const std::string role = sw ? "switch" : "hca";
    const auto of = [&](const FecPort& f, FecSource source) {
      return f.counted && f.source == source &&
             (LabelOf(s, f.port.node_guid).kind == topology::NodeKind::kSwitch) == sw;
    };
    const auto totals = [&](std::span<const Total> list, FecSource source) {
      for (const Total& c : list) {
        FamilyParts f(out, "infiniband_" + role + "_port_" + c.name, std::string("The ") + role + " port's " + c.help,
                      prometheus::MetricType::Counter);
        for (const FecPort* p : ports) {
          if (of(*p, source))
            f.Add(PortLabels(p->port, LabelOf(s, p->port.node_guid)), static_cast<double>(p->*c.field));
        }
        f.Finish();
      }
    };
    // One series per lane the link runs on (the lanes group).
    const auto lanes = [&](const std::string& name, const std::string& help, FecSource source, auto count) {
      if (!Has(s.port_groups, PortGroup::kLanes)) return;
      FamilyParts f(out, "infiniband_" + role + "_port_" + name,
                    help + " on one lane of the " + role + " port, for the lanes its link runs on",
                    prometheus::MetricType::Counter);
      for (const FecPort* p : ports) {
        if (!of(*p, source)) continue;
        for (int lane = 0; lane < p->lanes; ++lane) {
          auto labels = PortLabels(p->port, LabelOf(s, p->port.node_guid));
          labels.push_back({"lane", std::to_string(lane)});
          f.Add(std::move(labels), static_cast<double>(count(*p, static_cast<std::size_t>(lane))));
        }
      }
      f.Finish();
    };
    totals(kCounters, FecSource::kPmaExtendedSpeeds);
    lanes("lane_fec_corrected_symbols_total", "Symbols FEC corrected (FECCorrectableSymbolCtrLane<n>)",
          FecSource::kPmaExtendedSpeeds, [](const FecPort& p, std::size_t lane) { return p.lane_symbols[lane]; });
    totals(kPhysCounters, FecSource::kPpcnt);
    lanes("lane_raw_errors_total", "Raw (pre-FEC) errors (PPCNT phy_raw_errors_lane<n>)", FecSource::kPpcnt,
          [](const FecPort& p, std::size_t lane) { return p.lane_raw_errors[lane]; });
  }
}

// The ratios per port, as the link health ratios are (infiniband_port_*_ratio).
void RenderFecRatios(const Snapshot& s, const std::vector<const FecPort*>& ports, const Emit& out) {
  for (const Rate& r : kRates) {
    FamilyParts f(out, r.name, r.help, prometheus::MetricType::Gauge);
    for (const FecPort* p : ports) {
      if (p->counted && (p->*r.field)) f.Add(EndLabels(s, p->port), *(p->*r.field));
    }
    f.Finish();
  }
}

}  // namespace

void RenderFec(const Snapshot& s, const Emit& out) {
  const auto* fec = s.by_collector.Get<FecReadings>(kFecCollector);
  if (!fec || !s.fabric) return;
  EmitOne(out, "infiniband_exporter_fec_port_resets_total",
          "Ports whose FEC counters (PortExtendedSpeedsCounters) the exporter cleared (--counters.clear-threshold)",
          prometheus::MetricType::Counter, static_cast<double>(fec->clears));
  // Only what this exporter reads (its scope's ports).
  std::vector<const FecPort*> ports;
  for (const FecPort& f : *fec->ports) {
    const topology::Node* n = s.fabric->FindNode(f.port.node_guid);
    const topology::Port* p = n ? n->FindPort(f.port.port) : nullptr;
    if (n && p && OwnsPort(s, *n, *p)) ports.push_back(&f);
  }
  RenderFecInfo(s, ports, out);
  RenderFecTotals(s, ports, out);
  RenderFecRatios(s, ports, out);
}

namespace {

// A float's value to the digits it holds (6), not the double nearest it.
double Significant(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", static_cast<double>(v));
  return std::strtod(buf, nullptr);
}

}  // namespace

// One port's FEC as the fec collector last read it; null where it has none.
nlohmann::json FecJson(const Snapshot& s, const topology::PortRef& port) {
  const auto* fec = s.by_collector.Get<FecReadings>(kFecCollector);
  if (!fec) return nullptr;
  // By port, as the collector publishes them.
  const auto it = std::lower_bound(fec->ports->begin(), fec->ports->end(), port,
                                   [](const FecPort& f, const topology::PortRef& p) { return f.port < p; });
  if (it == fec->ports->end() || !(it->port == port)) return nullptr;
  const FecPort& f = *it;
  const auto ratio = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json j{{"mode", f.mode_known ? transport::ToString(f.mode) : "unknown"},
                   {"source", ToString(f.counted ? f.source : FecSource::kNone)}};
  if (!f.counted) return j;
  const bool ppcnt = f.source == FecSource::kPpcnt;
  j["pinned"] = f.pinned;
  j["window_seconds"] = f.window_seconds;
  j["raw_bit_error_ratio"] = ratio(f.raw_ber);
  j["effective_bit_error_ratio"] = ratio(f.effective_ber);
  j["symbol_bit_error_ratio"] = ratio(f.symbol_ber);
  j["raw_bit_error_ratio_baseline"] = ratio(f.raw_ber_baseline);
  j["worst_lane"] = f.worst_lane >= 0 ? nlohmann::json(f.worst_lane) : nlohmann::json(nullptr);
  if (ppcnt) {
    j["received_bits"] = f.received_bits;
    j["corrected_bits"] = f.corrected_bits;
    j["effective_errors"] = f.effective_errors;
    j["symbol_errors"] = f.symbol_errors;
  } else {
    j["corrected_blocks"] = f.corrected_blocks;
    j["uncorrectable_blocks"] = f.uncorrectable_blocks;
    j["corrected_symbols"] = f.corrected_symbols;
  }
  nlohmann::json lanes = nlohmann::json::array();
  for (int lane = 0; lane < f.lanes; ++lane) {
    const auto i = static_cast<std::size_t>(lane);
    lanes.push_back({{"lane", lane},
                     {ppcnt ? "raw_errors" : "corrected_symbols", ppcnt ? f.lane_raw_errors[i] : f.lane_symbols[i]},
                     {"raw_bit_error_ratio",
                      f.raw_ber ? nlohmann::json(Significant(f.lane_raw_ber[i])) : nlohmann::json(nullptr)}});
  }
  j["lanes"] = std::move(lanes);
  return j;
}

CollectorInfo FecCollectorInfo() {
  return {
      .name = "fec",
      .help =
          "Forward error correction and bit error ratios per port where the device has them, every --phy.interval: "
          "PPCNT's physical layer counters through AccessRegister (bits received and corrected, effective and symbol "
          "errors, raw errors per lane), else PortExtendedSpeedsCounters of RS-FEC ports (corrected and uncorrectable "
          "blocks, corrected symbols per lane); raw, effective and symbol bit error ratios.",
      .make = MakeFecCollector,
      .render = RenderFec,
      .reads = {"capabilities"},
  };
}

}  // namespace ibfabric::collectors
