// Link health bookkeeping and the alert engine on hand-made sweeps: rates
// over the window, BER and drop-rate estimates, flaps counted once,
// hysteresis both ways, "cannot tell" counting neither way, pinned
// counters, severities; and the thresholds file's parser.

#include "collectors/health/alerts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "collectors/api/json.h"
#include "collectors/health/alert_config.h"
#include "collectors/health/link_health.h"
#include "tests/unit/fabric_builder.h"

namespace ibfabric::collectors {
namespace {

using std::chrono::milliseconds;
using topology::PortRef;

// leaf0[1] - host0[1], leaf0[2] - host1[1]; a clock that sweeps every
// `spacing` seconds (1 unless a test says otherwise).
struct Bench {
  topology::Fabric fabric;
  PortTable ports;
  std::map<PortRef, topology::Port> links;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  std::chrono::system_clock::time_point w0 = std::chrono::system_clock::now();
  PortRef leaf1, leaf2, host0, host1;
  int sweep = 0;
  int spacing = 1;

  Bench() {
    testing::FabricBuilder b;
    const int leaf = b.Switch("leaf0");
    const int h0 = b.Ca("host0"), h1 = b.Ca("host1");
    b.Link(leaf, 1, h0, 1);
    b.Link(leaf, 2, h1, 1);
    fabric = b.Build();
    const auto& nodes = fabric.nodes();
    leaf1 = {nodes[0].guid, 1};
    leaf2 = {nodes[0].guid, 2};
    host0 = {nodes[1].guid, 1};
    host1 = {nodes[2].guid, 1};
    for (const PortRef& p : {leaf1, leaf2, host0, host1}) {
      PortTotals& t = ports[p];
      for (std::size_t i = 0; i < kCounterCount; ++i) {
        t.present.set(i);
        t.last_wide.set(i);
      }
    }
    for (const PortRef& p : {leaf1, leaf2}) links[p] = *fabric.FindPort(p);
  }
  void Add(const PortRef& p, Counter c, std::uint64_t n) { ports[p].SetTotal(Index(c), ports[p].Total(Index(c)) + n); }
  std::chrono::steady_clock::time_point Now() const { return t0 + std::chrono::seconds(sweep * spacing); }
  std::chrono::system_clock::time_point Wall() const { return w0 + std::chrono::seconds(sweep * spacing); }
  void Observe(LinkHealth& h) {
    h.Observe(fabric, nullptr, ports, links, Now(), Wall());
    ++sweep;
  }
  void SetUp(const PortRef& switch_port, bool up) {
    links[switch_port].phys_state = up ? 5 : 2;
    links[switch_port].state = up ? 4 : 1;
  }
};

const CableHealth& Of(const std::vector<CableHealth>& v, const PortRef& end) {
  for (const auto& c : v) {
    if (c.cable.a == end || c.cable.b == end) return c;
  }
  throw std::runtime_error("no such cable");
}

TEST(LinkHealthTest, RatesOverTheWindowAndEstimates) {
  Bench b;
  LinkHealth h({milliseconds(4000)});
  b.Observe(h);  // t=0: the base
  EXPECT_EQ(Of(h.Cables(), b.leaf1).a.window_seconds + Of(h.Cables(), b.leaf1).b.window_seconds, 0);
  for (int i = 0; i < 3; ++i) {
    b.Add(b.host0, Counter::kSymbolError, 5);
    b.Add(b.host0, Counter::kRcvData, 1'000'000);  // 32e6 bits
    b.Add(b.host0, Counter::kRcvPkts, 1000);
    b.Add(b.host0, Counter::kRcvErrors, 2);
    b.Add(b.leaf1, Counter::kXmitWait, 250'000'000);  // QDR: 1 ns ticks -> 0.25 s per second
    b.Observe(h);
  }
  const CableHealth c = Of(h.Cables(), b.leaf1);
  const EndRates& host = c.a.port == b.host0 ? c.a : c.b;
  const EndRates& leaf = c.a.port == b.leaf1 ? c.a : c.b;
  EXPECT_DOUBLE_EQ(host.window_seconds, 3);
  EXPECT_EQ(host.Delta(Signal::kSymbolErrors), 15u);
  EXPECT_DOUBLE_EQ(host.PerSecond(Signal::kSymbolErrors), 5);
  ASSERT_TRUE(host.bit_error_rate);
  // Over the bits the 4xQDR link carried (4 lanes at 10 Gbaud, 3 s), not
  // the 96e6 bits of packet data received.
  EXPECT_DOUBLE_EQ(host.bits_carried, 40e9 * 3);
  EXPECT_DOUBLE_EQ(*host.bit_error_rate, 15.0 / 1.2e11);
  ASSERT_TRUE(host.packet_drop_rate);
  EXPECT_DOUBLE_EQ(*host.packet_drop_rate, 6.0 / 3000);
  ASSERT_TRUE(leaf.xmit_wait_fraction);
  EXPECT_NEAR(*leaf.xmit_wait_fraction, 0.25, 1e-9);
  EXPECT_EQ(Of(h.Cables(), b.leaf2).a.Delta(Signal::kSymbolErrors), 0u) << "the other cable saw nothing";

  // The window slides: after 4 quiet sweeps the increments are out of it.
  for (int i = 0; i < 6; ++i) b.Observe(h);
  const CableHealth later = Of(h.Cables(), b.leaf1);
  const EndRates& host_later = later.a.port == b.host0 ? later.a : later.b;
  EXPECT_EQ(host_later.Delta(Signal::kSymbolErrors), 0u);
  EXPECT_GE(host_later.window_seconds, 4);
  EXPECT_LE(host_later.window_seconds, 5);
}

// The window's older points are held as packed differences: totals near
// 2^64, steps wider than 32 bits and a total that went down (a restored
// state, say) come back exact, whichever point is the base.
TEST(LinkHealthTest, TheWindowCarriesAnyTotalsExactly) {
  Bench b;
  LinkHealth h({milliseconds(3000)});
  b.Add(b.host0, Counter::kRcvData, 0xFFFF'FFFF'FFFF'0000ull);
  b.Add(b.host0, Counter::kXmitWait, 7);
  b.Observe(h);                                  // t=0
  b.Add(b.host0, Counter::kRcvData, 0xFFFFull);  // to 2^64 - 1
  b.Add(b.host0, Counter::kRcvPkts, 5'000'000'000'000ull);
  b.Observe(h);                                             // t=1
  b.ports[b.host0].SetTotal(Index(Counter::kXmitWait), 3);  // below t=0's 7
  b.Add(b.host0, Counter::kSymbolError, 1);
  b.Observe(h);  // t=2
  b.Add(b.host0, Counter::kSymbolError, 0x1'0000'0001ull);
  b.Observe(h);  // t=3
  auto host = [&] {
    const CableHealth c = Of(h.Cables(), b.leaf1);
    return c.a.port == b.host0 ? c.a : c.b;
  };
  EndRates r = host();
  EXPECT_DOUBLE_EQ(r.window_seconds, 3);
  EXPECT_EQ(r.Delta(Signal::kRcvData), 0xFFFFull);
  EXPECT_EQ(r.Delta(Signal::kRcvPkts), 5'000'000'000'000ull);
  EXPECT_EQ(r.Delta(Signal::kSymbolErrors), 0x1'0000'0002ull);
  EXPECT_EQ(r.Delta(Signal::kXmitWait), 0u) << "a total below the base's is no increment";
  b.Observe(h);  // t=4: t=1 is the base
  r = host();
  EXPECT_DOUBLE_EQ(r.window_seconds, 3);
  EXPECT_EQ(r.Delta(Signal::kRcvData), 0u);
  EXPECT_EQ(r.Delta(Signal::kRcvPkts), 0u);
  EXPECT_EQ(r.Delta(Signal::kSymbolErrors), 0x1'0000'0002ull);
  b.Observe(h);  // t=5: t=2 is the base, its XmitWait 3 as it was
  b.Add(b.host0, Counter::kXmitWait, 10);
  b.Observe(h);  // t=6: t=3 is the base
  r = host();
  EXPECT_EQ(r.Delta(Signal::kXmitWait), 10u);
  EXPECT_EQ(r.Delta(Signal::kSymbolErrors), 0u);
}
TEST(LinkHealthTest, FlapsCountOncePerSweepWhicheverSawThem) {
  Bench b;
  LinkHealth h({milliseconds(10'000)});
  b.Observe(h);
  b.SetUp(b.leaf1, false);  // seen down, and LinkDowned moved on both ends
  b.Add(b.leaf1, Counter::kLinkDowned, 1);
  b.Add(b.host0, Counter::kLinkDowned, 1);
  b.Observe(h);
  EXPECT_FALSE(Of(h.Cables(), b.leaf1).up);
  EXPECT_EQ(Of(h.Cables(), b.leaf1).downs_total, 1u);
  b.SetUp(b.leaf1, true);
  b.Observe(h);
  b.Add(b.leaf1, Counter::kLinkDowned, 2);  // two flaps between sweeps, never seen down
  b.Observe(h);
  const CableHealth c = Of(h.Cables(), b.leaf1);
  EXPECT_TRUE(c.up);
  EXPECT_EQ(c.downs_total, 3u);
  EXPECT_EQ(c.downs_in_window, 3);
  EXPECT_EQ(Of(h.Cables(), b.leaf2).downs_total, 0u);
}

TEST(LinkHealthTest, ADownSeenOnATrapIsNotCountedAgainByItsCounter) {
  Bench b;
  LinkHealth h({milliseconds(10'000)});
  b.Observe(h);
  // A trap: PortInfo read between sweeps shows the link down, then up.
  b.SetUp(b.leaf1, false);
  h.Observe(b.fabric, nullptr, b.ports, b.links, b.Now(), b.Wall(), /*counters_read=*/false);
  EXPECT_EQ(Of(h.Cables(), b.leaf1).downs_total, 1u) << "reported at once";
  EXPECT_FALSE(Of(h.Cables(), b.leaf1).up);
  b.SetUp(b.leaf1, true);
  h.Observe(b.fabric, nullptr, b.ports, b.links, b.Now(), b.Wall(), /*counters_read=*/false);
  // The next sweep reads the LinkDownedCounter that counted that flap.
  b.Add(b.leaf1, Counter::kLinkDowned, 1);
  b.Add(b.host0, Counter::kLinkDowned, 1);
  b.Observe(h);
  EXPECT_EQ(Of(h.Cables(), b.leaf1).downs_total, 1u) << "one flap, one event";
  // A later flap seen only by the counters still counts.
  b.Add(b.leaf1, Counter::kLinkDowned, 1);
  b.Observe(h);
  EXPECT_EQ(Of(h.Cables(), b.leaf1).downs_total, 2u);
  // A down on a trap whose counter never moves (ibsim) is matched by
  // nothing; the next flap the counter shows is not swallowed.
  b.SetUp(b.leaf1, false);
  h.Observe(b.fabric, nullptr, b.ports, b.links, b.Now(), b.Wall(), /*counters_read=*/false);
  b.SetUp(b.leaf1, true);
  b.Observe(h);
  EXPECT_EQ(Of(h.Cables(), b.leaf1).downs_total, 3u);
  b.Add(b.leaf1, Counter::kLinkDowned, 1);
  b.Observe(h);
  EXPECT_EQ(Of(h.Cables(), b.leaf1).downs_total, 4u);
}

TEST(LinkHealthTest, AWidthDropIsBelowTheBestRate) {
  Bench b;
  LinkHealth h({milliseconds(10'000)});
  b.Observe(h);
  EXPECT_EQ(Of(h.Cables(), b.leaf2).rate, "4xQDR");
  b.links[b.leaf2].width_active = 1;
  b.Observe(h);
  CableHealth c = Of(h.Cables(), b.leaf2);
  EXPECT_TRUE(c.dropped);
  EXPECT_EQ(c.rate, "1xQDR");
  EXPECT_EQ(c.best_rate, "4xQDR");
  b.links[b.leaf2].width_active = 2;
  b.Observe(h);
  EXPECT_FALSE(Of(h.Cables(), b.leaf2).dropped);
}

// An engine fed with sweeps of the bench, one per call.
struct Driven {
  Bench b;
  LinkHealth health{{milliseconds(3000)}};
  AlertEngine engine;
  const topology::ForwardingTables* tables = nullptr;  // congestion trees follow them when set
  // What the fec collector adds to an end (link_health's collector does so).
  std::map<PortRef, std::pair<double, int>> fec;       // port -> (raw bit error ratio, worst lane)
  std::set<PortRef> raw_unknown;                       // counted, but no raw ratio to judge now
  std::map<PortRef, std::pair<double, int>> baseline;  // port -> (lowest raw ratio, 24ths of history)
  struct Kind {
    topology::Speed speed;
    std::optional<transport::FecMode> mode;
    AsicProcess asic;
  };
  std::map<PortRef, Kind> kind;  // what the end's BER levels depend on, where not the bench's
  bool in_parts = false;         // judged a cable at a time (Begin, Judge, Finish), as link_health's collector does
  explicit Driven(AlertConfig c) : engine(c) {}
  std::vector<Alert> Sweep() {
    health.Observe(b.fabric, nullptr, b.ports, b.links, b.Now(), b.Wall());
    std::vector<CableHealth> cables = health.Cables();
    for (CableHealth& c : cables) {
      for (EndRates* end : {&c.a, &c.b}) {
        if (const auto f = fec.find(end->port); f != fec.end()) {
          end->raw_bit_error_ratio = f->second.first;
          end->fec_window_seconds = 300;
          end->worst_lane = f->second.second;
        }
        end->raw_unknown = raw_unknown.count(end->port) > 0;
        if (const auto k = kind.find(end->port); k != kind.end()) {
          end->speed = k->second.speed;
          end->fec_mode = k->second.mode;
          end->asic = k->second.asic;
        }
        if (const auto l = baseline.find(end->port); l != baseline.end()) {
          end->raw_bit_error_ratio_baseline = l->second.first;
          end->baseline_parts = l->second.second;
          end->baseline_seconds = 3600.0 * l->second.second;
        }
      }
    }
    const AlertEngine::Describe describe = [](const PortRef& p) {
      return topology::FormatGuid(p.node_guid) + "[" + std::to_string(p.port) + "]";
    };
    if (in_parts) {
      engine.Begin(b.Wall());
      for (const CableHealth& c : cables) engine.Judge({c}, describe);
      engine.Finish(nullptr, b.Wall(), describe, &b.fabric, tables);
    } else {
      engine.Evaluate(cables, nullptr, b.Wall(), describe, &b.fabric, tables);
    }
    ++b.sweep;
    return engine.Active();
  }
};

AlertConfig Quick() {
  AlertConfig c;
  c.window = milliseconds(3000);
  c.raise_after = 2;
  c.clear_after = 2;
  c.symbol_errors = {1, 10};
  return c;
}
// Quick, but a flapping link raised at once: two downs in the window.
AlertConfig QuickFlapping() {
  AlertConfig c = Quick();
  c.raise_after = 1;
  c.link_downs = {2, std::nullopt};
  return c;
}

TEST(AlertEngineTest, HysteresisBothWays) {
  for (const bool in_parts : {false, true}) {  // judged whole, or a cable at a time: alike
    SCOPED_TRACE(in_parts ? "in parts" : "whole");
    Driven d(Quick());
    d.in_parts = in_parts;
    EXPECT_TRUE(d.Sweep().empty());
    d.b.Add(d.b.host1, Counter::kSymbolError, 4);  // 4/s: a warning, once
    EXPECT_TRUE(d.Sweep().empty()) << "one sweep is not enough";
    d.b.Add(d.b.host1, Counter::kSymbolError, 40);
    auto active = d.Sweep();
    ASSERT_EQ(active.size(), 1u);
    EXPECT_EQ(active[0].cause, Cause::kBadCable);
    EXPECT_EQ(active[0].severity, Severity::kCritical);  // 44 over 2 s
    EXPECT_EQ(active[0].cable, topology::CableBetween(d.b.leaf2, d.b.host1));
    EXPECT_EQ(active[0].since, d.b.w0 + std::chrono::seconds(1)) << "since the first sweep of the streak";
    ASSERT_FALSE(active[0].evidence.empty());
    EXPECT_EQ(active[0].evidence[0].signal, "symbol_errors");
    EXPECT_EQ(*active[0].evidence[0].delta, 44u);
    EXPECT_NE(active[0].action.find("Errors are received at"), std::string::npos);
    // The link is up: the estimate goes with the evidence, informational
    // (the 3 s window holds fewer bits than min_bits).
    const auto ber = std::find_if(active[0].evidence.begin(), active[0].evidence.end(),
                                  [](const Evidence& ev) { return ev.signal == "bit_error_rate"; });
    ASSERT_NE(ber, active[0].evidence.end());
    EXPECT_FALSE(ber->threshold);
    // Quiet: the increments stay in the 3 s window for a while, then two
    // clean sweeps clear it.
    int sweeps = 0;
    while (!d.Sweep().empty()) ASSERT_LT(++sweeps, 10);
    // t=3 and t=4 still have the t=2 increments in their 3 s window; t=5 is
    // the first clean sweep, t=6 the second, which clears (clear_after=2).
    EXPECT_EQ(sweeps, 3);
    ASSERT_EQ(d.engine.Cleared().size(), 1u);
    EXPECT_TRUE(d.engine.Cleared()[0].cleared);
    EXPECT_EQ(d.engine.Raised().at(Cause::kBadCable), 1u);
  }
}

// Sweeps further apart than the window (a loaded host's slow cycles, or a
// window as short as the sweep interval): a port read in every sweep is
// judged over its last two readings, and the downs of the sweep before
// still count, so a bad cable and a flapping link are raised as with
// sweeps inside the window. A port that missed a sweep starts its window
// afresh (no rate over the gap) and counts neither way until read twice.
TEST(AlertEngineTest, SweepsFurtherApartThanTheWindowAreStillJudged) {
  AlertConfig c = Quick();
  c.window = milliseconds(2000);
  c.link_downs = {2, std::nullopt};
  Driven d(c);
  d.health = LinkHealth({milliseconds(2000)});
  d.b.spacing = 5;
  EXPECT_TRUE(d.Sweep().empty());  // t=0: the base
  auto step = [&] {
    d.b.Add(d.b.host1, Counter::kSymbolError, 50);  // 10/s over 5 s: critical
    d.b.Add(d.b.leaf1, Counter::kLinkDowned, 1);    // one flap a sweep, counted at both ends
    d.b.Add(d.b.host0, Counter::kLinkDowned, 1);
    return d.Sweep();
  };
  EXPECT_TRUE(step().empty()) << "t=5: one sweep of symbol errors, one down in the window";
  auto active = step();  // t=10: symbol errors a second sweep in a row; two downs in the window
  ASSERT_EQ(active.size(), 1u);
  const Alert bad = active[0];
  EXPECT_EQ(bad.cause, Cause::kBadCable);
  EXPECT_EQ(bad.cable, topology::CableBetween(d.b.leaf2, d.b.host1));
  EXPECT_EQ(bad.severity, Severity::kCritical);
  ASSERT_FALSE(bad.evidence.empty());
  EXPECT_EQ(bad.evidence[0].signal, "symbol_errors");
  EXPECT_DOUBLE_EQ(bad.evidence[0].value, 10);
  EXPECT_DOUBLE_EQ(bad.evidence[0].window_seconds, 5);
  EXPECT_EQ(Of(d.health.Cables(), d.b.leaf1).downs_in_window, 2) << "this sweep's and the one before";
  active = step();  // t=15: two downs in the window a second sweep in a row
  ASSERT_EQ(active.size(), 2u);
  EXPECT_EQ(active[1].cause, Cause::kFlappingLink);
  EXPECT_EQ(active[1].cable, topology::CableBetween(d.b.leaf1, d.b.host0));
  // A trap's PortInfo read between sweeps (t=16) keeps what the sweep counted.
  d.health.Observe(d.b.fabric, nullptr, d.b.ports, d.b.links, d.b.t0 + std::chrono::seconds(16),
                   d.b.w0 + std::chrono::seconds(16), /*counters_read=*/false);
  EXPECT_EQ(Of(d.health.Cables(), d.b.leaf1).downs_in_window, 2) << "the downs of t=10 and t=15";

  // host1 misses a sweep: the next reading is 10 s after its last, a gap
  // the window does not reach across; it is not judged until read twice.
  d.b.ports[d.b.host1].stale = true;
  d.b.Add(d.b.host1, Counter::kSymbolError, 50);
  d.Sweep();  // t=20: host1 unread
  d.b.ports[d.b.host1].stale = false;
  d.b.Add(d.b.host1, Counter::kSymbolError, 50);
  d.Sweep();  // t=25: read again, its window afresh
  const CableHealth after = Of(d.health.Cables(), d.b.leaf2);
  const EndRates& host1 = after.a.port == d.b.host1 ? after.a : after.b;
  EXPECT_EQ(host1.window_seconds, 0) << "no rate over the 10 s gap";
  bool still = false;
  for (const Alert& a : d.engine.Active()) still = still || a.cause == Cause::kBadCable;
  EXPECT_TRUE(still) << "not judged: counts neither way";
  d.b.Add(d.b.host1, Counter::kSymbolError, 50);
  d.Sweep();  // t=30: two readings 5 s apart
  const CableHealth judged = Of(d.health.Cables(), d.b.leaf2);
  EXPECT_DOUBLE_EQ((judged.a.port == d.b.host1 ? judged.a : judged.b).window_seconds, 5);
}

// A raw bit error ratio over its levels is a bad cable though no counter
// moved; its evidence names the worst lane and the FEC window.
TEST(AlertEngineTest, TheRawBitErrorRatioAloneIsABadCable) {
  Driven d(Quick());
  d.Sweep();
  d.fec[d.b.host1] = {7e-6, 3};  // over 5e-6
  d.Sweep();
  auto active = d.Sweep();
  ASSERT_EQ(active.size(), 1u);
  EXPECT_EQ(active[0].severity, Severity::kWarning);
  EXPECT_EQ(active[0].cable, topology::CableBetween(d.b.leaf2, d.b.host1));
  ASSERT_FALSE(active[0].evidence.empty());
  const Evidence& ev = active[0].evidence[0];
  EXPECT_EQ(ev.signal, "raw_bit_error_ratio");
  EXPECT_DOUBLE_EQ(ev.value, 7e-6);
  EXPECT_EQ(ev.detail, "worst lane 3");
  EXPECT_EQ(ev.window_seconds, 300);
  EXPECT_EQ(ev.threshold, 5e-6);
  EXPECT_NE(active[0].summary.find("raw_bit_error_ratio"), std::string::npos) << active[0].summary;
  d.fec[d.b.host1] = {2e-5, 3};  // over 1e-5
  d.Sweep();
  active = d.Sweep();
  ASSERT_EQ(active.size(), 1u);
  EXPECT_EQ(active[0].severity, Severity::kCritical);
  // A pinned counter or a reading gone stale: no ratio, and the alert
  // stays (it cannot be seen clean).
  d.fec.erase(d.b.host1);
  d.raw_unknown.insert(d.b.host1);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(d.Sweep().size(), 1u) << "sweep " << i;
  d.raw_unknown.clear();
  d.fec[d.b.host1] = {1e-7, 0};
  int sweeps = 0;
  while (!d.Sweep().empty()) ASSERT_LT(++sweeps, 5);
  EXPECT_EQ(sweeps, 1) << "clear_after 2: the second clean sweep clears";
}

// A raw ratio ten times its lowest of the day, under the bad-cable level:
// one cable_degrading warning, both ends' cable, the worst lane and the
// baseline in the evidence; not before a quarter of the day is behind the
// port, not below the minimum, and handed to bad_cable over its level.
TEST(AlertEngineTest, ARawRatioTenTimesItsLowestIsADegradingCable) {
  Driven d(Quick());
  const auto degrading = [&](const std::vector<Alert>& active) {
    return std::count_if(active.begin(), active.end(),
                         [](const Alert& a) { return a.cause == Cause::kCableDegrading; });
  };
  d.Sweep();
  d.fec[d.b.host1] = {4e-7, 2};
  d.baseline[d.b.host1] = {3e-8, 1};  // 13x, but one hour of the day behind it
  for (int i = 0; i < 4; ++i) EXPECT_EQ(degrading(d.Sweep()), 0) << "too little history";
  d.baseline[d.b.host1] = {3e-8, 2};
  d.Sweep();
  auto active = d.Sweep();
  ASSERT_EQ(active.size(), 1u);
  const Alert& a = active[0];
  EXPECT_EQ(a.cause, Cause::kCableDegrading);
  EXPECT_EQ(a.severity, Severity::kWarning);
  EXPECT_EQ(a.cable, topology::CableBetween(d.b.leaf2, d.b.host1));
  ASSERT_EQ(a.evidence.size(), 2u);
  EXPECT_EQ(a.evidence[0].signal, "raw_bit_error_ratio");
  EXPECT_DOUBLE_EQ(a.evidence[0].value, 4e-7);
  EXPECT_DOUBLE_EQ(*a.evidence[0].threshold, 3e-7) << "10x the lowest";
  EXPECT_EQ(a.evidence[0].detail, "worst lane 2, up from 3e-08");
  EXPECT_EQ(a.evidence[1].signal, "raw_bit_error_ratio_baseline");
  EXPECT_DOUBLE_EQ(a.evidence[1].value, 3e-8);
  EXPECT_EQ(a.evidence[1].detail, "the lowest of the last 24h");
  EXPECT_NE(a.summary.find("13.3x its lowest of the last 24h (3e-08), under the bad-cable level 5e-06"),
            std::string::npos)
      << a.summary;
  EXPECT_NE(a.summary.find("degrading cable"), std::string::npos) << a.summary;
  EXPECT_FALSE(a.action.empty());
  // No raw ratio now (a pinned counter, the link down since): it stays.
  d.fec.erase(d.b.host1);
  d.raw_unknown.insert(d.b.host1);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(degrading(d.Sweep()), 1) << "sweep " << i;
  d.raw_unknown.clear();
  // Over the bad-cable level: a bad_cable, and the degrading one clears.
  d.fec[d.b.host1] = {6e-6, 2};
  d.Sweep();
  d.Sweep();
  active = d.Sweep();
  ASSERT_EQ(active.size(), 1u);
  EXPECT_EQ(active[0].cause, Cause::kBadCable);
  EXPECT_EQ(d.engine.Raised().at(Cause::kCableDegrading), 1u);
  // Below the minimum, or under ten times: nothing.
  Driven low(Quick());
  low.fec[low.b.host1] = {5e-10, 0};
  low.baseline[low.b.host1] = {0, 24};
  Driven slow(Quick());
  slow.fec[slow.b.host1] = {2e-7, 0};
  slow.baseline[slow.b.host1] = {3e-8, 24};
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(low.Sweep().empty());
    EXPECT_TRUE(slow.Sweep().empty());
  }
  // From a clean day: any ratio over the minimum.
  Driven clean(Quick());
  clean.fec[clean.b.host1] = {2e-9, -1};
  clean.baseline[clean.b.host1] = {0, 24};
  clean.Sweep();
  active = clean.Sweep();
  ASSERT_EQ(active.size(), 1u);
  EXPECT_NE(active[0].summary.find("its lowest of the last 24h was 0"), std::string::npos) << active[0].summary;
  EXPECT_EQ(active[0].evidence[0].detail, "up from 0");
  // Off.
  AlertConfig off = Quick();
  off.degrading.factor.reset();
  Driven none(off);
  none.fec[none.b.host1] = {4e-7, 2};
  none.baseline[none.b.host1] = {3e-8, 24};
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(none.Sweep().empty());
}

TEST(AlertEngineTest, EstimatesGoWithTheEvidenceBelowTheirThresholds) {
  Driven d(Quick());
  d.Sweep();
  for (int i = 0; i < 2; ++i) {
    d.b.Add(d.b.host1, Counter::kSymbolError, 20);
    d.b.Add(d.b.host1, Counter::kRcvData, 1'000'000'000);  // data does not matter: the link's rate does
    d.b.Add(d.b.host1, Counter::kRcvPkts, 1'000'000);
    d.Sweep();
  }
  const auto active = d.engine.Active();
  ASSERT_EQ(active.size(), 1u);
  const Evidence* ber = nullptr;
  for (const auto& ev : active[0].evidence) {
    if (ev.signal == "bit_error_rate") ber = &ev;
  }
  ASSERT_NE(ber, nullptr);
  EXPECT_DOUBLE_EQ(ber->value, 40.0 / (40e9 * 2));  // 4xQDR over the 2 s window: below min_bits
  EXPECT_FALSE(ber->threshold) << "informational: below min_bits";
  EXPECT_EQ(active[0].cable.a == d.b.host1 ? 0 : 1, ber->end);
}

// A quiet link with a few symbol errors: 2 in the default 5-minute window
// while it received 1e12 bits of packets (3.3 Gb/s of its 40). Over the
// packet bits that is 2e-12, over the 1e-12 warning: a false bad_cable;
// over the 1.2e13 bits the link carried, 1.7e-13: none (NVIDIA's BER is
// over the bits received at the PHY, PPCNT phy_received_bits).
TEST(AlertEngineTest, AQuietLinkWithAFewSymbolErrorsIsNoBadCable) {
  Bench b;
  b.spacing = 60;
  LinkHealth health{{std::chrono::minutes(5)}};
  AlertEngine engine{AlertConfig{}};
  for (int i = 0; i < 12; ++i) {
    if (i == 3 || i == 7) b.Add(b.host0, Counter::kSymbolError, 1);
    b.Add(b.host0, Counter::kRcvData, 1'000'000'000'000ULL / 32 / 5);  // 2e11 bits a minute
    health.Observe(b.fabric, nullptr, b.ports, b.links, b.Now(), b.Wall());
    engine.Evaluate(
        health.Cables(), nullptr, b.Wall(), [](const PortRef&) { return std::string("x"); }, &b.fabric, nullptr);
    ++b.sweep;
    EXPECT_TRUE(engine.Active().empty()) << "sweep " << i;
  }
  const CableHealth c = Of(health.Cables(), b.leaf1);
  const EndRates& host = c.a.port == b.host0 ? c.a : c.b;
  ASSERT_TRUE(host.bit_error_rate);
  EXPECT_GE(host.bits_carried, AlertConfig{}.bit_error_rate_min_bits) << "judged, not skipped for want of bits";
  EXPECT_LT(*host.bit_error_rate, 1e-12);
}

TEST(AlertEngineTest, RemotePhysicalErrorsAndCongestionAreNotACable) {
  AlertConfig c = Quick();
  Driven d(c);
  d.Sweep();
  for (int i = 0; i < 4; ++i) {
    d.b.Add(d.b.leaf1, Counter::kRcvRemotePhysicalErrors, 1000);
    d.b.Add(d.b.leaf2, Counter::kXmitWait, 600'000'000);
    d.Sweep();
  }
  const auto active = d.engine.Active();
  ASSERT_EQ(active.size(), 1u);
  EXPECT_EQ(active[0].cause, Cause::kCongestion);
  EXPECT_EQ(active[0].severity, Severity::kCritical);
  EXPECT_EQ(active[0].cable, topology::CableBetween(d.b.leaf2, d.b.host1));
}

TEST(AlertEngineTest, OneCongestionAlertPerTreeOnItsRootsCable) {
  // host0 waits to send into leaf0, whose port to host1 waits: host1 does
  // not drain. leaf0's table: host0 (LID 2) on port 1, host1 (LID 3) on 2.
  const topology::ForwardingTables tables(std::map<std::uint64_t, std::vector<std::uint8_t>>{
      {0x100, {transport::kLftNoPort, 0, 1, 2}}});  // 0x100: leaf0, the first node built
  // Judged whole or a cable at a time: the root and its victim are on two
  // cables, the tree the same.
  for (const auto& [with_tables, in_parts] :
       std::vector<std::pair<bool, bool>>{{true, false}, {false, false}, {true, true}, {false, true}}) {
    SCOPED_TRACE(std::string(with_tables ? "with" : "without") + " tables, " + (in_parts ? "in parts" : "whole"));
    Driven d(Quick());
    d.in_parts = in_parts;
    if (with_tables) d.tables = &tables;
    d.Sweep();
    for (int i = 0; i < 4; ++i) {
      d.b.Add(d.b.leaf2, Counter::kXmitWait, 600'000'000);  // 60 % of the time at QDR (1 ns a tick): critical
      d.b.Add(d.b.host0, Counter::kXmitWait, 100'000'000);  // 10 %: a warning
      d.Sweep();
    }
    const auto active = d.engine.Active();
    if (!with_tables) {
      // Without the tables nothing says who waits on whom: a tree each.
      EXPECT_EQ(active.size(), 2u);
      EXPECT_EQ(d.engine.Congestion().size(), 2u);
      continue;
    }
    ASSERT_EQ(active.size(), 1u);
    const Alert& a = active[0];
    EXPECT_EQ(a.cause, Cause::kCongestion);
    EXPECT_EQ(a.severity, Severity::kCritical);
    EXPECT_EQ(a.cable, topology::CableBetween(d.b.leaf2, d.b.host1));
    ASSERT_TRUE(a.root);
    EXPECT_EQ(*a.root, d.b.leaf2);
    EXPECT_EQ(a.victims, std::vector<PortRef>{d.b.host0});
    EXPECT_EQ(a.depth, 1);
    int victims = 0;
    for (const Evidence& e : a.evidence) {
      if (e.signal != "victim") continue;
      ++victims;
      EXPECT_NEAR(e.value, 0.1, 0.001);
      EXPECT_NE(e.detail.find("1 hop away"), std::string::npos) << e.detail;
    }
    EXPECT_EQ(victims, 1);
    EXPECT_NE(a.summary.find("(not draining): xmit_wait_fraction 0.6, 1 victim, depth 1"), std::string::npos)
        << a.summary;
    ASSERT_EQ(d.engine.Congestion().size(), 1u);
    EXPECT_EQ(d.engine.Congestion()[0].severity, Severity::kCritical);
    EXPECT_NEAR(d.engine.Congestion()[0].xmit_wait_fraction.at(d.b.host0), 0.1, 0.001);
    // The root drains: the tree and its alert go, the victim raising none.
    for (int i = 0; i < 6; ++i) d.Sweep();
    EXPECT_TRUE(d.engine.Active().empty());
    EXPECT_TRUE(d.engine.Congestion().empty());
    EXPECT_EQ(d.engine.Raised().at(Cause::kCongestion), 1u);
  }
}

// A switch discards what its table still routes to a port that just died
// (IBTA PortXmitDiscards: "because the port is down or congested") until
// the exporter reads the link down: the congestion alert raised meanwhile
// clears once it does (a down link waits on nothing), and does not return
// while the link stays down. It stayed up for as long as the link was down
// (the deployments suite, where an Unlinked uplink kept a hot spot).
TEST(AlertEngineTest, ACongestionAlertOnALinkReadDownClears) {
  Driven d(Quick());
  d.Sweep();
  for (int i = 0; i < 3; ++i) {
    d.b.Add(d.b.leaf1, Counter::kXmitDiscards, 500);
    d.Sweep();
  }
  auto active = d.engine.Active();
  ASSERT_EQ(active.size(), 1u);
  EXPECT_EQ(active[0].cause, Cause::kCongestion);
  EXPECT_EQ(active[0].cable, topology::CableBetween(d.b.leaf1, d.b.host0));
  d.b.SetUp(d.b.leaf1, false);
  for (int i = 0; i < 6; ++i) {
    d.Sweep();
    if (i >= 1) {
      for (const Alert& a : d.engine.Active()) EXPECT_NE(a.cause, Cause::kCongestion) << "sweep " << i;
    }
  }
  EXPECT_EQ(d.engine.Raised().at(Cause::kCongestion), 1u);
}

// A bad-cable alert on host0's cable: errors in two sweeps in a row.
void RaiseOnHost0(Driven& d) {
  d.Sweep();
  for (int i = 0; i < 2; ++i) {
    d.b.Add(d.b.host0, Counter::kSymbolError, 50);
    d.Sweep();
  }
  ASSERT_EQ(d.engine.Active().size(), 1u);
}

TEST(AlertEngineTest, AnEndThatDoesNotAnswerCountsNeitherWay) {
  Driven d(Quick());
  ASSERT_NO_FATAL_FAILURE(RaiseOnHost0(d));
  d.b.ports[d.b.host0].stale = true;  // host0 stops answering
  for (int i = 0; i < 6; ++i) EXPECT_EQ(d.Sweep().size(), 1u) << "kept while it cannot be judged";
  d.b.ports[d.b.host0].stale = false;
  int sweeps = 0;
  while (!d.Sweep().empty()) ASSERT_LT(++sweeps, 10);
}

// A flapping cable neither end of which answers (both out of reach, or the
// exporter cut off): its downs leave the window, but none could have been
// seen, so the alert stays until an end is read again.
TEST(AlertEngineTest, AFlapSeenByNoEndIsNotCleared) {
  Driven d(QuickFlapping());
  d.Sweep();
  d.b.Add(d.b.leaf1, Counter::kLinkDowned, 2);
  ASSERT_EQ(d.Sweep().size(), 1u);
  d.b.ports[d.b.leaf1].stale = true;
  d.b.ports[d.b.host0].stale = true;
  for (int i = 0; i < 6; ++i) EXPECT_EQ(d.Sweep().size(), 1u) << "sweep " << i << ": kept while no end is read";
  d.b.ports[d.b.host0].stale = false;  // one end answers: no down since, it clears
  int sweeps = 0;
  while (!d.Sweep().empty()) ASSERT_LT(++sweeps, 10);
}

// Congestion that goes on while the exporter cannot read (a hung fabric):
// the first readings after a gap longer than the window are not a rate
// over the gap (diluted, it would look clean and clear the alert, to raise
// it again a few sweeps later); the window starts afresh.
TEST(AlertEngineTest, AGapLongerThanTheWindowStartsItAfresh) {
  Driven d(Quick());
  d.Sweep();
  for (int i = 0; i < 3; ++i) {
    d.b.Add(d.b.leaf2, Counter::kXmitWait, 100'000'000);  // 10 % of the time at QDR
    d.Sweep();
  }
  auto active = d.engine.Active();
  ASSERT_EQ(active.size(), 1u);
  ASSERT_EQ(active[0].cause, Cause::kCongestion);
  d.b.ports[d.b.leaf2].stale = true;
  d.b.ports[d.b.host1].stale = true;
  for (int i = 0; i < 6; ++i) EXPECT_EQ(d.Sweep().size(), 1u) << "gap sweep " << i;
  d.b.ports[d.b.leaf2].stale = false;
  d.b.ports[d.b.host1].stale = false;
  for (int i = 0; i < 6; ++i) {
    d.b.Add(d.b.leaf2, Counter::kXmitWait, 100'000'000);
    active = d.Sweep();
    ASSERT_EQ(active.size(), 1u) << "sweep " << i << " after the gap";
    EXPECT_EQ(active[0].cause, Cause::kCongestion);
  }
  EXPECT_EQ(d.engine.Raised().at(Cause::kCongestion), 1u) << "raised once, never cleared in between";
}

TEST(AlertEngineTest, APinnedCounterCannotClearAnAlert) {
  Driven d(Quick());
  ASSERT_NO_FATAL_FAILURE(RaiseOnHost0(d));
  PortTotals& t = d.b.ports[d.b.host0];
  t.last_wide.reset(Index(Counter::kSymbolError));
  t.SetLastRaw(Index(Counter::kSymbolError), 0xffff);  // stopped at its maximum
  for (int i = 0; i < 8; ++i) EXPECT_EQ(d.Sweep().size(), 1u);
}

TEST(AlertEngineTest, FlappingDegradedAndMiswiring) {
  Driven d(QuickFlapping());
  d.Sweep();
  d.b.Add(d.b.leaf1, Counter::kLinkDowned, 2);
  d.b.links[d.b.leaf2].width_active = 1;
  auto active = d.Sweep();
  ASSERT_EQ(active.size(), 2u);
  std::set<Cause> causes{active[0].cause, active[1].cause};
  EXPECT_EQ(causes, (std::set<Cause>{Cause::kFlappingLink, Cause::kDegradedLink}));
  for (const auto& a : active) EXPECT_EQ(a.severity, Severity::kWarning);

  topology::Analysis analysis;
  analysis.findings.push_back(
      {topology::FindingKind::kPlanWrongRemotePort, "planned x, found y", 0, d.b.leaf1, d.b.host0});
  analysis.findings.push_back({topology::FindingKind::kFewerUplinks, "not about a cable", d.b.leaf1.node_guid, {}, {}});
  d.engine.Evaluate(d.health.Cables(), &analysis, d.b.Wall(), [](const PortRef&) { return std::string("p"); });
  active = d.engine.Active();
  const auto mis =
      std::count_if(active.begin(), active.end(), [](const Alert& a) { return a.cause == Cause::kMiswiring; });
  EXPECT_EQ(mis, 1);
  // The finding gone after a discovery: the alert clears after clear_after.
  const topology::Analysis fixed;
  for (int i = 0; i < 2; ++i) {
    d.engine.Evaluate(d.health.Cables(), &fixed, d.b.Wall(), [](const PortRef&) { return std::string("p"); });
  }
  active = d.engine.Active();
  EXPECT_EQ(std::count_if(active.begin(), active.end(), [](const Alert& a) { return a.cause == Cause::kMiswiring; }),
            0);
}

TEST(AlertConfigTest, DefaultsOverridesAndErrorsNameTheLine) {
  AlertConfig c;
  std::string error;
  ASSERT_TRUE(ParseAlertConfig("", &c, &error)) << error;
  EXPECT_EQ(c.window, milliseconds(300'000));
  ASSERT_TRUE(ParseAlertConfig(R"(# thresholds
window: 30s
raise_after: 3
bad_cable:
  symbol_errors_per_second: {warning: 0.5, critical: null}
  bit_error_rate: {min_bits: 1e9}
congestion:
  xmit_wait_tick_multiplier: 8
degraded_link: {severity: critical}
cable_degrading: {raw_bit_error_ratio_factor: 4, period: 2h, min_raw_bit_error_ratio: 1e-10}
)",
                               &c, &error))
      << error;
  EXPECT_EQ(c.window, milliseconds(30'000));
  EXPECT_EQ(c.raise_after, 3);
  EXPECT_EQ(c.clear_after, 3);
  EXPECT_EQ(c.symbol_errors.warning, 0.5);
  EXPECT_FALSE(c.symbol_errors.critical);
  EXPECT_EQ(c.bit_error_rate_min_bits, 1e9);
  EXPECT_EQ(c.bit_error_rate.warning, 1e-12) << "unset levels keep their defaults";
  EXPECT_EQ(c.xmit_wait_tick_multiplier, 8);
  EXPECT_EQ(c.degraded_severity, Severity::kCritical);
  EXPECT_EQ(c.degrading.factor, 4);
  EXPECT_EQ(c.degrading.period, std::chrono::hours(2));
  EXPECT_EQ(c.degrading.min_raw, 1e-10);
  AlertConfig defaults;
  EXPECT_EQ(defaults.degrading.factor, 10);
  EXPECT_EQ(defaults.degrading.period, std::chrono::hours(24));
  ASSERT_TRUE(ParseAlertConfig("cable_degrading: {raw_bit_error_ratio_factor: null}\n", &c, &error));
  EXPECT_FALSE(c.degrading.factor);
  EXPECT_EQ(defaults.ber_levels.size(), DefaultBerLevels().size());
  ASSERT_TRUE(ParseAlertConfig(R"(bad_cable:
  ber_levels:
    - {speed: NDR, fec: plr, raw: {warning: 5e-7, critical: 1e-6}, effective: {warning: 5e-12, critical: 1e-11}}
    - {speed: HDR, asic: 7nm, raw: {warning: 5e-8, critical: 1e-7}}
)",
                               &c, &error))
      << error;
  ASSERT_EQ(c.ber_levels.size(), 2u) << "the file's rows replace NVIDIA's";
  EXPECT_EQ(c.ber_levels[0].speed, topology::Speed::kNdr);
  EXPECT_EQ(c.ber_levels[0].fec, FecClass::kPlr);
  EXPECT_EQ(c.ber_levels[0].raw.warning, 5e-7);
  EXPECT_EQ(c.ber_levels[1].asic, AsicProcess::k7nm);
  EXPECT_FALSE(c.ber_levels[1].effective.warning) << "a level not given is off";
  ASSERT_TRUE(ParseAlertConfig("bad_cable: {ber_levels: []}\n", &c, &error)) << error;
  EXPECT_TRUE(c.ber_levels.empty());
  // A site's own plain levels (all-copper NDR) without ber_levels: they
  // apply everywhere, as before the table.
  ASSERT_TRUE(ParseAlertConfig("bad_cable: {raw_bit_error_ratio: {warning: 5e-7, critical: 1e-6}}\n", &c, &error))
      << error;
  EXPECT_TRUE(c.ber_levels.empty());
  EXPECT_EQ(c.raw_bit_error_ratio.warning, 5e-7);
  ASSERT_TRUE(ParseAlertConfig(
      "bad_cable:\n  raw_bit_error_ratio: {warning: 5e-7}\n  ber_levels:\n    - {speed: NDR}\n", &c, &error))
      << error;
  EXPECT_EQ(c.ber_levels.size(), 1u) << "with a table: the table, the plain levels where no row fits";

  const std::vector<std::pair<std::string, std::string>> cases{
      {"window: soon\n", "line 1: window must be a duration"},
      {"raise_after: 0\n", "line 1: raise_after must be a whole number from 1 to 1000"},
      {"clear_after: 2.5\n", "line 1: clear_after must be a whole number"},
      {"bad_cable:\n  symbol_errors_per_second: {warning: -1}\n",
       "line 2: bad_cable.symbol_errors_per_second.warning must not be negative"},
      {"bad_cable:\n  symbol_errors_per_second: {warning: 5, critical: 1}\n",
       "line 2: bad_cable.symbol_errors_per_second: warning must not be above critical"},
      {"bad_cable:\n  symbol_error_per_second: {warning: 5}\n",
       "line 2: unknown key 'symbol_error_per_second' in bad_cable"},
      {"flapping_link:\n  link_downs: {warning: many}\n",
       "line 2: flapping_link.link_downs.warning must be a number, not 'many'"},
      {"miswiring: {severity: page}\n", "line 1: miswiring.severity must be warning or critical"},
      {"congestion: {xmit_wait_tick_multiplier: 0}\n",
       "line 1: congestion.xmit_wait_tick_multiplier must be from 1 to 256"},
      {"thresholds: 1\n", "line 1: unknown key 'thresholds' in the file"},
      {"cable_degrading:\n  period: 1s\n", "line 2: cable_degrading.period must be a duration from 24s to 168h"},
      {"cable_degrading:\n  raw_bit_error_ratio_factor: 1\n",
       "line 2: cable_degrading.raw_bit_error_ratio_factor must be above 1"},
      {"bad_cable:\n  ber_levels: {speed: NDR}\n", "line 2: bad_cable.ber_levels must be a list"},
      {"bad_cable:\n  ber_levels:\n    - {speed: PDR}\n", "line 3: bad_cable.ber_levels[0].speed must be a speed"},
      {"bad_cable:\n  ber_levels:\n    - {fec: plr}\n", "line 3: bad_cable.ber_levels[0]: speed is required"},
      {"bad_cable:\n  ber_levels:\n    - {speed: NDR, fec: kp4}\n",
       "line 3: bad_cable.ber_levels[0].fec must be any, none, rs, ll_rs or plr"},
      {"bad_cable:\n  ber_levels:\n    - {speed: NDR, asic: 5nm}\n",
       "line 3: bad_cable.ber_levels[0].asic must be 7nm, 16nm, unknown or any"},
      {"window: [1\n", "line 2: not YAML"},
      {"- 1\n", "line 1: the file must be a map of keys"},
  };
  for (const auto& [text, want] : cases) {
    AlertConfig x;
    EXPECT_FALSE(ParseAlertConfig(text, &x, &error)) << text;
    EXPECT_EQ(error.substr(0, want.size()), want) << text << " -> " << error;
  }
}

// NVIDIA's levels, each row held against UFM's Field_BER_Thresholds.csv
// V06 (Mellanox/ufm_sdk_3.0 plugins/pdr_deterministic_plugin/build/config,
// branch pdr_dynamic_telemetry at 0eea373b; the same levels as V05 at
// e04f549a^): Pre-FEC and Post-FEC Warning / Error of the row named (its
// opcode, PPLM's; "FEC OPCODE vs MAD" gives the FECModeActive used here).
TEST(BerLevelsTest, EachSpeedModeAndAsicHasUfmsLevels) {
  using topology::Speed;
  using transport::FecMode;
  const std::vector<BerRow> rows = DefaultBerLevels();
  struct Case {
    Speed speed;
    std::optional<FecMode> mode;
    AsicProcess asic;
    double raw_warning, raw_error, effective_warning, effective_error;
    const char* row;  // the CSV's row it stands for
  };
  const Case cases[] = {
      {Speed::kNdr, FecMode::kMlnxLowLatencyPlr, AsicProcess::k7nm, 5e-6, 1e-5, 5e-12, 1e-11,
       "7nm NDR ETH Consortium LL 50G RS FEC PLR (14), Active"},
      {Speed::kNdr, FecMode::kMlnxRsFec544Plr, AsicProcess::k7nm, 5e-6, 1e-5, 5e-12, 1e-11,
       "7nm NDR KP4 RS-FEC_PLR (12), Active"},
      {Speed::kNdr, FecMode::kRsFec2, AsicProcess::k7nm, 5e-6, 1e-5, 5e-14, 1e-13,
       "7nm NDR KP4 Standard RS-FEC (7), Active"},
      {Speed::kHdr, FecMode::kRsFec2, AsicProcess::k7nm, 5e-8, 1e-7, 5e-14, 1e-13, "7nm HDR KP4 RS-FEC (7)"},
      {Speed::kHdr, FecMode::kMlnxLowLatencyPlr, AsicProcess::k7nm, 5e-8, 1e-7, 5e-14, 1e-13,
       "7nm HDR LL-FEC (271,257)+PLR (13)"},
      {Speed::kHdr, FecMode::kRsFec2, AsicProcess::k16nm, 5e-6, 1e-5, 5e-14, 1e-13, "16nm HDR KP4 RS-FEC (7)"},
      {Speed::kHdr, FecMode::kRsFec2, AsicProcess::kUnknown, 5e-6, 1e-5, 5e-14, 1e-13, "an unknown ASIC: the 16nm row"},
      {Speed::kEdr, FecMode::kRsFec, AsicProcess::k7nm, 5e-13, 1e-12, 5e-14, 1e-13, "7nm EDR STD_RS (2)"},
      {Speed::kEdr, FecMode::kRsFec, AsicProcess::k16nm, 5e-10, 1e-9, 5e-14, 1e-13, "16nm EDR STD_RS (2)"},
      {Speed::kEdr, FecMode::kLowLatencyRsFec, AsicProcess::k16nm, 5e-13, 1e-12, 5e-14, 1e-13,
       "16nm EDR STD_LL_RS (3)"},
      {Speed::kEdr, std::nullopt, AsicProcess::k16nm, 5e-10, 1e-9, 5e-14, 1e-13,
       "EDR, mode not read: the higher of its FEC rows"},
      {Speed::kEdr, FecMode::kNone, AsicProcess::k16nm, 5e-14, 1e-13, 5e-14, 1e-13, "16nm EDR NO_FEC (0)"},
  };
  for (const Case& c : cases) {
    const BerRow* r = MatchBerRow(rows, c.speed, c.mode, c.asic);
    ASSERT_NE(r, nullptr) << c.row;
    EXPECT_EQ(r->raw.warning, c.raw_warning) << c.row;
    EXPECT_EQ(r->raw.critical, c.raw_error) << c.row;
    EXPECT_EQ(r->effective.warning, c.effective_warning) << c.row;
    EXPECT_EQ(r->effective.critical, c.effective_error) << c.row;
  }
  EXPECT_EQ(MatchBerRow(rows, Speed::kNdr, std::nullopt, AsicProcess::kUnknown)->effective.warning, 5e-12)
      << "a mode not read: the PLR levels (the higher)";
  EXPECT_EQ(MatchBerRow(rows, Speed::kFdr, FecMode::kFireCode, AsicProcess::kUnknown), nullptr)
      << "no row: the plain levels";
  EXPECT_EQ(AsicProcessOf(0x02c9, 0xd2f2), AsicProcess::k7nm);
  EXPECT_EQ(AsicProcessOf(0x02c9, 0xd2f0), AsicProcess::k16nm);
  EXPECT_EQ(AsicProcessOf(0x02c9, 0xcf08), AsicProcess::kUnknown);
  EXPECT_EQ(AsicProcessOf(0x001175, 0xd2f2), AsicProcess::kUnknown) << "another vendor's ID";
}

// The same raw ratio, 1e-6, at an end of each kind: over HDR's level on a
// 7nm ASIC (1e-7: critical), under NDR's (5e-6: nothing).
TEST(AlertEngineTest, RawLevelsAreTheEndsSpeedModeAndAsics) {
  for (const auto speed : {topology::Speed::kHdr, topology::Speed::kNdr}) {
    SCOPED_TRACE(topology::ToString(speed));
    Driven d(Quick());
    d.fec[d.b.host1] = {1e-6, 2};
    d.kind[d.b.host1] = {speed, transport::FecMode::kRsFec2, AsicProcess::k7nm};
    d.Sweep();
    d.Sweep();
    const auto active = d.Sweep();
    if (speed == topology::Speed::kNdr) {
      EXPECT_TRUE(active.empty());
      continue;
    }
    ASSERT_EQ(active.size(), 1u);
    EXPECT_EQ(active[0].cause, Cause::kBadCable);
    EXPECT_EQ(active[0].severity, Severity::kCritical);
    EXPECT_EQ(active[0].evidence[0].threshold, 1e-7);
    EXPECT_EQ(active[0].evidence[0].detail, "worst lane 2, levels HDR 7nm");
  }
  AlertConfig none = Quick();
  none.ber_levels.clear();  // the plain levels everywhere (5e-6)
  Driven d(none);
  d.fec[d.b.host1] = {1e-6, 2};
  d.kind[d.b.host1] = {topology::Speed::kHdr, transport::FecMode::kRsFec2, AsicProcess::k7nm};
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(d.Sweep().empty());
}

TEST(AlertFilterTest, ParsesAndRejects) {
  AlertFilter f;
  std::string error;
  ASSERT_TRUE(ParseAlertFilter({{"severity", "critical"}, {"node", "leaf01"}, {"state", "cleared"}}, &f, &error));
  EXPECT_EQ(f.severity, Severity::kCritical);
  EXPECT_EQ(f.node, "leaf01");
  EXPECT_FALSE(f.active);
  EXPECT_TRUE(f.cleared);
  EXPECT_FALSE(ParseAlertFilter({{"severity", "warning"}, {"severity", "critical"}}, &f, &error));
  EXPECT_EQ(error, "parameter 'severity' given more than once");
}

}  // namespace
}  // namespace ibfabric::collectors
