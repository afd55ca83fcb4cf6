// collectors/kubernetes_node_collector.cc: the verdict of a host from its
// drain list, capped by the fabric's (the oldest faults first); label
// values as Kubernetes takes them; and the collector's writes through a
// fake HTTP client: nothing in a dry run, the two PATCHes with the service
// account's token, again only on a change or a heartbeat, a failed write
// not retried within a minute, nothing from a fabric-scope exporter.

#include "collectors/kubernetes_node_collector.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "collectors/registry.h"
#include "tests/testbed/process.h"
#include "tests/unit/collector_bed.h"

namespace ibfabric::collectors {
namespace {

using std::chrono::seconds;
using Wall = std::chrono::system_clock::time_point;

DrainHost Listed(const std::string& host, DrainHost::State state, const std::string& reason) {
  DrainHost h;
  h.host = host;
  h.node = host;
  h.state = state;
  h.reason = reason;
  return h;
}

// A fabric's drain list as GET /api/v1/drain answers it: each host faulty
// since the given time.
nlohmann::json FabricList(std::size_t hosts, const std::vector<std::pair<std::string, std::string>>& faulty,
                          bool every_host = true) {
  nlohmann::json drain = nlohmann::json::array();
  for (const auto& [host, since] : faulty) {
    drain.push_back({{"host", host}, {"node", host}, {"state", "faulty"}, {"since", since}, {"clean_since", nullptr}});
  }
  return {{"fabric_hosts", hosts}, {"every_host", every_host}, {"drain", drain}, {"resume", nlohmann::json::array()}};
}

TEST(KubernetesNodeTest, AHostIsFalseWhileItsListNamesItFaultyOrHolding) {
  KubernetesNodeOptions o;
  EXPECT_EQ(JudgeNode("cn0003", nullptr, nullptr, o).reason, "NotJudged");
  EXPECT_EQ(JudgeNode("cn0003", nullptr, nullptr, o).status, "Unknown");
  DrainList list;
  EXPECT_EQ(JudgeNode("cn0003", &list, nullptr, o),
            (NodeVerdict{"True", "CablesClean", "ibfabric: no fault on this host's cables"}));
  list.hosts.push_back(Listed("cn0003", DrainHost::State::kFaulty, "ibfabric: bad_cable cn0003[1] - leaf1[3]"));
  EXPECT_EQ(JudgeNode("cn0003", &list, nullptr, o),
            (NodeVerdict{"False", "CableFault", "ibfabric: bad_cable cn0003[1] - leaf1[3]"}));
  EXPECT_EQ(JudgeNode("cn0004", &list, nullptr, o).status, "True") << "another host's fault is not this one's";
  list.hosts[0].state = DrainHost::State::kHolding;
  EXPECT_EQ(JudgeNode("cn0003", &list, nullptr, o).reason, "HoldingAfterFault");
  list.hosts[0].state = DrainHost::State::kResume;
  EXPECT_EQ(JudgeNode("cn0003", &list, nullptr, o).status, "True");
}

TEST(KubernetesNodeTest, TheCapMakesTheOldestFaultsFalseAndTheRestUnknown) {
  KubernetesNodeOptions o;
  o.max_hosts = 2;
  o.max_percent = 10;
  DrainList own;
  own.hosts.push_back(Listed("cn0003", DrainHost::State::kFaulty, "ibfabric: bad_cable x"));
  // 40 hosts: 10 % is 4, the count caps at 2. cn0003's fault is the newest.
  nlohmann::json fabric = FabricList(
      40, {{"cn0009", "2026-11-29T10:00:00Z"}, {"cn0003", "2026-11-29T12:00:00Z"}, {"cn0001", "2026-11-29T11:00:00Z"}});
  NodeVerdict v = JudgeNode("cn0003", &own, &fabric, o);
  EXPECT_EQ(v.status, "Unknown");
  EXPECT_EQ(v.reason, "CapReached");
  EXPECT_EQ(v.message, "ibfabric: bad_cable x; not False: 3 hosts of the fabric are to be drained, at most 2 at once");
  o.max_hosts = 3;
  EXPECT_EQ(JudgeNode("cn0003", &own, &fabric, o).status, "False");
  // 20 hosts: 10 % is 2.
  fabric["fabric_hosts"] = 20;
  EXPECT_EQ(JudgeNode("cn0003", &own, &fabric, o).reason, "CapReached");
  // The same fault older than the others: first.
  fabric["drain"][1]["since"] = "2026-11-29T09:00:00Z";
  EXPECT_EQ(JudgeNode("cn0003", &own, &fabric, o).status, "False");
  // Not in the fabric's list yet: after every host it names.
  const nlohmann::json without = FabricList(20, {{"cn0009", "2026-11-29T10:00:00Z"}});
  EXPECT_EQ(JudgeNode("cn0003", &own, &without, o).status, "False");
  const nlohmann::json full = FabricList(20, {{"cn0009", "2026-11-29T10:00:00Z"}, {"cn0001", "2026-11-29T11:00:00Z"}});
  EXPECT_EQ(JudgeNode("cn0003", &own, &full, o).reason, "CapReached");
}

TEST(KubernetesNodeTest, AListTheCapCannotBeCountedOnLeavesTheHostUnknown) {
  KubernetesNodeOptions o;
  DrainList own;
  own.hosts.push_back(Listed("cn0003", DrainHost::State::kFaulty, "ibfabric: bad_cable x"));
  const nlohmann::json error = "http://fabric:9315/api/v1/drain: Connection";
  NodeVerdict v = JudgeNode("cn0003", &own, &error, o);
  EXPECT_EQ(v.status, "Unknown");
  EXPECT_EQ(v.reason, "FabricListUnavailable");
  EXPECT_NE(v.message.find("http://fabric:9315/api/v1/drain: Connection"), std::string::npos) << v.message;
  // An inter-switch or sharded exporter's list does not judge every host.
  const nlohmann::json partial = FabricList(40, {}, false);
  v = JudgeNode("cn0003", &own, &partial, o);
  EXPECT_EQ(v.reason, "FabricListUnavailable");
  EXPECT_NE(v.message.find("does not judge every host's cables"), std::string::npos) << v.message;
  const nlohmann::json garbled = {{"drain", 3}};
  EXPECT_EQ(JudgeNode("cn0003", &own, &garbled, o).reason, "FabricListUnavailable");
}

TEST(KubernetesNodeTest, LabelValuesAreWhatKubernetesTakes) {
  EXPECT_EQ(LabelValue("ib-su01-leaf03"), "ib-su01-leaf03");
  EXPECT_EQ(LabelValue("Quantum-2 Mellanox Technologies (0x0002c9030000a1b2)"),
            "Quantum-2_Mellanox_Technologies__0x0002c9030000a1b2");
  EXPECT_EQ(LabelValue("(spine)"), "spine");
  EXPECT_EQ(LabelValue("--"), "");
  EXPECT_EQ(LabelValue(std::string(70, 'a')).size(), 63u);
  EXPECT_EQ(LabelValue(std::string(62, 'a') + "-b"), std::string(62, 'a')) << "cut at 63, then no '-' at the end";
  const auto labels = PlacementLabels(
      {{"host", "gpu0002"}, {"leaf", "ib-su01-leaf01"}, {"spine_group", nullptr}, {"unit", "su 1"}, {"rails", 2}});
  EXPECT_EQ(nlohmann::json(labels),
            (nlohmann::json{{"leaf", "ib-su01-leaf01"}, {"rails", "2"}, {"spine-group", nullptr}, {"unit", "su_1"}}));
}

// The collector on the bed's fabric in local scope, its drain list set by
// the test, its requests answered by `answer` and recorded.
struct NodeBed {
  Bed b;
  std::vector<HttpRequest> sent;
  std::function<HttpAnswer(const HttpRequest&)> answer = [](const HttpRequest&) { return HttpAnswer{200, "{}", ""}; };
  std::string credentials = testbed::MakeTempDir("kube-sa");
  std::unique_ptr<Collector> c;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();

