// The on-call path end to end, with real parts: the exporter on the
// simulator, Prometheus evaluating deploy/prometheus/infiniband-rules.yml,
// Alertmanager routing with deploy/alertmanager/alertmanager.yml, and a
// webhook receiver standing in for the pager. The shipped files are used
// as they are but for the receiver's URL and the timers (rules' `for` and
// Alertmanager's group timers in seconds instead of minutes). A planted
// bad cable arrives as one notification with both ends, severity and
// runbook, and resolves when the errors stop; a flapping link likewise; a
// cable that goes down pages as down, its bad-cable alert muted; a killed
// master SM arrives as one subnet-manager notification; a host's failing
// connections (its HCA's retries exhausted, in a sysfs tree laid out as the
// kernel's, read by the host's local exporter) page once for that host and
// HCA, and are muted on a host whose own cable is bad.

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
#include "tests/testbed/host_sysfs.h"
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
    // The local exporters of two hosts, each with its HCA in a sysfs tree.
    const Scrape fabric = exporter_->ScrapeMetrics();
    std::string targets = "'127.0.0.1:" + std::to_string(exporter_->port()) + "'";
    for (int i = 0; i < 2; ++i) {
      const std::string host = tree_->Host(kHosts[i]);
      sysfs_[i] = new HostSysfs();
      sysfs_[i]->AddHca("mlx5_0", std::stoull(NodeGuid(fabric, host), nullptr, 16), host + " mlx5_0", "0000:3b:00.0");
      sysfs_[i]->SetHwCounter("mlx5_0", 1, "req_transport_retries_exceeded", 0);
      local_[i] =
          ExporterProcess::Start(*sim_,
                                 {"--scope=local", "--sweep.interval=300ms", "--mad.timeout=20ms",
                                  "--alerts.config=" + dir_ + "/alerts.yaml", "--host.sysfs=" + sysfs_[i]->root()},
                                 &error, {}, FabricEnv({{"SIM_HOST", host}}))
              .release();
      ASSERT_NE(local_[i], nullptr) << error;
      ASSERT_TRUE(local_[i]->WaitForSweeps(1, seconds(60))) << local_[i]->Log();
      targets += ", '127.0.0.1:" + std::to_string(local_[i]->port()) + "'";
    }
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
                          "    static_configs: [{targets: [" +
                          targets + "], labels: {fabric: sim}}]\n",
                      {{"rules.yml", rules}}, &error)
                      .release();
    ASSERT_NE(prometheus_, nullptr) << error;
  }
  static void TearDownTestSuite() {
    delete prometheus_;
    delete alertmanager_;
    delete receiver_;
    for (int i = 0; i < 2; ++i) {
      delete local_[i];
      delete sysfs_[i];
    }
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
  // Hosts with a local exporter: the first's cable stays clean, the second's goes bad.
  static constexpr int kHosts[2] = {2, 4};
  static inline HostSysfs* sysfs_[2] = {};
  static inline ExporterProcess* local_[2] = {};
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

// A host whose HCA gives up on connections pages once, for that host and
// HCA, with the cable it is on; the same on a host whose own cable is bad
// fires in Prometheus but is muted under the cable's page.
TEST_F(OncallTest, AHostsFailedConnectionsPageForItsHcaAndNotUnderItsBadCable) {
  const std::string clean = tree_->Host(kHosts[0]), behind_bad = tree_->Host(kHosts[1]);
  // Prometheus has the counters at 0 from both hosts (an increase needs a sample before it).
  std::string error;
  ASSERT_TRUE(WaitUntil(
      [&] {
        const auto r = prometheus_->Query(
            "infiniband_host_port_hw_counters_total{counter=\"req_transport_retries_exceeded\"} == 0", &error);
        return r && r->size() == 2;
      },
      seconds(30)))
      << error;
  sysfs_[0]->SetHwCounter("mlx5_0", 1, "req_transport_retries_exceeded", 3);
  ASSERT_TRUE(WaitUntil([] { return !For("InfinibandHostRetriesExhausted").empty(); }, seconds(60))) << Dump();
  std::this_thread::sleep_for(seconds(5));  // time for any duplicate to arrive
  const std::vector<json> got = For("InfinibandHostRetriesExhausted");
  ASSERT_EQ(got.size(), 1u) << Dump();
  ASSERT_EQ(got[0]["alerts"].size(), 1u) << got[0].dump();
  const json& alert = got[0]["alerts"][0];
  const json& labels = alert["labels"];
  EXPECT_EQ(labels.value("host", ""), clean);
  EXPECT_EQ(labels.value("device", ""), "mlx5_0");
  EXPECT_EQ(labels.value("port", ""), "1");
  EXPECT_EQ(labels.value("counter", ""), "req_transport_retries_exceeded");
  EXPECT_EQ(labels.value("severity", ""), "critical");
  EXPECT_EQ(alert["annotations"].value("summary", ""),
            "HCA mlx5_0 port 1 on " + clean + " gave up on connections (req_transport_retries_exceeded)");
  EXPECT_NE(alert["annotations"].value("runbook", "").find("status page"), std::string::npos);
  // Its cable, named as the cable alerts name theirs.
  const Endpoint leaf = tree_->LeafHostPort(kHosts[0]);
  const std::string guid = NodeGuid(exporter_->ScrapeMetrics(), clean),
                    leaf_guid = NodeGuid(exporter_->ScrapeMetrics(), leaf.node);
  const std::string host_end = guid + "/1", leaf_end = leaf_guid + "/" + std::to_string(leaf.port);
  EXPECT_EQ(labels.value("cable", ""), std::stoull(guid, nullptr, 16) < std::stoull(leaf_guid, nullptr, 16)
                                           ? host_end + "/" + leaf_end
                                           : leaf_end + "/" + host_end);

  // The second host's cable goes bad: paged for the cable ...
  const Endpoint bad = tree_->LeafHostPort(kHosts[1]);
  Ramp ramp(bad, "PortCounters.SymbolErrorCounter", 10, 60000);
  std::string cable;
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (const json& n : For("InfinibandBadCable")) {
          for (const json& a : n["alerts"]) {
            const json& l = a["labels"];
            const std::string port = std::to_string(bad.port);
            if (a["status"] == "firing" &&
                ((l.value("node", "") == bad.node && l.value("port", "") == port) ||
                 (l.value("remote_node", "") == bad.node && l.value("remote_port", "") == port)))
              cable = l.value("cable", "");
          }
        }
        return !cable.empty();
      },
      seconds(60)))
      << Dump();
  // ... then its connections fail: firing in Prometheus, on the same cable,
  // but no notification.
  sysfs_[1]->SetHwCounter("mlx5_0", 1, "req_transport_retries_exceeded", 5);
  std::optional<json> firing;
  ASSERT_TRUE(WaitUntil(
      [&] {
        firing = prometheus_->Query(
            "ALERTS{alertname=\"InfinibandHostRetriesExhausted\",alertstate=\"firing\",host=\"" + behind_bad + "\"}",
            &error);
        return firing && !firing->empty();
      },
      seconds(60)))
      << error;
  EXPECT_EQ((*firing)[0]["metric"].value("cable", ""), cable) << firing->dump();
  std::this_thread::sleep_for(seconds(5));  // time for a notification to arrive
  for (const json& n : For("InfinibandHostRetriesExhausted")) {
    for (const json& a : n["alerts"]) EXPECT_EQ(a["labels"].value("host", ""), clean) << Dump();
  }
}

