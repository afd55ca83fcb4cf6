// Drop-in for the users of treydock/infiniband_exporter and its fork by
// SckyzO: PromQL in the shape of their dashboard panels, recording rules
// and alerts (written here from the metric names and labels, not copied)
// runs through a real Prometheus scraping the exporter on the simulator.
// Each panel query returns the planted value on the planted port; each
// alert condition is silent on the clean fabric and fires on its fault,
// on exactly the faulty device or port.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "tests/integration/fabric_suite.h"
#include "tests/integration/promql.h"
#include "tests/testbed/prometheus_server.h"

namespace ibfabric::testbed {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// The alert conditions, in the peers' shapes (thresholds scaled to a test's
// minutes where theirs are hours).
constexpr const char* kCollectErrors = "infiniband_exporter_collect_errors > 0";
constexpr const char* kCollectTimeouts = "infiniband_exporter_collect_timeouts > 0";
constexpr const char* kCollectorStale = "(time() - infiniband_exporter_last_execution) > 900";
constexpr const char* kSwitchScrapeFailing = "infiniband_switch_up == 0";
constexpr const char* kHcaScrapeFailing = "infiniband_hca_up == 0";
constexpr const char* kSwitchPortDown =
    "infiniband_switch_port_state == 0 and on (guid, port) max_over_time(infiniband_switch_port_state[1h]) == 1";
constexpr const char* kLinkDownedRising = "increase(infiniband_switch_port_link_downed_total[1m]) > 0";
constexpr const char* kRcvErrorRate = "rate(infiniband_switch_port_receive_errors_total[10s]) > 1";

class CompatTest : public FabricSuite {
 protected:
  static void SetUpTestSuite() {
    StartFabric(Spec(3, 2, 2, 1, 8));
    if (!sim_) return;
    // Planted before the exporter starts: receive errors with their
    // breakdown on a leaf port, symbol errors on an HCA port.
    Plant(RcvPort(), "PortCounters.PortRcvErrors", 17);
    Plant(RcvPort(), "PortRcvErrorDetails.PortMalformedPacketErrors", 11);
    Plant(SymbolHca(), "PortCounters.SymbolErrorCounter", 23);
    exporter_ = StartExporter({"--sweep.interval=500ms", "--discovery.interval=1m", "--mad.timeout=20ms"}).release();
    ASSERT_NE(exporter_, nullptr);
    std::string error;
    prometheus_ = PrometheusServer::Start(
                      "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                      "scrape_configs:\n"
                      "  - job_name: infiniband\n"
                      "    static_configs: [{targets: ['127.0.0.1:" +
                          std::to_string(exporter_->port()) + "'], labels: {fabric: sim}}]\n",
                      {}, &error)
                      .release();
    ASSERT_NE(prometheus_, nullptr) << error;
    ASSERT_TRUE(WaitUntil([] { return Number("count_over_time(infiniband_exporter_sweeps_total[10s])") >= 5; }))
        << prometheus_->Log();
  }
  static void TearDownTestSuite() {
    delete prometheus_;
    delete exporter_;
    StopFabric();
  }

  static Endpoint RcvPort() { return tree_->LeafHostPort(2); }       // leaf 1 -> host 2
  static Endpoint SymbolHca() { return tree_->HostPort(3); }         // host 3's own port
  static Endpoint RampPort() { return tree_->LeafHostPort(6); }      // leaf 3 -> host 6
  static Endpoint DownedPort() { return tree_->LeafHostPort(5); }    // leaf 3 -> host 5
  static Endpoint UnlinkedPort() { return tree_->LeafHostPort(4); }  // leaf 2 -> host 4

  static json Run(const std::string& expr) { return RunPromQL(*prometheus_, expr); }
  static double Number(const std::string& expr) { return PromQLNumber(*prometheus_, expr); }
  // Prometheus scrapes and evaluates once a second: look as often.
  static bool WaitUntil(const std::function<bool()>& done, seconds limit = seconds(60)) {
    return testbed::WaitUntil(done, limit, seconds(1));
  }
  // `label` of every series a query returns.
  static std::set<std::string> Labels(const json& result, const std::string& label) {
    std::set<std::string> out;
    for (const auto& s : result) out.insert(s["metric"].value(label, ""));
    return out;
  }
  // "guid/port" of every series a query returns.
  static std::set<std::string> Ports(const json& result) {
    std::set<std::string> out;
    for (const auto& s : result) out.insert(s["metric"].value("guid", "") + "/" + s["metric"].value("port", ""));
    return out;
  }
  static std::string SwitchGuid(const std::string& name) {
    return Run("infiniband_switch_info{switch=\"" + name + "\"}")[0]["metric"]["guid"];
  }
  static std::string PortKey(const Endpoint& e) { return SwitchGuid(e.node) + "/" + std::to_string(e.port); }

