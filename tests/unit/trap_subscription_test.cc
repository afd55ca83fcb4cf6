// The trap subscription (exporter/trap_subscription.h) over the fake
// transport: what it sends when, asking again until the SA accepts every
// trap, and the Reports counted.

#include "exporter/trap_subscription.h"

#include <gtest/gtest.h>

#include "transport/codec.h"
#include "transport/testing/encoders.h"
#include "transport/testing/fake_mad_port.h"

namespace ibfabric::exporter {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// An SA at some LID that accepts InformInfo Sets, or answers them with an
// error status while `refuse` is set; counts them.
struct Sa {
  int sets = 0;
  std::uint16_t last_lid = 0;
  bool refuse = false;
  transport::testing::FakeMadPort port{
      [this](const transport::MadAddress& to, const transport::MadBytes& m) -> std::optional<transport::MadBytes> {
        if (transport::DecodeHeader(m).attr_id != transport::sa_attr::kInformInfo) return std::nullopt;
        ++sets;
        last_lid = to.lid;
        return transport::EncodeResponse(m, {}, refuse ? 0x001c : 0);
      }};
  transport::MadEngine engine{port, {}};
  collectors::Logger log{collectors::LogLevel::kError};
};

TEST(TrapSubscriptionTest, AsksWhenDueAtANewMasterOrOnceARotationAndAgainUntilAccepted) {
  Sa sa;
  TrapSubscription t(sa.engine, sa.log, seconds(300));
  const std::chrono::steady_clock::time_point t0{seconds(100)};
  t.Subscribe(t0, 0);
  EXPECT_EQ(sa.sets, 0) << "no master known: nothing sent";
  EXPECT_FALSE(t.subscribed());
  t.Subscribe(t0, 7);
  EXPECT_EQ(sa.sets, 4) << "traps 64, 65, 128 and 144";
  EXPECT_EQ(sa.last_lid, 7);
  EXPECT_TRUE(t.subscribed());
  EXPECT_EQ(t.subscriptions(), (std::map<std::uint16_t, bool>{{64, true}, {65, true}, {128, true}, {144, true}}));
  t.Subscribe(t0 + seconds(10), 7);
  EXPECT_EQ(sa.sets, 4) << "accepted, same master, within the rotation";
  t.Due();  // a full walk
  t.Subscribe(t0 + seconds(11), 7);
  EXPECT_EQ(sa.sets, 8);
  t.Subscribe(t0 + seconds(12), 9);
  EXPECT_EQ(sa.sets, 12) << "another master";
  EXPECT_EQ(sa.last_lid, 9);
  t.Subscribe(t0 + seconds(12 + 300), 9);
  EXPECT_EQ(sa.sets, 16) << "renewed once a rotation";

  sa.refuse = true;
  t.Due();
  t.Subscribe(t0 + seconds(400), 9);
  EXPECT_EQ(sa.sets, 20);
  EXPECT_EQ(t.subscriptions().at(128), false);
  t.Subscribe(t0 + seconds(401), 9);
  EXPECT_EQ(sa.sets, 24) << "refused: asked again at the next sweep";
  sa.refuse = false;
  t.Subscribe(t0 + seconds(402), 9);
  EXPECT_EQ(sa.sets, 28);
  t.Subscribe(t0 + seconds(403), 9);
  EXPECT_EQ(sa.sets, 28) << "accepted: quiet again";
}

TEST(TrapSubscriptionTest, ReportsAreCountedByTrapAndHandedOver) {
  Sa sa;
  TrapSubscription t(sa.engine, sa.log, seconds(300));
  EXPECT_TRUE(t.Take().empty());
  transport::Notice n;
  n.trap_number = 128;
  n.lid = 12;
  sa.port.Inject(transport::testing::EncodeNoticeReport(n, 1), 1);
  n.trap_number = 64;
  n.lid = 0;
  n.port_guid = 0x1234;
  sa.port.Inject(transport::testing::EncodeNoticeReport(n, 2), 1);
  // The engine takes each in while it waits (a wait ends at the first).
  std::vector<transport::Notice> taken;
  for (int i = 0; i < 50 && taken.size() < 2; ++i) {
    if (!sa.engine.WaitForReports(milliseconds(20))) continue;
    for (const auto& got : t.Take()) taken.push_back(got);
  }
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[0].trap_number, 128);
  EXPECT_EQ(taken[0].lid, 12);
  EXPECT_EQ(taken[1].port_guid, 0x1234u);
  EXPECT_EQ(t.traps(), (std::map<std::uint16_t, std::uint64_t>{{64, 1}, {128, 1}}));
  EXPECT_TRUE(t.Take().empty());
}

