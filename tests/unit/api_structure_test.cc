// What the status page loads on a big fabric: natural order of names, pods
// of a three-tier tree, GET /api/v1/structure, /api/v1/search and
// /api/v1/node's bodies.

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "collectors/api/json.h"
#include "fabric_builder.h"
#include "topology/analysis.h"
#include "topology/hosts.h"

namespace ibfabric::collectors {
namespace {

using nlohmann::json;
using testing::FabricBuilder;

TEST(NaturalLessTest, NumbersByValueTextByByte) {
  std::vector<std::string> names{"agg1-10", "agg1-2", "agg1-1", "agg10-1", "agg2-1", "agg1-02", "agg", "agg1-1a"};
  std::sort(names.begin(), names.end(), [](const auto& x, const auto& y) { return topology::NaturalLess(x, y); });
  EXPECT_EQ(names, (std::vector<std::string>{"agg", "agg1-1", "agg1-1a", "agg1-2", "agg1-02", "agg1-10", "agg2-1",
                                             "agg10-1"}));
  EXPECT_TRUE(topology::NaturalLess("leaf2", "leaf10"));
  EXPECT_FALSE(topology::NaturalLess("leaf10", "leaf2"));
  EXPECT_FALSE(topology::NaturalLess("leaf2", "leaf2"));
  EXPECT_TRUE(topology::NaturalLess("cn99999999999999999999", "cn100000000000000000000"));  // past 64 bits
  EXPECT_TRUE(topology::NaturalLess("", "a"));
}

// Two pods of 2 leaves and 2 aggregation switches, each aggregation
// switch a of a pod cabled to core a; one host per leaf. `named`: names
// that say the pod (ib-p01-leaf01), else names that do not (leaf1).
// The cable leaf 0 - agg 0 of pod 0 runs at 1x.
struct ThreeTier {
  FabricBuilder b;
  std::vector<int> leaves, aggs, cores, hosts;
  topology::Fabric fabric;
  topology::Analysis analysis;
  explicit ThreeTier(bool named) {
    const auto two = [](int i) { return std::string(i < 9 ? "0" : "") + std::to_string(i + 1); };
    // Added in an order unlike the natural one, so that sorting shows.
    for (int p = 1; p >= 0; --p) {
      for (int i = 1; i >= 0; --i) {
        leaves.push_back(b.Switch(named ? "ib-p" + two(p) + "-leaf" + two(i) : "leaf" + std::to_string(p * 2 + i + 1)));
        aggs.push_back(b.Switch(named ? "ib-p" + two(p) + "-agg" + two(i) : "agg" + std::to_string(p * 2 + i + 1)));
      }
    }
    for (int c = 0; c < 2; ++c) cores.push_back(b.Switch("core" + std::to_string(c + 1)));
    // leaves[k] is pod 1 - k/2, index 1 - k%2.
    for (int k = 0; k < 4; ++k) {
      for (int j = 0; j < 4; ++j) {
        if (k / 2 == j / 2) b.Connect(leaves[k], aggs[j], k == 3 && j == 3 ? 1 : 2);
      }
      hosts.push_back(b.Ca("cn0" + std::to_string(k + 1) + " HCA-1"));
      b.Connect(hosts.back(), leaves[k]);
    }
    for (int j = 0; j < 4; ++j) b.Connect(aggs[j], cores[1 - j % 2]);
    fabric = b.Build();
    analysis = topology::Analyze(fabric);
  }
};

TEST(PodsTest, ThreeTiersHaveTwoPodsNamedByTheirSwitches) {
  ThreeTier t(true);
  ASSERT_EQ(t.analysis.tiers, 3);
  const topology::Pods pods = topology::FindPods(t.fabric, t.analysis);
  EXPECT_EQ(pods.names, (std::vector<std::string>{"ib-p01", "ib-p02"}));
  ASSERT_EQ(pods.of.size(), 8u) << "leaves and aggregation switches, not cores";
  EXPECT_EQ(pods.of.at(t.b.Guid(t.leaves[3])), 0);  // ib-p01-leaf01
  EXPECT_EQ(pods.of.at(t.b.Guid(t.aggs[2])), 0);
  EXPECT_EQ(pods.of.at(t.b.Guid(t.leaves[0])), 1);
  EXPECT_EQ(pods.of.count(t.b.Guid(t.cores[0])), 0u);
}

TEST(PodsTest, NamesThatSayNothingNumberThePods) {
  ThreeTier t(false);
  const topology::Pods pods = topology::FindPods(t.fabric, t.analysis);
  EXPECT_EQ(pods.names, (std::vector<std::string>{"pod 1", "pod 2"}));
  EXPECT_EQ(pods.of.at(t.b.Guid(t.leaves[3])), 0);  // leaf1, the first in natural order
}

// Rail-optimized, three tiers: 2 pods of 2 scalable units of 2 servers
// with an HCA a rail (2 rails); each rail's leaves go to that rail's spine
// of the pod, and the cores join the rails. Below the cores the rails of a
// pod are apart; the servers join them: 2 pods, not 4.
TEST(PodsTest, ARailOptimizedFabricsPodsAreItsUnitsNotItsRails) {
  FabricBuilder b;
  std::vector<int> leaves, spines;
  const int core = b.Switch("ib-core01");
  for (int p = 0; p < 2; ++p) {
    for (int r = 0; r < 2; ++r) {
      spines.push_back(b.Switch("ib-p0" + std::to_string(p + 1) + "-agg0" + std::to_string(r + 1)));
      b.Connect(spines.back(), core);
    }
    for (int u = 0; u < 2; ++u) {
      const std::string unit = "ib-su" + std::to_string(2 * p + u + 1);
      std::vector<int> unit_leaves;
      for (int r = 0; r < 2; ++r) {
        unit_leaves.push_back(b.Switch(unit + "-leaf" + std::to_string(r + 1)));
        b.Connect(unit_leaves.back(), spines[static_cast<std::size_t>(2 * p + r)]);
      }
      for (int s = 0; s < 2; ++s) {
        for (int r = 0; r < 2; ++r) {
          const int hca =
              b.Ca("gpu" + std::to_string(2 * p + u + 1) + std::to_string(s + 1) + " mlx5_" + std::to_string(r));
          b.Connect(hca, unit_leaves[static_cast<std::size_t>(r)]);
        }
      }
      leaves.insert(leaves.end(), unit_leaves.begin(), unit_leaves.end());
    }
  }
  const topology::Fabric f = b.Build();
  const topology::Analysis a = topology::Analyze(f);
  ASSERT_EQ(a.tiers, 3);
  const topology::HostAnalysis hosts = topology::AnalyzeHosts(f, topology::HostPattern{});
  ASSERT_EQ(hosts.layout, topology::HostLayout::kRailOptimized);
  EXPECT_EQ(topology::FindPods(f, a).names.size(), 4u) << "a pod's rails, apart below the cores";
  const topology::Pods pods = topology::FindPods(f, a, &hosts.leaf_unit);
  EXPECT_EQ(pods.names.size(), 2u);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(pods.of.at(b.Guid(leaves[static_cast<std::size_t>(k)])), 0) << k;
    EXPECT_EQ(pods.of.at(b.Guid(leaves[static_cast<std::size_t>(k + 4)])), 1) << k;
  }
  EXPECT_EQ(pods.of.at(b.Guid(spines[1])), 0);
  EXPECT_EQ(pods.of.at(b.Guid(spines[2])), 1);
  EXPECT_EQ(pods.of.count(b.Guid(core)), 0u);
  const json s = StructureJson(f, a, &hosts);
  std::set<int> in_pods;
  for (const auto& sw : s["switches"]) {
    if (!sw["pod"].is_null()) in_pods.insert(sw["pod"].get<int>());
  }
  EXPECT_EQ(in_pods, (std::set<int>{0, 1})) << s["switches"].dump();
}

TEST(PodsTest, TwoTiersHaveNone) {
  FabricBuilder b;
  const int l = b.Switch("leaf1"), s = b.Switch("spine1"), h = b.Ca("h1");
  b.Connect(l, s);
  b.Connect(h, l);
  const auto f = b.Build();
  EXPECT_TRUE(topology::FindPods(f, topology::Analyze(f)).of.empty());
}

TEST(StructureTest, SwitchesInTierPodAndNaturalOrderWithTheirCables) {
  ThreeTier t(true);
  const json s = StructureJson(t.fabric, t.analysis);
  std::vector<std::string> names;
  for (const auto& sw : s["switches"]) names.push_back(sw["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"ib-p01-leaf01", "ib-p01-leaf02", "ib-p02-leaf01", "ib-p02-leaf02",
                                             "ib-p01-agg01", "ib-p01-agg02", "ib-p02-agg01", "ib-p02-agg02", "core1",
                                             "core2"}));
  EXPECT_EQ(s["switches"][0]["tier"], 0);
  EXPECT_EQ(s["switches"][0]["pod"], 0);
  EXPECT_EQ(s["switches"][0]["cas"], 1);
  EXPECT_EQ(s["switches"][2]["pod"], 1);
  EXPECT_TRUE(s["switches"][8]["pod"].is_null());
  EXPECT_EQ(s["pods"], json::parse(R"([{"name":"ib-p01","switches":4},{"name":"ib-p02","switches":4}])"));
  EXPECT_EQ(s["tiers"].size(), 3u);
  EXPECT_EQ(s["tiers"][2], json::parse(R"({"tier":2,"name":"core","switches":2})"));
  EXPECT_EQ(s["cas"], 4);
  EXPECT_EQ(s["ca_links"], 4);
  // 8 leaf-agg cables and 4 agg-core; the 1x one between ib-p01-leaf01 (0)
  // and ib-p01-agg01 (4) is degraded.
  ASSERT_EQ(s["links"].size(), 12u);
  int degraded = 0;
  for (const auto& l : s["links"]) {
    EXPECT_LT(l[0].get<int>(), l[1].get<int>());
    EXPECT_EQ(l[2], 1);
    if (l[3] == 1) {
      ++degraded;
      EXPECT_EQ(l[0], 0);
      EXPECT_EQ(l[1], 4);
    }
  }
  EXPECT_EQ(degraded, 1);
}