  static inline ExporterProcess* exporter_ = nullptr;
  static inline PrometheusServer* prometheus_ = nullptr;
};

TEST_F(CompatTest, PanelQueriesShowThePlantedValuesOnThePlantedPorts) {
  const Endpoint rcv = RcvPort();
  const std::string at = "switch=\"" + rcv.node + "\",port=\"" + std::to_string(rcv.port) + "\"";
  // Error counters by port, as the peers' port tables show them.
  EXPECT_EQ(Number("infiniband_switch_port_receive_errors_total{" + at + "}"), 17);
  EXPECT_EQ(Ports(Run("infiniband_switch_port_receive_errors_total > 0")), std::set<std::string>{PortKey(rcv)});
  // The receive-error breakdown (PortRcvErrorDetails).
  EXPECT_EQ(Number("infiniband_switch_port_malformed_packet_errors_total{" + at + "}"), 11);
  EXPECT_EQ(Ports(Run("infiniband_switch_port_malformed_packet_errors_total > 0")),
            std::set<std::string>{PortKey(rcv)});
  EXPECT_GT(Number("count(infiniband_switch_port_looping_errors_total)"), 0);
  // An HCA panel joined with the info metric on the port GUID.
  const json hca =
      Run("infiniband_hca_port_symbol_error_total * on (guid, port) group_left (node_guid) infiniband_hca_info > 0");
  ASSERT_EQ(hca.size(), 1u) << hca.dump();
  EXPECT_EQ(hca[0]["metric"]["hca"], SymbolHca().node);
  EXPECT_EQ(hca[0]["value"][1], "23");
  EXPECT_NE(hca[0]["metric"]["node_guid"], hca[0]["metric"]["guid"]) << "ibsim's port GUIDs are not its node GUIDs";
  // treydock's recording rules: per-port rates joined with the uplink.
  const json uplinks = Run(
      "rate(infiniband_switch_port_transmit_data_bytes_total[10s]) * on (guid, port) group_left (uplink, uplink_port) "
      "infiniband_switch_uplink_info");
  EXPECT_EQ(uplinks.size(), Run("infiniband_switch_uplink_info").size());
  bool found = false;
  for (const auto& s : uplinks) {
    if (s["metric"]["switch"] == rcv.node && s["metric"]["port"] == std::to_string(rcv.port)) {
      found = true;
      EXPECT_EQ(s["metric"]["uplink"], tree_->Host(2));
    }
  }
  EXPECT_TRUE(found) << uplinks.dump();
  // Per switch, per fabric: the sums their panels chart.
  EXPECT_EQ(Labels(Run("sum by (switch) (infiniband_switch_port_receive_errors_total) > 0"), "switch"),
            std::set<std::string>{rcv.node});
  // Port state and rate panels: every cabled switch port up at 4xQDR
  // (32 Gb/s of data, 40 Gb/s signalled).
  const double cabled = Number("count(infiniband_switch_uplink_info)");
  EXPECT_EQ(Number("count(infiniband_switch_port_state == 1)"), cabled);
  EXPECT_EQ(Number("infiniband_switch_port_rate_bytes_per_second{" + at + "}"), 4e9);
  EXPECT_EQ(Number("infiniband_switch_port_raw_rate_bytes_per_second{" + at + "}"), 5e9);
  EXPECT_EQ(Number("infiniband_hca_port_rate_bytes_per_second{hca=\"" + SymbolHca().node + "\"}"), 4e9);
  // Devices up, the exporter's own collection healthy and current.
  EXPECT_EQ(Number("count(infiniband_switch_up == 1)"), 5);
  EXPECT_EQ(Number("count(infiniband_hca_up == 1)"), 6);
  EXPECT_LT(Number("time() - infiniband_exporter_last_execution"), 10);
}

TEST_F(CompatTest, AlertConditionsAreSilentWhenCleanAndFireOnTheirFaultOnly) {
  for (const char* alert : {kCollectErrors, kCollectTimeouts, kCollectorStale, kSwitchScrapeFailing, kHcaScrapeFailing,
                            kSwitchPortDown, kLinkDownedRising, kRcvErrorRate}) {
    EXPECT_TRUE(Run(alert).empty()) << alert << " on the clean fabric: " << Run(alert).dump();
  }

  // The faults: a receive-error ramp, a LinkDownedCounter step, a pulled
  // host cable, a spine that stopped answering.
  Ramp ramp(RampPort(), "PortCounters.PortRcvErrors", 10);  // 100 a second
  Plant(DownedPort(), "PortCounters.LinkDownedCounter", 3);
  Console("Unlink " + At(UnlinkedPort()));
  const std::string dead = tree_->Spine(2);
  Console("Error \"" + dead + "\"[0] 100");
  const bool fired = WaitUntil([] {
    for (const char* alert : {kCollectTimeouts, kSwitchScrapeFailing, kHcaScrapeFailing, kSwitchPortDown,
                              kLinkDownedRising, kRcvErrorRate}) {
      if (Run(alert).empty()) return false;
    }
    return true;
  });
  std::string state;
  for (const char* alert :
       {kCollectTimeouts, kSwitchScrapeFailing, kHcaScrapeFailing, kSwitchPortDown, kLinkDownedRising, kRcvErrorRate}) {
    state += std::string(alert) + " -> " + Run(alert).dump() + "\n";
  }
  state += "link_downed: " + Run("infiniband_switch_port_link_downed_total > 0").dump() + "\n";
  EXPECT_TRUE(fired) << state << exporter_->Log();

  // treydock's exporter-health alert: the dead switch's reads timed out.
  // (The pulled host cable may show as an HCA timeout until its re-walk.)
  EXPECT_TRUE(Labels(Run(kCollectTimeouts), "collector").count("switch")) << state;
  EXPECT_EQ(Number("infiniband_exporter_collect_timeouts{collector=\"switch\"}"), 1) << state;
  EXPECT_TRUE(Run(kCollectErrors).empty()) << "a timeout is no error status";
  EXPECT_TRUE(Run(kCollectorStale).empty());
  // The fork's: the dead spine and the host behind the pulled cable.
  EXPECT_EQ(Labels(Run(kSwitchScrapeFailing), "switch"), std::set<std::string>{dead}) << state;
  EXPECT_EQ(Labels(Run(kHcaScrapeFailing), "hca"), std::set<std::string>{tree_->Host(4)}) << state;
  EXPECT_EQ(Ports(Run(kSwitchPortDown)), std::set<std::string>{PortKey(UnlinkedPort())}) << state;
  EXPECT_TRUE(Ports(Run(kLinkDownedRising)).count(PortKey(DownedPort()))) << state;
  EXPECT_EQ(Ports(Run(kRcvErrorRate)), std::set<std::string>{PortKey(RampPort())}) << state;

  ramp.Stop();
  Console("Error \"" + dead + "\"[0] 0");
  Console("ReLink " + At(UnlinkedPort()));
}

// treydock's InfinibandCollectorStale, `(time() - last_execution) > 900`,
// scaled to seconds: an exporter that sweeps once a minute goes on being
// scraped, and its last execution is its last sweep's end, not the scrape.
TEST_F(CompatTest, TheCollectorStaleConditionFiresWhenSweepsStopWhileScrapesGoOn) {
  auto slow = StartExporter({"--sweep.interval=1m", "--discovery.interval=1h", "--mad.timeout=20ms"});
  ASSERT_TRUE(slow);
  std::string error;
  auto prometheus = PrometheusServer::Start(
      "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
      "scrape_configs:\n"
      "  - job_name: slow\n"
      "    static_configs: [{targets: ['127.0.0.1:" +
          std::to_string(slow->port()) + "']}]\n",
      {}, &error);
  ASSERT_TRUE(prometheus) << error;
  const std::string stale = "(time() - infiniband_exporter_last_execution) > 5";
  auto fired = [&] {
    auto r = prometheus->Query(stale, &error);
    return r && r->size() == 1;
  };
  EXPECT_TRUE(WaitUntil(fired, seconds(30))) << prometheus->Log();
  // Scrapes went on all along; the fast exporter's is not stale.
  auto up = prometheus->Query("up{job=\"slow\"} == 1", &error);
  EXPECT_TRUE(up && up->size() == 1);
  EXPECT_TRUE(Run(stale).empty());
}

}  // namespace
}  // namespace ibfabric::testbed
