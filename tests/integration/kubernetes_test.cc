// The Kubernetes node writes on the simulated fabric: a DaemonSet's
// exporter (local scope, on a server of a rail-optimized fabric in pods,
// its two HCAs in a sysfs tree) labels its node with its place as the
// fabric-scope exporter places it and keeps its InfinibandFabricHealthy
// condition, through a recording stand-in for the API server over TLS with
// the service account's token. A planted bad cable of the server makes it
// False with the drain list's reason; clean, it holds, then is True. The
// calls made are exactly those deploy/kubernetes/rbac.yaml allows. A dry
// run sends nothing; past the cap the condition is Unknown.

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/integration/fabric_suite.h"
#include "tests/testbed/host_sysfs.h"
#include "tests/testbed/kube_api.h"

namespace ibfabric::testbed {
namespace {

using nlohmann::json;
using std::chrono::seconds;

const std::vector<std::string> kRailDevices = {"mlx5_0", "mlx5_1"};

// Two pods of one scalable unit each: two servers with two HCAs (rails
// mlx5_0 and mlx5_1), a leaf a rail, a rail spine a rail in each pod,
// cores above.
class KubernetesNodeTest : public FabricSuite {
 protected:
  static void SetUpTestSuite() {
    FatTreeSpec s;
    s.rails.units = 2;
    s.rails.servers = 2;
    s.rails.devices = kRailDevices;
    s.pods = 2;
    s.spines = 2;
    s.cores = 2;
    StartFabric(s);
    if (!sim_) return;
    StartResidentSm();  // the SA names the far end of the server's second HCA's cable
    dir_ = MakeTempDir("kube");
    WriteFile(dir_ + "/alerts.yaml", kPagingAlerts);
    fabric_ = StartExporter({"--sweep.interval=500ms", "--sweep.rotation=2s",
                             "--alerts.config=" + dir_ + "/alerts.yaml", "--drain.resume-after=3s"})
                  .release();
  }
  static void TearDownTestSuite() {
    delete fabric_;
    if (!dir_.empty()) RemoveTree(dir_);
    StopFabric();
  }

  // The local exporter of server (u, s), its HCAs in `sysfs`, writing to
  // `api` as node "k8s-" + server, with `args` besides.
  std::unique_ptr<ExporterProcess> Local(int u, int s, HostSysfs& sysfs, const KubeApiServer& api,
                                         std::vector<std::string> args) {
    const Scrape scrape = fabric_->ScrapeMetrics();
    const std::string server = tree_->Server(u, s);
    for (std::size_t d = 0; d < kRailDevices.size(); ++d) {
      const std::string ca = server + " " + kRailDevices[d];
      sysfs.AddHca(kRailDevices[d], std::stoull(NodeGuid(scrape, ca), nullptr, 16), ca,
                   "0000:" + std::to_string(30 + d) + ":00.0");
    }
    std::vector<std::string> all{"--scope=local",
                                 "--sweep.interval=500ms",
                                 "--sweep.rotation=2s",
                                 "--alerts.config=" + dir_ + "/alerts.yaml",
                                 "--drain.resume-after=3s",
                                 "--host.sysfs=" + sysfs.root(),
                                 "--kubernetes.node=k8s-" + server,
                                 "--kubernetes.api-server=" + api.url(),
                                 "--kubernetes.credentials=" + api.credentials(),
                                 "--kubernetes.fabric-url=http://127.0.0.1:" + std::to_string(fabric_->port()),
                                 "--kubernetes.heartbeat=10s"};
    all.insert(all.end(), args.begin(), args.end());
    std::string error;
    auto e = ExporterProcess::Start(*sim_, all, &error, {}, FabricEnv({{"SIM_HOST", server + " mlx5_0"}}));
    EXPECT_NE(e, nullptr) << error;
    if (e && !e->WaitForSweeps(1, seconds(60))) {
      ADD_FAILURE() << "no sweep: " << e->Log();
      return nullptr;
    }
    return e;
  }
  // The node's condition once `done` holds of it (within `limit`), else the last.
  static json ConditionWhen(const KubeApiServer& api, const std::string& node,
                            const std::function<bool(const json&)>& done, seconds limit = seconds(40)) {
    json c;
    WaitUntil(
        [&] {
          c = api.Condition(node, "InfinibandFabricHealthy");
          return !c.is_null() && done(c);
        },
        limit, std::chrono::milliseconds(250));
    return c;
  }
  // (verb, resource) of each grant of deploy/kubernetes/rbac.yaml's ClusterRole.
  static std::set<std::string> Grants() {
    std::set<std::string> out;
    for (const YAML::Node& doc : YAML::LoadAll(SourceFile("deploy/kubernetes/rbac.yaml"))) {
      if (doc["kind"].as<std::string>() != "ClusterRole") continue;
      for (const YAML::Node& rule : doc["rules"]) {
        for (const YAML::Node& r : rule["resources"]) {
          for (const YAML::Node& v : rule["verbs"]) out.insert(v.as<std::string>() + " " + r.as<std::string>());
        }
      }
    }
    return out;
  }

