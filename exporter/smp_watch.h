#pragma once
// Whether the fabric drops this exporter's SMPs while it answers its GMPs
// (a FabricTracker part): what M_Key protection does to an exporter that
// has no M_Key or the wrong one (topology/access.h, docs/security.md#m_key).
//
// Evidence comes from each sweep and from probes (one SMP and one GMP to
// each of a few LIDs): LIDs whose SMPs all timed out while a GMP to the
// same LID answered (`dropping`), and LIDs that answered an SMP
// (`answering`). A cycle is evidence when no fewer LIDs drop than answer,
// and either two or more drop or one that cannot be a lost SMP does (the
// local port, whose SMA is its own HCA; the master SM's: `sure`).
// Protection is fabric-wide; a lossy or congested fabric (SMPs travel on
// VL15, which is dropped first) loses a few SMPs among many answers. The
// first evidence (a walk that missed answers probes what it missed; a
// sweep) is checked by a probe in a later sweep of the same LIDs and of a
// few seen answering before: evidence again makes the diagnosis, anything
// else ends the suspicion.
//
// While it stands, SMPs go only to LIDs that answered them in the cycles
// that made it (and since), and to the dropping ones as a probe, 2 sweeps
// apart doubling up to `max_wait` sweeps. A probe in which they answer
// (no fewer than drop) ends it (kCleared); one in which nothing answers at
// all, not even a GMP, ends it too (kLost: the LIDs moved, or the local
// port is gone, which the walks that follow then find). Pure: sweeps are
// counted and handed in.

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <set>
#include <utility>
#include <vector>

namespace ibfabric::exporter {

// Thread-safety: none (the scheduler's thread).
class SmpWatch {
 public:
  static constexpr std::uint64_t kFirstWait = 2;  // sweeps between probes at first
  static constexpr std::size_t kProbeLids = 4;    // dropping LIDs asked per probe
  static constexpr std::size_t kControlLids = 2;  // LIDs seen answering, asked in a check

  explicit SmpWatch(std::uint64_t max_wait) : max_wait_(std::max<std::uint64_t>(max_wait, kFirstWait)) {}

  struct Evidence {
    std::set<std::uint16_t> dropping;   // SMPs timed out, a GMP to the same LID answered
    std::set<std::uint16_t> answering;  // an SMP answered
    bool sure = false;                  // the local port's LID or the master SM's is among `dropping`
    bool probe = false;                 // from a probe (Probe's LIDs), not a sweep
  };
  enum class Change { kNone, kDiagnosed, kCleared, kLost };

  // One sweep's evidence, or a probe's, at sweep number `sweep`.
  Change Observe(const Evidence& e, std::uint64_t sweep) {
    const bool more_drop = !e.dropping.empty() && e.dropping.size() >= e.answering.size();
    const bool evidence = more_drop && (e.dropping.size() >= 2 || e.sure);
    const bool back = std::any_of(e.answering.begin(), e.answering.end(),
                                  [this](std::uint16_t lid) { return blocked_.count(lid) > 0; });
    for (std::uint16_t lid : e.dropping) answering_.erase(lid);
    answering_.insert(e.answering.begin(), e.answering.end());
    if (diagnosed_) {
      if (e.probe && back && !more_drop) return Reset(Change::kCleared);
      if (e.probe && e.dropping.empty() && e.answering.empty()) return Reset(Change::kLost);
      Take(e);
      return Change::kNone;
    }
    const bool checked = std::exchange(checking_, false);
    if (!evidence) {
      // Others answered: nothing about the LIDs in question. A check that
      // is no evidence ends the suspicion.
      if (back || checked) Reset(Change::kNone);
      return Change::kNone;
    }
    Take(e);
    streak_answering_.insert(e.answering.begin(), e.answering.end());
    if (streak_ == 0 || sweep != last_sweep_) ++streak_;
    last_sweep_ = sweep;
    if (streak_ < 2) return Change::kNone;
    diagnosed_ = true;
    // Only what answered while the evidence gathered is still asked: a LID
    // that answered before protection came on is not timed out once more.
    answering_ = std::move(streak_answering_);
    streak_answering_.clear();
    wait_ = kFirstWait;
    next_probe_ = sweep + wait_;
    return Change::kDiagnosed;
  }

  bool diagnosed() const { return diagnosed_; }
  // The LIDs seen dropping SMPs (while evidence gathers, and since the diagnosis).
  const std::set<std::uint16_t>& blocked() const { return blocked_; }
  // Whether a sweep sends SMPs to `lid`: always, but while diagnosed only
  // to LIDs seen answering them.
  bool Sends(std::uint16_t lid) const { return !diagnosed_ || answering_.count(lid) > 0; }
  // Whether the dropping LIDs are due a probe at sweep `sweep`: to check
  // the first evidence in a later sweep, and while diagnosed.
  bool ProbeDue(std::uint64_t sweep) const {
    return diagnosed_ ? sweep >= next_probe_ : !blocked_.empty() && sweep != last_sweep_;
  }
  // The LIDs to probe now: a few of the dropping ones, taken in turn (and,
  // to check the first evidence, a few seen answering). While diagnosed,
  // the next probe waits twice as long, up to `max_wait`.
  std::vector<std::uint16_t> Probe(std::uint64_t sweep) {
    std::vector<std::uint16_t> out;
    if (!blocked_.empty()) {
      auto it = std::next(blocked_.begin(), static_cast<std::ptrdiff_t>(turn_ % blocked_.size()));
      for (std::size_t i = 0; i < std::min(kProbeLids, blocked_.size()); ++i) {
        out.push_back(*it);
        if (++it == blocked_.end()) it = blocked_.begin();
      }
      turn_ += out.size();
    }
    if (diagnosed_) {
      wait_ = std::min(2 * wait_, max_wait_);
      next_probe_ = sweep + wait_;
    } else {
      std::size_t controls = 0;
      for (auto it = answering_.begin(); it != answering_.end() && controls < kControlLids; ++it) {
        if (blocked_.count(*it)) continue;
        out.push_back(*it);
        ++controls;
      }
      checking_ = true;  // its evidence, or none, decides
    }
    return out;
  }

 private:
  // The dropping LIDs are blocked; the answering ones no longer are.
  void Take(const Evidence& e) {
    for (std::uint16_t lid : e.answering) blocked_.erase(lid);
    blocked_.insert(e.dropping.begin(), e.dropping.end());
  }
  Change Reset(Change why) {
    *this = SmpWatch(max_wait_);
    return why;
  }

  std::uint64_t max_wait_;
  bool diagnosed_ = false;
  int streak_ = 0;  // sweeps with evidence, before the diagnosis
  std::uint64_t last_sweep_ = 0;
  std::set<std::uint16_t> blocked_;
  std::set<std::uint16_t> answering_;         // LIDs whose last SMP answered
  std::set<std::uint16_t> streak_answering_;  // those that answered during the streak
  std::uint64_t wait_ = kFirstWait;
  std::uint64_t next_probe_ = 0;
  std::size_t turn_ = 0;
  bool checking_ = false;  // the next Observe is the check of the first evidence
};

}  // namespace ibfabric::exporter
