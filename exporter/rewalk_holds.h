#pragma once
// What keeps lost answers from multiplying re-walks (FabricTracker): a
// re-walk whose far end did not answer is asked again 1, 2, 4, ... sweeps
// later, five times at most; a port that stopped answering is re-walked for
// that at most once in ten sweeps, the hold doubling while it stays
// silent (up to 640 sweeps) and running out once it answers again for
// twice its length. Counted in sweeps, handed in. Pure.

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "topology/discovery.h"
#include "topology/fabric.h"

namespace ibfabric::exporter {

// Thread-safety: none (the scheduler's thread).
class RewalkHolds {
 public:
  static constexpr int kRetries = 5;
  static constexpr std::uint64_t kSilentHold = 10;
  static constexpr std::uint64_t kSilentHoldMax = 640;

  struct Retry {
    topology::PortChange change;
    int attempts = 0;
    std::uint64_t due = 0;  // sweep number
  };

  // After a re-walk of `changes` at sweep `sweep`: those it finished are
  // no longer retried; each of `retry` is asked again when due. Returns
  // those given up on (asked kRetries times), for the log.
  std::vector<topology::PortChange> Rewalked(const std::vector<topology::PortChange>& changes,
                                             const std::vector<topology::PortChange>& retry, std::uint64_t sweep) {
    for (const auto& c : changes) {
      bool again = false;
      for (const auto& r : retry) again = again || r.port == c.port;
      if (!again) retries_.erase(c.port);
    }
    std::vector<topology::PortChange> given_up;
    for (const auto& c : retry) {
      Retry& s = retries_[c.port];
      s.change = c;
      if (++s.attempts > kRetries) {
        given_up.push_back(c);
        retries_.erase(c.port);
        continue;
      }
      s.due = sweep + (1ULL << (s.attempts - 1));
    }
    return given_up;
  }
  // The re-walks waiting to be asked again; `due` may be moved on.
  std::map<topology::PortRef, Retry>& retries() { return retries_; }
  const std::map<topology::PortRef, Retry>& retries() const { return retries_; }

  // Whether a port that stopped answering may be re-walked for that at `sweep`.
  bool SilenceDue(const topology::PortRef& end, std::uint64_t sweep) const {
    auto it = silent_.find(end);
    return it == silent_.end() || sweep >= it->second.first + it->second.second;
  }
  // It was re-walked for that at `sweep`: the hold starts, or doubles.
  void SilenceRewalked(const topology::PortRef& end, std::uint64_t sweep) {
    auto [it, fresh] = silent_.try_emplace(end, sweep, kSilentHold);
    if (!fresh) it->second = {sweep, std::min(2 * it->second.second, kSilentHoldMax)};
  }
  // Holds of ports that answered for twice their length run out.
  void EndSweep(std::uint64_t sweep) {
    std::erase_if(silent_, [&](const auto& e) { return sweep >= e.second.first + 2 * e.second.second; });
  }

 private:
  std::map<topology::PortRef, Retry> retries_;
  // Port -> the sweep it was re-walked for silence and the sweeps to wait.
  std::map<topology::PortRef, std::pair<std::uint64_t, std::uint64_t>> silent_;
};

}  // namespace ibfabric::exporter
