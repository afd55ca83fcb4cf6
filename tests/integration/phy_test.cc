// The physical layer through the hardware personalities: a Quantum-2 leaf
// whose PMA has the RS-FEC counters (PortExtendedSpeedsCounters) and whose
// registers answer in band (PPCNT), its host links NDR (RS-FEC), under a
// Switch-IB 2 spine that has neither (its links to the leaf run EDR, no
// FEC), and ConnectX-7 hosts whose PMAs do not say they have the FEC
// counters but whose registers answer. Where the registers answer, PPCNT
// is read, on both ends of a host cable; a test that plants the leaf's
// registers off reads it by its PMA. Counts planted on the leaf arrive
// exact, per lane, with the bit error ratios of their window, while
// SymbolErrorCounter stays 0; every MAD is counted where it crosses
// libibumad (the tap): the counters are asked of the ports that have them
// only, once per --phy.interval, and nothing of the kind goes to a device
// that lacks it.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "tests/integration/fabric_suite.h"
#include "tests/integration/hardware_suite.h"
#include "tests/integration/promql.h"
#include "tests/testbed/browser.h"
#include "tests/testbed/mad_tap.h"
#include "tests/testbed/prometheus_server.h"
#include "transport/registers.h"

namespace ibfabric::testbed {
namespace {

using std::chrono::seconds;

// The shipped alert rules with every "for: Nm" as "for: Ns".
std::string ShippedRules() { return ForInSeconds(SourceFile("deploy/prometheus/infiniband-rules.yml")); }

// A Prometheus scraping `e` and evaluating every second, its target
// labelled fabric=sim as the dashboards' filter expects, with the
// rules given (by default the shipped ones, minutes as seconds).
std::unique_ptr<PrometheusServer> ScrapedBy(const ExporterProcess& e, std::string* error,
                                            const std::string& rules = ShippedRules()) {
  return PrometheusServer::Start(
      "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
      "rule_files: [infiniband-rules.yml]\n"
      "scrape_configs:\n"
      "  - job_name: infiniband\n"
      "    static_configs: [{targets: ['127.0.0.1:" +
          std::to_string(e.port()) + "'], labels: {fabric: sim}}]\n",
      {{"infiniband-rules.yml", rules}}, error);
}
// Where alert `name` fires in `prometheus`: the switches (or nodes) it names.
std::set<std::string> Firing(const PrometheusServer& prometheus, const std::string& name) {
  std::set<std::string> where;
  for (const auto& x : RunPromQL(prometheus, "ALERTS{alertname=\"" + name + "\",alertstate=\"firing\"}")) {
    const auto& m = x["metric"];
    where.insert(m.contains("switch") ? m.value("switch", "") : m.value("node", ""));
  }
  return where;
}

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
  static void Plant(const std::string& line) {
    std::string error;
    ASSERT_TRUE(hw_->Command(line, &error)) << line << ": " << error;
  }
  // Each test starts with the leaf's registers as its model has them (on).
  void SetUp() override { Plant("registers ib-leaf01 on"); }

  // A span of `e`'s life of at least 5 s and 5 sweeps: on a loaded machine
  // the sweeps are slower and the span longer, so a port read once per
  // --phy.interval (1 s here) is read as often in it as its sweeps allow.
  struct Span {
    std::chrono::steady_clock::time_point from, to;
    double sweeps = 0;  // that ended between
    double Seconds() const { return std::chrono::duration<double>(to - from).count(); }
    // The reads of a port it must hold: one every 2 s at most (sweeps of
    // 250 ms read it every 1-1.25 s), or one a sweep when sweeps are
    // further apart than the interval, less one for the edges.
    std::uint64_t AtLeast(int ports) const {
      return ports * static_cast<std::uint64_t>(std::max(0.0, std::min(sweeps - 1, std::floor(Seconds() / 2))));
    }
    // At most one a second and one at the edge.
    std::uint64_t AtMost(int ports) const { return ports * static_cast<std::uint64_t>(std::floor(Seconds()) + 1); }
  };
  static Span Observe(const ExporterProcess& e) {
    const auto sweeps = [&] { return e.ScrapeMetrics().Value("infiniband_exporter_sweeps_total").value_or(0); };
    Span span;
    const double first = sweeps();
    span.from = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(5));
    EXPECT_TRUE(
        WaitUntil([&] { return sweeps() >= first + 5; }, std::chrono::seconds(90), std::chrono::milliseconds(100)))
        << "5 sweeps did not end in 90 s: " << e.Log();
    span.to = std::chrono::steady_clock::now();
    span.sweeps = sweeps() - first;
    return span;
  }
};

