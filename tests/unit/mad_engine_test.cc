// The pipelined engine on the fake transport: window, TID matching,
// timeouts and retries, late, duplicate and corrupted replies; the SA
// subscription and Reports on the wire, and the engine taking Reports in
// (acknowledged, once).

#include "transport/mad_engine.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "transport/attributes.h"
#include "transport/codec.h"
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
  for (int i = 0; i < n; ++i)
    v.push_back(PortCountersQuery(static_cast<std::uint16_t>(1 + i / 36), static_cast<std::uint8_t>(1 + i % 36)));
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

// With a sink, each result leaves the engine as it is decided: a request
// to a node that never answers does not hold back the answers behind it,
// and every request gets exactly one result, its own.
TEST(MadEngineTest, ASinkGetsEachResultAsItIsDecided) {
  FakeMadPort port([](const MadAddress& to, const MadBytes& req) -> std::optional<MadBytes> {
    if (to.lid == 99) return std::nullopt;
    return Echo(to, req);
  });
  MadEngine engine(port, EngineOptions::Legacy(4, milliseconds(50), 0));
  std::vector<MadRequest> reqs{PortCountersQuery(99, 1)};
  for (const MadRequest& r : Requests(100)) reqs.push_back(r);
  std::vector<std::size_t> order;
  std::vector<MadResult> got(reqs.size());
  engine.Run(reqs, [&](std::size_t index, MadResult&& r) {
    order.push_back(index);
    got.at(index) = std::move(r);
  });
  ASSERT_EQ(order.size(), reqs.size());
  EXPECT_EQ(order.back(), 0u) << "the silent node's request is decided last";
  std::sort(order.begin(), order.end());
  EXPECT_EQ(std::adjacent_find(order.begin(), order.end()), order.end()) << "one result per request";
  EXPECT_EQ(got[0].outcome, MadOutcome::kTimeout);
  ExpectAllMatch({reqs.begin() + 1, reqs.end()}, {got.begin() + 1, got.end()});
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
  // The measured round trip: never under the agent's 15 ms (the clock is read
  // before the send), over it only by what a busy machine adds to reading the
  // reply.
  const double srtt = engine.stats().srtt_seconds[static_cast<int>(MadKind::kGmp)];
  EXPECT_GE(srtt, 0.015);
  EXPECT_LT(srtt, 0.1);
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

// A PMA that redirects (IBTA 13.5.3.3): at QP1 of LID 1 it answers every
// request with the Redirect status and a ClassPortInfo naming QP 0x20 at
// `redirect_lid` with Q_Key 0x1234 and SL 5; there it answers. The
// ClassPortInfo is written at the IBTA's offsets (13.4.8.1, table 126:
// RedirectSL data byte 25 bits 7-4, RedirectLID 28-29, RedirectQP 33-35,
// RedirectQ_Key 36-39).
struct RedirectingPma {
  int at_qp1 = 0;
  int at_redirect = 0;
  std::uint16_t redirect_lid = 7;  // another LID than the request's
  bool redirect_again = false;     // the redirected QP redirects too
  bool silent_redirect = false;    // nothing answers at the redirected QP
  std::optional<MadBytes> operator()(const MadAddress& to, const MadBytes& req) {
    if (to.qp == 1) {
      EXPECT_EQ(to.qkey, kDefaultQp1Qkey);
      EXPECT_EQ(to.sl, 0);
      ++at_qp1;
      return Redirect(req);
    }
    ++at_redirect;
    EXPECT_EQ(to.lid, 7) << "RedirectLID, not the request's";
    EXPECT_EQ(to.qp, 0x20u);
    EXPECT_EQ(to.qkey, 0x1234u);
    EXPECT_EQ(to.sl, 5) << "RedirectSL";
    if (silent_redirect) return std::nullopt;
    return redirect_again ? Redirect(req) : Echo(to, req);
  }
  MadBytes Redirect(const MadBytes& req) const {
    std::vector<std::uint8_t> cpi(kPmaDataSize, 0);
    cpi[0] = 1;                                              // BaseVersion
    cpi[1] = 1;                                              // ClassVersion
    cpi[25] = 5 << 4;                                        // RedirectSL
    cpi[28] = static_cast<std::uint8_t>(redirect_lid >> 8);  // RedirectLID
    cpi[29] = static_cast<std::uint8_t>(redirect_lid);
    cpi[35] = 0x20;  // RedirectQP
    cpi[38] = 0x12;  // RedirectQ_Key
    cpi[39] = 0x34;
    return EncodeResponse(req, cpi, kMadStatusRedirect);
  }
};

TEST(MadEngineTest, ARedirectIsFollowedAndRemembered) {
  RedirectingPma pma;
  FakeMadPort port([&](const MadAddress& to, const MadBytes& req) { return pma(to, req); });
  MadEngine engine(port, EngineOptions{4, milliseconds(50), 1});
  const auto reqs = Requests(3);  // LID 1, ports 1..3
  for (int run = 0; run < 2; ++run) {
    const auto res = engine.Run(reqs);
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      ASSERT_EQ(res[i].outcome, MadOutcome::kOk);
      EXPECT_EQ(DecodePortCounters(res[i].response).symbol_error, 7000 + reqs[i].payload[1])
          << "answered at LID 7, where the Redirect said";
    }
  }
  EXPECT_EQ(pma.at_qp1, 1) << "one Redirect, then every request goes where it said, in later Runs too";
  EXPECT_EQ(pma.at_redirect, 6);
  EXPECT_EQ(engine.stats().total().redirected, 1u);
  EXPECT_EQ(engine.stats().total().remote_errors, 0u);
}

