// The pipelined engine on the fake transport: window, TID matching,
// timeouts and retries, late, duplicate and corrupted replies.

#include <gtest/gtest.h>

#include "transport/attributes.h"
#include "transport/codec.h"
#include "transport/mad_engine.h"
#include "transport/testing/encoders.h"
#include "transport/testing/fake_mad_port.h"

namespace ibfabric::transport {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using testing::FakeFaults;
using testing::FakeMadPort;

// Answers PortCounters with SymbolErrorCounter = LID * 1000 + PortSelect, so
// every reply says whom it belongs to.
std::optional<MadBytes> Echo(const MadAddress& to, const MadBytes& req) {
  PortCounters c;
  c.port_select = MadData(req)[1];
  c.symbol_error = static_cast<std::uint16_t>(to.lid * 1000 + c.port_select);
  return EncodeResponse(req, testing::EncodePortCounters(c));
}

std::vector<MadRequest> Requests(int n) {
  std::vector<MadRequest> v;
  for (int i = 0; i < n; ++i) v.push_back(PortCountersQuery(static_cast<std::uint16_t>(1 + i / 36), static_cast<std::uint8_t>(1 + i % 36)));
  return v;
}

void ExpectAllMatch(const std::vector<MadRequest>& reqs, const std::vector<MadResult>& res) {
  ASSERT_EQ(reqs.size(), res.size());
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_EQ(res[i].outcome, MadOutcome::kOk) << i;
    const PortCounters c = DecodePortCounters(res[i].response);
    EXPECT_EQ(c.symbol_error, reqs[i].address.lid * 1000 + reqs[i].payload[1]) << i;
  }
}

TEST(MadEngineTest, NeverExceedsTheWindow) {
  for (int window : {1, 4, 64}) {
    FakeMadPort port(Echo, FakeFaults{microseconds(300)});
    MadEngine engine(port, EngineOptions::Legacy(window, milliseconds(500), 0));
    const auto reqs = Requests(500);
    ExpectAllMatch(reqs, engine.Run(reqs));
    EXPECT_EQ(port.max_outstanding(), static_cast<std::size_t>(window));
    EXPECT_EQ(engine.stats().total().sent, 500u);
  }
}

TEST(MadEngineTest, TimeoutIsRetriedExactlyTheConfiguredTimes) {
  for (int retries : {0, 1, 3}) {
    FakeMadPort port([](const MadAddress&, const MadBytes&) { return std::nullopt; });
    EngineOptions o{8, milliseconds(5), retries};
    o.timeout_max = milliseconds(20);  // the backoff stops doubling there
    MadEngine engine(port, o);
    const auto res = engine.Run(Requests(3));
    for (const auto& r : res) EXPECT_EQ(r.outcome, MadOutcome::kTimeout);
    EXPECT_EQ(port.sends(), 3u * (1 + retries));
    EXPECT_EQ(engine.stats().total().retries, 3u * retries);
    EXPECT_EQ(engine.stats().total().timeouts, 3u);
  }
}

TEST(MadEngineTest, LossIsRecoveredByRetries) {
  FakeMadPort port(Echo, FakeFaults{microseconds(100), 0.3}, 7);
  MadEngine engine(port, EngineOptions{32, milliseconds(5), 10});
  const auto reqs = Requests(300);
  ExpectAllMatch(reqs, engine.Run(reqs));
  EXPECT_GT(engine.stats().total().retries, 0u);
  EXPECT_EQ(engine.stats().total().timeouts, 0u);
}

TEST(MadEngineTest, LateRepliesAreIgnored) {
  // Replies arrive after the engine gave up on the first attempt; with one
  // retry each request is answered by the reply to the retry only, and the
  // late first replies are counted as ignored.
  FakeMadPort port(Echo, FakeFaults{milliseconds(15)});
  MadEngine engine(port, EngineOptions::Legacy(16, milliseconds(10), 1));  // a fixed timeout
  const auto reqs = Requests(5);
  const auto res = engine.Run(reqs);
  for (const auto& r : res) EXPECT_EQ(r.outcome, MadOutcome::kTimeout);
  EXPECT_EQ(engine.stats().total().responses, 0u);
  // Now with a timeout longer than the latency everything is answered and
  // the stale replies of the previous run are ignored, not misattributed.
  MadEngine patient(port, EngineOptions{16, milliseconds(100), 0});
  ExpectAllMatch(reqs, patient.Run(reqs));
  EXPECT_GT(patient.stats().ignored, 0u);
}

TEST(MadEngineTest, BackoffOutwaitsSlowReplies) {
  // The same slow agent with the adaptive engine: the retry waits twice as
  // long and is answered, the late first reply is ignored, and the requests
  // after it start from the backed-off timeout (RFC 6298 5.5) and then from
  // the measured round trip: one timeout in all, not one per request.
  FakeMadPort port(Echo, FakeFaults{milliseconds(15)});
  MadEngine engine(port, EngineOptions{16, milliseconds(10), 1});
  const auto reqs = Requests(5);  // one LID: one at a time
  ExpectAllMatch(reqs, engine.Run(reqs));
  EXPECT_EQ(engine.stats().total().retries, 1u);
  EXPECT_EQ(engine.stats().ignored, 1u);
  EXPECT_NEAR(engine.stats().srtt_seconds[static_cast<int>(MadKind::kGmp)], 0.015, 0.005);
}

TEST(MadEngineTest, DuplicatesAndCorruptRepliesAreIgnored) {
  FakeMadPort port(Echo, FakeFaults{microseconds(50), 0, 0.5, 0.2}, 3);
  MadEngine engine(port, EngineOptions{16, milliseconds(5), 20});
  const auto reqs = Requests(200);
  ExpectAllMatch(reqs, engine.Run(reqs));
  EXPECT_GT(engine.stats().ignored, 0u);
  EXPECT_EQ(engine.stats().total().responses, 200u);
}

TEST(MadEngineTest, RemoteErrorsAreReportedNotRetried) {
  FakeMadPort port([](const MadAddress&, const MadBytes& req) -> std::optional<MadBytes> {
    return EncodeResponse(req, {}, 0x0c);  // unsupported attribute
  });
  MadEngine engine(port, EngineOptions{4, milliseconds(50), 3});
  const auto res = engine.Run(Requests(2));
  for (const auto& r : res) {
    EXPECT_EQ(r.outcome, MadOutcome::kRemoteError);
    EXPECT_EQ(r.mad_status, 0x0c);
  }
  EXPECT_EQ(port.sends(), 2u);
}

}  // namespace
}  // namespace ibfabric::transport