std::vector<std::string> Found(const json& r) {
  std::vector<std::string> out;
  for (const auto& x : r["results"]) out.push_back(x["name"]);
  return out;
}

SearchQuery Q(const std::string& text, int limit = 20) { return {text, limit}; }

TEST(SearchTest, ByNameHostLidAndGuid) {
  ThreeTier t(true);
  const auto search = [&](const std::string& q, int limit = 20) {
    return SearchJson(t.fabric, &t.analysis, Q(q, limit));
  };
  // A host name finds its HCA, with the cable to open.
  const json host = search("CN02");
  ASSERT_EQ(Found(host), std::vector<std::string>{"cn02 HCA-1"});
  EXPECT_EQ(host["results"][0]["match"], "host");
  EXPECT_EQ(host["results"][0]["type"], "ca");
  EXPECT_EQ(host["results"][0]["ports"][0]["remote"]["name"], "ib-p02-leaf01");
  // Part of a name: every match, in natural order, the limit applied after counting.
  const json leaves = search("leaf", 3);
  EXPECT_EQ(leaves["total"], 4);
  EXPECT_EQ(Found(leaves), (std::vector<std::string>{"ib-p01-leaf01", "ib-p01-leaf02", "ib-p02-leaf01"}));
  EXPECT_EQ(leaves["results"][0]["pod"], "ib-p01");
  EXPECT_EQ(leaves["results"][0]["tier_name"], "leaf");
  // A LID: the node with it (FabricBuilder: LID = index + 1).
  const int core2 = t.cores[1];
  EXPECT_EQ(Found(search(std::to_string(core2 + 1))), std::vector<std::string>{"core2"});
  // A GUID in full, with or without 0x, and its last digits.
  const std::string guid = topology::FormatGuid(t.b.Guid(core2));
  EXPECT_EQ(Found(search(guid)), std::vector<std::string>{"core2"});
  EXPECT_EQ(Found(search(guid.substr(2))), std::vector<std::string>{"core2"});
  const json tail = search(guid.substr(guid.size() - 4));
  ASSERT_FALSE(tail["results"].empty());
  EXPECT_EQ(tail["results"][0]["name"], "core2");
  EXPECT_EQ(tail["results"][0]["match"], "guid");
  EXPECT_EQ(search("nothing-like-it")["total"], 0);
}