// The PMA's counters: the leaf's registers off (older firmware, or a
// VS_Key the exporter lacks), its GeneralInfo says no AccessRegister.
TEST_F(PhysicalLayerTest, RsFecCountsArriveExactPerLaneWithTheirBitErrorRate) {
  Plant("registers ib-leaf01 off");
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
  EXPECT_EQ(
      s->Value(
          "infiniband_port_fec_info",
          {{"guid", leaf}, {"port", "2"}, {"fec_mode", "mlnx_rs_fec_271_257_plr"}, {"source", "pma_extended_speeds"}}),
      1);
  EXPECT_EQ(
      s->Value("infiniband_port_fec_info", {{"guid", leaf}, {"port", "5"}, {"fec_mode", "none"}, {"source", "none"}}),
      1)
      << "the EDR uplink runs no FEC: its mode is read, its counters are not";
  EXPECT_TRUE(s->Find("infiniband_port_fec_info", {{"guid", spine}}).empty());
  EXPECT_TRUE(s->Find("infiniband_hca_port_fec_corrected_symbols_total").empty()) << "no HCA PMA has them";
  EXPECT_TRUE(s->Find("infiniband_switch_port_phy_corrected_bits_total").empty()) << "no register read of the leaf";
  EXPECT_TRUE(s->Find("infiniband_port_module_info", {{"node", "ib-leaf01"}}).empty()) << "nor its modules";
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

  // Counted at libibumad over five seconds or more: the counters of the
  // leaf's two NDR ports about once a second each; none of the spine or the
  // hosts, whose PMAs lack them; the FEC mode never of the spine.
  const Span span = Observe(*e);
  using transport::MgmtClass;
  constexpr std::uint16_t kPesc = transport::pma_attr::kPortExtendedSpeedsCounters;
  const std::uint64_t to_leaf =
      SentOfAttribute(tap, MgmtClass::kPerformance, kPesc, hw_->LidOf("ib-leaf01"), span.from, span.to);
  std::printf("PortExtendedSpeedsCounters to the leaf in %.1f s (%.0f sweeps): %llu\n", span.Seconds(), span.sweeps,
              static_cast<unsigned long long>(to_leaf));
  EXPECT_GE(to_leaf, span.AtLeast(2)) << "two ports, about once a second each";
  EXPECT_LE(to_leaf, span.AtMost(2)) << "two ports, at most once a second each";
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
  EXPECT_EQ(
      SentOfAttribute(tap, MgmtClass::kVendorNvidia, transport::vs_attr::kAccessRegister, hw_->LidOf("ib-leaf01")), 0u)
      << "its GeneralInfo said no AccessRegister";
  Plant("fec ib-leaf01 2");
}

