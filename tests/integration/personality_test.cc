// Hardware personalities (issue 36): the real exporter binary on ibsim
// through the preload tests/tools/hw_personality.cc, on a fabric of real
// device models: Quantum-3 XDR spines, a Quantum-2 NDR leaf with two
// ConnectX-7 hosts at 2x (NDR200), a Quantum-3 leaf with a ConnectX-8
// host (XDR), a Switch-IB 2 EDR leaf with a ConnectX-7 host. Each port
// reports the rate its two devices run at; a cable planted to train 1x
// runs 1x; each device's PortXmitWait tick is its model's (Quantum-2 7,
// Switch-IB 2 31, asked only of the nodes that waited); the tools of
// infiniband-diags see the same devices through the same preload.

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/integration/counter_ramp.h"
#include "tests/integration/hardware_suite.h"
#include "tests/testbed/exporter_process.h"
#include "tests/testbed/mad_tap.h"
#include "tests/testbed/sim_fabric.h"
#include "topology/fabric.h"

namespace ibfabric::testbed {
namespace {

using std::chrono::seconds;

constexpr const char* kNet = R"(Switch 8 "ib-spine01"
[1] "ib-leaf01"[5]
[2] "ib-leaf02"[5]
[3] "ib-leaf03"[5]
[8] "H-0000000000000300"[1]

Switch 8 "ib-spine02"
[1] "ib-leaf01"[6]
[2] "ib-leaf02"[6]
[3] "ib-leaf03"[6]
[8] "H-0000000000000301"[1]

Switch 8 "ib-leaf01"
[1] "cn0001"[1]
[2] "cn0002"[1]
[5] "ib-spine01"[1]
[6] "ib-spine02"[1]
[8] "H-0000000000000302"[1]

Switch 8 "ib-leaf02"
[1] "cn0003"[1]
[5] "ib-spine01"[2]
[6] "ib-spine02"[2]
[8] "H-0000000000000303"[1]

Switch 8 "ib-leaf03"
[1] "cn0004"[1]
[5] "ib-spine01"[3]
[6] "ib-spine02"[3]
[8] "H-0000000000000304"[1]

Hca 1 "cn0001"
[1] "ib-leaf01"[1]

Hca 1 "cn0002"
[1] "ib-leaf01"[2]

Hca 1 "cn0003"
[1] "ib-leaf02"[1]

Hca 1 "cn0004"
[1] "ib-leaf03"[1]

Hca 1 "H-0000000000000300"  # "Mellanox Technologies Aggregation Node"
[1] "ib-spine01"[8]

Hca 1 "H-0000000000000301"  # "Mellanox Technologies Aggregation Node"
[1] "ib-spine02"[8]

Hca 1 "H-0000000000000302"  # "Mellanox Technologies Aggregation Node"
[1] "ib-leaf01"[8]

Hca 1 "H-0000000000000303"  # "Mellanox Technologies Aggregation Node"
[1] "ib-leaf02"[8]

Hca 1 "H-0000000000000304"  # "Mellanox Technologies Aggregation Node"
[1] "ib-leaf03"[8]
)";

constexpr const char* kPersonalities = R"(# spines and the XDR leaf: Quantum-3; the others as named
ib-spine*   quantum-3
ib-leaf01   quantum-2
ib-leaf02   quantum-3
ib-leaf03   switch-ib-2
cn000[12]   connectx-7  max_width=2x
cn0003      connectx-8
cn0004      connectx-7
H-00000000000003*  aggregation-node
)";

class PersonalityTest : public HardwareSuite<PersonalityTest> {
 protected:
  static void SetUpTestSuite() {
    StartHardware(kNet, kPersonalities);
    if (::testing::Test::HasFatalFailure()) return;
    std::string error;
    exporter_ = ExporterProcess::Start(*sim_, {"--sweep.interval=1s"}, &error, {}, hw_->PreloadEnv()).release();
    ASSERT_NE(exporter_, nullptr) << error;
  }
  static double Gbps(const Scrape& s, const std::string& role, const std::string& node, int port) {
    return RateGbps(s, role, node, port);
  }
};

TEST_F(PersonalityTest, EachPortReportsTheRateItsTwoDevicesRun) {
  const auto s = exporter_->WaitForSweeps(2, seconds(60));
  ASSERT_TRUE(s.has_value());
  // NDR between Quantum-2 and Quantum-3 (4x, 400 Gb/s), XDR between two
  // Quantum-3 (800), EDR between Switch-IB 2 and Quantum-3 (100).
  EXPECT_EQ(Gbps(*s, "switch", "ib-leaf01", 5), 400);
  EXPECT_EQ(Gbps(*s, "switch", "ib-spine01", 1), 400);
  EXPECT_EQ(Gbps(*s, "switch", "ib-leaf02", 5), 800);
  EXPECT_EQ(Gbps(*s, "switch", "ib-spine02", 2), 800);
  EXPECT_EQ(Gbps(*s, "switch", "ib-leaf03", 6), 100);
  // The hosts: 2x NDR200 ConnectX-7 (200), a ConnectX-8 on Quantum-3
  // (XDR, 800), a ConnectX-7 on Switch-IB 2 (EDR, 100).
  EXPECT_EQ(Gbps(*s, "switch", "ib-leaf01", 1), 200);
  EXPECT_EQ(Gbps(*s, "hca", "cn0002", 1), 200);
  EXPECT_EQ(Gbps(*s, "hca", "cn0003", 1), 800);
  EXPECT_EQ(Gbps(*s, "switch", "ib-leaf02", 1), 800);
  EXPECT_EQ(Gbps(*s, "hca", "cn0004", 1), 100);
  // Clean: every link runs at its ends' best (2x NDR200 hosts, an EDR leaf
  // among NDR and XDR ones): nothing degraded, nothing miswired. Links
  // below most of their tier are informational findings only.
  EXPECT_TRUE(s->Find("infiniband_link_degraded").empty());
  for (const auto& f : s->Find("infiniband_topology_findings")) {
    if (f.labels.at("kind") != "below_tier_majority") {
      std::string which;
      for (const auto& x : s->Find("infiniband_topology_finding", {{"kind", f.labels.at("kind")}})) {
        for (const auto& [k, v] : x.labels) which += k + "=" + v + " ";
        which += "\n";
      }
      EXPECT_EQ(f.value, 0) << f.labels.at("kind") << ": " << which;
    }
  }
  int status = 0;
  const auto alerts = nlohmann::json::parse(exporter_->Get("/api/v1/alerts", &status), nullptr, false);
  ASSERT_FALSE(alerts.is_discarded());
  for (const auto& a : alerts["active"]) {
    EXPECT_NE(a["cause"], "degraded_link") << a.dump(2);
    EXPECT_NE(a["cause"], "miswiring") << a.dump(2);
  }
}

