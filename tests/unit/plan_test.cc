#include "topology/plan.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/testbed/fat_tree.h"
#include "tests/unit/fabric_builder.h"

namespace ibfabric::topology {
namespace {

// Captured from `ibnetdiscover` on ibsim (trimmed to two switches and a CA).
constexpr const char* kIbnetdiscover = R"(#
# Topology file: generated on Sun Nov 22 03:44:53 2026
#
vendid=0x0
devid=0x0
sysimgguid=0x200003
switchguid=0x200003(200003)
Switch	8 "S-0000000000200003"		# "ib-leaf04" base port 0 lid 6 lmc 0
[1]	"H-0000000000100018"[1](100019) 		# "cn0013" lid 19 4xQDR
[5]	"S-0000000000200004"[4]		# "ib-spine01" lid 7 4xQDR

switchguid=0x200004(200004)
Switch	8 "S-0000000000200004"		# "ib-spine01" base port 0 lid 7 lmc 0
[4]	"S-0000000000200003"[5]		# "ib-leaf04" lid 6 4xQDR

caguid=0x100018
Ca	1 "H-0000000000100018"		# "cn0013"
[1](100019) 	"S-0000000000200003"[1]		# lid 19 lmc 0 "ib-leaf04" lid 6 4xQDR
)";

TEST(PlanParseTest, IbnetdiscoverOutputKeyedByGuid) {
  CablingPlan p;
  std::string error;
  ASSERT_TRUE(ParseIbnetdiscoverPlan(kIbnetdiscover, &p, &error)) << error;
  ASSERT_EQ(p.links.size(), 2u);  // each cable once, though listed from both ends
  ASSERT_EQ(p.nodes.size(), 3u);
  const PlanNode& leaf = p.nodes[p.links[0].a.node];
  EXPECT_EQ(leaf.name, "ib-leaf04");
  EXPECT_EQ(leaf.guid, 0x200003u);
  EXPECT_EQ(p.links[0].a.port, 1);
  EXPECT_EQ(p.nodes[p.links[0].b.node].guid, 0x100018u);
  EXPECT_EQ(p.links[0].rate, "4xQDR");
  EXPECT_EQ(p.links[0].line, 9);
}

// ibnetdiscover prints FDR10 links (Mellanox ExtendedPortInfo) as 4xFDR10:
// the plan keeps that rate whole, and a JSON plan may name it too.
TEST(PlanParseTest, Fdr10RatesAreKeptWhole) {
  std::string text = kIbnetdiscover;
  for (std::size_t at = text.find("lid 7 4xQDR"); at != std::string::npos; at = text.find("lid 7 4xQDR", at)) {
    text.replace(at, 11, "lid 7 4xFDR10");
  }
  CablingPlan p;
  std::string error;
  ASSERT_TRUE(ParseIbnetdiscoverPlan(text, &p, &error)) << error;
  ASSERT_EQ(p.links.size(), 2u);
  EXPECT_EQ(p.links[1].rate, "4xFDR10");
  CablingPlan j;
  ASSERT_TRUE(ParseJsonPlan(R"({"links": [{"a": {"node": "x", "port": 1}, "b": {"node": "y", "port": 2},
                                            "rate": "4xFDR10"}]})",
                            &j, &error))
      << error;
  EXPECT_EQ(j.links[0].rate, "4xFDR10");
}

TEST(PlanParseTest, NetFilesKeyedByName) {
  testbed::FatTreeSpec s;
  s.links_per_pair = 2;
  s.radix = 12;
  s.degraded = {{{"ib-leaf01", 7}, "1xQDR"}};
  const testbed::FatTree t = testbed::FatTree::Generate(s);
  CablingPlan p;
  std::string error;
  ASSERT_TRUE(ParseIbnetdiscoverPlan(t.NetFile(), &p, &error)) << error;
  EXPECT_EQ(p.links.size(), t.cables().size());
  const auto slow = std::find_if(p.links.begin(), p.links.end(), [&](const PlanLink& l) {
    return p.nodes[l.a.node].name == "ib-leaf01" && l.a.port == 7;
  });
  ASSERT_NE(slow, p.links.end());
  EXPECT_EQ(slow->rate, "1xQDR");
  EXPECT_FALSE(p.nodes[slow->a.node].guid);
}