// A leaf's uplink pulled pages as down; the fat tree's missing cable at the
// same two ports fires in Prometheus too (the pattern names them), and is
// muted under the down link in what on-call receives. (Last: its
// notifications name a leaf the tests above look for.)
TEST_F(OncallTest, AnUplinkPulledPagesAsDownNotAlsoAsMissing) {
  const Endpoint up = tree_->LeafUplink(2, 2), far = *tree_->Peer(up);
  Console("Unlink " + At(up));
  std::string error;
  std::optional<json> missing;
  ASSERT_TRUE(WaitUntil(
      [&] {
        missing = prometheus_->Query("ALERTS{alertname=\"InfinibandMissingCable\",alertstate=\"firing\"}", &error);
        return missing && !missing->empty() && !For("InfinibandLinkDown").empty();
      },
      seconds(90)))
      << error << "\n"
      << Dump();
  ASSERT_EQ(missing->size(), 1u) << missing->dump();
  const json& m = (*missing)[0]["metric"];
  const auto end = [&](const char* node, const char* port) {
    return m.value(node, "") + "[" + m.value(port, "") + "]";
  };
  EXPECT_EQ((std::set<std::string>{end("node", "port"), end("remote_node", "remote_port")}),
            (std::set<std::string>{up.node + "[" + std::to_string(up.port) + "]",
                                   far.node + "[" + std::to_string(far.port) + "]"}))
      << m.dump();
  std::this_thread::sleep_for(seconds(5));  // time for a notification to arrive
  EXPECT_TRUE(For("InfinibandMissingCable").empty()) << Dump();
  // The master was killed above: a relinked port stays in INIT, so the
  // cable is put back for the fabric's teardown, not awaited.
  Console("ReLink " + At(up));
}

}  // namespace
}  // namespace ibfabric::testbed
