// The engine's fabric-safe limits, watched from outside the engine: a port
// in simulated time counts, for every node, the MADs sent to it or through
// it whose answer is still on its way, under loss, Busy replies, silent
// nodes and varying round trips.

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <queue>
#include <random>
#include <set>
#include <string>

#include "transport/attributes.h"
#include "transport/codec.h"
#include "transport/mad_engine.h"
#include "transport/testing/encoders.h"
#include "transport/testing/fake_mad_port.h"

namespace ibfabric::transport {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// The nodes a MAD loads: its LID, or the node after every hop of its route.
// An SA query loads the SA (the SM's process), apart from the node's agent.
std::vector<std::string> NodesOf(const MadAddress& to, const MadBytes& mad) {
  if (mad[1] == static_cast<std::uint8_t>(MgmtClass::kSubnAdm)) return {"sa" + std::to_string(to.lid)};
  if (mad[1] != static_cast<std::uint8_t>(MgmtClass::kSubnDirectRoute)) return {"lid" + std::to_string(to.lid)};
  std::vector<std::string> out;
  std::string route = "route";
  for (std::uint8_t p : to.dr_path) {
    route += "." + std::to_string(p);
    out.push_back(route);
  }
  if (out.empty()) out.push_back(route);
  return out;
}

// What the fabric does with one request: answer (with this status), lose
// it, or answer Busy.
enum class Fate { kAnswer, kLose, kBusy };

class VirtualPort final : public MadPort, public Clock {
 public:
  using Decide = std::function<Fate(const MadAddress&, const MadBytes&)>;
  VirtualPort(Decide decide, microseconds min_latency, microseconds max_latency, std::uint64_t seed = 1)
      : decide_(std::move(decide)), lo_(min_latency), hi_(max_latency), rng_(seed) {}

  bool Send(const MadAddress& to, const MadBytes& mad) override {
    send_times_.push_back(now_);
    ++sends_to_[NodesOf(to, mad).back()];
    const Fate fate = decide_(to, mad);
    if (fate == Fate::kLose) return true;  // settled now: nothing will come back
    PortCounters c;
    c.port_select = MadData(mad)[1];
    MadBytes reply = EncodeResponse(mad, testing::EncodePortCounters(c), fate == Fate::kBusy ? kMadStatusBusy : 0);
    const auto nodes = NodesOf(to, mad);
    for (const auto& n : nodes) peak_node_[n] = std::max(peak_node_[n], ++outstanding_[n]);
    peak_target_ = std::max(peak_target_, ++targeted_[nodes.back()]);
    const int kind = static_cast<int>(KindOf(static_cast<MgmtClass>(mad[1])));
    peak_kind_[kind] = std::max(peak_kind_[kind], ++kind_out_[kind]);
    std::uniform_int_distribution<std::int64_t> d(lo_.count(), hi_.count());
    queue_.push(Pending{now_ + microseconds(d(rng_)), seq_++, reply, nodes, kind});
    return true;
  }
  std::optional<InboundMad> Receive(microseconds timeout) override {
    const TimePoint deadline = now_ + timeout;
    if (queue_.empty() || queue_.top().due > deadline) {
      now_ = deadline;
      return std::nullopt;
    }
    Pending p = queue_.top();
    queue_.pop();
    now_ = std::max(now_, p.due);
    for (const auto& n : p.nodes) --outstanding_[n];
    --targeted_[p.nodes.back()];
    --kind_out_[p.kind];
    return InboundMad{p.mad, 0};
  }
  TimePoint Now() const override { return now_; }

  int peak_node(const std::string& n) const { return peak_node_.count(n) ? peak_node_.at(n) : 0; }
  int peak_any_node() const {
    int m = 0;
    for (const auto& [n, v] : peak_node_) m = std::max(m, v);
    return m;
  }
  // The most MADs ever outstanding with one node as their target.
  int peak_any_target() const { return peak_target_; }
  int peak_kind(MadKind k) const { return peak_kind_[static_cast<int>(k)]; }
  int sends_to(const std::string& n) const { return sends_to_.count(n) ? sends_to_.at(n) : 0; }
  const std::vector<TimePoint>& send_times() const { return send_times_; }

