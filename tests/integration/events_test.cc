// Fewer MADs for the same knowledge, on the simulated fabric with a resident
// opensm: a trap the SM forwards makes the exporter re-read the port it
// names before its next sweep would have; with the traps lost, the slow
// rotation of the sweeps still finds the change; a host cable that flaps
// costs a few directed-route SMPs (counted outside the process by the MAD
// tap), never a walk of the fabric, and every flap is reported.
//
// ibsim hands an unsolicited MAD on QP1 (the SA's Report) only to a client
// whose port is an SM port (ibsim.c find_client); SIM_SET_ISSM=1 makes the
// exporter's port one, and opensm runs with ignore_other_sm so that it does
// not wait on SMInfo from that port. Without it the Reports are dropped:
// traps lost.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "tests/integration/fabric_suite.h"
#include "tests/testbed/mad_tap.h"

namespace ibfabric::testbed {
namespace {

using std::chrono::seconds;

class EventsTest : public FabricSuite {
 protected:
  static void SetUpTestSuite() {
    StartFabric(Spec(4, 2, 4, 1, 16));
    if (sim_) StartTrapSm(tree_->Host(16));
  }
  static void TearDownTestSuite() {
    StopTrapSm();
    StopFabric();
  }

  static std::unique_ptr<ExporterProcess> Start(const std::vector<std::string>& args, bool traps,
                                                const std::string& tap = "") {
    return SpawnExporter(args, traps, tap.empty() ? Env{} : MadTapEnv(tap));
  }
  static double Value(const Scrape& s, const std::string& name,
                      const std::vector<std::pair<std::string, std::string>>& l = {}) {
    std::map<std::string, std::string> labels(l.begin(), l.end());
    return s.Value(name, labels).value_or(-1);
  }
  // The down events counted on the cable of host `i`.
  static double Downs(const Scrape& s, int i) {
    for (const auto& x : s.Find("infiniband_link_down_events_total")) {
      if (x.labels.at("node") == tree_->Host(i) || x.labels.at("remote_node") == tree_->Host(i)) return x.value;
    }
    return -1;
  }
  // infiniband_link_up of the cable at `end` (-1: no such cable).
  static double LinkUp(const Scrape& s, const Endpoint& end) {
    const std::string port = std::to_string(end.port);
    for (const auto& l : s.Find("infiniband_link_up")) {
      if ((l.labels.at("node") == end.node && l.labels.at("port") == port) ||
          (l.labels.at("remote_node") == end.node && l.labels.at("remote_port") == port)) {
        return l.value;
      }
    }
    return -1;
  }
  static double Hcas(const Scrape& s) { return Value(s, "infiniband_exporter_fabric_nodes", {{"type", "hca"}}); }

