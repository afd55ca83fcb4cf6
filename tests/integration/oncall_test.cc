// The on-call path end to end, with real parts: the exporter on the
// simulator, Prometheus evaluating deploy/prometheus/infiniband-rules.yml,
// Alertmanager routing with deploy/alertmanager/alertmanager.yml, and a
// webhook receiver standing in for the pager. The shipped files are used
// as they are but for the receiver's URL and the timers (rules' `for` and
// Alertmanager's group timers in seconds instead of minutes). A planted
// bad cable arrives as one notification with both ends, severity and
// runbook, and resolves when the errors stop; a flapping link likewise; a
// cable that goes down pages as down, its bad-cable alert muted; a killed
// master SM arrives as one subnet-manager notification.

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "tests/integration/fabric_suite.h"
#include "tests/testbed/alertmanager.h"
#include "tests/testbed/prometheus_server.h"

namespace ibfabric::testbed {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// Every "for: Nm" as "for: Ns", and Alertmanager's timers in seconds.
std::string Seconds(const std::string& file) {
  std::string text = ForInSeconds(file);
  text = std::regex_replace(text, std::regex(R"(group_wait: \d+\w)"), "group_wait: 1s");
  text = std::regex_replace(text, std::regex(R"(group_interval: \d+\w)"), "group_interval: 2s");
  return text;
}

class OncallTest : public FabricSuite {
 protected:
  static void SetUpTestSuite() {
    StartFabric(Spec(2, 2, 2, 1, 8));
    if (!sim_) return;
    std::string error;
    sm_ = sim_->StartSubnetManager(&error).release();  // a resident master
    ASSERT_NE(sm_, nullptr) << error;
    dir_ = MakeTempDir("oncall");
    WriteFile(dir_ + "/alerts.yaml", kPagingAlerts);
    exporter_ = StartExporter({"--sweep.interval=300ms", "--discovery.interval=1m", "--mad.timeout=20ms",
                               "--sm.stall-after=5s", "--alerts.config=" + dir_ + "/alerts.yaml"})
                    .release();
    ASSERT_NE(exporter_, nullptr);
    receiver_ = new WebhookReceiver();
    std::string am_config = Seconds(SourceFile("deploy/alertmanager/alertmanager.yml"));
    am_config = std::regex_replace(am_config, std::regex(R"(url: \S+)"), "url: " + receiver_->url());
    alertmanager_ = AlertmanagerServer::Start(am_config, &error).release();
    ASSERT_NE(alertmanager_, nullptr) << error;
    const std::string rules = Seconds(SourceFile("deploy/prometheus/infiniband-rules.yml"));
    prometheus_ = PrometheusServer::Start(
                      "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                      "rule_files: [rules.yml]\n"
                      "alerting:\n"
                      "  alertmanagers: [{static_configs: [{targets: ['127.0.0.1:" +
                          std::to_string(alertmanager_->port()) +
                          "']}]}]\n"
                          "scrape_configs:\n"
                          "  - job_name: infiniband\n"
                          "    static_configs: [{targets: ['127.0.0.1:" +
                          std::to_string(exporter_->port()) + "'], labels: {fabric: sim}}]\n",
                      {{"rules.yml", rules}}, &error)
                      .release();
    ASSERT_NE(prometheus_, nullptr) << error;
  }
  static void TearDownTestSuite() {
    delete prometheus_;
    delete alertmanager_;
    delete receiver_;
    delete exporter_;
    delete sm_;
    if (!dir_.empty()) RemoveTree(dir_);
    StopFabric();
  }

  // The notifications for groups that hold `alertname`, in arrival order.
  static std::vector<json> For(const std::string& alertname) {
    std::vector<json> out;
    for (const json& n : receiver_->Notifications()) {
      for (const json& a : n["alerts"]) {
        if (a["labels"].value("alertname", "") == alertname) {
          out.push_back(n);
          break;
        }
      }
    }
    return out;
  }
  static bool WaitUntil(const std::function<bool()>& done, seconds limit) {
    return testbed::WaitUntil(done, limit, std::chrono::milliseconds(250));
  }
  static std::string Dump() {
    std::string out;
    for (const json& n : receiver_->Notifications()) out += n.dump() + "\n";
    return out;
  }