 private:
  struct Pending {
    TimePoint due;
    std::uint64_t seq;
    MadBytes mad;
    std::vector<std::string> nodes;
    int kind;
    bool operator>(const Pending& o) const { return due != o.due ? due > o.due : seq > o.seq; }
  };
  Decide decide_;
  microseconds lo_, hi_;
  std::mt19937_64 rng_;
  TimePoint now_ = TimePoint{} + std::chrono::seconds(1);
  std::uint64_t seq_ = 0;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> queue_;
  std::map<std::string, int> outstanding_, peak_node_, sends_to_, targeted_;
  int peak_target_ = 0;
  std::array<int, kMadKinds> kind_out_{}, peak_kind_{};
  std::vector<TimePoint> send_times_;
};

// PortCounters of ports 1..`ports` of every LID in first..last, LID by LID.
std::vector<MadRequest> PortCountersOf(std::uint16_t first, std::uint16_t last, std::uint8_t ports) {
  std::vector<MadRequest> reqs;
  for (std::uint16_t lid = first; lid <= last; ++lid) {
    for (std::uint8_t p = 1; p <= ports; ++p) reqs.push_back(PortCountersQuery(lid, p));
  }
  return reqs;
}

// A mixed batch: directed-route SMPs to nodes one to three hops out (all
// through the local port's switch, many through the same second switch),
// LID-routed SMPs and PMA queries to 24 LIDs, 12 ports each.
std::vector<MadRequest> Mixed() {
  std::vector<MadRequest> reqs;
  for (std::uint8_t a = 1; a <= 4; ++a) {
    for (std::uint8_t b = 1; b <= 6; ++b) {
      reqs.push_back(NodeInfoQuery(MadAddress::Directed({1, a, b})));
      reqs.push_back(NodeInfoQuery(MadAddress::Directed({1, a})));
    }
  }
  for (std::uint16_t lid = 1; lid <= 24; ++lid) {
    for (std::uint8_t port = 1; port <= 12; ++port) {
      reqs.push_back(PortCountersQuery(lid, port));
      reqs.push_back(PortInfoQuery(MadAddress::Lid(lid), port));
    }
  }
  return reqs;
}

EngineOptions Options(int per_destination) {
  EngineOptions o;
  o.window = 20;
  o.timeout = milliseconds(5);
  o.timeout_max = milliseconds(40);
  o.retries = 3;
  o.kind_window = {3, 5, 7};
  o.per_destination = per_destination;
  return o;
}

// Targets within per_destination; a switch that directed-route SMPs pass
// through within dr_per_switch; every kind within its window.
TEST(MadLimitsTest, NoNodeOrKindEverExceedsItsLimitUnderLossBusyAndSilence) {
  struct Limits {
    int per_destination, dr_per_switch;
  };
  for (const Limits l : {Limits{1, 1}, Limits{1, 3}, Limits{2, 1}}) {
    SCOPED_TRACE("per_destination " + std::to_string(l.per_destination) + ", dr_per_switch " +
                 std::to_string(l.dr_per_switch));
    std::mt19937 rng(static_cast<unsigned>(l.per_destination * 10 + l.dr_per_switch));
    // 15% lost, 10% Busy, LIDs 23 and 24 never answer, round trips 0.2-3 ms.
    VirtualPort port(
        [&rng](const MadAddress& to, const MadBytes&) {
          if (to.lid >= 23) return Fate::kLose;
          const double u = std::uniform_real_distribution<double>(0, 1)(rng);
          return u < 0.15 ? Fate::kLose : u < 0.25 ? Fate::kBusy : Fate::kAnswer;
        },
        microseconds(200), microseconds(3000), 7);
    EngineOptions o = Options(l.per_destination);
    o.dr_per_switch = l.dr_per_switch;
    o.retries = 5;  // 0.15^6: no request loses every attempt by chance
    o.clock = &port;
    MadEngine engine(port, o);
    const auto reqs = Mixed();
    const auto res = engine.Run(reqs);
    // Limits, seen from outside, and reached (so this test can fail).
    EXPECT_EQ(port.peak_any_target(), l.per_destination);
    EXPECT_EQ(port.peak_any_node(), std::max(l.per_destination, l.dr_per_switch));
    // Every directed-route SMP passes the switch behind the local port,
    // which none of them targets.
    EXPECT_EQ(port.peak_node("route.1"), l.dr_per_switch);
    EXPECT_LE(port.peak_kind(MadKind::kDirectedSmp), 3);
    EXPECT_LE(port.peak_kind(MadKind::kLidSmp), 5);
    EXPECT_LE(port.peak_kind(MadKind::kGmp), 7);
    EXPECT_EQ(engine.stats().peak_per_destination, std::max(l.per_destination, l.dr_per_switch));
    // The silent LIDs fail, everything else is recovered.
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      const bool silent = reqs[i].mgmt_class != MgmtClass::kSubnDirectRoute && reqs[i].address.lid >= 23;
      EXPECT_EQ(res[i].outcome, silent ? MadOutcome::kTimeout : MadOutcome::kOk) << i;
    }
    EXPECT_GT(engine.stats().of(MadKind::kGmp).busy, 0u);
  }
}