TEST(SearchTest, AnExactNameComesBeforeLongerOnes) {
  FabricBuilder b;
  b.Switch("leaf10");
  b.Switch("leaf1");
  b.Switch("leaf1x");
  const auto f = b.Build();
  EXPECT_EQ(Found(SearchJson(f, nullptr, Q("leaf1"))), (std::vector<std::string>{"leaf1", "leaf1x", "leaf10"}));
}

TEST(SearchTest, BadQueriesNameTheParameter) {
  SearchQuery q;
  std::string error;
  EXPECT_FALSE(ParseSearchQuery({}, &q, &error));
  EXPECT_NE(error.find("q is required"), std::string::npos);
  EXPECT_FALSE(ParseSearchQuery({{"q", "  "}}, &q, &error));
  EXPECT_NE(error.find("q must be"), std::string::npos);
  EXPECT_FALSE(ParseSearchQuery({{"q", std::string(201, 'a')}}, &q, &error));
  EXPECT_FALSE(ParseSearchQuery({{"q", "a"}, {"limit", "0"}}, &q, &error));
  EXPECT_NE(error.find("limit"), std::string::npos);
  EXPECT_FALSE(ParseSearchQuery({{"q", "a"}, {"limit", "5x"}}, &q, &error));
  EXPECT_FALSE(ParseSearchQuery({{"q", "a"}, {"q", "b"}}, &q, &error));
  EXPECT_NE(error.find("more than once"), std::string::npos);
  EXPECT_FALSE(ParseSearchQuery({{"q", "a"}, {"x", "1"}}, &q, &error));
  EXPECT_NE(error.find("unknown parameter 'x'"), std::string::npos);
  ASSERT_TRUE(ParseSearchQuery({{"q", " cn01 "}, {"limit", "200"}}, &q, &error)) << error;
  EXPECT_EQ(q.text, "cn01");
  EXPECT_EQ(q.limit, 200);
}