  static inline ExporterProcess* fabric_ = nullptr;
  static inline std::string dir_;
};

TEST_F(KubernetesNodeTest, TheNodeIsLabelledWithItsPlaceAndLosesItsHealthWithItsCable) {
  ASSERT_NE(fabric_, nullptr);
  KubeApiServer api;
  ASSERT_TRUE(api.ok());
  HostSysfs sysfs;
  auto e = Local(1, 2, sysfs, api, {"--kubernetes.apply", "--kubernetes.max-unhealthy-percent=50"});
  ASSERT_NE(e, nullptr);
  const std::string server = tree_->Server(1, 2), node = "k8s-" + server;

  // Clean: True, and the labels of its place as the fabric exporter has it.
  json c = ConditionWhen(api, node, [](const json& x) { return x["status"] == "True"; });
  EXPECT_EQ(c["status"], "True") << c.dump() << e->Log();
  EXPECT_EQ(c["reason"], "CablesClean");
  int status = 0;
  const json placed = json::parse(fabric_->Get("/api/v1/placement?host=" + server, &status), nullptr, false);
  ASSERT_EQ(status, 200) << placed.dump();
  EXPECT_EQ(placed["leaf"], tree_->RailLeaf(1, 1));
  EXPECT_EQ(placed["unit"], "ib-su01");
  EXPECT_EQ(placed["rails"], 2);
  // Its spine group is its leaf's pod as /api/v1/structure groups the
  // switches (on this fabric "pod 1": the leaves' and aggregation
  // switches' names share nothing).
  const json structure = json::parse(fabric_->Get("/api/v1/structure", &status), nullptr, false);
  std::string pod;
  for (const json& s : structure["switches"]) {
    if (s["name"] == tree_->RailLeaf(1, 1) && s["pod"].is_number())
      pod = structure["pods"][s["pod"].get<std::size_t>()]["name"];
  }
  ASSERT_FALSE(pod.empty()) << structure.dump();
  std::replace(pod.begin(), pod.end(), ' ', '_');  // Slurm-safe, as the tree's names ("pod 1": "pod_1")
  EXPECT_EQ(placed["spine_group"], pod);
  const json labels = api.Node(node)["metadata"]["labels"];
  EXPECT_EQ(labels, (json{{"ibfabric.io/leaf", tree_->RailLeaf(1, 1)},
                          {"ibfabric.io/spine-group", pod},
                          {"ibfabric.io/unit", "ib-su01"},
                          {"ibfabric.io/rails", "2"}}))
      << api.Node(node).dump();

  // Its rail-0 cable goes bad: False, with the drain list's reason.
  auto ramp = std::make_unique<Ramp>(Endpoint{tree_->RailLeaf(1, 1), 2}, "PortCounters.SymbolErrorCounter", 10, 60000);
  c = ConditionWhen(api, node, [](const json& x) { return x["status"] == "False"; });
  ASSERT_EQ(c["status"], "False") << c.dump() << e->Log();
  EXPECT_EQ(c["reason"], "CableFault");
  const json listed = json::parse(e->Get("/api/v1/drain", &status), nullptr, false);
  ASSERT_EQ(listed["drain"].size(), 1u) << listed.dump();
  EXPECT_EQ(listed["drain"][0]["host"], server);
  EXPECT_EQ(c["message"], listed["drain"][0]["reason"]);
  EXPECT_EQ(c["message"].get<std::string>().rfind("ibfabric: bad_cable " + server + " mlx5_0[1] - ", 0), 0u)
      << c.dump();
  const std::string went_false = c["lastTransitionTime"];

  // Clean again: held (still False), then True.
  ramp.reset();
  c = ConditionWhen(api, node, [](const json& x) { return x["reason"] == "HoldingAfterFault"; });
  EXPECT_EQ(c["status"], "False") << c.dump();
  c = ConditionWhen(api, node, [](const json& x) { return x["status"] == "True"; });
  ASSERT_EQ(c["status"], "True") << c.dump();
  EXPECT_GT(c["lastTransitionTime"].get<std::string>(), went_false);
  const Scrape m = e->ScrapeMetrics();
  EXPECT_EQ(m.Value("infiniband_kubernetes_node_condition", {{"status", "True"}}), 1);
  EXPECT_GE(m.Value("infiniband_kubernetes_node_writes_total", {{"what", "condition"}, {"result", "ok"}}), 4);
  EXPECT_EQ(m.Value("infiniband_kubernetes_node_writes_total", {{"what", "labels"}, {"result", "ok"}}), 1);

  // Every call: the token, a PATCH of this node or its status, answered
  // 200; the calls are exactly what the shipped RBAC grants.
  std::set<std::string> made;
  for (const KubeApiServer::Request& r : api.Requests()) {
    EXPECT_EQ(r.authorization, "Bearer ibfabric-test-token");
    EXPECT_EQ(r.status, 200) << r.path << " " << r.body;
    ASSERT_EQ(r.method, "PATCH");
    if (r.path == "/api/v1/nodes/" + node) {
      made.insert("patch nodes");
    } else if (r.path == "/api/v1/nodes/" + node + "/status") {
      made.insert("patch nodes/status");
    } else {
      ADD_FAILURE() << "unexpected call " << r.method << " " << r.path;
    }
  }
  EXPECT_EQ(made, Grants());
}

TEST_F(KubernetesNodeTest, ADryRunWritesNothingAndPastTheCapTheNodeIsUnknown) {
  ASSERT_NE(fabric_, nullptr);
  KubeApiServer api;
  ASSERT_TRUE(api.ok());
  HostSysfs dry_sysfs, capped_sysfs;
  // Bad cables on two servers of unit 2; one exporter in a dry run (its cap
  // all of the fabric's hosts), one whose cap lets no node be False.
  auto ramp1 = std::make_unique<Ramp>(Endpoint{tree_->RailLeaf(2, 1), 1}, "PortCounters.SymbolErrorCounter", 10, 60000);
  auto ramp2 = std::make_unique<Ramp>(Endpoint{tree_->RailLeaf(2, 1), 2}, "PortCounters.SymbolErrorCounter", 10, 60000);
  auto dry = Local(2, 1, dry_sysfs, api, {"--kubernetes.max-unhealthy-percent=100"});
  auto capped = Local(2, 2, capped_sysfs, api, {"--kubernetes.apply", "--kubernetes.max-unhealthy=0"});
  ASSERT_NE(dry, nullptr);
  ASSERT_NE(capped, nullptr);
  const std::string capped_node = "k8s-" + tree_->Server(2, 2);
  const json c = ConditionWhen(api, capped_node, [](const json& x) { return x["reason"] == "CapReached"; });
  EXPECT_EQ(c["status"], "Unknown") << c.dump() << capped->Log();
  EXPECT_NE(c["message"].get<std::string>().find("at most 0 at once"), std::string::npos) << c.dump();
  // The dry run said what it would write, and wrote nothing.
  ASSERT_TRUE(WaitUntil(
      [&] {
        return dry->ScrapeMetrics().Value("infiniband_kubernetes_node_condition", {{"status", "False"}}) == 1;
      },
      seconds(30), std::chrono::milliseconds(250)))
      << dry->Log();
  EXPECT_GE(dry->ScrapeMetrics().Value("infiniband_kubernetes_node_writes_total",
                                       {{"what", "condition"}, {"result", "dry_run"}}),
            1);
  EXPECT_NE(dry->Log().find("dry_run=true"), std::string::npos);
  EXPECT_TRUE(api.Node("k8s-" + tree_->Server(2, 1)).is_null()) << api.Node("k8s-" + tree_->Server(2, 1)).dump();
}

}  // namespace
}  // namespace ibfabric::testbed