// The SA at a LID takes up to sa_per_destination queries at once (4 by
// default), while that node's own agent still gets one MAD at a time.
TEST(MadLimitsTest, TheSaTakesItsOwnFewWhileItsNodeGetsOne) {
  std::vector<MadRequest> reqs;
  for (std::uint16_t sw = 2; sw < 30; ++sw) {
    reqs.push_back(LftRecordTableQuery(1, sw));
    reqs.push_back(PortCountersQuery(1, static_cast<std::uint8_t>(sw)));
  }
  for (int sa : {4, 2}) {
    VirtualPort port([](const MadAddress&, const MadBytes&) { return Fate::kAnswer; }, microseconds(500),
                     microseconds(2000));
    EngineOptions o;
    o.clock = &port;
    o.sa_per_destination = sa;
    MadEngine engine(port, o);
    const auto got = engine.Run(reqs);
    for (const auto& r : got) EXPECT_EQ(r.outcome, MadOutcome::kOk);
    EXPECT_EQ(port.peak_node("sa1"), sa);
    EXPECT_EQ(port.peak_node("lid1"), 1);
  }
}

TEST(MadLimitsTest, RequestsAreInterleavedAcrossDestinations) {
  VirtualPort port([](const MadAddress&, const MadBytes&) { return Fate::kAnswer; }, microseconds(100),
                   microseconds(100));
  EngineOptions o;
  o.clock = &port;
  o.kind_window = {4, 4, 4};
  MadEngine engine(port, o);
  // 4 switches' worth of queries, asked switch by switch.
  const auto reqs = PortCountersOf(1, 4, 36);
  const auto res = engine.Run(reqs);
  for (const auto& r : res) ASSERT_EQ(r.outcome, MadOutcome::kOk);
  // One at a time per switch and all four in turn: the first round of
  // sends went to four different LIDs at the same instant.
  EXPECT_EQ(port.peak_any_node(), 1);
  EXPECT_EQ(port.peak_kind(MadKind::kGmp), 4);
  EXPECT_EQ(port.send_times()[0], port.send_times()[3]);
}

TEST(MadLimitsTest, ADeadNodeCostsAFewTimeoutsNotOnePerRequest) {
  VirtualPort port([](const MadAddress& to, const MadBytes&) { return to.lid == 9 ? Fate::kLose : Fate::kAnswer; },
                   microseconds(300), microseconds(300));
  EngineOptions o = Options(1);
  o.clock = &port;
  MadEngine engine(port, o);
  const auto reqs = PortCountersOf(9, 10, 40);
  const auto start = port.Now();
  const auto res = engine.Run(reqs);
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(res[i].outcome, reqs[i].address.lid == 9 ? MadOutcome::kTimeout : MadOutcome::kOk) << i;
  }
  // dead_after (3) requests of 1 + retries (3) attempts each, one at a time.
  EXPECT_EQ(port.sends_to("lid9"), 3 * 4);
  EXPECT_EQ(engine.stats().of(MadKind::kGmp).abandoned, 37u);
  // 12 timeouts of 5..40 ms (the ceiling) in a row, not 160.
  EXPECT_LE(port.Now() - start, milliseconds(12 * 40 + 5));
}

TEST(MadLimitsTest, BusyIsAskedAgainAfterABackoff) {
  std::map<std::uint8_t, int> busy_left;  // port -> Busy replies still to give
  VirtualPort port(
      [&busy_left](const MadAddress&, const MadBytes& mad) {
        auto [it, fresh] = busy_left.try_emplace(MadData(mad)[1], 2);
        return it->second-- > 0 ? Fate::kBusy : Fate::kAnswer;
      },
      microseconds(100), microseconds(100));
  EngineOptions o = Options(1);
  o.clock = &port;
  MadEngine engine(port, o);
  std::vector<MadRequest> reqs{PortCountersQuery(1, 1), PortCountersQuery(2, 2)};
  const auto res = engine.Run(reqs);
  for (const auto& r : res) EXPECT_EQ(r.outcome, MadOutcome::kOk);
  EXPECT_EQ(engine.stats().of(MadKind::kGmp).busy, 4u);
  EXPECT_EQ(engine.stats().of(MadKind::kGmp).timeouts, 0u);
  // Each re-send waited at least the timeout floor after the Busy reply.
  const auto& t = port.send_times();
  ASSERT_EQ(t.size(), 6u);
  EXPECT_GE(t[2] - t[0], milliseconds(5));
  EXPECT_GE(t[4] - t[2], milliseconds(5));
}