TEST_F(PersonalityTest, ACablePlantedToTrainOneLaneRunsOneLaneAtBothEnds) {
  std::string error;
  ASSERT_TRUE(hw_->PlantLink("ib-leaf02", 6, "1x", "", &error)) << error;
  // A re-walk of that link comes with the next full walk: force one by
  // cycling the link, as a cable that retrained does.
  bool ok = false;
  sim_->Console("Unlink \"ib-leaf02\"[6]", &ok);
  ASSERT_TRUE(ok);
  sim_->Console("ReLink \"ib-leaf02\"[6]", &ok);
  ASSERT_TRUE(ok);
  ASSERT_TRUE(sim_->SweepSubnet(&error)) << error;
  const auto s = exporter_->WaitFor(
      [](const Scrape& x) {
        return Gbps(x, "switch", "ib-leaf02", 6) == 200 && Gbps(x, "switch", "ib-spine02", 2) == 200;
      },
      seconds(90));
  ASSERT_TRUE(s.has_value()) << exporter_->Log();
  EXPECT_EQ(Gbps(*s, "switch", "ib-leaf02", 5), 800) << "the other uplink is untouched";
  // Below what both its ends allow: degraded, that cable only.
  const auto found =
      exporter_->WaitFor([](const Scrape& x) { return x.Find("infiniband_link_degraded").size() == 1; }, seconds(30));
  ASSERT_TRUE(found.has_value());
  const auto degraded = found->Find("infiniband_link_degraded");
  EXPECT_EQ(degraded[0].labels.at("reason"), "below_enabled");
  const std::set<std::string> ends{
      degraded[0].labels.at("node") + "[" + degraded[0].labels.at("port") + "]",
      degraded[0].labels.at("remote_node") + "[" + degraded[0].labels.at("remote_port") + "]"};
  EXPECT_EQ(ends, (std::set<std::string>{"ib-leaf02[6]", "ib-spine02[2]"}));
  ASSERT_TRUE(hw_->Clear("ib-leaf02", &error)) << error;
}

TEST_F(PersonalityTest, EachDevicesTickIsReadWhereItWaitedAndIsItsModels) {
  std::string error;
  bool ok = false;
  // PortXmitWait on an uplink of the Quantum-2 leaf, of the Switch-IB 2
  // leaf, and of a ConnectX-7 (Tick 7, as a real one reports it).
  for (const char* at : {"\"ib-leaf01\"[5]", "\"ib-leaf03\"[5]", "\"cn0004\"[1]"}) {
    sim_->Console(std::string("PerformanceSet ") + at + " PortCounters.PortXmitWait=5000", &ok);
    ASSERT_TRUE(ok) << at;
  }
  const auto s = exporter_->WaitFor(
      [](const Scrape& x) { return x.Find("infiniband_node_pma_samples_tick").size() >= 3; }, seconds(60));
  ASSERT_TRUE(s.has_value()) << exporter_->Log();
  const auto ticks = s->Find("infiniband_node_pma_samples_tick");
  ASSERT_EQ(ticks.size(), 3u) << "the three nodes that waited, no other";
  const auto label_of = [&](const std::string& name, const std::string& label) {
    const auto info = s->Find("infiniband_switch_info", {{"switch", name}});
    return info.empty() ? std::string() : info[0].labels.at(label);
  };
  const auto guid_of = [&](const std::string& name) { return label_of(name, "guid"); };
  EXPECT_EQ(s->Value("infiniband_node_pma_samples_tick", {{"guid", guid_of("ib-leaf01")}}), 7);
  EXPECT_EQ(s->Value("infiniband_node_pma_samples_tick", {{"guid", guid_of("ib-leaf03")}}), 31);
  std::multiset<double> values;
  for (const Sample& t : ticks) values.insert(t.value);
  EXPECT_EQ(values, (std::multiset<double>{7, 7, 31})) << "the ConnectX-7's 7";
  // The same Tick through perfquery, preloaded alike.
  const CommandResult pq = RunCommand({"perfquery", "-c", label_of("ib-leaf03", "lid"), "1"}, hw_->ClientEnv(*sim_),
                                      std::chrono::milliseconds(10000));
  EXPECT_NE(pq.out.find("Tick:............................0x1f"), std::string::npos) << pq.out << pq.err;
}