// PPCNT's physical layer counters (group 0x16) where the registers answer
// in band: the leaf's and the ConnectX-7 host's ends of one cable, each
// exact per lane, with the raw, effective and symbol bit error ratios of
// the window over the bits the port received; one GMP per port per
// interval instead of the PMA's counters, which the leaf is no longer
// asked; nothing of the kind to the Switch-IB 2 spine (counted at
// libibumad).
TEST_F(PhysicalLayerTest, PpcntCountsArriveExactOnBothEndsWithTheirBitErrorRatios) {
  Plant("fec ib-leaf01 2 lanes=10,20,30,40 uncorrectable_blocks=1");
  Plant("fec cn0002 1 lanes=0,0,5,0");
  const std::string tap = sim_->dir() + "/ppcnt-tap.log";
  std::string error;
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=250ms", "--phy.interval=1s"}, &error, {}, TappedEnv(tap));
  ASSERT_NE(e, nullptr) << error;
  const Labels at{{"switch", "ib-leaf01"}, {"port", "2"}};
  const Labels end{{"node", "ib-leaf01"}, {"port", "2"}};
  auto s = e->WaitFor(
      [&](const Scrape& x) {
        return x.Value("infiniband_switch_port_phy_corrected_bits_total", at) == 100 &&
               !x.Find("infiniband_hca_port_phy_corrected_bits_total").empty();
      },
      seconds(30));
  ASSERT_TRUE(s.has_value()) << e->Log();
  EXPECT_EQ(s->Value("infiniband_switch_port_phy_effective_errors_total", at), 1);
  EXPECT_EQ(s->Value("infiniband_switch_port_phy_symbol_errors_total", at), 1);
  EXPECT_GT(s->Value("infiniband_switch_port_phy_received_bits_total", at).value_or(0), 0);
  for (int lane = 0; lane < 4; ++lane) {
    Labels l = at;
    l["lane"] = std::to_string(lane);
    EXPECT_EQ(s->Value("infiniband_switch_port_lane_raw_errors_total", l), 10 * (lane + 1)) << lane;
  }
  EXPECT_EQ(s->Find("infiniband_switch_port_lane_raw_errors_total", at).size(), 4u) << "a 4x NDR link";
  EXPECT_TRUE(s->Find("infiniband_switch_port_fec_corrected_symbols_total").empty()) << "not the PMA's counters";
  const std::string leaf = s->Find("infiniband_switch_info", {{"switch", "ib-leaf01"}}).at(0).labels.at("guid");
  const std::string spine = s->Find("infiniband_switch_info", {{"switch", "ib-spine01"}}).at(0).labels.at("guid");
  // The HCA's port series carry its port GUID (its infiniband_hca_info's).
  const std::string host_port = s->Find("infiniband_hca_info", {{"hca", "cn0002"}}).at(0).labels.at("guid");
  EXPECT_EQ(s->Value("infiniband_port_fec_info",
                     {{"guid", leaf}, {"port", "2"}, {"fec_mode", "mlnx_rs_fec_271_257_plr"}, {"source", "ppcnt"}}),
            1);
  EXPECT_EQ(s->Value("infiniband_port_fec_info",
                     {{"node", "cn0002"}, {"port", "1"}, {"fec_mode", "mlnx_rs_fec_271_257_plr"}, {"source", "ppcnt"}}),
            1)
      << "the host's end too: its registers answer, its PMA has no FEC counters";
  EXPECT_EQ(s->Value("infiniband_hca_port_phy_corrected_bits_total", {{"guid", host_port}, {"port", "1"}}), 5);
  EXPECT_EQ(s->Value("infiniband_hca_port_lane_raw_errors_total", {{"guid", host_port}, {"port", "1"}, {"lane", "2"}}),
            5);
  EXPECT_EQ(s->Value("infiniband_port_fec_info", {{"guid", leaf}, {"port", "5"}, {"source", "ppcnt"}}), 1)
      << "the EDR uplink without FEC: its physical layer counters all the same";
  EXPECT_TRUE(s->Find("infiniband_port_fec_info", {{"guid", spine}}).empty()) << "no registers, no RS-FEC counters";
  EXPECT_EQ(s->Value("infiniband_node_access_register_supported", {{"guid", leaf}}), 1);
  EXPECT_EQ(s->Value("infiniband_node_access_register_supported", {{"guid", spine}}), 0);

  // Counting on, lane 3 the most, errors left too, no symbol error at the
  // PMA: each window's ratios are over the bits the port received in it
  // (the counts and the bits from one answer: exact, whatever the window).
  Plant(
      "fec ib-leaf01 2 lanes=10,20,30,40 lanes_per_second=1000,1000,1000,100000 uncorrectable_blocks=1 "
      "uncorrectable_per_second=100");
  // The first window with the rates began before them; the next one is
  // theirs alone.
  s = e->WaitFor(
      [&](const Scrape& x) { return x.Value("infiniband_port_symbol_bit_error_ratio", end).value_or(0) > 0; },
      seconds(30));
  ASSERT_TRUE(s.has_value()) << e->Log();
  const double planted_window = *s->Value("infiniband_switch_port_phy_corrected_bits_total", at);
  s = e->WaitFor(
      [&](const Scrape& x) {
        return x.Value("infiniband_switch_port_phy_corrected_bits_total", at).value_or(0) > planted_window;
      },
      seconds(30));
  ASSERT_TRUE(s.has_value()) << e->Log();
  constexpr double kBitsPerSecond = 4 * 106.25e9;
  const double raw = *s->Value("infiniband_port_raw_bit_error_ratio", end);
  EXPECT_NEAR(raw, 103000 / kBitsPerSecond, 103000 / kBitsPerSecond * 0.01);
  EXPECT_NEAR(*s->Value("infiniband_port_effective_bit_error_ratio", end), 100 / kBitsPerSecond,
              100 / kBitsPerSecond * 0.03);
  EXPECT_NEAR(*s->Value("infiniband_port_symbol_bit_error_ratio", end), 100 / kBitsPerSecond,
              100 / kBitsPerSecond * 0.03);
  EXPECT_EQ(s->Value("infiniband_switch_port_symbol_error_total", at), 0) << "SymbolErrorCounter never moved";
  int status = 0;
  const auto port = nlohmann::json::parse(e->Get("/api/v1/port?guid=" + leaf + "&port=2", &status));
  ASSERT_EQ(status, 200);
  const auto& here = port["fec"]["this_end"];
  EXPECT_EQ(here["source"], "ppcnt") << port.dump();
  EXPECT_EQ(here["worst_lane"], 3) << port.dump();
  EXPECT_NEAR(here["lanes"][3]["raw_bit_error_ratio"].get<double>(), 4 * 1e5 / kBitsPerSecond,
              4 * 1e5 / kBitsPerSecond * 0.01)
      << "a lane carries a quarter of the bits";
  EXPECT_GT(here["lanes"][3]["raw_errors"].get<double>(), 40);
  EXPECT_EQ(port["fec"]["far_end"]["source"], "ppcnt");
  EXPECT_EQ(port["fec"]["far_end"]["corrected_bits"], 5) << "nothing more on the host's end";

  // Counted at libibumad over five seconds or more: PPCNT of the leaf's
  // four cabled ports about once a second each, of the host's one likewise;
  // none to the spine; the PMA's FEC counters to nobody.
  const Span span = Observe(*e);
  using transport::MgmtClass;
  const std::uint64_t to_leaf =
      SentOfRegister(tap, transport::reg::kPpcnt, hw_->LidOf("ib-leaf01"), span.from, span.to);
  const std::uint64_t to_host = SentOfRegister(tap, transport::reg::kPpcnt, hw_->LidOf("cn0002"), span.from, span.to);
  std::printf("PPCNT to the leaf in %.1f s (%.0f sweeps): %llu, to a host: %llu\n", span.Seconds(), span.sweeps,
              static_cast<unsigned long long>(to_leaf), static_cast<unsigned long long>(to_host));
  EXPECT_GE(to_leaf, span.AtLeast(4)) << "four ports, about once a second each";
  EXPECT_LE(to_leaf, span.AtMost(4)) << "four ports, at most once a second each";
  EXPECT_GE(to_host, span.AtLeast(1));
  EXPECT_LE(to_host, span.AtMost(1));
  EXPECT_EQ(SentOfRegister(tap, transport::reg::kPpcnt, hw_->LidOf("ib-spine01")), 0u);
  EXPECT_EQ(SentOfAttribute(tap, MgmtClass::kPerformance, transport::pma_attr::kPortExtendedSpeedsCounters), 0u);
  for (const char* node : {"ib-leaf01", "ib-spine01", "cn0001", "cn0002"}) {
    EXPECT_EQ(SentOfAttribute(tap, MgmtClass::kVendorNvidia, transport::vs_attr::kGeneralInfo, hw_->LidOf(node)), 1u)
        << node << ": GeneralInfo once";
  }
  Plant("fec ib-leaf01 2");
  Plant("fec cn0002 1");
}

