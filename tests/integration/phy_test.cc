// The physical layer through the hardware personalities: a Quantum-2 leaf
// whose PMA has the RS-FEC counters (PortExtendedSpeedsCounters) and whose
// host links run NDR (RS-FEC), under a Switch-IB 2 spine that has neither
// (its links to the leaf run EDR, no FEC), and ConnectX-7 hosts whose PMAs
// do not say they have them. Counts planted on the leaf arrive exact, per
// lane, with the bit error rate of their window, while SymbolErrorCounter
// stays 0; every MAD is counted where it crosses libibumad (the tap): the
// counters are asked of the RS-FEC ports only, once per --phy.interval,
// and nothing of the kind goes to a device that lacks it.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "tests/integration/hardware_suite.h"
#include "tests/integration/promql.h"
#include "tests/testbed/browser.h"
#include "tests/testbed/mad_tap.h"
#include "tests/testbed/prometheus_server.h"

namespace ibfabric::testbed {
namespace {

using std::chrono::seconds;

class PhysicalLayerTest : public HardwareSuite<PhysicalLayerTest> {
 protected:
  static void SetUpTestSuite() {
    StartHardware(kTwoSwitchNet, "ib-spine01  switch-ib-2\nib-leaf01  quantum-2\ncn*  connectx-7\n");
  }
  // The personalities' preload with the tap before it (it sees every MAD
  // the exporter sends, those the models answer too).
  static Env TappedEnv(const std::string& file) {
    Env env = hw_->PreloadEnv();
    const Env tap = MadTapEnv(file);
    env["LD_PRELOAD"] = tap.at("LD_PRELOAD") + " " + env["LD_PRELOAD"];
    env["MAD_TAP_FILE"] = tap.at("MAD_TAP_FILE");
    return env;
  }
  // A Prometheus scraping `e` and evaluating every second, its target
  // labelled fabric=sim as the dashboards' filter expects.
  static std::unique_ptr<PrometheusServer> ScrapedBy(const ExporterProcess& e, std::string* error) {
    return PrometheusServer::Start(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        "  - job_name: infiniband\n"
        "    static_configs: [{targets: ['127.0.0.1:" +
            std::to_string(e.port()) + "'], labels: {fabric: sim}}]\n",
        {}, error);
  }
  static void Plant(const std::string& line) {
    std::string error;
    ASSERT_TRUE(hw_->Command(line, &error)) << line << ": " << error;
  }
};

TEST_F(PhysicalLayerTest, RsFecCountsArriveExactPerLaneWithTheirBitErrorRate) {
  Plant("fec ib-leaf01 2 lanes=10,20,30,40 corrected_blocks=7 uncorrectable_blocks=1");
  const std::string tap = sim_->dir() + "/phy-tap.log";
  std::string error;
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=250ms", "--phy.interval=1s"}, &error, {}, TappedEnv(tap));
  ASSERT_NE(e, nullptr) << error;
  const Labels at{{"switch", "ib-leaf01"}, {"port", "2"}};
  const Labels end{{"node", "ib-leaf01"}, {"port", "2"}};
  auto s = e->WaitFor(
      [&](const Scrape& x) { return x.Value("infiniband_switch_port_fec_corrected_symbols_total", at) == 100; },
      seconds(30));
  ASSERT_TRUE(s.has_value()) << e->Log();
  EXPECT_EQ(s->Value("infiniband_switch_port_fec_corrected_blocks_total", at), 7);
  EXPECT_EQ(s->Value("infiniband_switch_port_fec_uncorrectable_blocks_total", at), 1);
  for (int lane = 0; lane < 4; ++lane) {
    Labels l = at;
    l["lane"] = std::to_string(lane);
    EXPECT_EQ(s->Value("infiniband_switch_port_lane_fec_corrected_symbols_total", l), 10 * (lane + 1)) << lane;
  }
  EXPECT_EQ(s->Find("infiniband_switch_port_lane_fec_corrected_symbols_total", at).size(), 4u) << "a 4x NDR link";
  const std::string leaf = s->Find("infiniband_switch_info", {{"switch", "ib-leaf01"}}).at(0).labels.at("guid");
  const std::string spine = s->Find("infiniband_switch_info", {{"switch", "ib-spine01"}}).at(0).labels.at("guid");
  EXPECT_EQ(s->Value("infiniband_port_fec_info",
                     {{"guid", leaf}, {"port", "2"}, {"fec_mode", "rs_fec"}, {"source", "pma_extended_speeds"}}),
            1);
  EXPECT_EQ(
      s->Value("infiniband_port_fec_info", {{"guid", leaf}, {"port", "5"}, {"fec_mode", "none"}, {"source", "none"}}),
      1)
      << "the EDR uplink runs no FEC: its mode is read, its counters are not";
  EXPECT_TRUE(s->Find("infiniband_port_fec_info", {{"guid", spine}}).empty());
  EXPECT_TRUE(s->Find("infiniband_hca_port_fec_corrected_symbols_total").empty()) << "no HCA PMA has them";
  EXPECT_EQ(s->Sum("infiniband_switch_port_fec_corrected_symbols_total"), 100) << "only the planted port counts";

  // Four thousand more symbols corrected, two more blocks lost, no symbol
  // error: the window that saw them has its raw BER, over at least the
  // interval and at most a few, of a 4x NDR link's 425 Gb/s.
  Plant("fec ib-leaf01 2 lanes=1010,1020,1030,1040 corrected_blocks=9 uncorrectable_blocks=3");
  s = e->WaitFor(
      [&](const Scrape& x) {
        return x.Value("infiniband_switch_port_fec_corrected_symbols_total", at) == 4100 &&
               x.Value("infiniband_port_raw_bit_error_ratio", end).value_or(0) > 0;
      },
      seconds(30));
  ASSERT_TRUE(s.has_value()) << e->Log();
  EXPECT_EQ(s->Value("infiniband_switch_port_fec_uncorrectable_blocks_total", at), 3);
  EXPECT_EQ(s->Value("infiniband_switch_port_fec_corrected_blocks_total", at), 9);
  const double raw = *s->Value("infiniband_port_raw_bit_error_ratio", end);
  const double effective = *s->Value("infiniband_port_effective_bit_error_ratio", end);
  constexpr double kBitsPerSecond = 4 * 106.25e9;
  EXPECT_LE(raw, 4000 / (kBitsPerSecond * 0.9)) << "a window of at least the interval";
  EXPECT_GE(raw, 4000 / (kBitsPerSecond * 4)) << "a window of a few seconds at most";
  EXPECT_DOUBLE_EQ(effective / raw, 2.0 / 4000) << "one window, one divisor";

  // Counted at libibumad over five seconds: the counters of the leaf's two
  // NDR ports about once a second each; none of the spine or the hosts,
  // whose PMAs lack them; the FEC mode never of the spine.
  const auto from = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(seconds(5));
  const auto to = std::chrono::steady_clock::now();
  using transport::MgmtClass;
  constexpr std::uint16_t kPesc = transport::pma_attr::kPortExtendedSpeedsCounters;
  const std::uint64_t to_leaf = SentOfAttribute(tap, MgmtClass::kPerformance, kPesc, hw_->LidOf("ib-leaf01"), from, to);
  std::printf("PortExtendedSpeedsCounters to the leaf in %.1f s: %llu\n",
              std::chrono::duration<double>(to - from).count(), static_cast<unsigned long long>(to_leaf));
  EXPECT_GE(to_leaf, 5u) << "two ports, about once a second each";
  EXPECT_LE(to_leaf, 12u) << "two ports, at most once a second each";
  EXPECT_EQ(SentOfAttribute(tap, MgmtClass::kPerformance, kPesc),
            SentOfAttribute(tap, MgmtClass::kPerformance, kPesc, hw_->LidOf("ib-leaf01")))
      << "nothing of the kind to another node";
  EXPECT_EQ(
      SentOfAttribute(tap, MgmtClass::kSubnLidRouted, transport::smp_attr::kPortInfoExtended, hw_->LidOf("ib-spine01")),
      0u);
  EXPECT_EQ(
      SentOfAttribute(tap, MgmtClass::kSubnLidRouted, transport::smp_attr::kPortInfoExtended, hw_->LidOf("ib-leaf01")),
      4u)
      << "the leaf's four cabled ports, once each";
  Plant("fec ib-leaf01 2");
}

// A cable going bad by its raw bit error ratio alone: corrected symbols
// at a steady rate on one lane, no symbol error. Over NVIDIA's warning
// level (5e-6 of a 4x NDR link's 425 Gb/s: 2.1 M symbols a second) the
// cable is a bad_cable warning naming both ends and the worst lane; over
// its error level (1e-5) critical; back to clean, the alert clears.
TEST_F(PhysicalLayerTest, ARawBitErrorRatioOverItsLevelsIsABadCableNamingTheWorstLane) {
  std::string error;
  auto e =
      ExporterProcess::Start(*sim_, {"--sweep.interval=250ms", "--phy.interval=1s"}, &error, {}, hw_->PreloadEnv());
  ASSERT_NE(e, nullptr) << error;
  const auto bad = [&](const std::string& severity) {
    return e->WaitFor(
        [&](const Scrape& x) {
          return x.Find("infiniband_alert_active", {{"cause", "bad_cable"}, {"severity", severity}}).size() == 1;
        },
        seconds(30));
  };
  Plant("fec ib-leaf01 2 lanes_per_second=0,0,3000000,0");  // 7.1e-6
  auto s = bad("warning");
  ASSERT_TRUE(s.has_value()) << e->Log();
  const Sample a = s->Find("infiniband_alert_active", {{"cause", "bad_cable"}}).at(0);
  EXPECT_EQ(std::set<std::string>({a.labels.at("node"), a.labels.at("remote_node")}),
            (std::set<std::string>{"ib-leaf01", "cn0002"}));
  const double raw = *s->Value("infiniband_port_raw_bit_error_ratio", {{"node", "ib-leaf01"}, {"port", "2"}});
  EXPECT_NEAR(raw, 3e6 / 425e9, 3e6 / 425e9 * 0.2) << "3 M symbols a second over 425 Gb/s, within a window's jitter";
  EXPECT_EQ(s->Value("infiniband_switch_port_symbol_error_total", {{"switch", "ib-leaf01"}, {"port", "2"}}), 0)
      << "the personality counts no symbol error: the FEC evidence alone raised it";
  int status = 0;
  const auto alerts = nlohmann::json::parse(e->Get("/api/v1/alerts", &status));
  ASSERT_EQ(status, 200);
  bool lane = false;
  for (const auto& x : alerts["active"]) {
    for (const auto& ev : x["evidence"]) {
      if (ev.value("signal", "") == "raw_bit_error_ratio") lane = ev.value("detail", "") == "worst lane 2";
    }
  }
  EXPECT_TRUE(lane) << alerts.dump();

  const double since = [&] {
    const auto listed = nlohmann::json::parse(e->Get("/api/v1/alerts"));
    for (const auto& x : listed["active"]) {
      if (x.value("cause", "") == "bad_cable") return x.value("since_unix", 0.0);
    }
    return 0.0;
  }();
  ASSERT_GT(since, 0);
  // Worse: the same alert becomes critical (the counts go on from where
  // they were: no window in between looks clean).
  Plant("fec ib-leaf01 2 lanes_per_second=0,0,6000000,0");  // 1.4e-5
  ASSERT_TRUE(bad("critical").has_value()) << e->Log();
  const auto now = nlohmann::json::parse(e->Get("/api/v1/alerts"));
  for (const auto& x : now["active"]) {
    if (x.value("cause", "") == "bad_cable") {
      EXPECT_EQ(x.value("since_unix", 0.0), since) << "raised once";
    }
  }
  EXPECT_TRUE(now["recently_cleared"].empty()) << now.dump();
  Plant("fec ib-leaf01 2");
  EXPECT_TRUE(e->WaitFor(
      [](const Scrape& x) {
        return x.Find("infiniband_alert_active", {{"cause", "bad_cable"}}).empty();
      },
      seconds(30)))
      << e->Log();
}

// A 32-bit FEC counter near its maximum, with --counters.clear-threshold:
// the exporter clears the port's counters on the fabric after the read
// (perfquery -T then reads them from 0) and its totals go on from where
// they were, the bit error ratio from the counts since the clear; the
// counter is never seen pinned.
TEST_F(PhysicalLayerTest, ACounterNearItsMaximumIsClearedPastTheThresholdAndCountsOn) {
  Plant("fec ib-leaf01 1 lanes=0,4000000000,0,0 lanes_per_second=0,1000000,0,0");  // 93% of 2^32-1, rising
  std::string error;
  auto e =
      ExporterProcess::Start(*sim_, {"--sweep.interval=250ms", "--phy.interval=1s", "--counters.clear-threshold=75"},
                             &error, {}, hw_->PreloadEnv());
  ASSERT_NE(e, nullptr) << error;
  const Labels lane1{{"switch", "ib-leaf01"}, {"port", "1"}, {"lane", "1"}};
  const Labels end{{"node", "ib-leaf01"}, {"port", "1"}};
  // Cleared once, then read again: the total past what was planted.
  auto s = e->WaitFor(
      [&](const Scrape& x) {
        return x.Value("infiniband_exporter_fec_port_resets_total") >= 1 &&
               x.Value("infiniband_port_raw_bit_error_ratio", end).value_or(0) > 0;
      },
      seconds(30));
  ASSERT_TRUE(s.has_value()) << e->Log();
  EXPECT_EQ(s->Value("infiniband_exporter_fec_port_resets_total"), 1) << "once: the counts since are far from 75%";
  const double total = *s->Value("infiniband_switch_port_lane_fec_corrected_symbols_total", lane1);
  EXPECT_GT(total, 4.0e9) << "on from the first read, not from 0";
  EXPECT_LT(total, 4.0e9 + 60e6) << "a minute's counting at most";
  EXPECT_EQ(s->Value("infiniband_switch_port_fec_corrected_symbols_total", {{"switch", "ib-leaf01"}, {"port", "1"}}),
            total)
      << "one lane counts";
  const double raw = *s->Value("infiniband_port_raw_bit_error_ratio", end);
  EXPECT_GT(raw, 1e6 / 425e9 * 0.5) << "the counts since the clear over their window";
  EXPECT_LT(raw, 1e6 / 425e9 * 1.5) << "not the 4 G before it";
  EXPECT_TRUE(s->Find("infiniband_port_fec_counter_pinned").empty());
  // On the fabric: the lane counts from the clear.
  const CommandResult q = RunCommand({"perfquery", "-T", std::to_string(hw_->LidOf("ib-leaf01")), "1"},
                                     hw_->ClientEnv(*sim_), std::chrono::milliseconds(10000));
  const auto at = q.out.find("FECCorrectableSymbolCtrLane1:");
  ASSERT_NE(at, std::string::npos) << q.out << q.err;
  const std::string line = q.out.substr(at, q.out.find('\n', at) - at);
  const double on_fabric = std::stod(line.substr(line.find_last_of('.') + 1));
  EXPECT_LT(on_fabric, 60e6) << "cleared: " << line;
  EXPECT_GT(on_fabric, 0) << "and counting on: " << line;
  Plant("fec ib-leaf01 1");
}

// A cable degrading by its raw bit error ratio alone: steady at 4.7e-8 on
// lane 1, then fifteen times that (7.1e-7, still under the bad-cable
// level 5e-6): one cable_degrading warning naming both ends and the worst
// lane, symbol errors 0; then over the level, a bad_cable, and the
// degrading alert gives way (its baseline still a tenth of the ratio:
// the level alone takes it). The trend period is 2 minutes here (a day by
// default): a part every 5 s, judged once two are behind the port.
TEST_F(PhysicalLayerTest, ARawRatioRisingTenfoldUnderTheLevelIsOneDegradingCable) {
  const std::string config = sim_->dir() + "/degrading.yaml";
  ASSERT_TRUE(WriteFile(config, "cable_degrading: {period: 2m}\n"));
  Plant("fec ib-leaf01 1 lanes_per_second=0,20000,0,0");  // 20 k symbols a second over 425 Gb/s
  std::string error;
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=250ms", "--phy.interval=1s", "--alerts.config=" + config},
                                  &error, {}, hw_->PreloadEnv());
  ASSERT_NE(e, nullptr) << error;
  const Labels end{{"node", "ib-leaf01"}, {"port", "1"}};
  auto s = e->WaitFor(
      [&](const Scrape& x) { return x.Value("infiniband_port_raw_bit_error_ratio_baseline", end).has_value(); },
      seconds(30));
  ASSERT_TRUE(s.has_value()) << e->Log();
  EXPECT_NEAR(*s->Value("infiniband_port_raw_bit_error_ratio_baseline", end), 2e4 / 425e9, 2e4 / 425e9 * 0.3);
  // Judged from the second part on: steady, nothing.
  std::this_thread::sleep_for(seconds(8));
  s = e->WaitFor([](const Scrape&) { return true; }, seconds(5));
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(s->Find("infiniband_alert_active", {{"cause", "cable_degrading"}}).empty()) << "steady";

