#pragma once
// When the next full walk of the fabric runs (FabricTracker's schedule):
// on its interval, or sooner when forced (a walk that failed, a re-walk
// that could not be trusted, LIDs that moved, too many changes at once).
// Lost answers are never multiplied into walks: after a walk that missed
// answers, the next forced one waits twice the sweep interval (at least
// 1 s), doubling after each such walk up to the rotation; a walk that
// missed nothing ends the wait. Pure: times are handed in.

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace ibfabric::exporter {

// How many sweeps one rotation spans (every switch port's PortInfo and
// every LID's NodeInfo are read once a rotation): rotation / interval,
// rounded down (0 when the rotation is shorter than a sweep).
inline std::uint64_t SweepsPerRotation(std::chrono::milliseconds interval, std::chrono::milliseconds rotation) {
  return static_cast<std::uint64_t>(rotation / std::max(interval, std::chrono::milliseconds(1)));
}

// Thread-safety: none (the scheduler's thread).
class WalkSchedule {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  WalkSchedule(std::chrono::milliseconds interval, std::chrono::milliseconds sweep_interval,
               std::chrono::milliseconds rotation)
      : interval_(interval), sweep_interval_(sweep_interval), rotation_(rotation) {}

  // Whether a cycle at `now` walks everything: forced and past the wait
  // after lossy walks, or due on the interval. True before the first walk.
  bool Due(TimePoint now) const { return (forced_ && now >= forced_not_before_) || now >= next_; }
  // The next cycle walks everything (once the wait after lossy walks is over).
  void Force() { forced_ = true; }
  // A walk ran at `now`: `ok` whether it reached the fabric (a failed one
  // is forced again), `missed` whether it got no answer to something.
  void Walked(TimePoint now, bool ok, bool missed) {
    forced_ = !ok;
    next_ = now + interval_;
    if (ok && missed) {
      const auto first = std::max<std::chrono::milliseconds>(2 * sweep_interval_, std::chrono::seconds(1));
      backoff_ = backoff_.count() == 0 ? first : std::min(2 * backoff_, rotation_);
      backoff_ = std::max(backoff_, first);
    } else {
      backoff_ = std::chrono::milliseconds(0);
    }
    forced_not_before_ = now + backoff_;
  }
  // How long a forced walk waits now (0 after a walk that missed nothing).
  std::chrono::milliseconds backoff() const { return backoff_; }

 private:
  std::chrono::milliseconds interval_, sweep_interval_, rotation_;
  bool forced_ = true;
  TimePoint next_{};
  TimePoint forced_not_before_{};
  std::chrono::milliseconds backoff_{0};
};

}  // namespace ibfabric::exporter
