// GET /api/v1/topology's body: written a piece at a time, filtered by node
// and tier, and its summary and findings views.

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "collectors/api/json.h"
#include "fabric_builder.h"
#include "topology/analysis.h"

namespace ibfabric::collectors {
namespace {

using nlohmann::json;
using testing::FabricBuilder;

// 3 leaves of 2 hosts under 2 spines, one cable each; h2's cable (on leaf1)
// runs at 1x where 4x is enabled: one below_enabled finding.
struct Fixture {
  FabricBuilder b;
  int leaves[3]{}, spines[2]{}, hosts[6]{};
  topology::Fabric fabric;
  topology::Analysis analysis;
  Fixture() {
    for (int i = 0; i < 3; ++i) leaves[i] = b.Switch("leaf" + std::to_string(i));
    for (int i = 0; i < 2; ++i) spines[i] = b.Switch("spine" + std::to_string(i));
    for (int h = 0; h < 6; ++h) {
      hosts[h] = b.Ca("h" + std::to_string(h));
      b.Connect(hosts[h], leaves[h / 2], h == 2 ? 1 : 2);
    }
    for (int l : leaves) {
      for (int s : spines) b.Connect(l, s);
    }
    fabric = b.Build();
    analysis = topology::Analyze(fabric);
  }
  TopologyParts parts() const { return {&fabric, &analysis}; }
};

std::set<std::string> Names(const json& nodes) {
  std::set<std::string> out;
  for (const auto& n : nodes) out.insert(n.at("name").get<std::string>());
  return out;
}
// "a-b" per link, `a` the end with the lower GUID (leaves before spines before hosts here).
std::set<std::string> Cables(const json& links) {
  std::set<std::string> out;
  for (const auto& l : links) {
    out.insert(l.at("a").at("name").get<std::string>() + "-" + l.at("b").at("name").get<std::string>());
  }
  return out;
}

std::set<std::string> Ends(const json& finding) {
  return {finding.at("a").at("name").get<std::string>(), finding.at("b").at("name").get<std::string>()};
}

TopologyQuery Query(const std::multimap<std::string, std::string>& params) {
  TopologyQuery q;
  std::string why;
  EXPECT_TRUE(ParseTopologyQuery(params, &q, &why)) << why;
  return q;
}

TEST(ApiTopologyTest, PiecesOfAnySizeMakeOneDocument) {
  const Fixture f;
  std::string whole, piece;
  TopologyWriter big(f.parts(), {});
  while (big.Next(&piece, std::size_t{1} << 20)) whole += piece;
  // The smallest pieces: one element (or one opening) each.
  TopologyWriter small(f.parts(), {});
  std::string joined;
  int pieces = 0;
  while (small.Next(&piece, 1)) {
    joined += piece;
    ++pieces;
  }
  EXPECT_EQ(joined, whole);
  EXPECT_GT(pieces, 11 + 5 + 2);  // at least one per node, per link
  const json j = json::parse(whole);
  EXPECT_EQ(j.at("nodes").size(), 11u);
  EXPECT_EQ(j.at("links").size(), 12u);
  EXPECT_EQ(j.at("groups").size(), 6u);
  EXPECT_TRUE(j.at("partitions").is_null());
  EXPECT_TRUE(j.at("routing").is_null());
  ASSERT_EQ(j.at("findings").size(), 1u);
  EXPECT_EQ(j["findings"][0]["kind"], "below_enabled");
  EXPECT_EQ(j.at("counts"), json::parse(R"({"nodes": {"switch": 5, "ca": 6, "router": 0},
      "switches_by_tier": {"leaf": 3, "spine": 2}, "ports": 24, "links": 12, "degraded_links": 1,
      "groups": 6, "findings": {"below_enabled": 1}, "accepted_by_plan": {}})"));
}

TEST(ApiTopologyTest, ANodeByNameOrGuidBringsItsCablesAndFindings) {
  const Fixture f;
  for (const std::string& named : {std::string("leaf1"), topology::FormatGuid(f.b.Guid(f.leaves[1]))}) {
    const json j = TopologyJson(f.parts(), Query({{"node", named}}));
    EXPECT_EQ(Names(j.at("nodes")), std::set<std::string>{"leaf1"}) << named;
    EXPECT_EQ(Cables(j.at("links")), (std::set<std::string>{"leaf1-h2", "leaf1-h3", "leaf1-spine0", "leaf1-spine1"}));
    EXPECT_EQ(j.at("groups").size(), 2u);
    ASSERT_EQ(j.at("findings").size(), 1u);  // h2's cable ends on leaf1
    EXPECT_EQ(Ends(j["findings"][0]), (std::set<std::string>{"h2", "leaf1"}));
    EXPECT_EQ(j.at("counts").at("links"), 12);  // the counts stay the whole fabric's
  }
  // Another leaf: its cables, and not the finding.
  const json j = TopologyJson(f.parts(), Query({{"node", "leaf2"}}));
  EXPECT_EQ(Cables(j.at("links")), (std::set<std::string>{"leaf2-h4", "leaf2-h5", "leaf2-spine0", "leaf2-spine1"}));
  EXPECT_TRUE(j.at("findings").empty());
}

TEST(ApiTopologyTest, ATierBringsItsSwitchesAndTheirCables) {
  const Fixture f;
  for (const char* tier : {"spine", "1", "tier1"}) {
    const json j = TopologyJson(f.parts(), Query({{"tier", tier}}));
    EXPECT_EQ(Names(j.at("nodes")), (std::set<std::string>{"spine0", "spine1"})) << tier;
    EXPECT_EQ(j.at("links").size(), 6u);
    EXPECT_TRUE(j.at("findings").empty());
  }
  const json leaves = TopologyJson(f.parts(), Query({{"tier", "leaf"}}));
  EXPECT_EQ(Names(leaves.at("nodes")), (std::set<std::string>{"leaf0", "leaf1", "leaf2"}));
  EXPECT_EQ(leaves.at("links").size(), 12u);
  EXPECT_EQ(leaves.at("findings").size(), 1u);
  // Both filters: what both select.
  const json both = TopologyJson(f.parts(), Query({{"tier", "leaf"}, {"node", "spine0"}}));
  EXPECT_TRUE(both.at("nodes").empty());
  EXPECT_TRUE(both.at("links").empty());
  EXPECT_TRUE(TopologyJson(f.parts(), Query({{"tier", "core"}})).at("nodes").empty());
}

TEST(ApiTopologyTest, SummaryAndFindingsViews) {
  const Fixture f;
  const json summary = TopologyJson(f.parts(), Query({{"view", "summary"}}));
  for (const char* absent : {"nodes", "links", "groups", "findings", "partitions"}) {
    EXPECT_FALSE(summary.contains(absent)) << absent;
  }
  EXPECT_EQ(summary.at("counts").at("findings").at("below_enabled"), 1);
  EXPECT_EQ(summary.at("tiers"), 2);
  const json findings = TopologyJson(f.parts(), Query({{"view", "findings"}}));
  EXPECT_FALSE(findings.contains("nodes"));
  EXPECT_FALSE(findings.contains("links"));
  ASSERT_EQ(findings.at("findings").size(), 1u);
  EXPECT_EQ(Ends(findings["findings"][0]), (std::set<std::string>{"h2", "leaf1"}));
  EXPECT_TRUE(TopologyJson(f.parts(), Query({{"view", "findings"}, {"node", "h4"}})).at("findings").empty());
}

TEST(ApiTopologyTest, AnUnknownNodeIsAnErrorNotAnEmptyAnswer) {
  const Fixture f;
  TopologyWriter w(f.parts(), Query({{"node", "leaf9"}}));
  EXPECT_EQ(w.error(), "no node named 'leaf9' in the fabric");
  std::string piece;
  EXPECT_FALSE(w.Next(&piece, 100));
}

TEST(ApiTopologyTest, BadQueriesNameTheParameter) {
  const std::pair<std::multimap<std::string, std::string>, std::string> cases[] = {
      {{{"view", "all"}}, "view must be full, summary or findings, not 'all'"},
      {{{"tier", "top"}}, "tier must be leaf, spine, core, unranked, tierN or a number, not 'top'"},
      {{{"tier", "-3"}}, "tier must be leaf, spine, core, unranked, tierN or a number, not '-3'"},
      {{{"node", ""}}, "node must name a node or a GUID"},
      {{{"node", "a"}, {"node", "b"}}, "parameter 'node' given more than once"},
      {{{"nodes", "leaf1"}}, "unknown parameter 'nodes' (view, node, tier)"},
  };
  for (const auto& [params, message] : cases) {
    TopologyQuery q;
    std::string why;
    EXPECT_FALSE(ParseTopologyQuery(params, &q, &why));
    EXPECT_EQ(why, message);
  }
}

}  // namespace
}  // namespace ibfabric::collectors
