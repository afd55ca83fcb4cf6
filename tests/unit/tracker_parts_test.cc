// The fabric tracker's parts on their own (exporter/walk_schedule.h,
// exporter/rewalk_holds.h, exporter/smp_watch.h): when full walks run,
// what keeps lost answers from multiplying re-walks, and when SMPs dropped
// where GMPs answer are the diagnosis. Times and sweep numbers are handed in.

#include <gtest/gtest.h>

#include "exporter/rewalk_holds.h"
#include "exporter/smp_watch.h"
#include "exporter/walk_schedule.h"

namespace ibfabric::exporter {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(WalkScheduleTest, OnTheIntervalAndWhenForcedAfterTheWaitLossyWalksSet) {
  // Walks hourly, sweeps every 2 s, rotation 5 min.
  WalkSchedule w(seconds(3600), seconds(2), seconds(300));
  const WalkSchedule::TimePoint t0{seconds(1000)};
  EXPECT_TRUE(w.Due(t0)) << "before the first walk";
  w.Walked(t0, /*ok=*/true, /*missed=*/false);
  EXPECT_FALSE(w.Due(t0 + seconds(1)));
  EXPECT_EQ(w.backoff(), milliseconds(0));
  w.Force();
  EXPECT_TRUE(w.Due(t0 + seconds(1))) << "a clean walk leaves no wait";
  w.Walked(t0 + seconds(1), true, false);
  EXPECT_FALSE(w.Due(t0 + seconds(3600)));
  EXPECT_TRUE(w.Due(t0 + seconds(3601))) << "on the interval";