  // A flap as hardware shows it: the link goes down and comes back, and
  // LinkDownedCounter moves at both ends (ibsim never counts it).
  static void Flap(const Endpoint& leaf_end, const Endpoint& host_end, unsigned long long downs) {
    Console("Unlink " + At(leaf_end));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    Console("ReLink " + At(leaf_end));
    Plant(leaf_end, "PortCounters.LinkDownedCounter", downs);
    Plant(host_end, "PortCounters.LinkDownedCounter", downs);
  }
};

TEST_F(EventsTest, TrapMakesThePortReadBeforeTheNextSweep) {
  // One sweep an hour: whatever is seen after the first one came from a trap.
  auto e = Start({"--sweep.interval=1h", "--discovery.interval=1h"}, /*traps=*/true);
  ASSERT_TRUE(e);
  auto s = e->WaitFor(
      [](const Scrape& x) {
        return x.Value("infiniband_exporter_trap_subscribed", {{"trap", "128"}}) == 1;
      },
      seconds(30));
  ASSERT_TRUE(s) << e->Log();
  ASSERT_EQ(Value(*s, "infiniband_exporter_sweeps_total"), 1);
  ASSERT_EQ(Hcas(*s), 16);

  const Endpoint leaf_end = tree_->LeafHostPort(6);
  Console("Unlink " + At(leaf_end));
  s = e->WaitFor([](const Scrape& x) { return Hcas(x) == 15; }, seconds(20));
  ASSERT_TRUE(s) << e->Log();
  EXPECT_GE(Value(*s, "infiniband_exporter_traps_total", {{"trap", "128"}}), 1);
  EXPECT_EQ(Value(*s, "infiniband_exporter_sweeps_total"), 1) << "re-read on the trap, not by a sweep";
  EXPECT_EQ(Value(*s, "infiniband_exporter_discoveries_total", {{"mode", "full"}}), 1);
  EXPECT_GE(Value(*s, "infiniband_exporter_discoveries_total", {{"mode", "incremental"}}), 1);
  EXPECT_EQ(Downs(*s, 6), 1) << "the cable's down is reported at once";

  Console("ReLink " + At(leaf_end));
  s = e->WaitFor([](const Scrape& x) { return Hcas(x) == 16; }, seconds(20));
  ASSERT_TRUE(s) << e->Log();
  EXPECT_EQ(Value(*s, "infiniband_exporter_sweeps_total"), 1);
  EXPECT_EQ(Value(*s, "infiniband_exporter_discoveries_total", {{"mode", "full"}}), 1);
  EXPECT_EQ(s->Find("infiniband_hca_info", {{"hca", tree_->Host(6)}}).size(), 1u);
}

TEST_F(EventsTest, SlowPollFindsAChangeWhenTrapsAreLost) {
  // Traps subscribed but never delivered (the exporter's port is no SM
  // port, so ibsim drops the Reports); a spine cable goes down: no PMA
  // stops answering and ibsim counts no LinkDowned, so only the rotation of
  // PortInfo through the switch ports can see it.
  auto e = Start({"--sweep.interval=200ms", "--discovery.interval=1h", "--sweep.rotation=3s"}, /*traps=*/false);
  ASSERT_TRUE(e);
  auto s = e->WaitFor(
      [](const Scrape& x) {
        return x.Value("infiniband_exporter_trap_subscribed", {{"trap", "128"}}) == 1;
      },
      seconds(30));
  ASSERT_TRUE(s) << e->Log();
  const Endpoint up = tree_->LeafUplink(2, 1);  // leaf 2's cable to spine 1
  ASSERT_EQ(LinkUp(*s, up), 1);
  // Past the rotation after the subscription (15 sweeps), in which the
  // changes found do not count against the traps' delivery.
  const double subscribed_at = Value(*s, "infiniband_exporter_sweeps_total");
  s = e->WaitFor([&](const Scrape& x) { return Value(x, "infiniband_exporter_sweeps_total") >= subscribed_at + 16; },
                 seconds(30));
  ASSERT_TRUE(s) << e->Log();
  EXPECT_FALSE(s->Value("infiniband_exporter_traps_delivering").has_value()) << "nothing showed either way yet";
  const double before = Value(*s, "infiniband_exporter_sweeps_total");
  Console("Unlink " + At(up));
  const auto t0 = std::chrono::steady_clock::now();
  s = e->WaitFor([&](const Scrape& x) { return LinkUp(x, up) == 0; }, seconds(60));
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(s) << e->Log();
  // Counted in sweeps (at most the scrape's sweeps_total, read with the
  // link's state): a loaded machine's sweeps are slower, not fewer.
  const double sweeps = Value(*s, "infiniband_exporter_sweeps_total") - before;
  std::printf("spine cable down seen after %.1f s, %.0f sweeps (rotation 15 sweeps of 0.2 s)\n", waited, sweeps);
  EXPECT_EQ(Value(*s, "infiniband_exporter_traps_total", {{"trap", "128"}}), 0) << "the traps were lost";
  EXPECT_EQ(Value(*s, "infiniband_exporter_discoveries_total", {{"mode", "full"}}), 1);
  EXPECT_LE(sweeps, 30) << "two rotations at most";
  Console("ReLink " + At(up));
  s = e->WaitFor([&](const Scrape& x) { return LinkUp(x, up) == 1; }, seconds(20));
  EXPECT_TRUE(s) << e->Log();
  EXPECT_EQ(Value(*s, "infiniband_exporter_discoveries_total", {{"mode", "full"}}), 1);
  // Changes found in two sweeps with no Report for either: the exporter
  // says the subscription delivers nothing, once, and where to look.
  s = e->WaitFor([](const Scrape& x) { return x.Value("infiniband_exporter_traps_delivering") == 0; }, seconds(10));
  ASSERT_TRUE(s) << e->Log();
  const std::string log = e->Log();
  std::size_t said = 0;
  for (auto at = log.find("sends no traps"); at != std::string::npos; at = log.find("sends no traps", at + 1)) ++said;
  EXPECT_EQ(said, 1u) << log;
  const auto alerts = nlohmann::json::parse(e->Get("/api/v1/alerts"));
  ASSERT_EQ(alerts["exporter_blind_spots"].size(), 1u) << alerts.dump();
  EXPECT_EQ(alerts["exporter_blind_spots"][0]["kind"], "traps_not_delivered");
  EXPECT_NE(alerts["exporter_blind_spots"][0]["action"].get<std::string>().find("P_Key"), std::string::npos);
}

TEST_F(EventsTest, PinnedLinkDownedCounterKeepsItsPortWatched) {
  // A LinkDownedCounter at its maximum (255) cannot show a flap, so its
  // port's PortInfo is read every sweep, whatever the rotation.
  const Endpoint up = tree_->LeafUplink(3, 2);
  const Endpoint down = tree_->SpineDownlink(2, 3);
  Plant(up, "PortCounters.LinkDownedCounter", 255);
  Plant(down, "PortCounters.LinkDownedCounter", 255);
  auto e = Start({"--sweep.interval=200ms", "--discovery.interval=1h", "--sweep.rotation=1h", "--sm.no-traps",
                  "--log.level=debug"},
                 /*traps=*/false);
  ASSERT_TRUE(e);
  auto s = e->WaitForSweeps(3, seconds(30));
  ASSERT_TRUE(s);
  // One port of the rotation and the two pinned ones, each sweep.
  const std::string log = e->Log();
  EXPECT_NE(log.find("port_infos=3 "), std::string::npos) << log;
  // ibsim may warn that the switch's trap found no route to the SM (through
  // the cable just unlinked): the command took all the same.
  const double before = Value(*s, "infiniband_exporter_sweeps_total");
  sim_->Console("Unlink " + At(up));
  s = e->WaitFor([&](const Scrape& x) { return LinkUp(x, up) == 0; }, seconds(60));
  ASSERT_TRUE(s) << e->Log();
  // The rotation alone takes 96 sweeps to come round to a port.
  EXPECT_LE(Value(*s, "infiniband_exporter_sweeps_total") - before, 10);
  sim_->Console("ReLink " + At(up));
  s = e->WaitFor([&](const Scrape& x) { return LinkUp(x, up) == 1; }, seconds(20));
  EXPECT_TRUE(s) << e->Log();
  Plant(up, "PortCounters.LinkDownedCounter", 0);
  Plant(down, "PortCounters.LinkDownedCounter", 0);
}

TEST_F(EventsTest, HostFlapsCostAFewDirectedSmpsEachAndAreAllReported) {
  const TempDir tmp("events");
  const std::string tap = tmp.path() + "/tap";
  auto e = Start({"--sweep.interval=1s", "--discovery.interval=1h"}, /*traps=*/true, tap);
  ASSERT_TRUE(e);
  auto s = e->WaitFor(
      [](const Scrape& x) {
        return x.Value("infiniband_exporter_trap_subscribed", {{"trap", "128"}}) == 1;
      },
      seconds(30));
  ASSERT_TRUE(s) << e->Log();
  const int host = 11;
  const Endpoint leaf_end = tree_->LeafHostPort(host);
  const Endpoint host_end = tree_->HostPort(host);
  const auto quiet_from = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(seconds(5));
  const auto flaps_from = std::chrono::steady_clock::now();
  constexpr int kFlaps = 3;
  for (int i = 1; i <= kFlaps; ++i) {
    Flap(leaf_end, host_end, static_cast<unsigned long long>(i));
    s = e->WaitFor([&](const Scrape& x) { return Downs(x, host) >= i && Hcas(x) == 16; }, seconds(20));
    ASSERT_TRUE(s) << "flap " << i << ": " << e->Log();
    std::this_thread::sleep_for(seconds(1));
  }
  const auto flaps_to = std::chrono::steady_clock::now();
  s = e->WaitForSweeps(Value(e->ScrapeMetrics(), "infiniband_exporter_sweeps_total") + 2, seconds(20));
  ASSERT_TRUE(s);
  EXPECT_EQ(Downs(*s, host), kFlaps) << "each flap once, not twice (trap and counter)";
  EXPECT_EQ(Value(*s, "infiniband_exporter_discoveries_total", {{"mode", "full"}}), 1) << "never a full walk";
  EXPECT_EQ(Hcas(*s), 16);
  e.reset();  // the tap has written everything

  const auto quiet = SentBetween(tap, quiet_from, flaps_from);
  const auto flaps = SentBetween(tap, flaps_from, flaps_to);
  const double quiet_seconds = std::chrono::duration<double>(flaps_from - quiet_from).count();
  const double flap_seconds = std::chrono::duration<double>(flaps_to - flaps_from).count();
  // What the flaps cost beyond the sweeps that would have run anyway.
  const double dr_per_flap = (static_cast<double>(flaps[0]) - quiet[0] * flap_seconds / quiet_seconds) / kFlaps;
  std::printf(
      "quiet: %llu dr_smp %llu lid_smp %llu gmp in %.1f s; %d flaps: %llu dr_smp %llu lid_smp in %.1f s "
      "(%.1f directed-route SMPs per flap)\n",
      static_cast<unsigned long long>(quiet[0]), static_cast<unsigned long long>(quiet[1]),
      static_cast<unsigned long long>(quiet[2]), quiet_seconds, kFlaps, static_cast<unsigned long long>(flaps[0]),
      static_cast<unsigned long long>(flaps[1]), flap_seconds, dr_per_flap);
  EXPECT_EQ(quiet[0], 0u) << "steady state sends no directed-route SMP";
  EXPECT_GT(flaps[0], 0u) << "the host that came back was walked";
  // A full walk of this fabric is 1 + cables + switches + CA ports = 45.
  EXPECT_LE(dr_per_flap, 8);
}

}  // namespace
}  // namespace ibfabric::testbed