TEST(MadLimitsTest, BusyTooOftenAndRedirectAreReportedNotRetriedForever) {
  VirtualPort port([](const MadAddress&, const MadBytes&) { return Fate::kBusy; }, microseconds(100),
                   microseconds(100));
  EngineOptions o = Options(1);
  o.clock = &port;
  MadEngine engine(port, o);
  const std::vector<MadRequest> reqs{PortCountersQuery(1, 1)};
  const auto res = engine.Run(reqs);
  EXPECT_EQ(res[0].outcome, MadOutcome::kRemoteError);
  EXPECT_EQ(res[0].mad_status, kMadStatusBusy);
  EXPECT_EQ(port.send_times().size(), 1u + o.busy_retries);

  testing::FakeMadPort redirecting([](const MadAddress&, const MadBytes& req) -> std::optional<MadBytes> {
    return EncodeResponse(req, {}, kMadStatusRedirect);
  });
  MadEngine e2(redirecting, EngineOptions{});
  const auto r2 = e2.Run(reqs);
  EXPECT_EQ(r2[0].outcome, MadOutcome::kRemoteError);
  EXPECT_EQ(e2.stats().of(MadKind::kGmp).redirects, 1u);
  EXPECT_EQ(redirecting.sends(), 1u);
}

TEST(MadLimitsTest, TheAgentsDeclaredResponseTimeRaisesItsTimeout) {
  // A PMA whose replies take 20 ms, with a 5 ms floor: without its declared
  // response time every first attempt times out; with it none does.
  for (bool declared : {false, true}) {
    VirtualPort port([](const MadAddress&, const MadBytes&) { return Fate::kAnswer; }, milliseconds(20),
                     milliseconds(20));
    EngineOptions o = Options(1);
    o.clock = &port;
    o.adaptive_timeout = true;
    MadEngine engine(port, o);
    if (declared) engine.SetResponseTime(3, ExpectedTime(13));  // 4.096 us * 2^13 = 33.6 ms
    const std::vector<MadRequest> reqs{PortCountersQuery(3, 1)};
    const auto res = engine.Run(reqs);
    EXPECT_EQ(res[0].outcome, MadOutcome::kOk);
    EXPECT_EQ(engine.stats().total().retries, declared ? 0u : 1u) << declared;
  }
  // The subnet's packet lifetime lowers the ceiling, never below the floor.
  EXPECT_EQ(ExpectedTime(13), microseconds(33554));
  EXPECT_EQ(ExpectedTime(40), ExpectedTime(31));
}

TEST(MadLimitsTest, TheRateLimitSpacesSends) {
  VirtualPort port([](const MadAddress&, const MadBytes&) { return Fate::kAnswer; }, microseconds(50),
                   microseconds(50));
  EngineOptions o;
  o.clock = &port;
  o.rate_limit = 10'000;  // MADs per second; a burst of 10 ms = 100
  MadEngine engine(port, o);
  const auto reqs = PortCountersOf(1, 100, 5);
  const auto res = engine.Run(reqs);
  for (const auto& r : res) ASSERT_EQ(r.outcome, MadOutcome::kOk);
  const auto& t = port.send_times();
  ASSERT_EQ(t.size(), 500u);
  // Any 100 consecutive sends after the first burst span at least 10 ms.
  for (std::size_t i = 100; i + 100 < t.size(); i += 50) {
    EXPECT_GE(t[i + 100] - t[i], microseconds(9900)) << i;
  }
  EXPECT_GE(t.back() - t.front(), milliseconds(39));
}

// The rate holds across Runs: a walk is many small batches, and each must
// not start with a burst of its own.
TEST(MadLimitsTest, TheRateHoldsAcrossRuns) {
  VirtualPort port([](const MadAddress&, const MadBytes&) { return Fate::kAnswer; }, microseconds(50),
                   microseconds(50));
  EngineOptions o;
  o.clock = &port;
  o.rate_limit = 10'000;  // a burst of 100
  MadEngine engine(port, o);
  for (int run = 0; run < 50; ++run) {
    for (const auto& r : engine.Run(PortCountersOf(1, 10, 1))) ASSERT_EQ(r.outcome, MadOutcome::kOk);
  }
  const auto& t = port.send_times();
  ASSERT_EQ(t.size(), 500u);
  // 400 sends past the first burst at 10,000 a second: 40 ms at least
  // (a bucket a Run: 50 bursts, a few ms in all). The waits between Runs
  // refill it, up to a burst: no 10 ms holds more than 100 + 100 sends.
  EXPECT_GE(t.back() - t.front(), milliseconds(39));
  for (std::size_t i = 0; i + 200 < t.size(); i += 10) {
    EXPECT_GT(t[i + 200] - t[i], milliseconds(10)) << i;
  }
}

}  // namespace
}  // namespace ibfabric::transport