// A cable going bad by its raw bit error ratio alone: corrected symbols
// at a steady rate on one lane, no symbol error. Over NVIDIA's warning
// level (5e-6 of a 4x NDR link's 425 Gb/s: 2.1 M symbols a second) the
// cable is a bad_cable warning naming both ends and the worst lane; over
// its error level (1e-5) critical; back to clean, the alert clears.
TEST_F(PhysicalLayerTest, ARawBitErrorRatioOverItsLevelsIsABadCableNamingTheWorstLane) {
  Plant("registers ib-leaf01 off");  // the PMA's counters
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
      // The levels of a 4xNDR link with PLR (the personality's host cable
      // runs FEC mode 14): NVIDIA's, by its speed and mode.
      if (ev.value("signal", "") == "raw_bit_error_ratio")
        lane = ev.value("detail", "") == "worst lane 2, levels NDR plr";
    }
  }
  EXPECT_TRUE(lane) << alerts.dump();
  EXPECT_EQ(s->Value("infiniband_port_fec_info", {{"node", "ib-leaf01"},
                                                  {"port", "2"},
                                                  {"fec_mode", "mlnx_rs_fec_271_257_plr"},
                                                  {"source", "pma_extended_speeds"}}),
            1)
      << "FEC mode 14 is RS-FEC (ibdm isRSFEC): without PPCNT its PMA counters are read";

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
  Plant("registers ib-leaf01 off");  // the PMA's 32-bit counters (PPCNT's are 64 bits)
  // 93% of 2^32-1, rising; FEC mode 4 (RS 544/514), in which perfquery,
  // below, reads the RS-FEC layout (it does so only in modes 2 and 4).
  Plant("fec ib-leaf01 1 mode=4 lanes=0,4000000000,0,0 lanes_per_second=0,1000000,0,0");
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
// the level alone takes it). The leaf's end read by its PMA (registers
// off, no PPCNT) at FEC mode 14, RS(271,257) with PLR, the mode a real
// NDR host cable runs (perfquery reads the RS-FEC layout only at 2 and 4:
// a reader that did so would see nothing here); the host's through PPCNT.
// The trend period is 2 minutes here (a day by default): a part every
// 5 s, judged once two are behind the port.
TEST_F(PhysicalLayerTest, ARawRatioRisingTenfoldUnderTheLevelIsOneDegradingCable) {
  Plant("registers ib-leaf01 off");
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
  EXPECT_EQ(s->Value("infiniband_switch_port_fec_uncorrectable_blocks_total", {{"switch", "ib-leaf01"}, {"port", "1"}}),
            0)
      << "nothing past FEC";
  EXPECT_EQ(s->Value("infiniband_port_fec_info", {{"node", "ib-leaf01"},
                                                  {"port", "1"},
                                                  {"fec_mode", "mlnx_rs_fec_271_257_plr"},
                                                  {"source", "pma_extended_speeds"}}),
            1);
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

// NVIDIA's levels by speed, FEC mode and ASIC (UFM's Field_BER_Thresholds
// V05): the same raw ratio, 1e-6, on two host cables of the Quantum-2
// leaf (a 7nm ASIC), one at NDR (its warning level 5e-6: nothing) and
// one planted to train HDR (its levels 5e-8 and 1e-7: critical). Read by
// the PMA (the leaf's registers off).
TEST_F(PhysicalLayerTest, AnHdrLinkOverItsLevelIsABadCableWhereAnNdrOneIsNot) {
  Plant("registers ib-leaf01 off");
  Plant("link ib-leaf01 2 speed=HDR");
  std::string error;
  auto e =
      ExporterProcess::Start(*sim_, {"--sweep.interval=250ms", "--phy.interval=1s"}, &error, {}, hw_->PreloadEnv());
  ASSERT_NE(e, nullptr) << error;
  Plant("fec ib-leaf01 1 lanes_per_second=425000,0,0,0");  // 1e-6 of 4x106.25 Gb/s
  Plant("fec ib-leaf01 2 lanes_per_second=212500,0,0,0");  // 1e-6 of 4x53.125 Gb/s
  const Labels ndr{{"node", "ib-leaf01"}, {"port", "1"}}, hdr{{"node", "ib-leaf01"}, {"port", "2"}};
  const auto s = e->WaitFor(
      [&](const Scrape& x) {
        return x.Value("infiniband_port_raw_bit_error_ratio", ndr).has_value() &&
               x.Find("infiniband_alert_active", {{"cause", "bad_cable"}}).size() == 1;
      },
      seconds(30));
  ASSERT_TRUE(s.has_value()) << e->Log();
  EXPECT_NEAR(*s->Value("infiniband_port_raw_bit_error_ratio", ndr), 1e-6, 2e-7);
  EXPECT_NEAR(*s->Value("infiniband_port_raw_bit_error_ratio", hdr), 1e-6, 2e-7);
  const Sample a = s->Find("infiniband_alert_active", {{"cause", "bad_cable"}}).at(0);
  EXPECT_EQ(a.labels.at("severity"), "critical");
  EXPECT_EQ(std::set<std::string>({a.labels.at("node"), a.labels.at("remote_node")}),
            (std::set<std::string>{"ib-leaf01", "cn0002"}))
      << "the HDR cable, not the NDR one";
  EXPECT_EQ(
      s->Value("infiniband_port_fec_info",
               {{"node", "ib-leaf01"}, {"port", "2"}, {"fec_mode", "rs_fec2"}, {"source", "pma_extended_speeds"}}),
      1);
  const auto alerts = nlohmann::json::parse(e->Get("/api/v1/alerts"));
  std::string detail;
  for (const auto& x : alerts["active"]) {
    for (const auto& ev : x["evidence"]) {
      if (ev.value("signal", "") == "raw_bit_error_ratio") detail = ev.value("detail", "");
    }
  }
  EXPECT_EQ(detail, "worst lane 0, levels HDR 7nm") << alerts.dump();
  // A few seconds more: the NDR cable stays clean at its level.
  std::this_thread::sleep_for(seconds(3));
  EXPECT_EQ(e->ScrapeMetrics().Find("infiniband_alert_active", {{"cause", "bad_cable"}}).size(), 1u);
  e.reset();
  Plant("fec ib-leaf01 1");
  Plant("fec ib-leaf01 2");
  Plant("link ib-leaf01 2");
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
        PromQLNumber(*prometheus, "count(count_over_time(infiniband_switch_port_lane_raw_errors_total[1m]) >= 4)") >= 8;
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
  EXPECT_EQ(here["mode"], "mlnx_rs_fec_271_257_plr") << "a host cable at NDR, as a real one runs";
  EXPECT_EQ(here["worst_lane"], 1);
  EXPECT_NEAR(here["lanes"][1]["raw_bit_error_ratio"].get<double>(), 4 * 4e5 / 425e9, 4 * 4e5 / 425e9 * 0.3);
  EXPECT_EQ(here["lanes"][0]["raw_bit_error_ratio"].get<double>(), 0);
  EXPECT_EQ(port["fec"]["far_end"]["source"], "ppcnt") << "the ConnectX-7 through its registers";
  EXPECT_EQ(port["fec"]["far_end"]["raw_bit_error_ratio"], 0) << port.dump();
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
// families and is sent no register read, the hosts no environment
// register (their port's PPCNT and PDDR only; counted at libibumad).
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
  // And the shipped rules: the failed fan and the failed supply, on the leaf alone.
  ASSERT_TRUE(WaitUntil(
      [&] {
        return !Firing(*prometheus, "InfinibandSwitchFanFailed").empty() &&
               !Firing(*prometheus, "InfinibandSwitchPowerSupplyFailed").empty();
      },
      seconds(30), std::chrono::milliseconds(500)));
  EXPECT_EQ(Firing(*prometheus, "InfinibandSwitchFanFailed"), std::set<std::string>{"ib-leaf01"});
  EXPECT_EQ(Firing(*prometheus, "InfinibandSwitchPowerSupplyFailed"), std::set<std::string>{"ib-leaf01"});
  EXPECT_TRUE(Firing(*prometheus, "InfinibandSwitchHot").empty()) << "85.5 C, under its 105 C";

  // Repaired: the alert conditions go silent.
  Plant("env ib-leaf01");
  ASSERT_TRUE(WaitUntil(
      [&] {
        return RunPromQL(*prometheus, "infiniband_switch_fan_status_info{status!~\"OK|ok\"} == 1").empty() &&
               RunPromQL(*prometheus, "infiniband_switch_power_supply_status_info{status!~\"OK|ok\"} == 1").empty() &&
               RunPromQL(*prometheus, "infiniband_switch_temperature_celsius > 80").empty();
      },
      seconds(30), std::chrono::milliseconds(500)));

  // Counted at libibumad: environment registers only of the leaf; of the
  // spine its GeneralInfo once and nothing else; of a host its
  // GeneralInfo once, its port's PPCNT and module, nothing of the
  // environment.
  using transport::MgmtClass;
  constexpr auto kReg = transport::vs_attr::kAccessRegister;
  constexpr auto kInfo = transport::vs_attr::kGeneralInfo;
  namespace reg = transport::reg;
  EXPECT_GT(SentOfRegister(tap, reg::kMtmp, hw_->LidOf("ib-leaf01")), 0u);
  EXPECT_GT(SentOfRegister(tap, reg::kMfsm, hw_->LidOf("ib-leaf01")), 0u);
  EXPECT_EQ(SentOfAttribute(tap, MgmtClass::kVendorNvidia, kReg, hw_->LidOf("ib-spine01")), 0u);
  EXPECT_EQ(SentOfAttribute(tap, MgmtClass::kVendorNvidia, kInfo, hw_->LidOf("ib-spine01")), 1u);
  EXPECT_EQ(SentOfAttribute(tap, MgmtClass::kVendorNvidia, kInfo, hw_->LidOf("ib-leaf01")), 1u);
  for (const char* host : {"cn0001", "cn0002"}) {
    EXPECT_EQ(SentOfAttribute(tap, MgmtClass::kVendorNvidia, kInfo, hw_->LidOf(host)), 1u) << host;
    EXPECT_EQ(SentOfAttribute(tap, MgmtClass::kVendorNvidia, kReg, hw_->LidOf(host)),
              SentOfRegister(tap, reg::kPpcnt, hw_->LidOf(host)) + SentOfRegister(tap, reg::kPddr, hw_->LidOf(host)))
        << host << ": its port's physical layer counters and module only";
  }
}

// A leaf with four hosts, for the cables' modules (PDDR page 3): each
// end's module named on its port, its temperature, threshold and power
// per lane; one host's module of another part than the other hosts'
// (a finding), one leaf port's module over its alarm threshold; the
// shipped rules raise exactly those two through a real Prometheus.
constexpr const char* kFourHostNet = R"(Switch 8 "ib-leaf01"
[1] "cn0001"[1]
[2] "cn0002"[1]
[3] "cn0003"[1]
[4] "cn0004"[1]

Hca 1 "cn0001"
[1] "ib-leaf01"[1]

Hca 1 "cn0002"
[1] "ib-leaf01"[2]

Hca 1 "cn0003"
[1] "ib-leaf01"[3]

Hca 1 "cn0004"
[1] "ib-leaf01"[4]
)";