// Takes in the Reports injected so far (each waited for).
void TakeAll(Sa& sa, TrapSubscription& t, std::size_t want) {
  std::size_t taken = 0;
  for (int i = 0; i < 100 && taken < want; ++i) {
    if (sa.engine.WaitForReports(milliseconds(20))) taken += t.Take().size();
  }
  ASSERT_EQ(taken, want);
}

// Delivery judged from what the sweeps find: a change waits one more
// sweep for its trap-128 Report; misses in two sweeps with no Report
// between, and the accepted subscription delivers nothing; a trap-128
// Report says it does again (another trap's does not). Not subscribed:
// nothing is expected. After a (re)subscription, `grace` sweeps count
// nothing.
TEST(TrapSubscriptionTest, ChangesTheSweepsFoundWithNoReportShowTrapsAreNotDelivered) {
  Sa sa;
  TrapSubscription t(sa.engine, sa.log, seconds(300), /*grace=*/3);
  t.Observed(3, 1);
  t.Observed(0, 5);
  EXPECT_FALSE(t.delivering().has_value()) << "not subscribed: nothing expected";
  t.Subscribe(std::chrono::steady_clock::time_point{seconds(1)}, 7);
  t.Observed(2, 10);  // the grace begins: sweeps 10, 11, 12
  t.Observed(1, 11);
  t.Observed(0, 12);
  t.Observed(0, 13);
  t.Observed(0, 14);
  EXPECT_FALSE(t.delivering().has_value()) << "changes in the grace after subscribing count nothing";
  t.Observed(5, 15);
  t.Observed(0, 16);
  EXPECT_FALSE(t.delivering().has_value()) << "the change still waits a sweep for its Report";
  t.Observed(0, 17);
  EXPECT_FALSE(t.delivering().has_value()) << "one sweep missed, however many ports";
  t.Observed(1, 18);
  t.Observed(0, 19);
  t.Observed(0, 20);
  EXPECT_EQ(t.delivering(), false) << "two sweeps missed, no Report between";

  // A trap-64 Report is no trap 128; a trap-128 one says they arrive.
  transport::Notice n;
  n.trap_number = 64;
  sa.port.Inject(transport::testing::EncodeNoticeReport(n, 1), 1);
  TakeAll(sa, t, 1);
  t.Observed(0, 21);
  EXPECT_EQ(t.delivering(), false);
  n.trap_number = 128;
  n.lid = 12;
  sa.port.Inject(transport::testing::EncodeNoticeReport(n, 2), 1);
  TakeAll(sa, t, 1);
  t.Observed(1, 22);
  EXPECT_EQ(t.delivering(), true);
  // A change whose Report comes by the next sweep is no miss.
  sa.port.Inject(transport::testing::EncodeNoticeReport(n, 3), 1);
  TakeAll(sa, t, 1);
  t.Observed(0, 23);
  t.Observed(1, 24);
  t.Observed(0, 25);
  t.Observed(0, 26);
  EXPECT_EQ(t.delivering(), true) << "one sweep missed since the last Report";

  // Another SM: judged afresh after its grace.
  t.Subscribe(std::chrono::steady_clock::time_point{seconds(2)}, 9);
  t.Observed(1, 27);
  t.Observed(1, 28);
  t.Observed(0, 29);
  t.Observed(0, 30);
  t.Observed(0, 31);
  EXPECT_EQ(t.delivering(), true) << "the missed sweep before and the changes in the grace do not count";
}

}  // namespace
}  // namespace ibfabric::exporter