// RedirectLID 0 sends the requester to the agent's RedirectGID (IBTA
// 13.5.3.3), reached only through a GRH: not followed (libibmad's rpc.c
// refuses it too), not taken as "the same LID", and counted apart.
TEST(MadEngineTest, ARedirectToLidZeroIsReportedUnsupportedNotFollowed) {
  RedirectingPma to_gid;
  to_gid.redirect_lid = 0;
  FakeMadPort port([&](const MadAddress& to, const MadBytes& req) { return to_gid(to, req); });
  MadEngine engine(port, EngineOptions{4, milliseconds(50), 1});
  const auto res = engine.Run(Requests(2));
  for (const auto& r : res) {
    EXPECT_EQ(r.outcome, MadOutcome::kRemoteError);
    EXPECT_EQ(r.mad_status, kMadStatusRedirect);
  }
  EXPECT_EQ(to_gid.at_redirect, 0) << "nothing sent to the QP it named";
  EXPECT_EQ(engine.stats().total().redirected, 0u);
  EXPECT_EQ(engine.stats().total().redirects, 2u);
  EXPECT_EQ(engine.stats().total().redirects_unsupported, 2u);
}

TEST(MadEngineTest, ARedirectThatRedirectsAgainOrGoesSilentIsNotFollowedForever) {
  RedirectingPma again;
  again.redirect_again = true;
  FakeMadPort port([&](const MadAddress& to, const MadBytes& req) { return again(to, req); });
  MadEngine engine(port, EngineOptions{4, milliseconds(50), 1});
  const auto res = engine.Run(Requests(1));
  EXPECT_EQ(res[0].outcome, MadOutcome::kRemoteError);
  EXPECT_EQ(res[0].mad_status, kMadStatusRedirect);
  EXPECT_EQ(engine.stats().total().redirects, 1u) << "a failure of its own kind";

  // A redirected QP that stops answering: the next attempt asks QP1 again.
  RedirectingPma silent;
  silent.silent_redirect = true;
  FakeMadPort quiet([&](const MadAddress& to, const MadBytes& req) { return silent(to, req); });
  MadEngine e2(quiet, EngineOptions{4, milliseconds(5), 1});
  const auto r2 = e2.Run(Requests(1));
  EXPECT_EQ(r2[0].outcome, MadOutcome::kTimeout);
  EXPECT_EQ(silent.at_qp1, 2) << "each attempt starts at QP1 after the redirected one timed out";
  EXPECT_EQ(silent.at_redirect, 2);
}

TEST(TrapWireTest, SubscriptionIsAnSaSetOfInformInfo) {
  const transport::MadRequest r = transport::InformInfoSubscribe(7, transport::trap::kLinkStateChange);
  const transport::MadBytes m = transport::EncodeRequest(r, 0x1234);
  const transport::MadHeader h = transport::DecodeHeader(m);
  EXPECT_EQ(h.mgmt_class, 0x03);
  EXPECT_EQ(h.class_version, 2) << "the SA speaks class version 2";
  EXPECT_EQ(h.method, 0x02);
  EXPECT_EQ(h.attr_id, 0x0003);
  EXPECT_EQ(r.address.lid, 7);
  EXPECT_EQ(transport::KindOf(r.mgmt_class), transport::MadKind::kGmp);
  // InformInfo at byte 56: LIDRangeBegin 0xFFFF, IsGeneric, Subscribe,
  // Type 0xFFFF, TrapNumber, ProducerType 0xFFFFFF.
  const std::uint8_t* d = m.data() + 56;
  EXPECT_EQ(d[16], 0xff);
  EXPECT_EQ(d[17], 0xff);
  EXPECT_EQ(d[22], 1);
  EXPECT_EQ(d[23], 1);
  EXPECT_EQ((d[26] << 8) | d[27], 128);
  EXPECT_EQ(d[35], 0xff);
  EXPECT_EQ(transport::EncodeRequest(transport::InformInfoSubscribe(7, 64, false), 1)[56 + 23], 0) << "unsubscribe";
}