  // A fault on the cable at `end` raises `alertname` while `fault` holds
  // it: exactly one notification arrives, with the cable's two ends,
  // severity critical and the runbook, and a resolved one once it is over.
  static void ExpectOnePageThatResolves(const std::string& alertname, const Endpoint& end,
                                        const std::function<std::unique_ptr<Ramp>()>& fault) {
    {
      const auto held = fault();
      ASSERT_TRUE(WaitUntil([&] { return !For(alertname).empty(); }, seconds(60))) << Dump();
      std::this_thread::sleep_for(seconds(5));  // time for any duplicate to arrive
    }
    const std::vector<json> got = For(alertname);
    ASSERT_EQ(got.size(), 1u) << "one notification for the cable, not one per series or sweep\n" << Dump();
    EXPECT_EQ(got[0]["status"], "firing");
    ASSERT_EQ(got[0]["alerts"].size(), 1u) << got[0].dump();
    const json& alert = got[0]["alerts"][0];
    const json& labels = alert["labels"];
    auto name = [](const std::string& node, const std::string& port) { return node + "[" + port + "]"; };
    const Endpoint peer = *tree_->Peer(end);
    EXPECT_EQ(
        (std::set<std::string>{name(labels.value("node", ""), labels.value("port", "")),
                               name(labels.value("remote_node", ""), labels.value("remote_port", ""))}),
        (std::set<std::string>{name(end.node, std::to_string(end.port)), name(peer.node, std::to_string(peer.port))}))
        << labels.dump();
    EXPECT_EQ(labels.value("severity", ""), "critical");
    EXPECT_NE(alert["annotations"].value("runbook", "").find("Reseat the cable"), std::string::npos);
    // Its status page link opens the alert's port on this exporter.
    const std::string link = alert["annotations"].value("status_page", "");
    const std::string prefix = "http://" + labels.value("instance", "") + "/#port=";
    ASSERT_EQ(link.rfind(prefix, 0), 0u) << link;
    const std::string fragment = link.substr(prefix.size());
    EXPECT_EQ(fragment, labels.value("guid", "") + ":" + labels.value("port", ""));
    const auto colon = fragment.rfind(':');
    int status = 0;
    const json port = json::parse(
        exporter_->Get("/api/v1/port?guid=" + fragment.substr(0, colon) + "&port=" + fragment.substr(colon + 1),
                       &status),
        nullptr, false);
    ASSERT_EQ(status, 200) << link;
    EXPECT_EQ(name(port["end"]["node"].get<std::string>(), std::to_string(port["end"]["port"].get<int>())),
              name(labels.value("node", ""), labels.value("port", "")));
    // Over: the exporter clears it, Prometheus resolves it, the receiver hears so.
    ASSERT_TRUE(WaitUntil(
        [&] {
          const auto all = For(alertname);
          return all.size() >= 2 && all.back()["status"] == "resolved";
        },
        seconds(60)))
        << Dump();
  }