  Plant("fec ib-leaf01 1 lanes_per_second=0,300000,0,0");  // 15x, counting on
  s = e->WaitFor(
      [&](const Scrape& x) {
        return !x.Find("infiniband_alert_active", {{"cause", "cable_degrading"}}).empty();
      },
      seconds(30));
  ASSERT_TRUE(s.has_value()) << e->Log();
  const auto raised = s->Find("infiniband_alert_active", {{"cause", "cable_degrading"}});
  ASSERT_EQ(raised.size(), 1u);
  EXPECT_EQ(raised[0].labels.at("severity"), "warning");
  EXPECT_EQ(std::set<std::string>({raised[0].labels.at("node"), raised[0].labels.at("remote_node")}),
            (std::set<std::string>{"ib-leaf01", "cn0001"}));
  EXPECT_TRUE(s->Find("infiniband_alert_active", {{"cause", "bad_cable"}}).empty()) << "under the level";
  EXPECT_EQ(s->Value("infiniband_switch_port_symbol_error_total", {{"switch", "ib-leaf01"}, {"port", "1"}}), 0);
  const auto alerts = nlohmann::json::parse(e->Get("/api/v1/alerts"));
  bool lane = false, baseline = false;
  for (const auto& x : alerts["active"]) {
    if (x.value("cause", "") != "cable_degrading") continue;
    for (const auto& ev : x["evidence"]) {
      if (ev.value("signal", "") == "raw_bit_error_ratio")
        lane = ev.value("detail", "").rfind("worst lane 1, up from ", 0) == 0;
      if (ev.value("signal", "") == "raw_bit_error_ratio_baseline") baseline = ev.value("value", 0.0) > 0;
    }
  }
  EXPECT_TRUE(lane && baseline) << alerts.dump();