TEST(TrapWireTest, NoticesDecodeAndReportsAreAcknowledged) {
  transport::Notice n;
  n.trap_number = 128;
  n.lid = 42;
  n.issuer_lid = 1;
  n.producer_type = 2;
  const transport::MadBytes link = transport::testing::EncodeNoticeReport(n, 0xabcdef);
  ASSERT_TRUE(transport::IsNoticeReport(link));
  const transport::Notice got = transport::DecodeNotice(link);
  EXPECT_TRUE(got.generic);
  EXPECT_EQ(got.trap_number, 128);
  EXPECT_EQ(got.lid, 42);
  EXPECT_EQ(got.issuer_lid, 1);
  EXPECT_EQ(got.producer_type, 2u);

  n.trap_number = 144;
  n.lid = 77;
  EXPECT_EQ(transport::DecodeNotice(transport::testing::EncodeNoticeReport(n, 1)).lid, 77);
  n = {};
  n.trap_number = 64;
  n.port_guid = 0x0002c90300a1b2c3ULL;
  const transport::Notice in_service = transport::DecodeNotice(transport::testing::EncodeNoticeReport(n, 2));
  EXPECT_EQ(in_service.port_guid, 0x0002c90300a1b2c3ULL);
  EXPECT_EQ(in_service.lid, 0);

  const transport::MadBytes ack = transport::ReportResponse(link);
  const transport::MadHeader h = transport::DecodeHeader(ack);
  EXPECT_EQ(h.method, 0x86);
  EXPECT_EQ(h.tid, 0xabcdefu);
  EXPECT_EQ(h.attr_id, 0x0002);
  EXPECT_FALSE(transport::IsNoticeReport(ack));
  EXPECT_FALSE(
      transport::IsNoticeReport(transport::EncodeRequest(transport::NodeInfoQuery(transport::MadAddress::Lid(3)), 9)));
}

TEST(TrapEngineTest, ReportsAreAcknowledgedAndTakenOnce) {
  std::vector<std::pair<std::uint16_t, MadBytes>> acks;
  transport::testing::FakeMadPort port(
      [&](const transport::MadAddress& to, const transport::MadBytes& m) -> std::optional<MadBytes> {
        if (transport::DecodeHeader(m).method == 0x86) {
          acks.emplace_back(to.lid, m);
          return std::nullopt;
        }
        return transport::EncodeResponse(m, {});
      });
  transport::MadEngine engine(port, {});
  transport::Notice n;
  n.trap_number = 128;
  n.lid = 9;
  const transport::MadBytes report = transport::testing::EncodeNoticeReport(n, 77);
  // One arrives during a Run, then the SA sends it again (our ack was lost).
  port.Inject(report, 1);
  const auto r = engine.Run(std::vector{transport::PortCountersQuery(5, 1)});
  EXPECT_EQ(r[0].outcome, transport::MadOutcome::kOk);
  EXPECT_EQ(engine.stats().reports, 1u) << "taken during the Run";
  const auto taken = engine.TakeReports();
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(transport::DecodeNotice(taken[0]).lid, 9);
  EXPECT_TRUE(engine.TakeReports().empty());
  port.Inject(report, 1);
  EXPECT_FALSE(engine.WaitForReports(milliseconds(30))) << "a repeat is no news";
  ASSERT_EQ(acks.size(), 2u) << "every copy acknowledged";
  EXPECT_EQ(acks[0].first, 1) << "to the SA that sent it";
  EXPECT_EQ(transport::DecodeHeader(acks[0].second).tid, 77u);
  EXPECT_EQ(engine.stats().reports, 1u);
  EXPECT_EQ(engine.stats().reports_repeated, 1u);
  // Between Runs, a new one ends the wait.
  port.Inject(transport::testing::EncodeNoticeReport(n, 78), 1);
  EXPECT_TRUE(engine.WaitForReports(milliseconds(1000)));
  EXPECT_EQ(engine.TakeReports().size(), 1u);
}

}  // namespace
}  // namespace ibfabric::transport