class ModulesTest : public HardwareSuite<ModulesTest> {
 protected:
  static void SetUpTestSuite() { StartHardware(kFourHostNet, "ib-leaf01  quantum-2\ncn*  connectx-7\n"); }
  static void Plant(const std::string& line) {
    std::string error;
    ASSERT_TRUE(hw_->Command(line, &error)) << line << ": " << error;
  }
};

TEST_F(ModulesTest, EachEndsModuleOnItsPortAHotOneAndAnotherPartRaiseTheirAlerts) {
  Plant("module cn0004 1 vendor=Acme pn=ACM-400G-SR4 sn=AC0042 rev=B2 type=2 identifier=8");
  Plant("module ib-leaf01 2 temperature=80 high=75");
  std::string error;
  auto e =
      ExporterProcess::Start(*sim_, {"--sweep.interval=250ms", "--phy.interval=1s"}, &error, {}, hw_->PreloadEnv());
  ASSERT_NE(e, nullptr) << error;
  auto s = e->WaitFor([](const Scrape& x) { return x.Find("infiniband_port_module_info").size() == 8; }, seconds(30));
  ASSERT_TRUE(s.has_value()) << e->Log();
  const auto info = [&](const std::string& node, const std::string& port) {
    const auto all = s->Find("infiniband_port_module_info", {{"node", node}, {"port", port}});
    return all.size() == 1 ? all[0].labels : Labels{};
  };
  const Labels leaf1 = info("ib-leaf01", "1");
  EXPECT_EQ(leaf1.at("vendor"), "NVIDIA");
  EXPECT_EQ(leaf1.at("part_number"), "MMA4Z00-NS");
  EXPECT_EQ(leaf1.at("type"), "optical_module");
  EXPECT_EQ(leaf1.at("identifier"), "osfp");
  EXPECT_EQ(leaf1.at("length_meters"), "0");
  EXPECT_EQ(leaf1.at("serial_number").rfind("MT23", 0), 0u) << leaf1.at("serial_number");
  const Labels odd = info("cn0004", "1");
  EXPECT_EQ(odd.at("vendor"), "Acme");
  EXPECT_EQ(odd.at("part_number"), "ACM-400G-SR4");
  EXPECT_EQ(odd.at("serial_number"), "AC0042");
  EXPECT_EQ(odd.at("revision"), "B2");
  EXPECT_EQ(info("cn0001", "1").at("part_number"), "MMA4Z00-NS400");
  const Labels hot{{"node", "ib-leaf01"}, {"port", "2"}};
  EXPECT_EQ(s->Value("infiniband_port_module_temperature_celsius", hot), 80);
  EXPECT_EQ(s->Value("infiniband_port_module_temperature_high_threshold_celsius", hot), 75);
  EXPECT_EQ(s->Value("infiniband_port_module_temperature_celsius", {{"node", "ib-leaf01"}, {"port", "1"}}), 45);
  EXPECT_NEAR(*s->Value("infiniband_port_module_voltage_volts", hot), 3.3, 1e-9);
  EXPECT_EQ(s->Find("infiniband_port_module_rx_power_watts", hot).size(), 8u) << "an OSFP's eight lanes";
  EXPECT_NEAR(*s->Value("infiniband_port_module_rx_power_watts", {{"node", "ib-leaf01"}, {"port", "2"}, {"lane", "3"}}),
              0.0005, 1e-9);
  EXPECT_NEAR(*s->Value("infiniband_port_module_tx_power_watts", {{"node", "cn0002"}, {"port", "1"}, {"lane", "0"}}),
              0.0006, 1e-9);
  // Three hosts' ends have one part, the fourth another: one finding, on it.
  const auto differs = s->Find("infiniband_port_module_part_differs");
  ASSERT_EQ(differs.size(), 1u);
  EXPECT_EQ(differs[0].labels.at("node"), "cn0004");
  EXPECT_EQ(differs[0].labels.at("cables"), "host-leaf");
  EXPECT_EQ(differs[0].labels.at("end"), "hca");
  EXPECT_EQ(differs[0].labels.at("cables_part_number"), "MMA4Z00-NS400");
  // The port's page: both ends' modules.
  const std::string leaf = s->Find("infiniband_switch_info", {{"switch", "ib-leaf01"}}).at(0).labels.at("guid");
  int status = 0;
  const auto port = nlohmann::json::parse(e->Get("/api/v1/port?guid=" + leaf + "&port=4", &status));
  ASSERT_EQ(status, 200);
  EXPECT_EQ(port["module"]["this_end"]["part_number"], "MMA4Z00-NS") << port["module"].dump();
  EXPECT_EQ(port["module"]["this_end"]["temperature_celsius"], 45);
  EXPECT_EQ(port["module"]["far_end"]["vendor"], "Acme");
  EXPECT_EQ(port["module"]["far_end"]["serial_number"], "AC0042");

  // The shipped rules (minutes as seconds, the odd part's half hour as 5 s)
  // in a real Prometheus: the hot module and the odd part, each once, on
  // their ports.
  const auto prometheus = ScrapedBy(*e, &error, std::regex_replace(ShippedRules(), std::regex("for: 30s"), "for: 5s"));
  ASSERT_NE(prometheus, nullptr) << error;
  const auto firing = [&](const std::string& alert) {
    std::set<std::string> where;
    for (const auto& x : RunPromQL(*prometheus, "ALERTS{alertname=\"" + alert + "\",alertstate=\"firing\"}"))
      where.insert(x["metric"].value("node", "") + "[" + x["metric"].value("port", "") + "]");
    return where;
  };
  ASSERT_TRUE(WaitUntil(
      [&] { return !firing("InfinibandModuleHot").empty() && !firing("InfinibandModulePartDiffers").empty(); },
      seconds(60), std::chrono::milliseconds(500)))
      << prometheus->Log();
  EXPECT_EQ(firing("InfinibandModuleHot"), std::set<std::string>{"ib-leaf01[2]"});
  EXPECT_EQ(firing("InfinibandModulePartDiffers"), std::set<std::string>{"cn0004[1]"});

  // Cooled down: the alert resolves.
  Plant("module ib-leaf01 2");
  EXPECT_TRUE(
      WaitUntil([&] { return firing("InfinibandModuleHot").empty(); }, seconds(30), std::chrono::milliseconds(500)));
  Plant("module cn0004 1");
}

}  // namespace
}  // namespace ibfabric::testbed