  // Walks that miss answers: a forced walk waits 2 sweeps, then 8, 16 s, ...
  // up to the rotation.
  WalkSchedule::TimePoint t = t0 + seconds(3601);
  w.Walked(t, true, /*missed=*/true);
  EXPECT_EQ(w.backoff(), seconds(4));
  w.Force();
  EXPECT_FALSE(w.Due(t + seconds(3)));
  EXPECT_TRUE(w.Due(t + seconds(4)));
  for (const auto want :
       {seconds(8), seconds(16), seconds(32), seconds(64), seconds(128), seconds(256), seconds(300), seconds(300)}) {
    t += seconds(10);
    w.Walked(t, true, true);
    EXPECT_EQ(w.backoff(), want);
  }
  // Unforced, a lossy walk's wait does not delay the interval.
  EXPECT_FALSE(w.Due(t + seconds(3599)));
  EXPECT_TRUE(w.Due(t + seconds(3600)));
  // A walk that missed nothing ends the wait; one that failed is forced again at once.
  w.Walked(t, true, false);
  EXPECT_EQ(w.backoff(), milliseconds(0));
  w.Walked(t, /*ok=*/false, false);
  EXPECT_TRUE(w.Due(t));
}

TEST(WalkScheduleTest, TheFirstWaitIsAtLeastASecond) {
  WalkSchedule w(seconds(3600), milliseconds(200), seconds(300));
  w.Walked(WalkSchedule::TimePoint{seconds(5)}, true, true);
  EXPECT_EQ(w.backoff(), seconds(1));
}

topology::PortChange Change(std::uint64_t guid, std::uint8_t port) {
  topology::PortChange c;
  c.port = {guid, port};
  c.why = "port state changed";
  return c;
}

TEST(RewalkHoldsTest, AFarEndThatDoesNotAnswerIsAskedAgainOneTwoFourEightSixteenSweepsLaterThenLeft) {
  RewalkHolds h;
  const auto c = Change(0x10, 3);
  std::uint64_t sweep = 100;
  std::vector<std::uint64_t> due;
  for (int i = 0; i < RewalkHolds::kRetries; ++i) {
    EXPECT_TRUE(h.Rewalked({c}, {c}, sweep).empty());
    ASSERT_EQ(h.retries().size(), 1u);
    due.push_back(h.retries().at(c.port).due - sweep);
    sweep = h.retries().at(c.port).due;
  }
  EXPECT_EQ(due, (std::vector<std::uint64_t>{1, 2, 4, 8, 16}));
  const auto given_up = h.Rewalked({c}, {c}, sweep);
  ASSERT_EQ(given_up.size(), 1u);
  EXPECT_EQ(given_up[0].port, c.port);
  EXPECT_TRUE(h.retries().empty());
}

TEST(RewalkHoldsTest, AReWalkThatFinishesEndsItsRetries) {
  RewalkHolds h;
  const auto a = Change(0x10, 3), b = Change(0x10, 4);
  h.Rewalked({a, b}, {a, b}, 1);
  ASSERT_EQ(h.retries().size(), 2u);
  h.Rewalked({a}, {}, 2);  // a answered this time; b was not asked
  EXPECT_EQ(h.retries().count(a.port), 0u);
  EXPECT_EQ(h.retries().count(b.port), 1u);
}

TEST(RewalkHoldsTest, ASilentPortIsReWalkedOnceInTenSweepsDoublingUntilItAnswers) {
  RewalkHolds h;
  const topology::PortRef p{0x20, 7};
  EXPECT_TRUE(h.SilenceDue(p, 0));
  h.SilenceRewalked(p, 0);
  EXPECT_FALSE(h.SilenceDue(p, 9));
  EXPECT_TRUE(h.SilenceDue(p, 10));
  h.SilenceRewalked(p, 10);  // still silent: 20 sweeps now
  EXPECT_FALSE(h.SilenceDue(p, 29));
  EXPECT_TRUE(h.SilenceDue(p, 30));
  std::uint64_t sweep = 30, hold = 20;
  for (int i = 0; i < 10; ++i) {
    h.SilenceRewalked(p, sweep);
    hold = std::min<std::uint64_t>(2 * hold, RewalkHolds::kSilentHoldMax);
    EXPECT_FALSE(h.SilenceDue(p, sweep + hold - 1));
    sweep += hold;
  }
  EXPECT_EQ(hold, RewalkHolds::kSilentHoldMax);
  // Answering again: the hold (last re-walk at `last`) runs out after
  // twice its length, and the next silence starts from ten sweeps again.
  const std::uint64_t last = sweep - hold;
  h.EndSweep(last + 2 * hold - 1);
  EXPECT_FALSE(h.SilenceDue(p, last + hold - 1)) << "still held";
  h.EndSweep(last + 2 * hold);
  EXPECT_TRUE(h.SilenceDue(p, last + hold - 1)) << "ran out";
  const std::uint64_t again = last + 2 * hold + 5;
  h.SilenceRewalked(p, again);
  EXPECT_FALSE(h.SilenceDue(p, again + RewalkHolds::kSilentHold - 1));
  EXPECT_TRUE(h.SilenceDue(p, again + RewalkHolds::kSilentHold));
}

using Ev = SmpWatch::Evidence;
using Lids = std::set<std::uint16_t>;

// A probe's evidence.
Ev Probed(Lids dropping, Lids answering) { return Ev{std::move(dropping), std::move(answering), false, true}; }

// Protection everywhere but the local node: every sweep's SMPs to the
// switches time out while their PMAs answer. The second sweep makes the
// diagnosis; then SMPs go to the local LID only, and probes of the
// dropping LIDs come 2, 4, 8, 8 sweeps apart (max_wait 8).
TEST(SmpWatchTest, TwoSweepsOfDroppedSmpsMakeTheDiagnosisThenOnlyProbesAskThem) {
  SmpWatch w(8);
  const Ev sweep{{2, 3}, {1}};
  EXPECT_EQ(w.Observe(sweep, 0), SmpWatch::Change::kNone);
  EXPECT_FALSE(w.diagnosed());
  EXPECT_TRUE(w.Sends(2)) << "not yet diagnosed: everything is asked";
  EXPECT_TRUE(w.ProbeDue(1)) << "the first evidence is checked in the next sweep";
  EXPECT_FALSE(w.ProbeDue(0)) << "not in the same one";
  EXPECT_EQ(w.Observe(sweep, 0), SmpWatch::Change::kNone) << "a second look in the same sweep is not a second sweep";
  EXPECT_EQ(w.Observe(sweep, 1), SmpWatch::Change::kDiagnosed);
  EXPECT_TRUE(w.diagnosed());
  EXPECT_EQ(w.blocked(), (Lids{2, 3}));
  EXPECT_TRUE(w.Sends(1));
  EXPECT_FALSE(w.Sends(2));
  EXPECT_FALSE(w.Sends(7)) << "a LID that did not answer while the evidence gathered is not asked";
  std::vector<std::uint64_t> probes;
  for (std::uint64_t s = 2; s < 40; ++s) {
    if (!w.ProbeDue(s)) continue;
    probes.push_back(s);
    EXPECT_EQ(w.Probe(s), (std::vector<std::uint16_t>{2, 3}));
    EXPECT_EQ(w.Observe(Probed({2, 3}, {}), s), SmpWatch::Change::kNone);
  }
  EXPECT_EQ(probes, (std::vector<std::uint64_t>{3, 7, 15, 23, 31, 39}));
  // A sweep's answer from the local LID says nothing about the others.
  EXPECT_EQ(w.Observe({{}, {1}}, 40), SmpWatch::Change::kNone);
  EXPECT_TRUE(w.diagnosed());
  // They answer a probe again: cleared, everything is asked.
  EXPECT_EQ(w.Observe(Probed({}, {2, 3}), 41), SmpWatch::Change::kCleared);
  EXPECT_FALSE(w.diagnosed());
  EXPECT_TRUE(w.blocked().empty());
  EXPECT_TRUE(w.Sends(2));
  EXPECT_FALSE(w.ProbeDue(42));
}

// Protection that came on after LIDs 10 and 11 answered: they are not
// asked again once diagnosed. A probe in which one of four answers is
// still the diagnosis (that one is asked in sweeps from then on, and its
// answers there clear nothing); one in which nothing answers at all, GMPs
// neither, ends it (kLost): the walks find out why.
TEST(SmpWatchTest, APartAnswerIsNoClearingAndNoAnswerAtAllEndsIt) {
  SmpWatch w(8);
  w.Observe({{}, {10, 11}}, 0);
  w.Observe({{2, 3, 4, 5}, {1}}, 1);
  ASSERT_EQ(w.Observe({{2, 3, 4, 5}, {1}}, 2), SmpWatch::Change::kDiagnosed);
  EXPECT_FALSE(w.Sends(10));
  EXPECT_TRUE(w.Sends(1));
  ASSERT_TRUE(w.ProbeDue(4));
  EXPECT_EQ(w.Probe(4), (std::vector<std::uint16_t>{2, 3, 4, 5}));
  EXPECT_EQ(w.Observe(Probed({2, 3, 4}, {5}), 4), SmpWatch::Change::kNone);
  EXPECT_TRUE(w.diagnosed());
  EXPECT_TRUE(w.Sends(5));
  EXPECT_EQ(w.blocked(), (Lids{2, 3, 4}));
  EXPECT_EQ(w.Observe({{}, {1, 5}}, 5), SmpWatch::Change::kNone) << "a sweep's answers from LIDs not blocked";
  EXPECT_TRUE(w.diagnosed());
  // A sweep in which LID 1 drops too: blocked, no longer asked.
  EXPECT_EQ(w.Observe({{1}, {5}}, 6), SmpWatch::Change::kNone);
  EXPECT_FALSE(w.Sends(1));
  EXPECT_EQ(w.blocked(), (Lids{1, 2, 3, 4}));
  ASSERT_TRUE(w.ProbeDue(12));
  w.Probe(12);
  EXPECT_EQ(w.Observe(Probed({}, {}), 12), SmpWatch::Change::kLost);
  EXPECT_FALSE(w.diagnosed());
  EXPECT_TRUE(w.blocked().empty());
}

// A lossy or congested fabric (SMPs on VL15 are dropped first): an SMP
// lost among many answers is no evidence, nor is one far end's among the
// SM's answer; two far ends lost in a walk are checked with LIDs that
// answered before, and their answers (or no answer at all) end it.
TEST(SmpWatchTest, LostSmpsAreNoDiagnosis) {
  SmpWatch w(8);
  for (std::uint64_t s = 0; s < 10; ++s) {
    EXPECT_EQ(w.Observe({{static_cast<std::uint16_t>(10 + s)}, {1, 2, 3, 4}}, s), SmpWatch::Change::kNone);
  }
  EXPECT_FALSE(w.diagnosed());
  EXPECT_TRUE(w.blocked().empty());
  EXPECT_FALSE(w.ProbeDue(11));
  // Local scope: one switch LID's SMPs lost, the local port's answered.
  EXPECT_EQ(w.Observe({{7}, {1}}, 10), SmpWatch::Change::kNone);
  EXPECT_TRUE(w.blocked().empty());

  // A walk's probe: one far end dropped, the SM (LID 5) answered.
  EXPECT_EQ(w.Observe(Probed({9}, {5}), 11), SmpWatch::Change::kNone);
  EXPECT_TRUE(w.blocked().empty());
  EXPECT_FALSE(w.ProbeDue(12));

  // Two far ends dropped and nothing else asked: checked in the next sweep,
  // with two LIDs that answered before.
  EXPECT_EQ(w.Observe(Probed({8, 9}, {}), 12), SmpWatch::Change::kNone);
  ASSERT_TRUE(w.ProbeDue(13));
  EXPECT_EQ(w.Probe(13), (std::vector<std::uint16_t>{8, 9, 1, 2}));
  EXPECT_EQ(w.Observe(Probed({9}, {8, 1, 2}), 13), SmpWatch::Change::kNone) << "answers: it was loss";
  EXPECT_FALSE(w.diagnosed());
  EXPECT_TRUE(w.blocked().empty());
  EXPECT_FALSE(w.ProbeDue(14));

  // Again, and this time the check gets no answer of either kind.
  EXPECT_EQ(w.Observe(Probed({8, 9}, {}), 14), SmpWatch::Change::kNone);
  ASSERT_TRUE(w.ProbeDue(15));
  w.Probe(15);
  EXPECT_EQ(w.Observe(Probed({}, {}), 15), SmpWatch::Change::kNone);
  EXPECT_FALSE(w.diagnosed());
  EXPECT_FALSE(w.ProbeDue(16)) << "no probe of them every sweep";
}

// Not even the local node answers SMPs (protected too): the walk fails, its
// probe of the local LID and the SM's shows them dropping (sure: neither
// is a lost SMP on a cable), the check in the next sweep confirms it. A
// single sure LID is evidence too. Probes take a few LIDs at a time, in turn.
TEST(SmpWatchTest, EverythingProtectedIsDiagnosedByTheWalksProbeAndItsCheck) {
  SmpWatch w(4);
  EXPECT_EQ(w.Observe(Ev{{1, 5}, {}, true, true}, 0), SmpWatch::Change::kNone);
  ASSERT_TRUE(w.ProbeDue(1));
  EXPECT_EQ(w.Probe(1), (std::vector<std::uint16_t>{1, 5}));
  EXPECT_EQ(w.Observe(Ev{{1, 5}, {}, true, true}, 1), SmpWatch::Change::kDiagnosed);
  EXPECT_FALSE(w.Sends(1));
  // More LIDs seen dropping than one probe asks: asked in turn.
  w.Observe({{10, 11, 12, 13}, {}}, 2);
  EXPECT_EQ(w.blocked().size(), 6u);
  EXPECT_EQ(w.Probe(3), (std::vector<std::uint16_t>{10, 11, 12, 13})) << "after the two asked at sweep 1";
  EXPECT_EQ(w.Probe(10), (std::vector<std::uint16_t>{1, 5, 10, 11}));

  SmpWatch one(4);
  EXPECT_EQ(one.Observe(Ev{{5}, {1}, true, true}, 0), SmpWatch::Change::kNone) << "the SM's LID, this host's answers";
  EXPECT_EQ(one.Probe(1), (std::vector<std::uint16_t>{5, 1}));
  EXPECT_EQ(one.Observe(Ev{{5}, {1}, true, true}, 1), SmpWatch::Change::kDiagnosed);
  EXPECT_TRUE(one.Sends(1));
}

}  // namespace
}  // namespace ibfabric::exporter
