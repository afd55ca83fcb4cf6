#include "collectors/reads/batch.h"

#include <gtest/gtest.h>

#include <numeric>

namespace ibfabric::collectors {
namespace {

using Clock = std::chrono::steady_clock;

TEST(BatchTest, AnIntervalShareIsTheTimeSinceTheLastSweepOverTheInterval) {
  IntervalShare share(std::chrono::seconds(300));
  const Clock::time_point t0 = Clock::time_point{} + std::chrono::hours(1);
  EXPECT_DOUBLE_EQ(share.Next(t0), 1.0) << "the first sweep takes all";
  EXPECT_DOUBLE_EQ(share.Next(t0 + std::chrono::seconds(30)), 0.1);
  EXPECT_DOUBLE_EQ(share.Next(t0 + std::chrono::seconds(930)), 1.0) << "never more than all";
  EXPECT_EQ(IntervalShare::Of(0.1, 25), 3u) << "rounded up";
  EXPECT_EQ(IntervalShare::StaleAfter(std::chrono::seconds(300)), std::chrono::seconds(630));
}

// The one rule of the interval reads (fec, modules, switch_environment):
// what was never read first, at least the floor; then the share of what is
// due, the longest waiting first, at least one.
TEST(BatchTest, IntervalPicksTakeTheNeverReadThenTheLongestWaiting) {
  const Clock::time_point t0 = Clock::time_point{} + std::chrono::hours(1);
  IntervalPicks<int> picks;
  for (int i = 0; i < 10; ++i) picks.Never(i);
  for (int i = 0; i < 20; ++i) picks.Due(t0 + std::chrono::seconds(20 - i), 100 + i);  // 119 waited longest
  // A tenth of 100 eligible (10) of the never read, but the floor is 4: 10;
  // a tenth of 30 counted (3) of the due: 119, 118, 117.
  EXPECT_EQ(picks.Take(0.1, 100, 30, 4), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 119, 118, 117}));
  EXPECT_TRUE(picks.Take(0.1, 100, 30, 4).empty()) << "taking empties the picks";

  for (int i = 0; i < 10; ++i) picks.Never(i);
  picks.Due(t0, 7);
  picks.Due(t0, 8);
  // A share of nothing eligible is the floor (2) of the never read, and
  // one of the due: of two that waited as long, the first asked.
  EXPECT_EQ(picks.Take(0.01, 0, 0, 2), (std::vector<int>{0, 1, 7}));
}

}  // namespace
}  // namespace ibfabric::collectors