TEST(PlanParseTest, IbnetdiscoverErrorsNameTheLine) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"[1] \"a\"[2]\n", "line 1: a port line before any node line"},
      {"Switch 8 \"a\"\nwhat is this\n", "line 2: neither a node nor a port line: 'what is this'"},
      {"Switch 8 \"a\"\n[1] \"b\"[2]\nSwitch 8 \"b\"\n[2] \"c\"[1]\n",
       "line 4: b[2] is cabled to a[1] on line 2 but to c[1] here"},
      {"Switch 8 \"a\"\n[300] \"b\"[2]\n", "line 2: port numbers must be 0..254"},
  };
  for (const auto& [text, want] : cases) {
    CablingPlan p;
    std::string error;
    EXPECT_FALSE(ParseIbnetdiscoverPlan(text, &p, &error)) << text;
    EXPECT_EQ(error, want);
  }
}

TEST(PlanParseTest, JsonPlansAndTheirErrors) {
  CablingPlan p;
  std::string error;
  ASSERT_TRUE(ParseJsonPlan(R"({
  "links": [
    {"a": {"node": "leaf01", "port": 19}, "b": {"node": "spine01", "port": 1}, "rate": "4xHDR"},
    {"a": {"node": "leaf01", "port": 20, "guid": "0x10"}, "b": {"node": "spine02", "port": 1}}
  ],
  "tiers": {"leaf01": "leaf"}
})",
                            &p, &error))
      << error;
  ASSERT_EQ(p.links.size(), 2u);
  EXPECT_EQ(p.links[0].rate, "4xHDR");
  EXPECT_EQ(p.links[1].line, 4);
  EXPECT_EQ(p.tiers.at("leaf01"), "leaf");

  const std::vector<std::pair<std::string, std::string>> cases{
      {"{\n  \"links\": [\n", "line 3: not JSON"},
      {"[]", "line 1: a plan is an object with a \"links\" array"},
      {"1e00565", "line 1: not usable JSON"},  // a crash the fuzz target found
      {"{\"links\": [\n{\"a\": {\"node\": \"x\", \"port\": 1}}]}", "line 2: links[0]: missing \"b\""},
      {"{\"links\": [\n{\"a\": {\"node\": \"x\", \"port\": 1}},\n{\"a\": {\"node\": \"x\", \"port\": -1}, \"b\": {}}]}",
       "line 2: links[0]: missing \"b\""},
      {"{\"links\": [{\"a\": {\"node\": \"x\", \"port\": 1}, \"b\": {\"node\": \"y\", \"port\": 999}}]}",
       "line 1: links[0]: b.port must be an integer 0..254"},
      {"{\"links\": [\n{\"a\": {\"node\": \"x\", \"port\": 1}, \"b\": {\"node\": \"y\", \"port\": 2}, \"rate\": "
       "\"fast\"}]}",
       "line 2: links[0]: rate must read like 4xHDR"},
      {"{\"links\": [{\"a\": {\"node\": \"x\", \"port\": 1}, \"b\": {\"node\": \"y\", \"port\": 2, \"guid\": "
       "\"0xzz\"}}]}",
       "line 1: links[0]: b.guid is not a GUID"},
  };
  for (const auto& [text, want] : cases) {
    EXPECT_FALSE(ParseJsonPlan(text, &p, &error)) << text;
    EXPECT_EQ(error.substr(0, want.size()), want) << error;
  }
}

