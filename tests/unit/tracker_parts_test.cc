// The fabric tracker's parts on their own (exporter/walk_schedule.h,
// exporter/rewalk_holds.h): when full walks run, and what keeps lost
// answers from multiplying re-walks. Times and sweep numbers are handed in.

#include <gtest/gtest.h>

#include "exporter/rewalk_holds.h"
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

}  // namespace
}  // namespace ibfabric::exporter
