// Congestion trees on hand-built forwarding tables: an incast tree, two
// independent trees, a congested port alone, next hops that the LFT decides
// and the cabling alone would not, an HCA waiting to send, and a credit loop.

#include "topology/congestion.h"

#include <gtest/gtest.h>

#include "tests/unit/routed_tree.h"
#include "transport/attributes.h"

namespace ibfabric::topology {
namespace {

// The shared small tree (tests/unit/routed_tree.h): leaves 0-2, spines
// 3-4, hosts 5-10; host h on leaf h / 2, the other leaves reaching it
// through spine h % 2.
struct CongestedTree : testing::RoutedTree {
  // Switch `sw` forwards host h's LID out of `port`.
  void RouteHost(int sw, int h, int port) { Route(sw, Lid(host[h]), port); }
  PortRef P(int node, int port) const { return {b.Guid(node), static_cast<std::uint8_t>(port)}; }
  PortRef Up(int l, int s) const { return P(leaf[l], 3 + s); }     // leaf l's cable to spine s
  PortRef Down(int s, int l) const { return P(spine[s], 1 + l); }  // spine s's cable to leaf l
  PortRef ToHost(int h) const { return P(leaf[h / 2], h % 2 + 1); }
  std::vector<CongestionTree> Trees(const std::set<PortRef>& congested) const {
    return FindCongestionTrees(fabric, tables, congested);
  }
};

TEST(CongestionTest, NextHopsFollowTheDestinationsThePortCarries) {
  CongestedTree t;
  // leaf2's cable to spine1 carries the hosts of other leaves routed
  // through spine1 (cn1 and cn5); spine1 sends them down to leaf1 and leaf3.
  EXPECT_EQ(NextHops(t.fabric, t.tables, t.Up(1, 0)), (std::set<PortRef>{t.Down(0, 0), t.Down(0, 2)}));
  // spine1's cable to leaf1 carries cn1 and cn2: leaf1's host ports.
  EXPECT_EQ(NextHops(t.fabric, t.tables, t.Down(0, 0)), (std::set<PortRef>{t.ToHost(0), t.ToHost(1)}));
  // A leaf's port to a host leads to no switch.
  EXPECT_TRUE(NextHops(t.fabric, t.tables, t.ToHost(0)).empty());
  // An HCA sends anywhere: every egress its leaf has for the other hosts.
  EXPECT_EQ(NextHops(t.fabric, t.tables, t.P(t.host[2], 1)), (std::set<PortRef>{t.Up(1, 0), t.Up(1, 1), t.ToHost(3)}));
  // Without the far switch's table nothing is known.
  ForwardingTables partial = t.tables;
  partial.Erase(t.b.Guid(t.spine[0]));
  EXPECT_TRUE(NextHops(t.fabric, partial, t.Up(1, 0)).empty());
}

TEST(CongestionTest, AnIncastIsOneTreeRootedAtTheHostsLeafPort) {
  CongestedTree t;
  // cn1 does not drain: leaf1's port to it waits, spine1's port to leaf1
  // behind it, and leaf2's and leaf3's uplinks to spine1 behind that.
  const auto trees = t.Trees({t.ToHost(0), t.Down(0, 0), t.Up(1, 0), t.Up(2, 0)});
  ASSERT_EQ(trees.size(), 1u);
  EXPECT_EQ(trees[0].root, t.ToHost(0));
  EXPECT_EQ(trees[0].victims, (std::vector<PortRef>{t.Up(1, 0), t.Up(2, 0), t.Down(0, 0)}));
  EXPECT_EQ(trees[0].depth, 2);
  EXPECT_EQ(trees[0].hops.at(t.Down(0, 0)), 1);
  EXPECT_EQ(trees[0].hops.at(t.Up(1, 0)), 2);
  EXPECT_FALSE(trees[0].loop);
}

TEST(CongestionTest, TwoIndependentIncastsAreTwoTrees) {
  CongestedTree t;
  // cn1 behind spine1, cn6 (leaf3 port 2) behind spine2.
  const auto trees = t.Trees({t.ToHost(0), t.Down(0, 0), t.ToHost(5), t.Down(1, 2), t.Up(1, 1)});
  ASSERT_EQ(trees.size(), 2u);
  EXPECT_EQ(trees[0].root, t.ToHost(0));
  EXPECT_EQ(trees[0].victims, (std::vector<PortRef>{t.Down(0, 0)}));
  EXPECT_EQ(trees[1].root, t.ToHost(5));
  EXPECT_EQ(trees[1].victims, (std::vector<PortRef>{t.Up(1, 1), t.Down(1, 2)}));
  EXPECT_EQ(trees[1].depth, 2);
}

TEST(CongestionTest, ACongestedPortWithNoCongestedNextHopIsItsOwnRoot) {
  CongestedTree t;
  auto trees = t.Trees({t.Up(1, 0)});
  ASSERT_EQ(trees.size(), 1u);
  EXPECT_EQ(trees[0].root, t.Up(1, 0));
  EXPECT_TRUE(trees[0].victims.empty());
  EXPECT_EQ(trees[0].depth, 0);
  // Congested next to each other but not on each other's way: two roots.
  // spine2 does not carry what leaf2 sends up to spine1.
  trees = t.Trees({t.Up(1, 0), t.Down(1, 0)});
  ASSERT_EQ(trees.size(), 2u);
  EXPECT_TRUE(trees[0].victims.empty());
  EXPECT_TRUE(trees[1].victims.empty());
  EXPECT_TRUE(t.Trees({}).empty());
}

TEST(CongestionTest, TheForwardingTableNotTheCablingDecidesTheNextHop) {
  CongestedTree t;
  // Balanced tables: leaf2's uplink to spine1 carries cn1 and cn5, so it
  // waits behind spine1's congested port to leaf3 (cn5's way).
  auto trees = t.Trees({t.Up(1, 0), t.Down(0, 2)});
  ASSERT_EQ(trees.size(), 1u);
  EXPECT_EQ(trees[0].root, t.Down(0, 2));
  EXPECT_EQ(trees[0].victims, (std::vector<PortRef>{t.Up(1, 0)}));
  // The same cables, but leaf2 sends cn5 through spine2: its uplink to
  // spine1 no longer feeds that port, and each is a root of its own.
  t.RouteHost(t.leaf[1], 4, 4);
  trees = t.Trees({t.Up(1, 0), t.Down(0, 2)});
  ASSERT_EQ(trees.size(), 2u);
  EXPECT_TRUE(trees[0].victims.empty());
  EXPECT_TRUE(trees[1].victims.empty());
  // And a table that sends cn1 from spine1 down to leaf3 (a wrong route)
  // makes spine1's port to leaf1 carry nothing of cn1's.
  t.RouteHost(t.spine[0], 0, 3);
  EXPECT_EQ(NextHops(t.fabric, t.tables, t.Down(0, 0)), (std::set<PortRef>{t.ToHost(1)}));
}

TEST(CongestionTest, AnHcaWaitingToSendIsAVictimOfItsLeafsCongestedUplink) {
  CongestedTree t;
  const auto trees = t.Trees({t.P(t.host[2], 1), t.Up(1, 0)});
  ASSERT_EQ(trees.size(), 1u);
  EXPECT_EQ(trees[0].root, t.Up(1, 0));
  EXPECT_EQ(trees[0].victims, (std::vector<PortRef>{t.P(t.host[2], 1)}));
}

TEST(CongestionTest, PortsThatWaitOnEachOtherAreOneLoopTree) {
  CongestedTree t;
  // cn5 routed round leaf1 -> spine1 -> leaf2 -> spine2 -> leaf1 -> ...
  t.RouteHost(t.spine[0], 4, 2);
  t.RouteHost(t.leaf[1], 4, 4);
  t.RouteHost(t.spine[1], 4, 1);
  // The loop's four ports, and leaf3's uplink to spine1 feeding it.
  const auto trees = t.Trees({t.Up(0, 0), t.Down(0, 1), t.Up(1, 1), t.Down(1, 0), t.Up(2, 0)});
  ASSERT_EQ(trees.size(), 1u);
  EXPECT_TRUE(trees[0].loop);
  EXPECT_EQ(trees[0].root, t.Up(0, 0));  // the loop's lowest port
  EXPECT_EQ(trees[0].victims, (std::vector<PortRef>{t.Up(1, 1), t.Up(2, 0), t.Down(0, 1), t.Down(1, 0)}));
  EXPECT_EQ(trees[0].depth, 4);
}

}  // namespace
}  // namespace ibfabric::topology
