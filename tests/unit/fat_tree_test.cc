#include "tests/testbed/fat_tree.h"

#include <gtest/gtest.h>

namespace ibfabric::testbed {
namespace {

TEST(FatTreeTest, LayoutOf324HostBuild) {
  const FatTree t = FatTree::Generate(Spec324());
  EXPECT_EQ(t.hosts().size(), 324u);
  EXPECT_EQ(t.cables().size(), 324u + 18u * 9u * 2u);
  EXPECT_EQ(t.LeafHostPort(41), (Endpoint{"ib-leaf03", 5}));
  EXPECT_EQ(t.LeafUplink(7, 4, 1), (Endpoint{"ib-leaf07", 18 + 3 * 2 + 2}));
  EXPECT_EQ(*t.Peer(t.LeafUplink(7, 4, 1)), t.SpineDownlink(4, 7, 1));
  EXPECT_EQ(t.SpineDownlink(5, 12, 0), (Endpoint{"ib-spine05", 23}));
  EXPECT_EQ(t.CabledPorts("ib-spine01").size(), 36u);
  const std::string net = t.NetFile();
  EXPECT_NE(net.find("Switch 36 \"ib-leaf01\"\n[1] \"cn0001\"[1]  # \"cn0001\" lid 0 4xQDR\n"), std::string::npos);
  EXPECT_NE(net.find("Hca 1 \"cn0001\"\n[1] \"ib-leaf01\"[1]  # lid 0 lmc 0 \"ib-leaf01\" lid 0 4xQDR\n"),
            std::string::npos);
}

TEST(FatTreeTest, PlantedFaults) {
  FatTreeSpec s = Spec(4, 2, 4, 1, 12);
  FatTree clean = FatTree::Generate(s);
  s.swaps = {{clean.LeafUplink(1, 1), clean.LeafUplink(1, 2)}};
  s.missing = {clean.LeafUplink(2, 2)};
  s.leaf_links = {{3, 4}};
  s.degraded = {{clean.LeafUplink(4, 1), "1xQDR"}};
  const FatTree t = FatTree::Generate(s);
  EXPECT_EQ(*t.Peer(t.LeafUplink(1, 1)), clean.SpineDownlink(2, 1));
  EXPECT_EQ(*t.Peer(t.LeafUplink(1, 2)), clean.SpineDownlink(1, 1));
  EXPECT_EQ(t.Peer(t.LeafUplink(2, 2)), nullptr);
  EXPECT_EQ(*t.Peer({"ib-leaf03", 7}), (Endpoint{"ib-leaf04", 7}));
  const std::string net = t.NetFile();
  EXPECT_NE(net.find("[5] \"ib-spine01\"[4]  # \"ib-spine01\" lid 0 1xQDR"), std::string::npos);
  EXPECT_NE(net.find("[4] \"ib-leaf04\"[5]  # \"ib-leaf04\" lid 0 1xQDR"), std::string::npos);
}

TEST(FatTreeTest, ImpossibleSpecsAreRejected) {
  FatTreeSpec s;
  s.hosts_per_leaf = 30;
  s.spines = 4;
  s.links_per_pair = 2;
  EXPECT_THROW(FatTree::Generate(s), std::invalid_argument);
  FatTreeSpec m;
  m.missing = {{"ib-leaf01", 30}};
  EXPECT_THROW(FatTree::Generate(m), std::invalid_argument);
  FatTreeSpec l;
  l.radix = 6;  // 4 hosts + 2 uplinks: no spare port for a leaf-to-leaf link
  l.leaf_links = {{1, 2}};
  EXPECT_THROW(FatTree::Generate(l), std::invalid_argument);
}

}  // namespace
}  // namespace ibfabric::testbed