// PortXmitWait in seconds, each device by its own Tick and generation
// (NVIDIA's ibdiagnet manual): the Quantum-2 leaf, planted to report Tick
// 15 (not its family's 7, so the device's own is what counts), counts 16
// bytes of its 4xNDR port (400 Gb/s) a count; the Switch-IB 2 leaf, Tick
// 31, 32 bytes of one EDR lane (25 Gb/s).
TEST_F(PersonalityTest, WaitSecondsAreEachDevicesTickAndGenerationsUnit) {
  std::string error;
  ASSERT_TRUE(hw_->PlantTick("ib-leaf01", 15, &error)) << error;
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=500ms"}, &error, {}, hw_->PreloadEnv());
  ASSERT_NE(e, nullptr) << error;
  // Counted after the exporter first read the ports (what a port counted
  // before stays in the raw total only).
  ASSERT_TRUE(e->WaitForSweeps(2, seconds(60)).has_value());
  bool ok = false;
  for (const char* at : {"\"ib-leaf01\"[6]", "\"ib-leaf03\"[6]"}) {
    sim_->Console(std::string("PerformanceSet ") + at + " PortCounters.PortXmitWait=6000", &ok);
    ASSERT_TRUE(ok) << at;
  }
  const auto seconds_of = [](const Scrape& x, const std::string& sw) {
    return x.Value("infiniband_switch_port_transmit_wait_seconds_total", {{"switch", sw}, {"port", "6"}}).value_or(0);
  };
  const auto s = e->WaitFor(
      [&](const Scrape& x) { return seconds_of(x, "ib-leaf01") > 0 && seconds_of(x, "ib-leaf03") > 0; }, seconds(60));
  ASSERT_TRUE(s.has_value()) << e->Log();
  EXPECT_DOUBLE_EQ(seconds_of(*s, "ib-leaf01"), 6000 * 16 * 8 / 400e9);  // 1.92 us
  EXPECT_DOUBLE_EQ(seconds_of(*s, "ib-leaf03"), 6000 * 32 * 8 / 25e9);   // 61.44 us
  EXPECT_EQ(s->Value("infiniband_switch_port_transmit_wait_total", {{"switch", "ib-leaf01"}, {"port", "6"}}), 6000);
  const auto unit = [&](const std::string& sw) {
    const auto info = s->Find("infiniband_switch_info", {{"switch", sw}});
    const auto u = info.empty()
                       ? std::vector<Sample>{}
                       : s->Find("infiniband_node_transmit_wait_unit_info", {{"guid", info[0].labels.at("guid")}});
    return u.empty()
               ? std::string("none")
               : u[0].labels.at("family") + " " + u[0].labels.at("counting") + " " + u[0].labels.at("tick_source");
  };
  EXPECT_EQ(unit("ib-leaf01"), "quantum port device");
  EXPECT_EQ(unit("ib-leaf03"), "switch-ib lane device");
  // A port of the same switch that never waited: 0 s.
  EXPECT_EQ(s->Value("infiniband_switch_port_transmit_wait_seconds_total", {{"switch", "ib-leaf01"}, {"port", "2"}}),
            0);
  e.reset();
  for (const char* at : {"\"ib-leaf01\"[6]", "\"ib-leaf03\"[6]"}) {
    sim_->Console(std::string("PerformanceSet ") + at + " PortCounters.PortXmitWait=0", &ok);
  }
  ASSERT_TRUE(hw_->Clear("ib-leaf01", &error)) << error;
}