TEST(PlanParseTest, YamlPlansMatchTheirJsonTwinAndNameTheLine) {
  CablingPlan y, j;
  std::string error;
  ASSERT_TRUE(ParseYamlPlan(R"(# the cabling of row 3
links:
  - a: {node: leaf01, port: 19}
    b: {node: spine01, port: 1}
    rate: 4xXDR
  - a: {node: leaf01, port: 20, guid: "0x10"}
    b:
      node: "042"
      port: 1
tiers:
  leaf01: leaf
)",
                            &y, &error))
      << error;
  ASSERT_TRUE(ParseJsonPlan(R"({"links": [
    {"a": {"node": "leaf01", "port": 19}, "b": {"node": "spine01", "port": 1}, "rate": "4xXDR"},
    {"a": {"node": "leaf01", "port": 20, "guid": "0x10"}, "b": {"node": "042", "port": 1}}],
    "tiers": {"leaf01": "leaf"}})",
                            &j, &error))
      << error;
  ASSERT_EQ(y.links.size(), 2u);
  EXPECT_EQ(y.links[0].line, 3);
  EXPECT_EQ(y.links[1].line, 6);
  EXPECT_EQ(y.links[0].rate, "4xXDR");
  ASSERT_EQ(y.nodes.size(), j.nodes.size());
  for (std::size_t i = 0; i < y.nodes.size(); ++i) {
    EXPECT_EQ(y.nodes[i].name, j.nodes[i].name);
    EXPECT_EQ(y.nodes[i].guid, j.nodes[i].guid);
  }
  EXPECT_EQ(y.nodes[y.links[1].b.node].name, "042") << "a quoted name stays a string";
  EXPECT_EQ(y.nodes[y.links[1].a.node].guid, std::optional<std::uint64_t>(0x10));
  for (std::size_t i = 0; i < y.links.size(); ++i) {
    EXPECT_EQ(y.links[i].a.node, j.links[i].a.node);
    EXPECT_EQ(y.links[i].b.port, j.links[i].b.port);
  }
  EXPECT_EQ(y.tiers, j.tiers);

  const std::vector<std::pair<std::string, std::string>> cases{
      {"links:\n  - a: {node: x, port: 1\n", "line 3: not YAML"},
      {"- 1\n- 2\n", "line 1: a plan is an object with a \"links\" array"},
      {"links:\n  - a: {node: x, port: 1}\n  - a: {node: x, port: 2}\n", "line 2: links[0]: missing \"b\""},
      {"links:\n  - a: {node: x, port: 1}\n    b: {node: y, port: \"2\"}\n",
       "line 2: links[0]: b.port must be an integer 0..254"},
      {"links:\n  - a: {node: x, port: 1}\n    b: {node: y, port: 2}\n  - a: {node: x, port: 300}\n    b: {node: y, "
       "port: 3}\n",
       "line 4: links[1]: a.port must be an integer 0..254"},
      {"links:\n  - a: {node: x, port: 1}\n    b: {node: y, port: 2}\n    rate: fast\n",
       "line 2: links[0]: rate must read like 4xHDR"},
      {"links:\n  - a: {node: x, port: 1}\n    b: {node: y, port: 1}\n  - a: {node: x, port: 1}\n    b: {node: z, "
       "port: 1}\n",
       "line 4: links[1]: "},
      {"a: &a [1, 2]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
       "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
       "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n",
       "line "},  // expands to 2e7 values: refused, not swallowed
  };
  for (const auto& [text, want] : cases) {
    EXPECT_FALSE(ParseYamlPlan(text, &y, &error)) << text;
    EXPECT_EQ(error.substr(0, want.size()), want) << error;
  }
  EXPECT_NE(error.find("expands too far"), std::string::npos) << error;
}

TEST(PlanParseTest, FormatByExtensionThenByFirstLine) {
  EXPECT_EQ(PlanFormatOf("p.yaml", "{}"), PlanFormat::kYaml);
  EXPECT_EQ(PlanFormatOf("p.yml", ""), PlanFormat::kYaml);
  EXPECT_EQ(PlanFormatOf("p.json", "links:"), PlanFormat::kJson);
  EXPECT_EQ(PlanFormatOf("plan", "# comment\n\n  {\"links\": []}"), PlanFormat::kJson);
  EXPECT_EQ(PlanFormatOf("plan", "# comment\nlinks:\n"), PlanFormat::kYaml);
  EXPECT_EQ(PlanFormatOf("plan", "---\n"), PlanFormat::kYaml);
  EXPECT_EQ(PlanFormatOf("plan", kIbnetdiscover), PlanFormat::kIbnetdiscover);
  EXPECT_EQ(PlanFormatOf("plan", "Switch 8 \"leaf\"\n"), PlanFormat::kIbnetdiscover);
}

// leaf0 has two cables to spine0 (ports 5, 6) and one to spine1 (port 7).
struct Wired {
  testing::FabricBuilder b;
  int leaf0, leaf1, spine0, spine1, host, host1;
  Wired(bool swap_same_neighbour, bool swap_neighbours) {
    leaf0 = b.Switch("leaf0");
    leaf1 = b.Switch("leaf1");
    spine0 = b.Switch("spine0");
    spine1 = b.Switch("spine1");
    host = b.Ca("host0");
    host1 = b.Ca("host1");
    b.Link(host, 1, leaf0, 1);
    b.Link(host1, 1, leaf1, 1);
    b.Link(leaf0, 5, spine0, swap_same_neighbour ? 2 : 1);
    b.Link(leaf0, 6, spine0, swap_same_neighbour ? 1 : 2);
    b.Link(leaf1, 5, swap_neighbours ? spine1 : spine0, 3);
    b.Link(leaf1, 6, swap_neighbours ? spine0 : spine1, 3);
  }
};