TEST(NodeDetailTest, PortsCablesFindingsAndPod) {
  ThreeTier t(true);
  Snapshot s;
  s.fabric = std::make_shared<topology::Fabric>(t.fabric);
  s.nodes = LabelsOf(t.fabric);
  s.topology = std::make_shared<topology::Analysis>(t.analysis);
  const std::uint64_t leaf = t.b.Guid(t.leaves[3]);  // ib-p01-leaf01: the 1x cable to ib-p01-agg01
  const json d = NodeDetailJson(s, leaf);
  ASSERT_FALSE(d.is_null());
  EXPECT_EQ(d["node"]["name"], "ib-p01-leaf01");
  EXPECT_EQ(d["node"]["pod"], "ib-p01");
  EXPECT_EQ(d["node"]["tier_name"], "leaf");
  EXPECT_FALSE(d["node"].contains("ports"));
  ASSERT_EQ(d["ports"].size(), 3u);  // two aggregation switches and the host
  int degraded = 0;
  for (const auto& p : d["ports"]) {
    EXPECT_EQ(p["end"]["node"], "ib-p01-leaf01");
    ASSERT_FALSE(p["link"]["remote"].is_null());
    if (!p["degraded"].is_null()) {
      ++degraded;
      EXPECT_EQ(p["link"]["remote"]["name"], "ib-p01-agg01");
      EXPECT_EQ(p["link"]["rate"], "1xQDR");
    }
  }
  EXPECT_EQ(degraded, 1);
  ASSERT_FALSE(d["findings"].empty());
  bool below = false;
  for (const auto& f : d["findings"]) below |= f["kind"] == "below_enabled" && f["b"]["node"] == "ib-p01-agg01";
  EXPECT_TRUE(below) << d["findings"].dump();
  EXPECT_TRUE(d["alerts"].empty());
  EXPECT_TRUE(NodeDetailJson(s, 0x1234).is_null());
  // An HCA's port GUID (the metrics' and the alert rules' `guid`) names its node and port too.
  const std::uint64_t host = t.b.Guid(t.hosts[0]);
  auto labels = std::make_shared<NodeLabels>(*s.nodes);
  (*labels)[host].port_guids[1] = 0xabc0001;
  s.nodes = std::move(labels);
  EXPECT_EQ(NodeDetailJson(s, 0xabc0001)["node"]["name"], "cn01 HCA-1");
  const json port = PortDetailJson(s, {0xabc0001, 1});
  ASSERT_FALSE(port.is_null());
  EXPECT_EQ(port["end"]["node"], "cn01 HCA-1");
  EXPECT_EQ(port["link"]["remote"]["name"], "ib-p02-leaf02");
  std::uint64_t guid = 0;
  std::string error;
  EXPECT_FALSE(ParseNodeQuery({}, &guid, &error));
  EXPECT_FALSE(ParseNodeQuery({{"guid", "zz"}}, &guid, &error));
  EXPECT_FALSE(ParseNodeQuery({{"guid", "0x1"}, {"port", "1"}}, &guid, &error));
  EXPECT_NE(error.find("'port'"), std::string::npos) << error;
  ASSERT_TRUE(ParseNodeQuery({{"guid", "0x10a"}}, &guid, &error));
  EXPECT_EQ(guid, 0x10au);
}

}  // namespace
}  // namespace ibfabric::collectors