  explicit NodeBed(const std::function<void(KubernetesNodeOptions&)>& tweak = nullptr) {
    testbed::WriteFile(credentials + "/token", "s3cret\n");
    CollectorOptions o;
    KubernetesNodeOptions& k = o.Own<KubernetesNodeOptions>();
    k.node = "cn0003";
    k.apply = true;
    k.api_server = "https://api:6443";
    k.credentials = credentials;
    k.heartbeat = seconds(60);
    if (tweak) tweak(k);
    o.http = [this](const HttpRequest& r) {
      sent.push_back(r);
      return answer(r);
    };
    b.parts.scope.kind = topology::ScopeKind::kLocal;
    c = b.Make("kubernetes_node", o);
  }
  ~NodeBed() { testbed::RemoveTree(credentials); }
  void List(std::vector<DrainHost> hosts) {
    auto list = std::make_shared<DrainList>();
    list->hosts = std::move(hosts);
    b.parts.by_collector.Set(kDrainCollector, std::shared_ptr<const DrainList>(list));
  }
  // A sweep at t0 + `at`; the requests it made.
  std::vector<HttpRequest> Sweep(seconds at) {
    sent.clear();
    b.SweepWith({c.get()}, t0 + at);
    return sent;
  }
  const KubernetesNodeState& State() {
    return *b.parts.by_collector.Get<KubernetesNodeState>(kKubernetesNodeCollector);
  }
};

TEST(KubernetesNodeTest, TheConditionIsPatchedWithTheTokenOnAChangeAndAHeartbeat) {
  NodeBed n;
  n.List({Listed("cn0003", DrainHost::State::kFaulty, "ibfabric: bad_cable cn0003 mlx5_0[1] - leaf1[3]")});
  std::vector<HttpRequest> sent = n.Sweep(seconds(0));
  ASSERT_EQ(sent.size(), 2u);  // labels (none known: removed), then the condition
  EXPECT_EQ(sent[0].url, "https://api:6443/api/v1/nodes/cn0003");
  EXPECT_EQ(sent[0].content_type, "application/merge-patch+json");
  EXPECT_EQ(nlohmann::json::parse(sent[0].body)["metadata"]["labels"]["ibfabric.io/unit"], nullptr);
  const HttpRequest& status = sent[1];
  EXPECT_EQ(status.method, "PATCH");
  EXPECT_EQ(status.url, "https://api:6443/api/v1/nodes/cn0003/status");
  EXPECT_EQ(status.content_type, "application/strategic-merge-patch+json");
  EXPECT_EQ(status.bearer_token, "s3cret");
  EXPECT_EQ(status.ca_file, n.credentials + "/ca.crt");
  nlohmann::json c = nlohmann::json::parse(status.body)["status"]["conditions"][0];
  EXPECT_EQ(c["type"], "InfinibandFabricHealthy");
  EXPECT_EQ(c["status"], "False");
  EXPECT_EQ(c["reason"], "CableFault");
  EXPECT_EQ(c["message"], "ibfabric: bad_cable cn0003 mlx5_0[1] - leaf1[3]");
  const std::string went_false = c["lastTransitionTime"];
  // Nothing changed, no heartbeat due: nothing sent.
  EXPECT_TRUE(n.Sweep(seconds(30)).empty());
  // Clean: True at once, its transition then.
  n.List({});
  sent = n.Sweep(seconds(31));
  ASSERT_EQ(sent.size(), 1u);
  c = nlohmann::json::parse(sent[0].body)["status"]["conditions"][0];
  EXPECT_EQ(c["status"], "True");
  EXPECT_EQ(c["reason"], "CablesClean");
  // The heartbeat: the same condition again, its transition kept.
  sent = n.Sweep(seconds(92));
  ASSERT_EQ(sent.size(), 1u);
  const nlohmann::json again = nlohmann::json::parse(sent[0].body)["status"]["conditions"][0];
  EXPECT_EQ(again["lastTransitionTime"], c["lastTransitionTime"]);
  EXPECT_GE(again["lastHeartbeatTime"].get<std::string>(), c["lastHeartbeatTime"].get<std::string>());
  EXPECT_GE(c["lastTransitionTime"].get<std::string>(), went_false);
  EXPECT_EQ(n.State().verdict.status, "True");
  EXPECT_EQ((n.State().writes.at({"condition", "ok"})), 3u);
  EXPECT_EQ((n.State().writes.at({"labels", "ok"})), 1u);
}

TEST(KubernetesNodeTest, ADryRunSendsNothingAndAFailedWriteWaitsAMinute) {
  NodeBed dry([](KubernetesNodeOptions& k) { k.apply = false; });
  dry.List({Listed("cn0003", DrainHost::State::kFaulty, "ibfabric: bad_cable x")});
  EXPECT_TRUE(dry.Sweep(seconds(0)).empty());
  EXPECT_EQ((dry.State().writes.at({"condition", "dry_run"})), 1u);
  EXPECT_EQ(dry.State().verdict.status, "False");
  EXPECT_TRUE(dry.Sweep(seconds(1)).empty());
  EXPECT_EQ((dry.State().writes.at({"condition", "dry_run"})), 1u) << "logged once a change, as a write would be";

  NodeBed failing;
  failing.answer = [](const HttpRequest&) { return HttpAnswer{403, "{\"reason\":\"Forbidden\"}", ""}; };
  failing.List({});
  EXPECT_EQ(failing.Sweep(seconds(0)).size(), 2u);
  EXPECT_EQ((failing.State().writes.at({"condition", "error"})), 1u);
  EXPECT_TRUE(failing.Sweep(seconds(30)).empty()) << "not again within a minute";
  failing.answer = [](const HttpRequest&) { return HttpAnswer{200, "{}", ""}; };
  EXPECT_EQ(failing.Sweep(seconds(61)).size(), 2u);
  EXPECT_EQ((failing.State().writes.at({"condition", "ok"})), 1u);
}

TEST(KubernetesNodeTest, TheFabricGivesTheLabelsAndTheCap) {
  NodeBed n([](KubernetesNodeOptions& k) {
    k.fabric_url = "http://fabric:9315";
    k.max_hosts = 1;
  });
  n.answer = [](const HttpRequest& r) {
    if (r.url == "http://fabric:9315/api/v1/placement?host=cn0003") {
      return HttpAnswer{200, R"({"host":"cn0003","leaf":"leaf1","spine_group":"pod 1","unit":null,"rails":null})", ""};
    }
    if (r.url == "http://fabric:9315/api/v1/drain") {
      return HttpAnswer{
          200, FabricList(40, {{"cn0001", "2026-11-29T10:00:00Z"}, {"cn0003", "2026-11-29T11:00:00Z"}}).dump(), ""};
    }
    return HttpAnswer{200, "{}", ""};
  };
  n.List({Listed("cn0003", DrainHost::State::kFaulty, "ibfabric: bad_cable x")});
  const std::vector<HttpRequest> sent = n.Sweep(seconds(0));
  ASSERT_EQ(sent.size(), 4u);
  EXPECT_EQ(sent[0].url, "http://fabric:9315/api/v1/drain");
  EXPECT_EQ(sent[0].bearer_token, "") << "the exporter's own API takes no service account token";
  EXPECT_EQ(sent[1].url, "http://fabric:9315/api/v1/placement?host=cn0003");
  EXPECT_EQ(nlohmann::json::parse(sent[2].body), (nlohmann::json{{"metadata",
                                                                  {{"labels",
                                                                    {{"ibfabric.io/leaf", "leaf1"},
                                                                     {"ibfabric.io/rails", nullptr},
                                                                     {"ibfabric.io/spine-group", "pod_1"},
                                                                     {"ibfabric.io/unit", nullptr}}}}}}));
  const nlohmann::json c = nlohmann::json::parse(sent[3].body)["status"]["conditions"][0];
  EXPECT_EQ(c["status"], "Unknown");
  EXPECT_EQ(c["reason"], "CapReached");
}

TEST(KubernetesNodeTest, AFabricScopeExporterWritesNothing) {
  NodeBed n;
  n.b.parts.scope.kind = topology::ScopeKind::kFabric;
  n.List({Listed("cn0003", DrainHost::State::kFaulty, "ibfabric: bad_cable x")});
  EXPECT_TRUE(n.Sweep(seconds(0)).empty());
  EXPECT_EQ(n.b.parts.by_collector.Get<KubernetesNodeState>(kKubernetesNodeCollector), nullptr);
}

}  // namespace
}  // namespace ibfabric::collectors
