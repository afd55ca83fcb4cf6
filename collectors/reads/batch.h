#pragma once
// The sweep's one pipelined batch, made of parts: whoever reads every sweep
// (the counters, a collector's own attribute, the fabric tracker's PortInfo
// and LID checks) is a BatchPart that adds its requests and takes its
// results back, by its own index, as soon as each is decided. RunBatch
// only puts the parts' requests one after the other, runs them through the
// engine at once (so its windows per destination and per kind hold across
// all of them), hands each result to its part, tallies every node's MADs,
// and at the end tells every part which LIDs answered for another node
// (as the parts that check LIDs found), so that each drops what came from
// them.
//
// Adding a read to the sweep is a part of its own (collector.h SweepPlan):
// nothing here changes.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "transport/mad_engine.h"

namespace ibfabric::collectors {

// The MADs of a sweep to one node, and how many of them needed a retry or
// got no answer at all: how much its readings can be trusted.
struct MadTally {
  std::uint32_t asked = 0;
  std::uint32_t troubled = 0;
  MadTally& operator+=(const MadTally& o) {
    asked += o.asked;
    troubled += o.troubled;
    return *this;
  }
};

// Thread-safety: a part is used by the batch's thread only, between
// AddRequests and Finish; it keeps what it reads for its owner after.
class BatchPart {
 public:
  virtual ~BatchPart() = default;
  // Appends this batch's requests to `out` (called once, first).
  virtual void AddRequests(std::vector<transport::MadRequest>* out) = 0;
  // The node its request `i` (counted from its first) reads: MADs are
  // tallied per node.
  virtual std::uint64_t NodeOf(std::size_t i) const = 0;
  // The result of its request `i`, as soon as it is decided, in any order.
  virtual void Take(std::size_t i, transport::MadResult&& result) = 0;
  // Adds the LIDs it found answering for another node (a part that checks LIDs).
  virtual void MovedLids(std::set<std::uint16_t>* /*out*/) const {}
  // Once every result of the batch is in; `moved`: every part's MovedLids.
  virtual void Finish(const std::set<std::uint16_t>& /*moved*/) {}
};

// A part that asks one MAD per element of a list and keeps each answer
// in its element: the list asked of a batch, and whether that batch has
// finished. A Read has `lid` and `got`, whose zero value means nothing
// was got: what a LID that answered for another node said (the batch's
// MovedLids) is not its node's, and Finish sets it back to that (asked
// again, with no penalty).
template <typename Read>
class ReadList : public BatchPart {
 public:
  void Ask(std::vector<Read> reads) {
    reads_ = std::move(reads);
    finished_ = false;
  }
  bool finished() const { return finished_; }
  const std::vector<Read>& reads() const { return reads_; }
  void Finish(const std::set<std::uint16_t>& moved) override {
    for (Read& r : reads_) {
      if (moved.count(r.lid)) r.got = {};
    }
    finished_ = true;
  }

 protected:
  std::vector<Read> reads_;

 private:
  bool finished_ = false;
};

// A read once per interval spread over the sweeps (the slow beat of the
// physical layer, --phy.interval): each sweep takes its share of what is
// due, its time since the last sweep over the interval (all of it at the
// first sweep).
class IntervalShare {
 public:
  explicit IntervalShare(std::chrono::milliseconds interval) : interval_(interval) {}
  // This sweep's share, in (0, 1]; once per sweep.
  double Next(std::chrono::steady_clock::time_point now) {
    const double since =
        last_ == std::chrono::steady_clock::time_point{} ? 0 : std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return std::min(1.0, since > 0 ? since / std::chrono::duration<double>(interval_).count() : 1.0);
  }
  // How many of `of` a share is, rounded up.
  static std::size_t Of(double share, std::size_t of) {
    return static_cast<std::size_t>(std::ceil(static_cast<double>(of) * share));
  }
  // How old a reading read on this beat may get before it is stale: two
  // intervals (a read spread over one, and the next one late) and half a
  // minute.
  static std::chrono::milliseconds StaleAfter(std::chrono::milliseconds interval) {
    return 2 * interval + std::chrono::seconds(30);
  }

 private:
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point last_{};
};

// This sweep's asks of a read made once per interval, one rule for every
// such read (a port's FEC counters, its module, a switch's registers):
// what was never read first, up to this sweep's share of all that is read
// on the beat (`eligible`) but at least `first_floor` (a small fabric is
// read whole at once, a large one within its first sweeps); then what was
// read before and is due again, the longest waiting first, up to this
// sweep's share of what is read at all (`counted`) but at least one.
template <class T>
class IntervalPicks {
 public:
  void Never(T item) { never_.push_back(std::move(item)); }
  void Due(std::chrono::steady_clock::time_point asked_at, T item) { due_.emplace_back(asked_at, std::move(item)); }
  // The asks, never read first; empties the picks.
  std::vector<T> Take(double share, std::size_t eligible, std::size_t counted, std::size_t first_floor) {
    std::vector<T> out;
    const std::size_t firsts = std::min(never_.size(), std::max(IntervalShare::Of(share, eligible), first_floor));
    for (std::size_t i = 0; i < firsts; ++i) out.push_back(std::move(never_[i]));
    std::stable_sort(due_.begin(), due_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    const std::size_t dues = std::min(due_.size(), std::max<std::size_t>(IntervalShare::Of(share, counted), 1));
    for (std::size_t i = 0; i < dues; ++i) out.push_back(std::move(due_[i].second));
    never_.clear();
    due_.clear();
    return out;
  }

 private:
  std::vector<T> never_;
  std::vector<std::pair<std::chrono::steady_clock::time_point, T>> due_;
};

struct BatchTally {
  std::map<std::uint64_t, MadTally> mads;  // per node: every request of the batch to it
  std::chrono::duration<double> duration{};
};

// Runs every part's requests as one batch. Parts are borrowed for the call.
BatchTally RunBatch(const std::vector<BatchPart*>& parts, transport::MadEngine& engine);

}  // namespace ibfabric::collectors