namespace ibfabric::collectors {
namespace {

// Two servers of two HCAs each, HCA k of both on leaf k: rail-optimized.
struct TwoServers {
  testing::FabricBuilder b;
  Snapshot s;
  TwoServers() {
    const int l0 = b.Switch("leaf-a"), l1 = b.Switch("leaf-b"), spine = b.Switch("spine");
    b.Connect(l0, spine);
    b.Connect(l1, spine);
    for (const char* host : {"h1", "h2"}) {
      b.Connect(b.Ca(std::string(host) + " mlx5_0"), l0);
      b.Connect(b.Ca(std::string(host) + " mlx5_1"), l1);
    }
    const topology::Fabric f = b.Build();
    s.fabric = std::make_shared<topology::Fabric>(f);
    s.nodes = LabelsOf(f);
    s.topology = std::make_shared<topology::Analysis>(topology::Analyze(f));
    s.hosts = std::make_shared<topology::HostAnalysis>(topology::AnalyzeHosts(f, topology::HostPattern{}));
  }
};

TEST(HostDetailTest, AHostsHcasInRailOrderWithTheirLeaves) {
  TwoServers t;
  ASSERT_EQ(t.s.hosts->layout, topology::HostLayout::kRailOptimized);
  const json h = HostDetailJson(t.s, "h2");
  ASSERT_FALSE(h.is_null());
  EXPECT_EQ(h["host"], "h2");
  EXPECT_EQ(h["layout"], "rail_optimized");
  EXPECT_EQ(h["unit"], "leaf");  // what leaf-a and leaf-b share
  ASSERT_EQ(h["hcas"].size(), 2u);
  EXPECT_EQ(h["hcas"][1]["device"], "mlx5_1");
  EXPECT_EQ(h["hcas"][1]["name"], "h2 mlx5_1");
  EXPECT_EQ(h["hcas"][1]["ports"][0]["leaf"]["node"], "leaf-b");
  EXPECT_EQ(h["hcas"][1]["ports"][0]["rail"], "mlx5_1");
  EXPECT_EQ(h["hcas"][1]["ports"][0]["state"], "active");
  EXPECT_TRUE(h["findings"].empty());
  EXPECT_TRUE(HostDetailJson(t.s, "h3").is_null());
  std::string name, error;
  EXPECT_FALSE(ParseHostQuery({}, &name, &error));
  EXPECT_FALSE(ParseHostQuery({{"name", ""}}, &name, &error));
  EXPECT_FALSE(ParseHostQuery({{"name", "h1"}, {"guid", "1"}}, &name, &error));
  ASSERT_TRUE(ParseHostQuery({{"name", "h1"}}, &name, &error));
  EXPECT_EQ(name, "h1");
}

TEST(HostDetailTest, SearchFindsTheHostBeforeItsHcas) {
  TwoServers t;
  const json r = SearchJson(*t.s.fabric, t.s.topology.get(), {"h1", 20}, t.s.hosts.get());
  ASSERT_EQ(r["results"].size(), 3u) << r.dump();
  EXPECT_EQ(r["results"][0]["type"], "host");
  EXPECT_EQ(r["results"][0]["name"], "h1");
  EXPECT_EQ(r["results"][0]["hcas"], 2);
  EXPECT_EQ(r["results"][1]["name"], "h1 mlx5_0");
  EXPECT_EQ(r["total"], 3);
  // The limit counts hosts too.
  EXPECT_EQ(SearchJson(*t.s.fabric, t.s.topology.get(), {"h", 2}, t.s.hosts.get())["results"].size(), 2u);
}

}  // namespace
}  // namespace ibfabric::collectors