constexpr const char* kPlan = R"({"links": [
  {"a": {"node": "host0", "port": 1}, "b": {"node": "leaf0", "port": 1}, "rate": "4xQDR"},
  {"a": {"node": "host1", "port": 1}, "b": {"node": "leaf1", "port": 1}},
  {"a": {"node": "leaf0", "port": 5}, "b": {"node": "spine0", "port": 1}},
  {"a": {"node": "leaf0", "port": 6}, "b": {"node": "spine0", "port": 2}},
  {"a": {"node": "leaf1", "port": 5}, "b": {"node": "spine0", "port": 3}},
  {"a": {"node": "leaf1", "port": 6}, "b": {"node": "spine1", "port": 3}}],
 "tiers": {"spine0": "spine", "leaf1": "spine"}})";

std::vector<Finding> Diff(const Fabric& f) {
  CablingPlan p;
  std::string error;
  EXPECT_TRUE(ParseJsonPlan(kPlan, &p, &error)) << error;
  return DiffAgainstPlan(f, p, Analyze(f)).findings;
}

std::map<FindingKind, int> Count(const std::vector<Finding>& v) {
  std::map<FindingKind, int> m;
  for (const auto& f : v) ++m[f.kind];
  return m;
}

TEST(PlanDiffTest, AsPlannedHasNoFindingButTheTierOne) {
  Wired w(false, false);
  const auto d = Diff(w.b.Build());
  ASSERT_EQ(d.size(), 1u);  // the plan wrongly calls leaf1 a spine
  EXPECT_EQ(d[0].kind, FindingKind::kPlanTierMismatch);
  EXPECT_EQ(d[0].detail, "leaf1 ranks as leaf, planned spine");
}

TEST(PlanDiffTest, TwoCablesSwappedOnTheSameNeighbour) {
  Wired w(true, false);
  const auto d = Diff(w.b.Build());
  EXPECT_EQ(Count(d)[FindingKind::kPlanWrongRemotePort], 2);
  std::set<std::string> details;
  for (const auto& f : d) {
    if (f.kind == FindingKind::kPlanWrongRemotePort) details.insert(f.detail);
  }
  EXPECT_EQ(details,
            (std::set<std::string>{
                "planned leaf0[5] - spine0[1] (plan line 4): leaf0[5] goes to spine0[2], spine0[1] to leaf0[6]",
                "planned leaf0[6] - spine0[2] (plan line 5): leaf0[6] goes to spine0[1], spine0[2] to leaf0[5]"}));
}

TEST(PlanDiffTest, CablesSwappedBetweenNeighbours) {
  Wired w(false, true);
  const auto d = Diff(w.b.Build());
  EXPECT_EQ(Count(d)[FindingKind::kPlanWrongRemoteNode], 2);
  bool named = false;
  for (const auto& f : d) {
    named |= f.detail.find(
                 "planned leaf1[5] - spine0[3] (plan line 6): leaf1[5] goes to spine1[3], spine0[3] to leaf1[6]") !=
             std::string::npos;
  }
  EXPECT_TRUE(named);
}

TEST(PlanDiffTest, MissingExtraRateAndUnknown) {
  testing::FabricBuilder b;
  const int leaf0 = b.Switch("leaf0"), spine0 = b.Switch("spine0"), spine1 = b.Switch("spine1");
  const int host = b.Ca("host0"), stray = b.Ca("stray");
  b.Link(host, 1, leaf0, 1, /*width=*/1);  // 1x where the plan says 4x
  b.Link(leaf0, 5, spine0, 1);
  b.Link(stray, 1, spine1, 9);  // not in the plan
  // leaf0[6] - spine0[2] is missing; leaf1 is not there at all.
  const Fabric f = b.Build();
  const auto d = Diff(f);
  auto c = Count(d);
  EXPECT_EQ(c[FindingKind::kPlanMissingLink], 1);
  EXPECT_EQ(c[FindingKind::kPlanExtraLink], 1);
  EXPECT_EQ(c[FindingKind::kPlanRateMismatch], 1);
  EXPECT_EQ(c[FindingKind::kPlanUnknownNode], 2);  // leaf1 and host1
  for (const auto& x : d) {
    if (x.kind == FindingKind::kPlanRateMismatch) {
      EXPECT_EQ(x.detail, "host0[1] - leaf0[1] runs 1xQDR, planned 4xQDR (plan line 2)");
    }
    if (x.kind == FindingKind::kPlanExtraLink) {
      EXPECT_EQ(x.detail, "cable not in the plan: spine1[9] - stray[1]");
    }
    if (x.kind == FindingKind::kPlanUnknownNode) {
      EXPECT_TRUE(x.detail == "planned node leaf1 is not in the fabric" ||
                  x.detail == "planned node host1 is not in the fabric")
          << x.detail;
    }
  }
  // The rate mismatch is a degraded link of the plan diff's own result,
  // for the fat_tree collector to lay over the tree's.
  CablingPlan p;
  std::string error;
  ASSERT_TRUE(ParseJsonPlan(kPlan, &p, &error)) << error;
  const PlanDiff diff = DiffAgainstPlan(f, p, Analyze(f));
  ASSERT_EQ(diff.degraded.size(), 1u);
  EXPECT_EQ(diff.degraded.begin()->first, CableBetween({b.Guid(host), 1}, {b.Guid(leaf0), 1}));
  EXPECT_EQ(diff.degraded.begin()->second, FindingKind::kPlanRateMismatch);
}

}  // namespace
}  // namespace ibfabric::topology