  static inline Process* sm_ = nullptr;
  static inline std::string dir_;
  static inline ExporterProcess* exporter_ = nullptr;
  static inline WebhookReceiver* receiver_ = nullptr;
  static inline AlertmanagerServer* alertmanager_ = nullptr;
  static inline PrometheusServer* prometheus_ = nullptr;
};

TEST_F(OncallTest, ABadCableIsOneNotificationWithBothEndsAndResolves) {
  const Endpoint leaf = tree_->LeafUplink(1, 1, 0);
  ExpectOnePageThatResolves("InfinibandBadCable", leaf, [&] {
    return std::make_unique<Ramp>(leaf, "PortCounters.SymbolErrorCounter", 10, 60000);  // 100 a second: critical
  });
}

// A link that keeps going down (its LinkDownedCounter moving, as real
// ports count their flaps) arrives once, as flapping, and resolves.
TEST_F(OncallTest, AFlappingLinkIsOneNotificationAndResolves) {
  const Endpoint uplink = tree_->LeafUplink(2, 2, 0);
  ExpectOnePageThatResolves("InfinibandFlappingLink", uplink, [&] {
    return std::make_unique<Ramp>(uplink, "PortCounters.LinkDownedCounter", 1);  // 10 a second
  });
}

// A cable that takes errors and then goes down pages as down: the bad-cable
// alert it still has is muted in the cable's notification (inhibited), and
// so is the host behind it not answering.
TEST_F(OncallTest, ADownLinkIsNotAlsoPagedAsBad) {
  const Endpoint leaf = tree_->LeafHostPort(3);
  Ramp ramp(leaf, "PortCounters.SymbolErrorCounter", 10, 60000);
  auto cable_of = [&](const json& n) {
    const json& g = n["commonLabels"];  // the group is the cable (GUIDs); its alerts share the names too
    return g.value("remote_node", "") == leaf.node || g.value("node", "") == leaf.node;
  };
  auto firing = [](const json& n) {
    std::set<std::string> out;
    if (!n.is_object()) return out;
    for (const json& a : n["alerts"]) {
      if (a["status"] == "firing") out.insert(a["labels"].value("alertname", ""));
    }
    return out;
  };
  auto last_for_cable = [&]() -> json {
    json last;
    for (const json& n : receiver_->Notifications()) {
      if (cable_of(n)) last = n;
    }
    return last;
  };
  ASSERT_TRUE(WaitUntil([&] { return firing(last_for_cable()).count("InfinibandBadCable") > 0; }, seconds(60)))
      << Dump();
  Console("Unlink " + At(leaf));
  ASSERT_TRUE(WaitUntil([&] { return firing(last_for_cable()).count("InfinibandLinkDown") > 0; }, seconds(60)))
      << Dump();
  // Still bad in Prometheus, but not in what on-call receives.
  std::string error;
  const auto still = prometheus_->Query("ALERTS{alertname=\"InfinibandBadCable\",alertstate=\"firing\"}", &error);
  ASSERT_TRUE(still) << error;
  EXPECT_FALSE(still->empty()) << "the bad-cable alert still fires in Prometheus";
  EXPECT_EQ(firing(last_for_cable()), std::set<std::string>{"InfinibandLinkDown"}) << last_for_cable().dump();
  // The host behind it does not answer either: unreachable in Prometheus,
  // muted under the down link in what on-call receives.
  ASSERT_TRUE(WaitUntil(
      [&] {
        const auto r =
            prometheus_->Query("ALERTS{alertname=\"InfinibandNodeUnreachable\",alertstate=\"firing\"}", &error);
        return r && !r->empty();
      },
      seconds(60)))
      << "the host behind the down cable is unreachable in Prometheus";
  std::this_thread::sleep_for(seconds(4));  // time for a notification to arrive
  EXPECT_TRUE(For("InfinibandNodeUnreachable").empty()) << Dump();
  ramp.Stop();
  Console("ReLink " + At(leaf));
}

TEST_F(OncallTest, AKilledMasterIsOneSubnetManagerNotification) {
  ASSERT_TRUE(WaitUntil([] { return !For("InfinibandNoStandbySM").empty(); }, seconds(60)))
      << "one SM, no standby: " << Dump();
  const std::size_t before = receiver_->Notifications().size();
  sm_->Signal(SIGKILL);
  ASSERT_TRUE(WaitUntil([] { return !For("InfinibandNoMasterSM").empty(); }, seconds(60))) << Dump();
  std::this_thread::sleep_for(seconds(5));
  // One group for the subnet managers, per fabric: no master is paged once.
  std::size_t with_master = 0;
  const auto all = receiver_->Notifications();
  for (std::size_t i = before; i < all.size(); ++i) {
    const json& n = all[i];
    bool master = false;
    for (const json& a : n["alerts"]) {
      master = master || (a["status"] == "firing" && a["labels"].value("alertname", "") == "InfinibandNoMasterSM");
    }
    if (!master) continue;
    ++with_master;
    EXPECT_EQ(n["groupLabels"], (json{{"fabric", "sim"}})) << n.dump();
    EXPECT_EQ(n["commonLabels"].value("severity", ""), "critical") << n.dump();
  }
  EXPECT_EQ(with_master, 1u) << Dump();
}

}  // namespace
}  // namespace ibfabric::testbed