// A ConnectX-7, whose PMA claims no PortXmitWait (ClassPortInfo: ExtWidth
// only, as mlx5's) but fills it: its waits are read by their value, and
// an incast at the host (its port waiting, nothing behind it) is a
// congestion tree rooted at its port. Its Tick is 7 and it counts lanes
// (the IBTA reading): a count is 8 symbol times of its EDR lane (2.6 ns);
// 40 M counts each ~100 ms is the whole time, over the 5 % warning.
TEST_F(PersonalityTest, AConnectX7sWaitsAreReadAndATreeIsRootedAtIt) {
  std::string error;
  const std::string dir = MakeTempDir("personality-congestion");
  WriteFile(dir + "/alerts.yaml", "window: 2s\nraise_after: 2\nclear_after: 2\n");
  auto e = ExporterProcess::Start(
      *sim_, {"--sweep.interval=200ms", "--mad.timeout=50ms", "--alerts.config=" + dir + "/alerts.yaml"}, &error, {},
      hw_->PreloadEnv());
  ASSERT_NE(e, nullptr) << error;
  ASSERT_TRUE(e->WaitForSweeps(2, seconds(60)).has_value());
  CounterRamp ramp(*sim_, "\"cn0004\"[1]", "PortCounters.PortXmitWait", 40'000'000, 4'000'000'000ULL);
  nlohmann::json last;
  const auto rooted = [&] {
    int status = 0;
    last = nlohmann::json::parse(e->Get("/api/v1/alerts", &status), nullptr, false);
    if (last.is_discarded() || !last.contains("congestion_trees")) return false;
    for (const auto& t : last["congestion_trees"]) {
      if (t["root"]["node"] == "cn0004" && t["root"]["port"] == 1) return true;
    }
    return false;
  };
  const bool found = WaitUntil(rooted, seconds(90), std::chrono::milliseconds(200));
  ramp.Stop();
  EXPECT_TRUE(found) << last.dump(2) << e->Log();
  const Scrape s = e->ScrapeMetrics();
  EXPECT_GT(s.Value("infiniband_hca_port_transmit_wait_total", {{"hca", "cn0004"}, {"port", "1"}}).value_or(0), 0);
  EXPECT_GT(s.Value("infiniband_hca_port_transmit_wait_seconds_total", {{"hca", "cn0004"}, {"port", "1"}}).value_or(0),
            0);
  sim_->Console("PerformanceSet \"cn0004\"[1] PortCounters.PortXmitWait=0", nullptr);
  RemoveTree(dir);
}

TEST_F(PersonalityTest, ADetailsAttributeAnsweredBusyPastItsRetriesIsAskedAgainNotDropped) {
  // ib-leaf03's PMA answers its next 16 PortXmitDiscardDetails requests
  // Busy: the first sweep's reads of its four ports (three cables and its
  // Aggregation Node's port) each meet four (the first try and three
  // retries) and fail; the next sweep's go through. Only "unsupported
  // attribute" may drop an attribute (before, one such failure dropped it
  // for the whole switch): the details of all four ports are there, and
  // read again where the discards then move.
  std::string error;
  ASSERT_TRUE(hw_->PlantBusy("ib-leaf03", 16, &error, 0x0016)) << error;
  // An exporter of its own: the Busy spell is counted per client process.
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=1s"}, &error, {}, hw_->PreloadEnv());
  ASSERT_NE(e, nullptr) << error;
  const auto with_details = [](const Scrape& x) {
    return x.Find("infiniband_switch_port_switch_hoq_lifetime_limit_discards_total", {{"switch", "ib-leaf03"}})
               .size() == 4;
  };
  const auto s = e->WaitFor(with_details, seconds(60));
  if (!s) {
    const Scrape last = e->ScrapeMetrics();
    std::string seen;
    for (const auto& x : last.Find("infiniband_switch_port_switch_hoq_lifetime_limit_discards_total")) {
      seen += x.labels.at("switch") + "[" + x.labels.at("port") + "] ";
    }
    for (const auto& x : last.Find("infiniband_exporter_mad_busy_total")) {
      seen += "busy{" + x.labels.begin()->second + "}=" + std::to_string(x.value) + " ";
    }
    FAIL() << "details of ib-leaf03's four ports never read; details series: " << seen;
  }
  double busy = 0;
  for (const auto& b : s->Find("infiniband_exporter_mad_busy_total")) busy += b.value;
  EXPECT_EQ(busy, 16) << "the whole spell was met";
  bool ok = false;
  sim_->Console("PerformanceSet \"ib-leaf03\"[5] PortCounters.PortXmitDiscards=9", &ok);
  ASSERT_TRUE(ok);
  sim_->Console("PerformanceSet \"ib-leaf03\"[5] PortXmitDiscardDetails.PortSwHOQLifetimeLimitDiscards=9", &ok);
  ASSERT_TRUE(ok);
  const auto moved = e->WaitFor(
      [](const Scrape& x) {
        return x.Value("infiniband_switch_port_switch_hoq_lifetime_limit_discards_total",
                       {{"switch", "ib-leaf03"}, {"port", "5"}}) == 9;
      },
      seconds(30));
  EXPECT_TRUE(moved.has_value()) << e->Log();
  ASSERT_TRUE(hw_->Clear("ib-leaf03", &error)) << error;
}

TEST_F(PersonalityTest, ASwitchAnsweringBusyFiveTimesThenNormallyKeepsAllItsAttributes) {
  // ib-leaf01's PMA answers the next five requests of an exporter Busy,
  // whatever they ask: its first (ClassPortInfo, at discovery) meets four
  // (the try and three retries) and fails, the next request one more.
  // Busy is no "unsupported": after the spell the switch is read as if it
  // had never been busy: its capabilities, every port's PortCounters and
  // PortCountersExtended, and, once a port waits, its Tick and the seconds.
  std::string error;
  ASSERT_TRUE(hw_->PlantBusy("ib-leaf01", 5, &error)) << error;
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=1s"}, &error, {}, hw_->PreloadEnv());
  ASSERT_NE(e, nullptr) << error;
  ASSERT_TRUE(e->WaitForSweeps(2, seconds(60)).has_value()) << e->Log();
  bool ok = false;
  sim_->Console("PerformanceSet \"ib-leaf01\"[8] PortCounters.PortXmitWait=7000", &ok);
  ASSERT_TRUE(ok);
  const Scrape before = exporter_->ScrapeMetrics();
  const std::string guid = before.Find("infiniband_switch_info", {{"switch", "ib-leaf01"}}).at(0).labels.at("guid");
  const auto caps = [&](const Scrape& x) {
    const auto c = x.Find("infiniband_node_pma_capabilities_info", {{"guid", guid}});
    return c.size() == 1 ? c[0].labels.at("capability_mask") : std::string();
  };
  const auto s = e->WaitFor(
      [&](const Scrape& x) {
        return !caps(x).empty() && x.Value("infiniband_node_pma_samples_tick", {{"guid", guid}}).has_value() &&
               x.Value("infiniband_switch_port_transmit_wait_seconds_total", {{"switch", "ib-leaf01"}, {"port", "8"}})
                       .value_or(0) > 0;
      },
      seconds(60));
  ASSERT_TRUE(s.has_value()) << e->Log();
  EXPECT_EQ(s->Sum("infiniband_exporter_mad_busy_total"), 5) << "the whole spell was met";
  EXPECT_EQ(caps(*s), caps(before)) << "ClassPortInfo asked again after its Busy, as the model answers it";
  EXPECT_EQ(s->Value("infiniband_node_pma_samples_tick", {{"guid", guid}}), 7);
  // Every up port (hosts 1 and 2, uplinks 5 and 6, the Aggregation Node's
  // 8): the standard and the extended counters.
  for (const char* port : {"1", "2", "5", "6", "8"}) {
    for (const char* family :
         {"infiniband_switch_port_symbol_error_total", "infiniband_switch_port_transmit_wait_total",
          "infiniband_switch_port_transmit_data_bytes_total",
          "infiniband_switch_port_unicast_transmit_packets_total"}) {
      EXPECT_TRUE(s->Value(family, {{"switch", "ib-leaf01"}, {"port", port}}).has_value()) << family << " " << port;
    }
  }
  ASSERT_TRUE(hw_->Clear("ib-leaf01", &error)) << error;
}

TEST_F(PersonalityTest, AnAggregationNodeInEverySwitchIsListedAndIsNoHostCableOrMiswiring) {
  const auto s = exporter_->WaitForSweeps(2, seconds(60));
  ASSERT_TRUE(s.has_value());
  const auto ans = s->Find("infiniband_aggregation_node_info");
  ASSERT_EQ(ans.size(), 5u);
  std::set<std::string> switches;
  for (const auto& an : ans) {
    switches.insert(an.labels.at("switch"));
    EXPECT_EQ(an.labels.at("switch_port"), "8");
  }
  EXPECT_EQ(switches, (std::set<std::string>{"ib-leaf01", "ib-leaf02", "ib-leaf03", "ib-spine01", "ib-spine02"}));
  EXPECT_EQ(s->Find("infiniband_hca_info").size(), 4u) << "the four hosts' HCAs, no AN";
  EXPECT_TRUE(
      s->Find("infiniband_hca_port_symbol_error_total", {{"hca", std::string(topology::kAggregationNodeDescription)}})
          .empty())
      << "an AN is not swept as an HCA";
  EXPECT_EQ(s->Value("infiniband_topology_is_tree"), 1);
  EXPECT_EQ(s->Value("infiniband_topology_tiers"), 2) << "spines carrying an AN are no stray tier";
  for (const char* kind : {"ca_on_non_leaf", "same_tier_link", "skip_tier_link", "uneven_parallel_links",
                           "asymmetric_switch", "fewer_uplinks"}) {
    EXPECT_EQ(s->Value("infiniband_topology_findings", {{"kind", kind}}).value_or(0), 0) << kind;
  }
  EXPECT_TRUE(s->Find("infiniband_switch_uplink_info", {{"uplink", std::string(topology::kAggregationNodeDescription)}})
                  .empty())
      << "a switch's port to its AN is no cable";
  int status = 0;
  const std::string topo = exporter_->Get("/api/v1/topology", &status);
  EXPECT_EQ(status, 200);
  std::size_t n = 0;
  for (std::size_t at = topo.find("\"type\":\"aggregation_node\""); at != std::string::npos;
       at = topo.find("\"type\":\"aggregation_node\"", at + 1)) {
    ++n;
  }
  EXPECT_EQ(n, 5u) << topo.substr(0, 2000);
}

TEST_F(PersonalityTest, InfinibandDiagsSeeTheModelsDevices) {
  const Env env = hw_->ClientEnv(*sim_);
  const CommandResult leaf = RunCommand({"smpquery", "nodeinfo", "-D", "0,1"}, env, std::chrono::milliseconds(10000));
  EXPECT_NE(leaf.out.find("DevId:...........................0xd2f2"), std::string::npos) << leaf.out << leaf.err;
  const CommandResult ca = RunCommand({"smpquery", "portinfo", "-D", "0", "1"}, env, std::chrono::milliseconds(10000));
  EXPECT_NE(ca.out.find("LinkWidthActive:.................2X"), std::string::npos) << ca.out << ca.err;
  EXPECT_NE(ca.out.find("LinkSpeedExtActive:..............106.25 Gbps"), std::string::npos) << ca.out;
  const CommandResult links = RunCommand({"ibnetdiscover"}, env, std::chrono::milliseconds(30000));
  EXPECT_NE(links.out.find("\"ib-leaf03\" lid"), std::string::npos) << links.out;
  EXPECT_NE(links.out.find("4xEDR"), std::string::npos) << links.out;
  EXPECT_NE(links.out.find("2xNDR"), std::string::npos) << links.out;
}

// The Quantum models claim CapabilityMask2 bit 1 (the error counters in
// PortCountersExtended too): one GMP a port a sweep, counted where MADs
// cross libibumad (the MAD tap, ahead of the personality preload), and
// the counters right: a SymbolErrorCounter planted on a port of the
// Quantum-2 leaf arrives through its 64-bit field. The Switch-IB 2 leaf,
// which does not claim the bit, still gets two a port.
TEST_F(PersonalityTest, OneGmpAPortWhereExtendedCountersHoldTheErrors) {
  std::string error;
  const std::string dir = MakeTempDir("personality-one-gmp");
  const std::string tap = dir + "/tap.log";
  Env env = hw_->PreloadEnv();
  const Env tap_env = MadTapEnv(tap);
  env["LD_PRELOAD"] = tap_env.at("LD_PRELOAD") + " " + env["LD_PRELOAD"];  // the tap sees what the exporter sends
  env["MAD_TAP_FILE"] = tap;
  bool ok = false;
  sim_->Console("PerformanceSet \"ib-leaf01\"[5] PortCounters.SymbolErrorCounter=77", &ok);
  ASSERT_TRUE(ok);
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=250ms"}, &error, {}, env);
  ASSERT_NE(e, nullptr) << error;
  const auto first = e->WaitForSweeps(3, seconds(60));
  ASSERT_TRUE(first.has_value()) << e->Log();
  EXPECT_EQ(first->Value("infiniband_switch_port_symbol_error_total", {{"switch", "ib-leaf01"}, {"port", "5"}}), 77);
  const auto lid_of = [&](const std::string& sw) {
    return static_cast<std::uint16_t>(
        std::stoi(first->Find("infiniband_switch_info", {{"switch", sw}}).at(0).labels.at("lid")));
  };
  // Twelve sweeps or more of a quiet fabric (a sweep cut by the window's
  // ends is at most one of them): each reads the leaves' up ports (five on
  // ib-leaf01: two hosts, two uplinks, its Aggregation Node; four on
  // ib-leaf03).
  const double sweeps_before = first->Value("infiniband_exporter_sweeps_total").value_or(0);
  const auto from = std::chrono::steady_clock::now();
  const auto later = e->WaitFor(
      [&](const Scrape& x) { return x.Value("infiniband_exporter_sweeps_total").value_or(0) >= sweeps_before + 12; },
      seconds(60));
  ASSERT_TRUE(later.has_value());
  const auto to = std::chrono::steady_clock::now();
  const double sweeps = later->Value("infiniband_exporter_sweeps_total").value_or(0) - sweeps_before;
  e.reset();  // the tap writes what it holds as the process ends
  const double q2 = GmpsToLidBetween(tap, lid_of("ib-leaf01"), from, to) / sweeps;
  const double sib2 = GmpsToLidBetween(tap, lid_of("ib-leaf03"), from, to) / sweeps;
  EXPECT_NEAR(q2, 5, 0.5) << "GMPs per sweep to the Quantum-2 leaf";
  EXPECT_NEAR(sib2, 8, 0.8) << "GMPs per sweep to the Switch-IB 2 leaf";
  EXPECT_EQ(later->Value("infiniband_switch_port_symbol_error_total", {{"switch", "ib-leaf01"}, {"port", "5"}}), 77);
  EXPECT_TRUE(
      later->Value("infiniband_switch_port_link_downed_total", {{"switch", "ib-leaf01"}, {"port", "6"}}).has_value());
  sim_->Console("PerformanceSet \"ib-leaf01\"[5] PortCounters.SymbolErrorCounter=0", nullptr);
  RemoveTree(dir);
}

// Adaptive routing on the Quantum-2 leaf and a Quantum-3 spine (planted as
// an SM would set it; AdaptiveRoutingInfo, vendor SMP 0xFF20): reported
// per switch, their routing balance withheld, and a congestion tree
// through the leaf says its paths are the static tables'; one through a
// switch without AR does not.
TEST_F(PersonalityTest, AdaptiveRoutingIsReportedAndLabelsWhatFollowsTheTables) {
  std::string error;
  ASSERT_TRUE(hw_->PlantAdaptiveRouting("ib-leaf01", true, &error)) << error;
  ASSERT_TRUE(hw_->PlantAdaptiveRouting("ib-spine01", true, &error)) << error;
  EXPECT_FALSE(hw_->PlantAdaptiveRouting("cn0001", true, &error)) << "an HCA has no adaptive routing";
  const std::string dir = MakeTempDir("personality-ar");
  WriteFile(dir + "/alerts.yaml", "window: 2s\nraise_after: 2\nclear_after: 2\n");
  auto e = ExporterProcess::Start(
      *sim_, {"--sweep.interval=200ms", "--mad.timeout=50ms", "--alerts.config=" + dir + "/alerts.yaml"}, &error, {},
      hw_->PreloadEnv());
  ASSERT_NE(e, nullptr) << error;
  const auto s = e->WaitForSweeps(2, seconds(60));
  ASSERT_TRUE(s.has_value()) << e->Log();
  const auto ar = [&](const std::string& sw) {
    return s->Value("infiniband_switch_adaptive_routing_enabled", {{"switch", sw}});
  };
  EXPECT_EQ(ar("ib-leaf01"), 1);
  EXPECT_EQ(ar("ib-spine01"), 1);
  EXPECT_EQ(ar("ib-spine02"), 0);
  EXPECT_EQ(ar("ib-leaf02"), 0);
  EXPECT_EQ(ar("ib-leaf03"), 0) << "Switch-IB 2 has AR, off";
  EXPECT_EQ(s->Find("infiniband_switch_adaptive_routing_enabled").size(), 5u) << "switches only";
  EXPECT_EQ(s->Value("infiniband_routing_adaptive_switches"), 2);
  EXPECT_TRUE(s->Find("infiniband_routing_port_destinations", {{"switch", "ib-leaf01"}}).empty());
  EXPECT_TRUE(s->Find("infiniband_routing_spread", {{"switch", "ib-spine01"}}).empty());
  EXPECT_FALSE(s->Find("infiniband_routing_port_destinations", {{"switch", "ib-leaf02"}}).empty());
  EXPECT_TRUE(s->Value("infiniband_routing_unrouted_destinations", {{"switch", "ib-leaf01"}}).has_value());

  // Congestion at ib-leaf01[1] (towards cn0001) and ib-leaf03[1] (cn0004, Switch-IB 2 with AR off).
  CounterRamp leaf01(*sim_, "\"ib-leaf01\"[1]", "PortCounters.PortXmitWait", 40'000'000, 4'000'000'000ULL);
  CounterRamp leaf03(*sim_, "\"ib-leaf03\"[1]", "PortCounters.PortXmitWait", 40'000'000, 4'000'000'000ULL);
  nlohmann::json last;
  std::map<std::string, nlohmann::json> trees, radius;
  const auto both = [&] {
    int status = 0;
    last = nlohmann::json::parse(e->Get("/api/v1/alerts", &status), nullptr, false);
    if (last.is_discarded() || !last.contains("congestion_trees")) return false;
    trees.clear();
    for (const auto& t : last["congestion_trees"]) {
      trees[t["root"]["node"].get<std::string>() + "[" + std::to_string(t["root"]["port"].get<int>()) + "]"] = t;
    }
    // Each root's alert with its blast radius (the routes to the host behind it).
    radius.clear();
    for (const auto& a : last["active"]) {
      if (a["cause"] != "congestion" || !a.contains("congestion") || a["blast_radius"].is_null()) continue;
      const auto& root = a["congestion"]["root"];
      radius[root["node"].get<std::string>() + "[" + std::to_string(root["port"].get<int>()) + "]"] = a["blast_radius"];
    }
    return trees.count("ib-leaf01[1]") && trees.count("ib-leaf03[1]") && radius.count("ib-leaf01[1]") &&
           radius.count("ib-leaf03[1]");
  };
  const bool found = WaitUntil(both, seconds(90), std::chrono::milliseconds(200));
  leaf01.Stop();
  leaf03.Stop();
  for (const char* at : {"\"ib-leaf01\"[1]", "\"ib-leaf03\"[1]"}) {
    sim_->Console(std::string("PerformanceSet ") + at + " PortCounters.PortXmitWait=0", nullptr);
  }
  if (!found) {
    const Scrape x = e->ScrapeMetrics();
    std::string seen;
    for (const auto& w : x.Find("infiniband_switch_port_transmit_wait_total")) {
      if (w.value > 0) seen += w.labels.at("switch") + "[" + w.labels.at("port") + "]=" + std::to_string(w.value) + " ";
    }
    for (const auto& w : x.Find("infiniband_port_transmit_wait_ratio")) {
      seen += w.labels.at("node") + "[" + w.labels.at("port") + "]:" + std::to_string(w.value) + " ";
    }
    FAIL() << "trees: " << last["congestion_trees"].size() << "; waits: " << seen;
  }
  EXPECT_EQ(trees["ib-leaf01[1]"]["paths"], "static_tables_adaptive_routing_on");
  EXPECT_EQ(trees["ib-leaf01[1]"]["adaptive_routing_switches"], nlohmann::json::array({"ib-leaf01"}));
  EXPECT_EQ(trees["ib-leaf03[1]"]["paths"], "forwarding_tables");
  EXPECT_TRUE(trees["ib-leaf03[1]"]["adaptive_routing_switches"].empty());
  // What each root hurts: every other host's route to the host behind it,
  // the tables' static routes where the root's switch routes adaptively.
  EXPECT_EQ(radius["ib-leaf01[1]"]["routing"], "adaptive") << radius["ib-leaf01[1]"].dump();
  EXPECT_EQ(radius["ib-leaf03[1]"]["routing"], "static") << radius["ib-leaf03[1]"].dump();
  const int hosts = static_cast<int>(s->Find("infiniband_hca_info").size());  // one HCA port each
  EXPECT_EQ(radius["ib-leaf03[1]"]["routes"], hosts - 1) << radius["ib-leaf03[1]"].dump();
  EXPECT_EQ(radius["ib-leaf03[1]"]["ports"], hosts) << radius["ib-leaf03[1]"].dump();
  ASSERT_TRUE(hw_->Clear("ib-leaf01", &error)) << error;
  ASSERT_TRUE(hw_->Clear("ib-spine01", &error)) << error;
  RemoveTree(dir);
}

// Last of the suite: a PMA that moved stays moved for the exporters that
// followed it. ib-leaf02's PMA is redirected to QP 0x20 (IBTA 13.5.3.3):
// its QP1 answers every request with the Redirect status and a
// ClassPortInfo naming the QP and its Q_Key. The exporter follows once
// and then asks there, sweep after sweep, and reads the switch's counters
// as before.
TEST_F(PersonalityTest, ARedirectedPmaIsFollowedAndItsCountersRead) {
  std::string error;
  ASSERT_TRUE(hw_->PlantRedirect("ib-leaf02", 0x20, &error)) << error;
  bool ok = false;
  sim_->Console("PerformanceSet \"ib-leaf02\"[5] PortCounters.SymbolErrorCounter=42", &ok);
  ASSERT_TRUE(ok);
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=500ms"}, &error, {}, hw_->PreloadEnv());
  ASSERT_NE(e, nullptr) << error;
  const auto read = e->WaitFor(
      [](const Scrape& x) {
        return x.Value("infiniband_switch_port_symbol_error_total", {{"switch", "ib-leaf02"}, {"port", "5"}}) == 42;
      },
      seconds(60));
  ASSERT_TRUE(read.has_value()) << e->Log();
  const auto later = e->WaitForSweeps(4, seconds(60));
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(later->Value("infiniband_exporter_mad_redirects_total", {{"class", "gmp"}}), 1)
      << "followed once, then asked where it said";
  EXPECT_EQ(later->Value("infiniband_exporter_mad_failures_total", {{"class", "gmp"}, {"reason", "redirect"}}), 0);
  EXPECT_EQ(later->Value("infiniband_switch_port_symbol_error_total", {{"switch", "ib-leaf02"}, {"port", "6"}}), 0)
      << "every port of it is read";
  EXPECT_TRUE(later->Value("infiniband_switch_port_transmit_data_bytes_total", {{"switch", "ib-leaf02"}, {"port", "5"}})
                  .has_value());
  ASSERT_TRUE(hw_->PlantRedirect("ib-leaf02", 0, &error)) << error;
  sim_->Console("PerformanceSet \"ib-leaf02\"[5] PortCounters.SymbolErrorCounter=0", nullptr);
}

// QP1Dropped and VL15Dropped are neighbours in PortCounters (data bytes
// 20-21 and 22-23, IBTA 16.1.3.5): each planted value arrives on its own
// series, on the Switch-IB 2 leaf (no CapabilityMask2 bit 1: the 16-bit
// PortCounters) and on the Quantum-2 leaf (the 64-bit PortCountersExtended).
TEST_F(PersonalityTest, Qp1DroppedAndVl15DroppedArriveEachOnItsOwnSeries) {
  std::string error;
  ASSERT_TRUE(hw_->PlantQp1Dropped("ib-leaf03", 5, 321, &error)) << error;
  ASSERT_TRUE(hw_->PlantQp1Dropped("ib-leaf01", 6, 70000, &error)) << error;
  EXPECT_FALSE(hw_->PlantQp1Dropped("nowhere", 1, 1, &error));
  bool ok = false;
  sim_->Console("PerformanceSet \"ib-leaf03\"[5] PortCounters.VL15Dropped=654", &ok);
  ASSERT_TRUE(ok);
  sim_->Console("PerformanceSet \"ib-leaf01\"[6] PortCounters.VL15Dropped=12", &ok);
  ASSERT_TRUE(ok);
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=500ms"}, &error, {}, hw_->PreloadEnv());
  ASSERT_NE(e, nullptr) << error;
  const Labels sib2{{"switch", "ib-leaf03"}, {"port", "5"}};
  const Labels q2{{"switch", "ib-leaf01"}, {"port", "6"}};
  const auto s = e->WaitFor(
      [&](const Scrape& x) {
        return x.Value("infiniband_switch_port_qp1_dropped_total", sib2) == 321 &&
               x.Value("infiniband_switch_port_qp1_dropped_total", q2) == 70000;
      },
      seconds(60));
  ASSERT_TRUE(s.has_value()) << e->Log();
  EXPECT_EQ(s->Value("infiniband_switch_port_vl15_dropped_total", sib2), 654);
  EXPECT_EQ(s->Value("infiniband_switch_port_vl15_dropped_total", q2), 12);
  EXPECT_EQ(s->Value("infiniband_switch_port_qp1_dropped_total", {{"switch", "ib-leaf03"}, {"port", "6"}}), 0)
      << "the node's other port: counted, nothing planted";
  EXPECT_TRUE(s->Find("infiniband_switch_port_qp1_dropped_total", {{"switch", "ib-leaf02"}}).empty())
      << "a PMA that does not say IsQP1DropSupported has no such series";
  for (const auto& [sw, port] : {std::pair{"ib-leaf03", 5}, std::pair{"ib-leaf01", 6}}) {
    ASSERT_TRUE(hw_->PlantQp1Dropped(sw, port, 0, &error)) << error;
    sim_->Console("PerformanceSet \"" + std::string(sw) + "\"[" + std::to_string(port) + "] PortCounters.VL15Dropped=0",
                  nullptr);
  }
}

// A PMA redirected to a GID (RedirectLID 0, IBTA 13.5.3.3: reached only
// through a GRH) is reported as unsupported and not followed: not taken
// for "the same LID", so its counters are not read at a QP it never named
// at that LID.
TEST_F(PersonalityTest, ARedirectToLidZeroIsReportedUnsupportedNotFollowed) {
  std::string error;
  ASSERT_TRUE(hw_->PlantRedirect("cn0004", 0x21, &error, true)) << error;
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=500ms"}, &error, {}, hw_->PreloadEnv());
  ASSERT_NE(e, nullptr) << error;
  const auto s = e->WaitFor(
      [](const Scrape& x) {
        return x.Value("infiniband_exporter_mad_failures_total", {{"class", "gmp"}, {"reason", "redirect_unsupported"}})
                       .value_or(0) > 0 &&
               x.Value("infiniband_hca_port_symbol_error_total", {{"hca", "cn0003"}}).has_value();
      },
      seconds(60));
  ASSERT_TRUE(s.has_value()) << e->Log();
  const auto later = e->WaitForSweeps(3, seconds(60));
  ASSERT_TRUE(later.has_value());
  EXPECT_FALSE(later->Value("infiniband_hca_port_symbol_error_total", {{"hca", "cn0004"}}).has_value())
      << "its PMA is at a GID: not read";
  EXPECT_TRUE(later->Value("infiniband_hca_port_symbol_error_total", {{"hca", "cn0003"}}).has_value());
  EXPECT_EQ(later->Value("infiniband_exporter_mad_redirects_total", {{"class", "gmp"}}), 0) << "none followed";
  EXPECT_GT(
      later->Value("infiniband_exporter_mad_failures_total", {{"class", "gmp"}, {"reason", "redirect_unsupported"}})
          .value_or(0),
      s->Value("infiniband_exporter_mad_failures_total", {{"class", "gmp"}, {"reason", "redirect_unsupported"}})
          .value_or(0))
      << "asked again each sweep, refused each time";
  ASSERT_TRUE(hw_->PlantRedirect("cn0004", 0, &error)) << error;
}

// FDR10 (Mellanox's 10.3125 Gbaud with 64b/66b, 40 Gb/s of data on 4x):
// standard PortInfo says QDR, only the vendor SMP ExtendedPortInfo tells.
// Two Switch-IB 2 switches whose two cables trained FDR10 and QDR, below
// the EDR both ends allow; their hosts run EDR (kTwoSwitchNet).

class Fdr10Test : public HardwareSuite<Fdr10Test> {
 protected:
  static void SetUpTestSuite() {
    StartHardware(kTwoSwitchNet, "ib-*  switch-ib-2\ncn*  connectx-7\n");
    if (::testing::Test::HasFatalFailure()) return;
    std::string error;
    ASSERT_TRUE(hw_->PlantLink("ib-leaf01", 5, "", "FDR10", &error)) << error;
    ASSERT_TRUE(hw_->PlantLink("ib-leaf01", 6, "", "QDR", &error)) << error;
    exporter_ = ExporterProcess::Start(*sim_, {"--sweep.interval=1s"}, &error, {}, hw_->PreloadEnv()).release();
    ASSERT_NE(exporter_, nullptr) << error;
  }
};

TEST_F(Fdr10Test, AnFdr10CableIsToldFromAQdrOneAtBothEndsAndStaysSo) {
  const auto s = exporter_->WaitForSweeps(4, seconds(60));
  ASSERT_TRUE(s.has_value()) << exporter_->Log();
  const auto gbps = [&](const std::string& node, int port) { return RateGbps(*s, "switch", node, port); };
  EXPECT_EQ(gbps("ib-leaf01", 5), 40);
  EXPECT_EQ(gbps("ib-spine01", 1), 40);
  EXPECT_EQ(gbps("ib-leaf01", 6), 32);
  EXPECT_EQ(gbps("ib-spine01", 2), 32);
  EXPECT_EQ(gbps("ib-leaf01", 1), 100) << "Switch-IB 2 to ConnectX-7: EDR";
  // The sweeps' PortInfo re-reads (QDR) keep the walk's FDR10: no retrain,
  // no re-walk in four sweeps.
  EXPECT_EQ(s->Value("infiniband_exporter_discoveries_total", {{"mode", "incremental"}}), 0) << exporter_->Log();
  // Both cables run below the EDR both ends allow, each named at its rate.
  EXPECT_EQ(s->Find("infiniband_link_degraded").size(), 2u);
  int status = 0;
  const auto topo = nlohmann::json::parse(exporter_->Get("/api/v1/topology", &status), nullptr, false);
  ASSERT_FALSE(topo.is_discarded());
  std::map<std::string, std::string> rates;
  for (const auto& l : topo["links"]) {
    rates[l["a"]["name"].get<std::string>() + "[" + std::to_string(l["a"]["port"].get<int>()) + "]"] =
        l["rate"].get<std::string>() + " " + (l["degraded"].is_null() ? "" : l["degraded"].get<std::string>());
  }
  const auto rate_of = [&](const std::string& a, const std::string& b) {
    return rates.count(a) ? rates[a] : rates.count(b) ? rates[b] : "";
  };
  EXPECT_EQ(rate_of("ib-leaf01[5]", "ib-spine01[1]"), "4xFDR10 below_enabled") << topo["links"].dump();
  EXPECT_EQ(rate_of("ib-leaf01[6]", "ib-spine01[2]"), "4xQDR below_enabled") << topo["links"].dump();
  bool named = false;
  for (const auto& f : topo["findings"]) {
    named =
        named || f["detail"].get<std::string>().find("runs 4xFDR10 where both ends allow 4xEDR") != std::string::npos;
  }
  EXPECT_TRUE(named) << topo["findings"].dump(2);
  // infiniband-diags read the same through the same preload.
  const CommandResult links = RunCommand({"iblinkinfo"}, hw_->ClientEnv(*sim_), std::chrono::milliseconds(30000));
  EXPECT_NE(links.out.find("(FDR10)"), std::string::npos) << links.out << links.err;
}

}  // namespace
}  // namespace ibfabric::testbed