namespace ibfabric::topology {
namespace {

// Three servers of two HCAs, HCA k of each on leaf k (rail-optimized); the
// plan names the HCAs by host and device. Built with h3's HCAs `swapped`.
struct RailPlan {
  testing::FabricBuilder b;
  Fabric fabric;
  HostAnalysis hosts;
  CablingPlan plan;
  explicit RailPlan(bool swapped) {
    const int l0 = b.Switch("leaf-a"), l1 = b.Switch("leaf-b"), spine = b.Switch("spine");
    b.Link(l0, 10, spine, 1);
    b.Link(l1, 10, spine, 2);
    std::string yaml = "links:\n";
    for (int h = 1; h <= 3; ++h) {
      const std::string host = "h" + std::to_string(h);
      const int x0 = b.Ca(host + " mlx5_0"), x1 = b.Ca(host + " mlx5_1");
      const bool swap = swapped && h == 3;
      b.Link(x0, 1, swap ? l1 : l0, h);
      b.Link(x1, 1, swap ? l0 : l1, h);
      for (int k = 0; k < 2; ++k) {
        yaml += "  - {a: {host: " + host + ", hca: mlx5_" + std::to_string(k) + ", port: 1}, b: {node: leaf-" +
                (k ? "b" : "a") + ", port: " + std::to_string(h) + "}}\n";
      }
    }
    yaml += "  - {a: {node: leaf-a, port: 10}, b: {node: spine, port: 1}}\n";
    yaml += "  - {a: {node: leaf-b, port: 10}, b: {node: spine, port: 2}}\n";
    fabric = b.Build();
    hosts = AnalyzeHosts(fabric, HostPattern{});
    std::string error;
    EXPECT_TRUE(ParseYamlPlan(yaml, &plan, &error)) << error;
  }
};

TEST(PlanRailTest, HcasNamedByHostAndDeviceMatchTheFabric) {
  RailPlan t(false);
  ASSERT_EQ(t.plan.nodes.size(), 9u);
  EXPECT_EQ(t.plan.nodes[0].host, "h1");
  EXPECT_EQ(t.plan.nodes[0].hca, "mlx5_0");
  EXPECT_TRUE(DiffAgainstPlan(t.fabric, t.plan, Analyze(t.fabric), &t.hosts).findings.empty());
  // Without the hosts, an end named by host and HCA is unknown.
  const auto unknown = Count(DiffAgainstPlan(t.fabric, t.plan, Analyze(t.fabric)).findings);
  EXPECT_EQ(unknown.at(FindingKind::kPlanUnknownNode), 6);
}

TEST(PlanRailTest, AnHcaOnAnotherRailsLeafIsAWrongRail) {
  RailPlan t(true);
  const auto findings = DiffAgainstPlan(t.fabric, t.plan, Analyze(t.fabric), &t.hosts).findings;
  ASSERT_EQ(Count(findings), (std::map<FindingKind, int>{{FindingKind::kPlanWrongRail, 2}})) << findings[0].detail;
  EXPECT_EQ(findings[0].detail,
            "h3 mlx5_0[1] is cabled to leaf-b[3], a rail mlx5_1 leaf in the plan; planned leaf-a[3] (plan line 6)");
  EXPECT_EQ(findings[0].a->node_guid, t.b.Guid(7));  // h3 mlx5_0
  EXPECT_EQ(findings[0].b->node_guid, t.b.Guid(1));  // leaf-b
  std::string error;
  CablingPlan p;
  EXPECT_FALSE(ParseYamlPlan("links:\n  - {a: {host: h1, port: 1}, b: {node: x, port: 1}}\n", &p, &error));
  EXPECT_NE(error.find("a.hca must be a non-empty string"), std::string::npos) << error;
  EXPECT_FALSE(
      ParseYamlPlan("links:\n  - {a: {host: h1, hca: m, node: n, port: 1}, b: {node: x, port: 1}}\n", &p, &error));
  EXPECT_NE(error.find("names a node and a host"), std::string::npos) << error;
}

}  // namespace
}  // namespace ibfabric::topology
