// Tier ranking, tree verdict, asymmetry and degraded links on hand-built
// fabrics.

#include "topology/analysis.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/unit/fabric_builder.h"
#include "topology/link_rate.h"

namespace ibfabric::topology {
namespace {

using testing::FabricBuilder;

// L leaves of H hosts, S spines, K links per leaf-spine pair; optionally a
// core tier of C switches, each spine cabled once to each core switch.
struct Tree {
  FabricBuilder b;
  std::vector<int> leaves, spines, cores, hosts;
  Tree(int L, int H, int S, int K, int C = 0, bool skip_link = false) {
    for (int i = 0; i < L; ++i) leaves.push_back(b.Switch("leaf" + std::to_string(i)));
    for (int i = 0; i < S; ++i) spines.push_back(b.Switch("spine" + std::to_string(i)));
    for (int i = 0; i < C; ++i) cores.push_back(b.Switch("core" + std::to_string(i)));
    for (int l : leaves) {
      for (int h = 0; h < H; ++h) {
        hosts.push_back(b.Ca("h" + std::to_string(hosts.size())));
        b.Connect(hosts.back(), l);
      }
    }
    for (int l : leaves) {
      for (int s : spines) {
        if (skip_link && l == leaves[0] && s == spines[0]) continue;
        for (int k = 0; k < K; ++k) b.Connect(l, s);
      }
    }
    for (int s : spines) {
      for (int c : cores) b.Connect(s, c);
    }
  }
};

std::vector<Finding> Of(const Analysis& a, FindingKind k) {
  std::vector<Finding> out;
  std::copy_if(a.findings.begin(), a.findings.end(), std::back_inserter(out),
               [k](const Finding& f) { return f.kind == k; });
  return out;
}

std::string Kinds(const Analysis& a) {
  std::string s;
  for (const auto& f : a.findings) s += std::string(ToString(f.kind)) + ": " + f.detail + "\n";
  return s;
}

TEST(AnalysisTest, CleanTwoTierTree) {
  Tree t(4, 4, 2, 2);
  const Analysis a = Analyze(t.b.Build());
  EXPECT_TRUE(a.is_tree) << a.not_tree_reason;
  EXPECT_EQ(a.tiers, 2);
  EXPECT_TRUE(a.findings.empty()) << Kinds(a);
  const auto& leaf = a.switches.at(t.b.Guid(t.leaves[0]));
  EXPECT_EQ(leaf.tier, 0);
  EXPECT_EQ(leaf.ca_links, 4);
  EXPECT_EQ(leaf.up_links, 4);
  EXPECT_EQ(leaf.up_groups, 2);
  EXPECT_DOUBLE_EQ(leaf.down_gbps, 4 * 32.0);  // 4x QDR: 4 lanes of 8 Gb/s
  EXPECT_DOUBLE_EQ(leaf.up_gbps, 4 * 32.0);
  EXPECT_EQ(BlockingFactor(leaf), 1.0);
  const auto& spine = a.switches.at(t.b.Guid(t.spines[1]));
  EXPECT_EQ(spine.tier, 1);
  EXPECT_EQ(spine.down_links, 8);
  EXPECT_EQ(spine.down_groups, 4);
  EXPECT_FALSE(BlockingFactor(spine));
  EXPECT_DOUBLE_EQ(a.bisection_gbps, a.nonblocking_gbps);
  EXPECT_EQ(TierName(spine.tier), "spine");
}

// A leaf whose hosts are not cabled (a published director fabric has six
// among 160 leaves) is cabled to the same spines as the others: a leaf,
// not a tier above its spines, and nothing about it or them is asymmetric.
// Switches with no host as many as half the leaves they are cabled like
// are a tier of their own (here a single group's cores).
TEST(AnalysisTest, ALeafWithoutHostsIsALeaf) {
  Tree t(4, 4, 2, 2);
  const int empty = t.b.Switch("leaf-empty");
  for (int sp : t.spines) {
    t.b.Connect(empty, sp);
    t.b.Connect(empty, sp);
  }
  const Analysis a = Analyze(t.b.Build());
  EXPECT_TRUE(a.is_tree) << a.not_tree_reason;
  EXPECT_EQ(a.tiers, 2);
  EXPECT_EQ(a.switches.at(t.b.Guid(empty)).tier, 0);
  EXPECT_TRUE(a.findings.empty()) << Kinds(a);

  Tree c(4, 4, 2, 1, 2);
  const Analysis three = Analyze(c.b.Build());
  EXPECT_EQ(three.switches.at(c.b.Guid(c.cores[0])).tier, 2);
  EXPECT_EQ(three.switches.at(c.b.Guid(c.cores[1])).tier, 2);
}

// Names as operators say them, and names several nodes share: each with its
// GUID wherever a name is shown, and one finding per shared name.
TEST(AnalysisTest, SharedNamesAreOneFindingEachAndCarryTheirGuids) {
  EXPECT_EQ(ShortName("MF0;LG03-06:MQM8700/U1"), "LG03-06");
  EXPECT_EQ(ShortName("MF0;sat11-0101-0903-01ib1-A:MCS8500/L16/U2"), "sat11-0101-0903-01ib1-A/L16/U2");
  EXPECT_EQ(ShortName("MF0;r-ufm-sw95:MQM8700"), "r-ufm-sw95");
  EXPECT_EQ(ShortName("MF0;:MQM8700/U1"), "MF0;:MQM8700/U1") << "no system name: as it is";
  EXPECT_EQ(ShortName("Quantum-2 Mellanox Technologies"), "Quantum-2 Mellanox Technologies");
  EXPECT_EQ(ShortName("gpu01 mlx5_0"), "gpu01 mlx5_0");

  Tree t(2, 2, 2, 1);
  FabricBuilder& b = t.b;
  const Fabric plain = b.Build();
  EXPECT_EQ(NodeName(plain, b.Guid(t.leaves[0])), "leaf0");
  std::vector<Node> nodes = plain.nodes();
  for (Node& n : nodes) {
    if (n.guid == b.Guid(t.leaves[0]) || n.guid == b.Guid(t.leaves[1]))
      n.description = "Quantum-2 Mellanox Technologies";
    if (n.guid == b.Guid(t.spines[0])) n.description = "MF0;LG03-06:MQM8700/U1";
  }
  const Fabric f(nodes);
  EXPECT_EQ(NodeName(f, b.Guid(t.leaves[1])),
            "Quantum-2 Mellanox Technologies (" + FormatGuid(b.Guid(t.leaves[1])) + ")");
  EXPECT_EQ(NodeName(f, b.Guid(t.spines[0])), "LG03-06");
  const Analysis a = Analyze(f);
  const auto dup = Of(a, FindingKind::kDuplicateName);
  ASSERT_EQ(dup.size(), 1u) << Kinds(a);
  EXPECT_EQ(dup[0].detail, "2 nodes are named \"Quantum-2 Mellanox Technologies\" (" + FormatGuid(b.Guid(t.leaves[0])) +
                               ", " + FormatGuid(b.Guid(t.leaves[1])) +
                               "): give each its own (the switch's node description, or --ib.node-name-map)");
  EXPECT_EQ(dup[0].node, b.Guid(t.leaves[0]));
  EXPECT_FALSE(dup[0].a);
  EXPECT_EQ(a.findings.size(), 1u) << Kinds(a);
}

// A SHARP Aggregation Node in every switch (a CA with its own LID, cabled
// to a switch port inside the switch): no cable, no host, no stray tier and
// no CA above the leaves; the tiers rank as without them.
TEST(AnalysisTest, AggregationNodesInEverySwitchAreNoCablesAndChangeNoTier) {
  Tree t(4, 4, 2, 2);
  const std::size_t cables = Links(t.b.Build()).size();
  std::vector<int> ans;
  for (const auto& group : {t.leaves, t.spines}) {
    for (int sw : group) {
      ans.push_back(t.b.Ca(std::string(kAggregationNodeDescription)));
      t.b.Connect(ans.back(), sw);
    }
  }
  const Fabric f = t.b.Build();
  for (int an : ans) EXPECT_TRUE(IsAggregationNode(*f.FindNode(t.b.Guid(an))));
  EXPECT_FALSE(IsAggregationNode(*f.FindNode(t.b.Guid(t.hosts[0]))));
  EXPECT_EQ(Links(f).size(), cables) << "an AN's link to its switch is no cable";
  const Analysis a = Analyze(f);
  EXPECT_TRUE(a.is_tree) << a.not_tree_reason;
  EXPECT_EQ(a.tiers, 2);
  EXPECT_TRUE(a.findings.empty()) << Kinds(a);
  EXPECT_EQ(a.switches.at(t.b.Guid(t.leaves[0])).ca_links, 4);
  EXPECT_EQ(a.switches.at(t.b.Guid(t.spines[0])).tier, 1);
  EXPECT_EQ(a.switches.at(t.b.Guid(t.spines[0])).ca_links, 0);
}

// Routers (NodeType 3, to another subnet) cabled to the spines: no CA on a
// non-leaf, no stray tier, the spines stay spines; their links are still
// cables (their health is judged like any other).
TEST(AnalysisTest, RoutersOnTheSpinesAreNoHostsAndChangeNoTier) {
  Tree t(4, 4, 2, 2);
  const std::size_t cables = Links(t.b.Build()).size();
  const int router = t.b.Router("router0");
  for (int sw : t.spines) t.b.Connect(router, sw);
  const Fabric f = t.b.Build();
  EXPECT_EQ(Links(f).size(), cables + 2);
  const Analysis a = Analyze(f);
  EXPECT_TRUE(a.is_tree) << a.not_tree_reason;
  EXPECT_EQ(a.tiers, 2);
  EXPECT_TRUE(a.findings.empty()) << Kinds(a);
  EXPECT_EQ(a.switches.at(t.b.Guid(t.spines[0])).tier, 1);
  EXPECT_EQ(a.switches.at(t.b.Guid(t.spines[0])).ca_links, 0);
}

TEST(AnalysisTest, ThreeTiersAndASkipTierLink) {
  Tree t(4, 2, 2, 1, 2);
  Analysis a = Analyze(t.b.Build());
  EXPECT_TRUE(a.is_tree) << a.not_tree_reason;
  EXPECT_EQ(a.tiers, 3);
  EXPECT_EQ(a.switches.at(t.b.Guid(t.cores[0])).tier, 2);
  EXPECT_EQ(TierName(2), "core");
  EXPECT_TRUE(a.findings.empty()) << Kinds(a);

  t.b.Connect(t.leaves[3], t.cores[1]);  // leaf straight to core
  a = Analyze(t.b.Build());
  ASSERT_EQ(Of(a, FindingKind::kSkipTierLink).size(), 1u) << Kinds(a);
  const Finding f = Of(a, FindingKind::kSkipTierLink)[0];
  EXPECT_NE(f.detail.find("leaf3["), std::string::npos) << f.detail;
  EXPECT_NE(f.detail.find("core1["), std::string::npos) << f.detail;
  ASSERT_TRUE(f.a && f.b);
}

// Spines with more cables up than down (2 leaves, 4 cores each; and the
// same with 2 cables to each core): the cores above do not lift them.
TEST(AnalysisTest, MoreUplinksThanDownlinksStillRanks) {
  for (const int core_cables : {1, 2}) {
    Tree t(2, 2, 2, 1, 4);
    for (int k = 1; k < core_cables; ++k) {
      for (int s : t.spines) {
        for (int c : t.cores) t.b.Connect(s, c);
      }
    }
    const Analysis a = Analyze(t.b.Build());
    EXPECT_TRUE(a.is_tree) << a.not_tree_reason;
    EXPECT_EQ(a.tiers, 3) << core_cables;
    EXPECT_EQ(a.switches.at(t.b.Guid(t.spines[1])).tier, 1);
    EXPECT_EQ(a.switches.at(t.b.Guid(t.cores[3])).tier, 2);
    EXPECT_TRUE(a.findings.empty()) << Kinds(a);
    // And a leaf cabled to a core: that core stays a core, nothing else moves.
    Tree u(2, 2, 2, 1, 4);
    for (int k = 1; k < core_cables; ++k) {
      for (int s : u.spines) {
        for (int c : u.cores) u.b.Connect(s, c);
      }
    }
    u.b.Connect(u.leaves[0], u.cores[2]);
    const Analysis b = Analyze(u.b.Build());
    EXPECT_EQ(b.tiers, 3) << Kinds(b);
    EXPECT_EQ(b.switches.at(u.b.Guid(u.cores[2])).tier, 2);
    EXPECT_EQ(b.switches.at(u.b.Guid(u.spines[0])).tier, 1);
    EXPECT_EQ(Of(b, FindingKind::kSkipTierLink).size(), 1u) << Kinds(b);
  }
}

// One cable of a pair of two missing: one finding, at both switches, and
// nothing of what it explains (the leaf's fewer uplinks, both ends' uneven
// groups).
TEST(AnalysisTest, AMissingCableIsOneFinding) {
  Tree u(4, 4, 2, 2, 0, /*skip_link=*/true);
  u.b.Connect(u.leaves[0], u.spines[0]);  // one link back instead of two
  const Analysis a = Analyze(u.b.Build());
  EXPECT_TRUE(a.is_tree);
  ASSERT_EQ(a.findings.size(), 1u) << Kinds(a);
  const Finding& m = a.findings[0];
  EXPECT_EQ(m.kind, FindingKind::kMissingCable);
  EXPECT_EQ(m.node, u.b.Guid(u.leaves[0]));
  ASSERT_TRUE(m.a && m.b);
  EXPECT_EQ(m.a->node_guid, u.b.Guid(u.leaves[0]));
  EXPECT_EQ(m.b->node_guid, u.b.Guid(u.spines[0]));
  // The other leaves reach spine0 by ports 5 and 6, taken here by spine1:
  // the pattern names no port.
  EXPECT_EQ(m.a->port, 0);
  EXPECT_NE(m.detail.find("leaf0 - spine0: 1 of 2 cables missing (1 cabled where both switches mostly have 2)"),
            std::string::npos)
      << m.detail;
  EXPECT_NE(m.detail.find("32 Gb/s lost of 64 Gb/s"), std::string::npos) << m.detail;  // 4x QDR
  EXPECT_EQ(BlockingFactor(a.switches.at(u.b.Guid(u.leaves[0]))), 128.0 / 96.0);
  EXPECT_LT(a.bisection_gbps, a.nonblocking_gbps);
}

// Cabled by a plan of ports (leaf l's cable k to spine s on port 5 + 2s + k,
// spine s's to leaf l on 1 + 2l + k): the missing cable is named at the
// port its leaf's peers use for that spine and the port the leaf's other
// spine uses for that leaf.
TEST(AnalysisTest, AMissingCableIsNamedAtThePortsThePatternSays) {
  FabricBuilder b;
  std::vector<int> leaves, spines;
  for (int i = 0; i < 4; ++i) leaves.push_back(b.Switch("leaf" + std::to_string(i)));
  for (int i = 0; i < 2; ++i) spines.push_back(b.Switch("spine" + std::to_string(i)));
  for (int l = 0; l < 4; ++l) {
    for (int h = 1; h <= 4; ++h) b.Link(b.Ca("h" + std::to_string(l) + std::to_string(h)), 1, leaves[l], h);
    for (int sp = 0; sp < 2; ++sp) {
      for (int k = 0; k < 2; ++k) {
        if (l == 2 && sp == 1 && k == 1) continue;  // leaf2[8] - spine1[6] is missing
        b.Link(leaves[l], 5 + 2 * sp + k, spines[sp], 1 + 2 * l + k);
      }
    }
  }
  const Analysis a = Analyze(b.Build());
  ASSERT_EQ(a.findings.size(), 1u) << Kinds(a);
  ASSERT_TRUE(a.findings[0].a && a.findings[0].b);
  EXPECT_EQ(*a.findings[0].a, (PortRef{b.Guid(leaves[2]), 8}));
  EXPECT_EQ(*a.findings[0].b, (PortRef{b.Guid(spines[1]), 6}));
  EXPECT_NE(a.findings[0].detail.find("likely ports leaf2[8] - spine1[6]"), std::string::npos) << a.findings[0].detail;
}

// A leaf with no cable to one spine, where its peers all have one: one
// missing cable, not a leaf and a spine unlike their tiers.
TEST(AnalysisTest, AMissingGroupIsOneMissingCable) {
  Tree t(4, 4, 2, 1, 0, /*skip_link=*/true);  // leaf0 has no link at all to spine0
  const Analysis a = Analyze(t.b.Build());
  ASSERT_EQ(a.findings.size(), 1u) << Kinds(a);
  EXPECT_EQ(a.findings[0].kind, FindingKind::kMissingCable);
  EXPECT_NE(
      a.findings[0].detail.find(
          "leaf0 - spine0: 1 of 1 cable missing (none cabled where 3 of the 3 switches cabled like leaf0 have 1)"),
      std::string::npos)
      << a.findings[0].detail;
}

// A leaf built otherwise (one cable to each spine where the others have
// two, all alike) is not missing cables: its asymmetry stays a warning.
TEST(AnalysisTest, ALeafOfAnotherDesignIsNoMissingCable) {
  FabricBuilder b;
  std::vector<int> leaves, spines;
  for (int i = 0; i < 4; ++i) leaves.push_back(b.Switch("leaf" + std::to_string(i)));
  for (int i = 0; i < 2; ++i) spines.push_back(b.Switch("spine" + std::to_string(i)));
  for (int l = 0; l < 4; ++l) {
    for (int h = 0; h < 4; ++h) b.Connect(b.Ca("h" + std::to_string(l) + std::to_string(h)), leaves[l]);
    for (int sp : spines) {
      for (int k = 0; k < (l == 0 ? 1 : 2); ++k) b.Connect(leaves[l], sp);
    }
  }
  const Analysis a = Analyze(b.Build());
  EXPECT_TRUE(Of(a, FindingKind::kMissingCable).empty()) << Kinds(a);
  EXPECT_EQ(Of(a, FindingKind::kFewerUplinks).size(), 1u) << Kinds(a);
  EXPECT_EQ(Of(a, FindingKind::kAsymmetricSwitch).size(), 1u) << Kinds(a);
}

TEST(AnalysisTest, LeafToLeafAndCaPlacement) {
  Tree t(4, 4, 2, 2);
  t.b.Connect(t.leaves[0], t.leaves[1]);
  const int stray = t.b.Ca("storage0");
  t.b.Connect(stray, t.spines[1]);
  const int x = t.b.Ca("x"), y = t.b.Ca("y");
  t.b.Connect(x, y);
  const Analysis a = Analyze(t.b.Build());
  EXPECT_TRUE(a.is_tree) << a.not_tree_reason;
  EXPECT_EQ(a.switches.at(t.b.Guid(t.spines[1])).tier, 1) << "a stray CA does not make a spine a leaf";
  const auto same = Of(a, FindingKind::kSameTierLink);
  ASSERT_EQ(same.size(), 1u) << Kinds(a);
  EXPECT_NE(same[0].detail.find("leaf0["), std::string::npos);
  EXPECT_NE(same[0].detail.find("leaf1["), std::string::npos);
  const auto ca = Of(a, FindingKind::kCaOnNonLeaf);
  ASSERT_EQ(ca.size(), 1u) << Kinds(a);
  EXPECT_NE(ca[0].detail.find("storage0[1] - spine1["), std::string::npos) << ca[0].detail;
  const auto cc = Of(a, FindingKind::kCaToCa);
  ASSERT_EQ(cc.size(), 1u);
  EXPECT_NE(cc[0].detail.find("x[1] - y[1]"), std::string::npos) << cc[0].detail;
}

TEST(AnalysisTest, DegradedLinks) {
  Tree t(4, 4, 2, 2);
  // A 1x link where both ends allow 4x, and a DDR link among QDR ones whose
  // ends are limited to DDR (nothing to blame on the ends: only its peers).
  t.b.Link(t.leaves[2], 30, t.spines[1], 30, /*width=*/1, /*speed=*/4);
  FabricBuilder& b = t.b;
  b.Link(t.leaves[3], 31, t.spines[0], 31, 2, 2);
  Fabric f = b.Build();
  // Limit the DDR link's ends to DDR.
  std::vector<Node> nodes = f.nodes();
  for (auto& n : nodes) {
    for (auto& p : n.ports) {
      if (p.number == 31) p.speed_enabled = 1 | 2;
    }
  }
  const Analysis a = Analyze(Fabric(nodes));
  const auto below = Of(a, FindingKind::kBelowEnabled);
  ASSERT_EQ(below.size(), 1u) << Kinds(a);
  EXPECT_NE(below[0].detail.find("leaf2[30] - spine1[30] runs 1xQDR where both ends allow 4xQDR"), std::string::npos)
      << below[0].detail;
  const auto peers = Of(a, FindingKind::kBelowTierMajority);
  ASSERT_EQ(peers.size(), 1u) << Kinds(a);
  EXPECT_NE(peers[0].detail.find("runs 4xDDR where most links of its tiers run 4xQDR"), std::string::npos)
      << peers[0].detail;
  // Only the link below its ends is degraded: the DDR one runs at its ends' best.
  ASSERT_EQ(a.degraded.size(), 1u);
  EXPECT_EQ(a.degraded.begin()->second, FindingKind::kBelowEnabled);
}

TEST(AnalysisTest, XdrLinkRunningAtNdrIsBelowWhatItsEndsAllow) {
  Tree t(2, 2, 2, 1);
  t.b.Link(t.leaves[1], 30, t.spines[1], 30);
  std::vector<Node> nodes = t.b.Build().nodes();
  for (auto& n : nodes) {
    for (auto& p : n.ports) {
      p.speed_ext_enabled = p.speed_ext_supported = 8;    // NDR
      p.speed_ext2_enabled = p.speed_ext2_supported = 1;  // XDR
      p.speed_ext2_active = 1;
      if (p.number == 30) {  // this cable trained at NDR
        p.speed_ext2_active = 0;
        p.speed_ext_active = 8;
      }
    }
  }
  const Analysis a = Analyze(Fabric(nodes));
  const auto below = Of(a, FindingKind::kBelowEnabled);
  ASSERT_EQ(below.size(), 1u) << Kinds(a);
  EXPECT_NE(below[0].detail.find("leaf1[30] - spine1[30] runs 4xNDR where both ends allow 4xXDR"), std::string::npos)
      << below[0].detail;
}

TEST(AnalysisTest, NotATreeIsSaidWithTheReason) {
  // A ring of four switches, each with hosts: every switch is a leaf.
  FabricBuilder b;
  std::vector<int> sw;
  for (int i = 0; i < 4; ++i) {
    sw.push_back(b.Switch("r" + std::to_string(i)));
    b.Connect(b.Ca("h" + std::to_string(i)), sw.back());
  }
  for (int i = 0; i < 4; ++i) b.Connect(sw[i], sw[(i + 1) % 4]);
  const Analysis a = Analyze(b.Build());
  EXPECT_FALSE(a.is_tree);
  EXPECT_NE(a.not_tree_reason.find("4 of 4 switch-to-switch links join switches of the same tier"), std::string::npos)
      << a.not_tree_reason;
  ASSERT_EQ(a.findings.size(), 1u) << Kinds(a);  // no guessed tier findings
  EXPECT_EQ(a.findings[0].kind, FindingKind::kNotATree);

  FabricBuilder c;  // switches only: nothing to rank from
  c.Connect(c.Switch("a"), c.Switch("b"));
  EXPECT_NE(Analyze(c.Build()).not_tree_reason.find("no switch has a CA"), std::string::npos);

  Tree t(2, 2, 1, 1);  // a tree with an island of switches beside it
  const int i1 = t.b.Switch("island1"), i2 = t.b.Switch("island2");
  t.b.Connect(i1, i2);
  EXPECT_NE(Analyze(t.b.Build()).not_tree_reason.find("2 switches are not connected to any leaf"), std::string::npos);
}

TEST(LinkRateTest, WidthsAndSpeeds) {
  Port p;
  p.phys_state = 5;
  p.width_active = 2;
  p.speed_active = 4;
  EXPECT_EQ(RateString(p), "4xQDR");
  EXPECT_DOUBLE_EQ(ActiveGbps(p), 32.0);
  p.speed_ext_active = 4;  // HDR outranks the base speed
  EXPECT_EQ(RateString(p), "4xHDR");
  p.width_active = 16;
  EXPECT_EQ(RateString(p), "2xHDR");
  EXPECT_EQ(MaxLanes(1 | 2 | 4 | 8 | 16), 12);
  p.speed_supported = 7;
  p.speed_ext_supported = 1 | 2 | 4 | 8;
  EXPECT_EQ(MaxSupportedSpeed(p), Speed::kNdr);
  p.speed_ext2_supported = 1;  // XDR (IBTA 1.7 LinkSpeedExtSupported2)
  EXPECT_EQ(MaxSupportedSpeed(p), Speed::kXdr);
  p.speed_ext2_active = 1;  // outranks LinkSpeedExtActive
  p.width_active = 2;
  EXPECT_EQ(RateString(p), "4xXDR");
  EXPECT_DOUBLE_EQ(ActiveGbps(p), 800.0);
  p.phys_state = 2;
  EXPECT_EQ(RateString(p), "");
  EXPECT_DOUBLE_EQ(ActiveGbps(p), 0);
}

}  // namespace
}  // namespace ibfabric::topology
