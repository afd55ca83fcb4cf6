// Issue 13 on the simulated fabric, watched from outside the exporter: an
// LD_PRELOAD tap over umad_send/umad_recv (tests/tools/mad_tap.cc) records
// every MAD, and the limits are checked on what crossed libibumad. Also
// what a discovery costs in directed-route SMPs: one NodeInfo per cable,
// one PortInfo per switch (its port 0) and per CA port, nothing else.

#include <gtest/gtest.h>

#include <cstdio>

#include "tests/integration/fabric_suite.h"
#include "tests/testbed/mad_tap.h"

namespace ibfabric::testbed {
namespace {

using std::chrono::seconds;

class FabricSafeTest : public FabricSuite {
 protected:
  // 8 leaves of 8 hosts, 4 spines: 12 switches, 64 CA ports, 96 cables;
  // a resident SM and SA, as on a production fabric (the tables come from
  // the SA).
  static void SetUpTestSuite() {
    StartFabric(Spec(8, 4, 8, 1, 16));
    StartResidentSm();
  }

  // Runs the exporter with the tap through its discovery and three sweeps,
  // stops it, and reads what the tap saw.
  static MadTapReport Watch(const std::vector<std::string>& extra) {
    const std::string file = sim_->dir() + "/mad_tap.log";
    std::remove(file.c_str());
    std::vector<std::string> args{"--sweep.interval=200ms", "--discovery.interval=1h"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::string error;
    auto e = ExporterProcess::Start(*sim_, args, &error, {}, MadTapEnv(file));
    EXPECT_NE(e, nullptr) << error;
    if (!e) return {};
    EXPECT_TRUE(e->WaitForSweeps(3, seconds(60))) << e->Log();
    e.reset();  // stopped: the tap has written everything
    const MadTapReport r = ReadMadTap(file);
    std::printf("tap: %s\n", Describe(r).c_str());
    return r;
  }
};

TEST_F(FabricSafeTest, AtTheDefaultsOneMadPerNodeAndOneThroughEachSwitch) {
  const MadTapReport r = Watch({});
  ASSERT_TRUE(r.ok) << r.error;
  const std::size_t switches = tree_->leaves().size() + tree_->spines().size();
  const std::size_t ca_ports = tree_->hosts().size();
  // Onto the fabric, NodeInfo: each cable once; PortInfo: each switch's
  // port 0 and each CA port but the local one. Everything else went
  // LID-routed. Of no hop (the local HCA answers): the walk's NodeInfo and
  // PortInfo of the local port, and the local port's PortInfo each sweep.
  EXPECT_EQ(r.sent[0] - r.local_smps, tree_->cables().size() + switches + ca_ports - 1);
  EXPECT_GE(r.local_smps, 2u + 3u);
  EXPECT_GT(r.sent[1], switches * 16) << "every switch port's PortInfo, LID-routed";
  EXPECT_GT(r.sent[2], 0u);
  for (std::size_t k = 0; k < 3; ++k) EXPECT_EQ(r.answered[k], r.sent[k]) << "kind " << k;
  // Every directed route starts at the exporter's own leaf: with at most one
  // MAD outstanding at any switch it passes, one is on the wire at a time.
  EXPECT_EQ(r.peak_kind[0], 1);
  EXPECT_EQ(r.peak_target, 1) << r.peak_target_node;
  EXPECT_EQ(r.peak_transit, 1) << r.peak_transit_node;
  // The SA (the SM's process) gets its own few: the trap subscriptions,
  // the forwarding tables (one query a switch).
  EXPECT_LE(r.peak_sa, 4);
  EXPECT_GE(r.peak_sa, 2);
  EXPECT_LE(r.peak_kind[1], 16);
  EXPECT_LE(r.peak_kind[2], 128);
  EXPECT_GT(r.peak_kind[2], 16) << "GMPs still go out many at a time, to many nodes";
}

// The rate limit (--mad.rate-limit; 100,000 a second by default, which
// ibsim never reaches): at 2,000 a second, no 100 ms holds more than 200
// sends and the burst allowance (1% of a second's: 20), and the limit is
// what sets the pace (a walk and three sweeps of this fabric are thousands
// of MADs). The tap stamps a send when it reaches libibumad, a little after
// the engine took its token: 10 more are scheduling, not the limit (a
// bucket a Run, as before, let a walk's many small Runs through at once).
TEST_F(FabricSafeTest, TheRateLimitHoldsOnTheWire) {
  const MadTapReport r = Watch({"--mad.rate-limit=2000"});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_LE(r.peak_per_100ms, 200u + 20u + 10u);
  EXPECT_GE(r.peak_per_100ms, 150u) << "the limit is reached";
  EXPECT_GT(r.sent[0] + r.sent[1] + r.sent[2], 1000u);
}

TEST_F(FabricSafeTest, RaisedLimitsAreReachedAndNeverExceeded) {
  const MadTapReport r = Watch({"--mad.per-destination=2", "--mad.dr-per-switch=3", "--mad.window.gmp=32"});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.peak_target, 2) << r.peak_target_node;
  EXPECT_EQ(r.peak_transit, 3) << r.peak_transit_node;
  EXPECT_EQ(r.peak_kind[0], 3) << "four allowed on the wire, three through the exporter's leaf";
  EXPECT_EQ(r.peak_kind[2], 32);
}

}  // namespace
}  // namespace ibfabric::testbed