  Plant("fec ib-leaf01 1 lanes_per_second=0,3000000,0,0");  // 7.1e-6: over the level
  s = e->WaitFor(
      [&](const Scrape& x) {
        return !x.Find("infiniband_alert_active", {{"cause", "bad_cable"}}).empty() &&
               x.Find("infiniband_alert_active", {{"cause", "cable_degrading"}}).empty();
      },
      seconds(30));
  ASSERT_TRUE(s.has_value()) << e->Log();
  EXPECT_EQ(s->Value("infiniband_alerts_raised_total", {{"cause", "cable_degrading"}}), 1) << "exactly one";
  EXPECT_LT(*s->Value("infiniband_port_raw_bit_error_ratio_baseline", end),
            *s->Value("infiniband_port_raw_bit_error_ratio", end) / 10)
      << "still ten times its baseline: the bad-cable level, not the baseline, ended it";
  EXPECT_EQ(s->Value("infiniband_alerts_raised_total", {{"cause", "bad_cable"}}), 1);
  EXPECT_EQ(s->Value("infiniband_switch_port_symbol_error_total", {{"switch", "ib-leaf01"}, {"port", "1"}}), 0);
  Plant("fec ib-leaf01 1");
}

// The physical layer's dashboard through a real Prometheus scraping the
// exporter on the personalities: every query returns data, the worst
// cable is the planted one with both ends, and its bad lane leads the
// per-lane ratios at the lane's own ratio (4x the port's: one lane of four
// corrects them all).
TEST_F(PhysicalLayerTest, ThePhysicalLayerDashboardShowsThePlantedCableAndLane) {
  Plant("fec ib-leaf01 1 lanes_per_second=0,400000,0,0");  // 9.4e-7 over the port
  Plant("fec ib-leaf01 2 lanes_per_second=1000,1000,1000,1000 uncorrectable_per_second=1");
  std::string error;
  auto e =
      ExporterProcess::Start(*sim_, {"--sweep.interval=250ms", "--phy.interval=1s"}, &error, {}, hw_->PreloadEnv());
  ASSERT_NE(e, nullptr) << error;
  const auto prometheus = ScrapedBy(*e, &error);
  ASSERT_NE(prometheus, nullptr) << error;
  const auto deadline = std::chrono::steady_clock::now() + seconds(60);
  bool ready = false;
  while (!ready && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(seconds(1));
    ready =
        PromQLNumber(*prometheus, "count(infiniband_port_raw_bit_error_ratio > 0)") >= 2 &&
        PromQLNumber(*prometheus,
                     "count(count_over_time(infiniband_switch_port_lane_fec_corrected_symbols_total[1m]) >= 4)") >= 8;
  }
  ASSERT_TRUE(ready) << e->Log() << prometheus->Log();
  const auto queries = DashboardQueries([](const std::string& file) { return file == kPhysicalLayerDashboard; });
  ASSERT_GE(queries.size(), 17u);
  std::map<std::string, nlohmann::json> by_panel;
  for (const auto& q : queries) {
    const nlohmann::json r = RunPromQL(*prometheus, Substitute(q.expr));
    EXPECT_FALSE(r.empty()) << q.panel << ": no data for " << Substitute(q.expr);
    by_panel[q.panel] = r;
  }
  const auto value = [](const nlohmann::json& x) { return std::stod(x["value"][1].get<std::string>()); };
  const nlohmann::json& worst = by_panel["Worst 20 cables by raw bit error ratio"];
  ASSERT_GE(worst.size(), 2u);
  const nlohmann::json* top = &worst[0];
  for (const auto& x : worst) {
    if (value(x) > value(*top)) top = &x;
  }
  const auto& m = (*top)["metric"];
  EXPECT_EQ(std::set<std::string>({m.value("node", ""), m.value("remote_node", "")}),
            (std::set<std::string>{"ib-leaf01", "cn0001"}))
      << worst.dump();
  EXPECT_NEAR(value(*top), 4e5 / 425e9, 4e5 / 425e9 * 0.3);
  const nlohmann::json& lanes = by_panel["Raw bit error ratio per lane: top $topn lanes"];
  ASSERT_FALSE(lanes.empty());
  const nlohmann::json* lead = &lanes[0];
  for (const auto& x : lanes) {
    if (value(x) > value(*lead)) lead = &x;
  }
  EXPECT_EQ((*lead)["metric"].value("switch", ""), "ib-leaf01");
  EXPECT_EQ((*lead)["metric"].value("port", ""), "1");
  EXPECT_EQ((*lead)["metric"].value("lane", ""), "1");
  EXPECT_NEAR(value(*lead), 4 * 4e5 / 425e9, 4 * 4e5 / 425e9 * 0.3) << "the lane's own ratio";
  const nlohmann::json& tiers = by_panel["Raw bit error ratio by tier (worst port)"];
  ASSERT_EQ(tiers.size(), 1u) << tiers.dump() << ": the leaf's tier alone counts FEC";
  EXPECT_NEAR(value(tiers[0]), 4e5 / 425e9, 4e5 / 425e9 * 0.3);
  EXPECT_GT(value(by_panel["Ports read for FEC"][0]), 0);

  // The port's page: the cable's FEC, each lane's raw ratio, the bad lane marked.
  const std::string leaf =
      e->ScrapeMetrics().Find("infiniband_switch_info", {{"switch", "ib-leaf01"}}).at(0).labels.at("guid");
  int status = 0;
  const auto port = nlohmann::json::parse(e->Get("/api/v1/port?guid=" + leaf + "&port=1", &status));
  ASSERT_EQ(status, 200);
  const auto& here = port["fec"]["this_end"];
  ASSERT_EQ(here["lanes"].size(), 4u) << port.dump();
  EXPECT_EQ(here["mode"], "rs_fec");
  EXPECT_EQ(here["worst_lane"], 1);
  EXPECT_NEAR(here["lanes"][1]["raw_bit_error_ratio"].get<double>(), 4 * 4e5 / 425e9, 4 * 4e5 / 425e9 * 0.3);
  EXPECT_EQ(here["lanes"][0]["raw_bit_error_ratio"].get<double>(), 0);
  EXPECT_TRUE(port["fec"]["far_end"].is_null()) << "the ConnectX-7's PMA has no FEC counters";
  auto browser = Browser::Start(&error);
  ASSERT_NE(browser, nullptr) << error;
  ASSERT_TRUE(browser->Navigate("http://127.0.0.1:" + std::to_string(e->port()) + "/#port=" + leaf + ":1", &error))
      << error;
  ASSERT_TRUE(browser->WaitFor("return document.querySelector('#port-lanes tr[data-lane=\"1\"]') !== null;",
                               seconds(10), &error))
      << error;
  const auto cell = browser->Execute(
      "const c = document.querySelector('#port-lanes tr[data-lane=\"1\"] td[data-end=\"this\"]');"
      "return [c.textContent, c.className];",
      &error);
  ASSERT_TRUE(cell) << error;
  EXPECT_NEAR(std::stod((*cell)[0].get<std::string>()), 4 * 4e5 / 425e9, 4 * 4e5 / 425e9 * 0.3) << cell->dump();
  EXPECT_EQ((*cell)[1], "worst-lane") << "the worst lane stands out";
  browser->Execute("document.getElementById('port-lanes').scrollIntoView(); return true;", &error);
  EXPECT_TRUE(browser->Screenshot(std::string(IBFABRIC_ARTIFACT_DIR) + "/status-fec-port.png", &error)) << error;
  Plant("fec ib-leaf01 1");
  Plant("fec ib-leaf01 2");
}

// The switch environment in band (AccessRegister) under SckyzO's names:
// the Quantum-2 leaf's planted ASIC temperature, fan speeds, a failed fan
// and a failed power supply arrive exact on its series, and SckyzO's
// panel queries and alert conditions (written here in their shapes) find
// them through a real Prometheus, on exactly that switch; the Switch-IB 2
// spine, whose GeneralInfo says no AccessRegister, has none of the
// families and is sent no register read, the hosts no vendor MAD at all
// (counted at libibumad).
TEST_F(PhysicalLayerTest, SwitchEnvironmentUnderSckyzOsNamesAndTheirPanelsAndAlerts) {
  Plant("env ib-leaf01 temperature=85.5 fan=3:9000 failed_fans=5 psu=1:failed watts=0:310");
  const std::string tap = sim_->dir() + "/env-tap.log";
  std::string error;
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=250ms", "--phy.interval=1s"}, &error, {}, TappedEnv(tap));
  ASSERT_NE(e, nullptr) << error;
  const Labels leaf{{"switch", "ib-leaf01"}};
  auto s = e->WaitFor(
      [&](const Scrape& x) {
        return x.Value("infiniband_switch_fan_status_info", {{"switch", "ib-leaf01"}, {"status", "ERROR"}}) == 1 &&
               x.Find("infiniband_switch_fan_rpm", leaf).size() == 14;
      },
      seconds(30));
  ASSERT_TRUE(s.has_value()) << e->Log();
  EXPECT_EQ(s->Value("infiniband_switch_temperature_celsius", leaf), 85.5);
  EXPECT_EQ(s->Value("infiniband_switch_temperature_high_threshold_celsius", leaf), 105);
  EXPECT_EQ(s->Value("infiniband_switch_fan_rpm", {{"switch", "ib-leaf01"}, {"fan", "3"}}), 9000);
  EXPECT_EQ(s->Value("infiniband_switch_fan_rpm", {{"switch", "ib-leaf01"}, {"fan", "5"}}), 0) << "the failed one";
  EXPECT_EQ(s->Value("infiniband_switch_fan_rpm", {{"switch", "ib-leaf01"}, {"fan", "14"}}), 11000);
  const auto psu = [&](const char* family, const char* n) {
    for (const auto& x : s->Find(family, {{"switch", "ib-leaf01"}, {"psu", n}})) return x.labels.at("status");
    return std::string("absent");
  };
  EXPECT_EQ(psu("infiniband_switch_power_supply_status_info", "0"), "OK");
  EXPECT_EQ(psu("infiniband_switch_power_supply_dc_power_status_info", "0"), "OK");
  EXPECT_EQ(psu("infiniband_switch_power_supply_fan_status_info", "0"), "OK");
  EXPECT_EQ(psu("infiniband_switch_power_supply_status_info", "1"), "ERROR");
  EXPECT_EQ(psu("infiniband_switch_power_supply_dc_power_status_info", "1"), "ERROR");
  EXPECT_EQ(s->Value("infiniband_switch_power_supply_watts", {{"switch", "ib-leaf01"}, {"psu", "0"}}), 310);
  EXPECT_FALSE(s->Value("infiniband_switch_power_supply_watts", {{"switch", "ib-leaf01"}, {"psu", "1"}}).has_value());
  const auto hw = s->Find("infiniband_switch_hardware_info", leaf);
  ASSERT_EQ(hw.size(), 1u);
  EXPECT_EQ(hw[0].labels.at("firmware_version"), "31.2010.3118");
  EXPECT_EQ(hw[0].labels.at("psid"), "MT_0000000063");
  EXPECT_EQ(hw[0].labels.at("part_number"), "MQM9790-NS2F");
  EXPECT_EQ(hw[0].labels.at("serial_number").rfind("MT2301X", 0), 0u) << hw[0].labels.at("serial_number");
  EXPECT_GE(*s->Value("infiniband_switch_uptime_seconds", leaf), 3 * 86400);
  for (const char* family : {"infiniband_switch_temperature_celsius", "infiniband_switch_fan_rpm",
                             "infiniband_switch_hardware_info", "infiniband_switch_power_supply_status_info"}) {
    EXPECT_TRUE(s->Find(family, {{"switch", "ib-spine01"}}).empty()) << family << ": the Switch-IB 2 has none";
  }

  // SckyzO's environmental panels and alerts, through Prometheus.
  const auto prometheus = ScrapedBy(*e, &error);
  ASSERT_NE(prometheus, nullptr) << error;
  ASSERT_TRUE(WaitUntil([&] { return PromQLNumber(*prometheus, "count(infiniband_switch_fan_rpm)") == 14; },
                        seconds(30), std::chrono::milliseconds(500)))
      << prometheus->Log();
  const auto only_leaf = [&](const std::string& expr) {
    const nlohmann::json r = RunPromQL(*prometheus, expr);
    std::set<std::string> switches;
    for (const auto& x : r) switches.insert(x["metric"].value("switch", ""));
    return switches == std::set<std::string>{"ib-leaf01"};
  };
  EXPECT_EQ(PromQLNumber(*prometheus, "max(infiniband_switch_temperature_celsius)"), 85.5);
  EXPECT_EQ(PromQLNumber(*prometheus, "sum(infiniband_switch_power_supply_watts)"), 310);
  EXPECT_EQ(PromQLNumber(*prometheus, "avg(infiniband_switch_fan_rpm)"), (13 * 11000.0 - 11000 + 9000) / 14);
  EXPECT_EQ(PromQLNumber(*prometheus,
                         "count(group by (switch) (infiniband_switch_power_supply_status_info{status!~\"OK|ok\"}))"),
            1);
  EXPECT_TRUE(only_leaf("infiniband_switch_hardware_info"));
  EXPECT_TRUE(only_leaf("infiniband_switch_temperature_celsius > 80")) << "their temperature alert";
  EXPECT_TRUE(only_leaf("infiniband_switch_power_supply_status_info{status!~\"OK|ok\"} == 1")) << "their PSU alert";
  EXPECT_TRUE(only_leaf("infiniband_switch_fan_status_info{status!~\"OK|ok\"} == 1")) << "their fan alert";

  // Repaired: the alert conditions go silent.
  Plant("env ib-leaf01");
  ASSERT_TRUE(WaitUntil(
      [&] {
        return RunPromQL(*prometheus, "infiniband_switch_fan_status_info{status!~\"OK|ok\"} == 1").empty() &&
               RunPromQL(*prometheus, "infiniband_switch_power_supply_status_info{status!~\"OK|ok\"} == 1").empty() &&
               RunPromQL(*prometheus, "infiniband_switch_temperature_celsius > 80").empty();
      },
      seconds(30), std::chrono::milliseconds(500)));

  // Counted at libibumad: registers only of the leaf; of the spine its
  // GeneralInfo once; nothing of the class to a host.
  using transport::MgmtClass;
  constexpr auto kReg = transport::vs_attr::kAccessRegister;
  constexpr auto kInfo = transport::vs_attr::kGeneralInfo;
  EXPECT_GT(SentOfAttribute(tap, MgmtClass::kVendorNvidia, kReg, hw_->LidOf("ib-leaf01")), 0u);
  EXPECT_EQ(SentOfAttribute(tap, MgmtClass::kVendorNvidia, kReg, hw_->LidOf("ib-spine01")), 0u);
  EXPECT_EQ(SentOfAttribute(tap, MgmtClass::kVendorNvidia, kInfo, hw_->LidOf("ib-spine01")), 1u);
  EXPECT_EQ(SentOfAttribute(tap, MgmtClass::kVendorNvidia, kInfo, hw_->LidOf("ib-leaf01")), 1u);
  for (const char* host : {"cn0001", "cn0002"}) {
    EXPECT_EQ(SentOfAttribute(tap, MgmtClass::kVendorNvidia, kReg, hw_->LidOf(host)) +
                  SentOfAttribute(tap, MgmtClass::kVendorNvidia, kInfo, hw_->LidOf(host)),
              0u)
        << host;
  }
}

}  // namespace
}  // namespace ibfabric::testbed
