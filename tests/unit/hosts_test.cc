// Hosts grouped from CA descriptions, the layout recognised, and the rails
// of a rail-optimized fabric learnt from its cabling (topology/hosts.h).

#include "topology/hosts.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fabric_builder.h"
#include "tests/unit/rail_fabric.h"

namespace ibfabric::topology {
namespace {

using testing::FabricBuilder;
using testing::RailFabric;
using testing::Target;

const std::vector<std::string> kDevices{"mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5"};  // storage HCAs took 2 and 3

HostAnalysis Hosts(const Fabric& f) { return AnalyzeHosts(f, HostPattern{}); }

std::vector<std::string> Kinds(const HostAnalysis& a) {
  std::vector<std::string> out;
  for (const auto& x : a.findings) out.push_back(ToString(x.kind));
  return out;
}

TEST(HostsTest, ACleanRailOptimizedFabricHasRailsUnitsAndNoFinding) {
  RailFabric t(2, 4, kDevices);
  const HostAnalysis a = Hosts(t.fabric);
  EXPECT_EQ(a.layout, HostLayout::kRailOptimized);
  EXPECT_EQ(a.rails, kDevices);
  EXPECT_EQ(a.units, (std::vector<std::string>{"su1", "su2"}));
  EXPECT_TRUE(a.findings.empty()) << a.findings[0].detail;
  ASSERT_EQ(a.hosts.size(), 8u);
  EXPECT_EQ(a.hosts[0].name, "gpu11");
  EXPECT_EQ(a.hosts[0].unit, 0);
  EXPECT_EQ(a.hosts[7].unit, 1);
  ASSERT_EQ(a.hosts[0].hcas.size(), 4u);
  for (std::size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(a.hosts[0].hcas[r].device, kDevices[r]);
    ASSERT_EQ(a.hosts[0].hcas[r].ports.size(), 1u);
    EXPECT_EQ(a.hosts[0].hcas[r].ports[0].rail, static_cast<int>(r));
  }
  EXPECT_EQ(a.leaf_rail.at(t.b.Guid(t.leaf[1][2])), 2);
  EXPECT_EQ(a.leaf_unit.at(t.b.Guid(t.leaf[1][2])), 1);
  EXPECT_EQ(a.of_ca.at(t.b.Guid(t.hca.at({1, 3, 0}))), 7u);
  EXPECT_EQ(a.ungrouped_cas, 0u);
}

TEST(HostsTest, AnHcaOnAnotherRailsLeafIsOneFindingNamingBothEnds) {
  // gpu12's mlx5_4 (rail 2) on unit 1's rail-1 leaf.
  RailFabric t(2, 4, kDevices, [](int u, int s, int r) {
    return u == 0 && s == 1 && r == 2 ? Target{0, 1} : Target{u, r};
  });
  const HostAnalysis a = Hosts(t.fabric);
  ASSERT_EQ(Kinds(a), std::vector<std::string>{"rail_wrong_leaf"});
  const Finding& f = a.findings[0];
  EXPECT_EQ(*f.a, t.HcaPort(0, 1, 2));
  EXPECT_EQ(*f.b, (t.leaf_port.at({0, 1, 2})));
  EXPECT_EQ(f.node, t.b.Guid(t.hca.at({0, 1, 2})));
  EXPECT_NE(f.detail.find("gpu12 mlx5_4[1] is cabled to su1-leaf2["), std::string::npos) << f.detail;
  EXPECT_NE(f.detail.find("a rail mlx5_1 leaf; rail mlx5_4 of su1 is su1-leaf3"), std::string::npos) << f.detail;
}

TEST(HostsTest, TwoHcasOnEachOthersRailAreASwappedPair) {
  RailFabric t(2, 4, kDevices, [](int u, int s, int r) {
    if (u == 1 && s == 2 && (r == 0 || r == 1)) return Target{1, 1 - r};
    return Target{u, r};
  });
  const HostAnalysis a = Hosts(t.fabric);
  ASSERT_EQ(Kinds(a), (std::vector<std::string>{"rail_swapped", "rail_swapped"}));
  EXPECT_EQ(*a.findings[0].a, t.HcaPort(1, 2, 0));
  EXPECT_EQ(*a.findings[0].b, (t.leaf_port.at({1, 2, 0})));
  EXPECT_EQ(*a.findings[1].a, t.HcaPort(1, 2, 1));
  EXPECT_NE(a.findings[0].detail.find("gpu23 mlx5_0[1] and gpu23 mlx5_1[1] are swapped"), std::string::npos)
      << a.findings[0].detail;
}

// A host on each rail leaf once is cabled as designed whatever its devices
// are called (a published NDR cluster has hosts naming HCA-7 what the others
// call HCA-11): one finding for the host, information, no cable blamed. A
// cycle of three crossed cables on one host reads the same: its ports are
// still one per rail leaf.
TEST(HostsTest, AHostOnEachRailLeafOnceIsOneInformationFindingWhateverItsNames) {
  RailFabric renamed(2, 4, kDevices, {}, 1, [](int u, int s, int h) {
    const std::string host = "gpu" + std::to_string(u + 1) + std::to_string(s + 1);
    if (u == 0 && s == 1 && h < 2) return host + " mlx5_" + std::to_string(7 + h);
    return host + " " + kDevices[static_cast<std::size_t>(h)];
  });
  const HostAnalysis a = Hosts(renamed.fabric);
  ASSERT_EQ(Kinds(a), std::vector<std::string>{"rail_device_order"});
  const Finding& f = a.findings[0];
  EXPECT_FALSE(f.a || f.b) << "about the host, no cable";
  EXPECT_EQ(f.node, renamed.b.Guid(renamed.hca.at({0, 1, 0})));
  EXPECT_EQ(f.detail,
            "gpu12 has one port on each of 4 rail leaves of su1, but 2 of its devices are not on their rails' "
            "leaves: mlx5_7[1] on su1-leaf1[4] (rail mlx5_0), mlx5_8[1] on su1-leaf2[4] (rail mlx5_1); it names its "
            "HCAs otherwise than the other hosts (or its cables are in another order)");

  RailFabric cycled(2, 4, kDevices, [](int u, int s, int r) {
    return u == 1 && s == 0 && r < 3 ? Target{1, (r + 1) % 3} : Target{u, r};
  });
  const HostAnalysis c = Hosts(cycled.fabric);
  ASSERT_EQ(Kinds(c), std::vector<std::string>{"rail_device_order"});
  EXPECT_NE(c.findings[0].detail.find("gpu21 has one port on each of 4 rail leaves of su2, but 3 of its devices"),
            std::string::npos)
      << c.findings[0].detail;
}

TEST(HostsTest, AnHcaInAnotherUnitIsACrossUnitFinding) {
  RailFabric t(2, 4, kDevices, [](int u, int s, int r) {
    return u == 0 && s == 0 && r == 3 ? Target{1, 3} : Target{u, r};
  });
  const HostAnalysis a = Hosts(t.fabric);
  ASSERT_EQ(Kinds(a), std::vector<std::string>{"rail_cross_unit"});
  EXPECT_EQ(*a.findings[0].a, t.HcaPort(0, 0, 3));
  EXPECT_EQ(*a.findings[0].b, (t.leaf_port.at({0, 0, 3})));
  EXPECT_NE(a.findings[0].detail.find("gpu11 mlx5_5[1] is cabled to su2-leaf4["), std::string::npos)
      << a.findings[0].detail;
  EXPECT_NE(a.findings[0].detail.find("other HCAs are in su1, where rail mlx5_5 of su1 is su1-leaf4"),
            std::string::npos)
      << a.findings[0].detail;
  EXPECT_EQ(a.units.size(), 2u) << "one cable does not join two units";
}

TEST(HostsTest, ALeafWithoutAMajorityDepartsAndItsSharedHostsAreSaid) {
  // Unit 1's rail-1 leaf (mlx5_1) keeps servers 1-2's mlx5_1 and takes
  // their mlx5_0 too; servers 3-4's mlx5_1 go to the rail-3 leaf. That leaf
  // has no majority (2:2), so it departs from the pattern, and servers 1-2
  // each have two HCAs on it that no rail tells apart. (Three units: the
  // layout is still recognised with unit 1's four servers not spread.)
  RailFabric t(3, 4, kDevices, [](int u, int s, int r) {
    if (u == 0 && s < 2 && r == 0) return Target{0, 1};
    if (u == 0 && s >= 2 && r == 1) return Target{0, 3};
    return Target{u, r};
  });
  const HostAnalysis a = Hosts(t.fabric);
  std::map<std::string, int> kinds;
  for (const auto& k : Kinds(a)) ++kinds[k];
  ASSERT_EQ(a.layout, HostLayout::kRailOptimized) << ToString(a.layout);
  EXPECT_EQ(kinds,
            (std::map<std::string, int>{{"rail_leaf_departs", 1}, {"rail_shared_leaf", 2}, {"rail_wrong_leaf", 2}}));
  for (const auto& f : a.findings) {
    if (f.kind == FindingKind::kRailLeafDeparts) {
      EXPECT_EQ(f.node, t.b.Guid(t.leaf[0][1]));
      EXPECT_NE(f.detail.find("su1-leaf2 has no rail: its 4 host ports carry 2 different devices"), std::string::npos)
          << f.detail;
    }
    if (f.kind == FindingKind::kRailSharedLeaf) {
      EXPECT_EQ(f.b->node_guid, t.b.Guid(t.leaf[0][1]));
      EXPECT_NE(f.detail.find(" mlx5_0[1] and "), std::string::npos) << f.detail;
    }
    if (f.kind == FindingKind::kRailWrongLeaf) {
      EXPECT_EQ(f.b->node_guid, t.b.Guid(t.leaf[0][3]));
    }
  }
  EXPECT_EQ(a.leaf_rail.at(t.b.Guid(t.leaf[0][1])), -1);
}

TEST(HostsTest, DualPortHcasHaveARailPerPort) {
  const std::vector<std::string> devices{"mlx5_0", "mlx5_1"};
  RailFabric clean(2, 4, devices, {}, 2);
  const HostAnalysis a = Hosts(clean.fabric);
  EXPECT_EQ(a.layout, HostLayout::kRailOptimized);
  EXPECT_EQ(a.rails, (std::vector<std::string>{"mlx5_0 port 1", "mlx5_0 port 2", "mlx5_1 port 1", "mlx5_1 port 2"}));
  EXPECT_TRUE(a.findings.empty());
  ASSERT_EQ(a.hosts[0].hcas[1].ports.size(), 2u);
  EXPECT_EQ(a.hosts[0].hcas[1].ports[1].rail, 3);
  // The two ports of one HCA exchanged: a swapped pair.
  RailFabric swapped(
      2, 4, devices,
      [](int u, int s, int r) {
        if (u == 0 && s == 3 && r >= 2) return Target{0, 5 - r};
        return Target{u, r};
      },
      2);
  const HostAnalysis b = Hosts(swapped.fabric);
  ASSERT_EQ(Kinds(b), (std::vector<std::string>{"rail_swapped", "rail_swapped"}));
  EXPECT_EQ(*b.findings[0].a, swapped.HcaPort(0, 3, 2, 2));
  EXPECT_EQ(b.findings[0].a->port, 1);
  EXPECT_EQ(b.findings[1].a->port, 2);
}

TEST(HostsTest, OtherLayoutsGiveNoRailFinding) {
  // Every HCA of a server on one leaf (its unit's first): host per leaf.
  RailFabric together(2, 4, kDevices, [](int u, int s, int) { return Target{u, s}; });
  const HostAnalysis a = Hosts(together.fabric);
  EXPECT_EQ(a.layout, HostLayout::kHostPerLeaf);
  EXPECT_TRUE(a.findings.empty());
  EXPECT_TRUE(a.rails.empty());
  EXPECT_EQ(a.hosts.size(), 8u);
  // One HCA per server, rdma-ndd names: single HCA.
  RailFabric single(2, 4, {"mlx5_0"});
  const HostAnalysis b = Hosts(single.fabric);
  EXPECT_EQ(b.layout, HostLayout::kSingleHca);
  EXPECT_TRUE(b.findings.empty());
  // No rdma-ndd: every HCA says the same; no host can be told.
  RailFabric model(2, 4, kDevices, {}, 1, [](int, int, int) { return "MT4123 ConnectX6"; });
  const HostAnalysis c = Hosts(model.fabric);
  EXPECT_EQ(c.layout, HostLayout::kNoHosts);
  EXPECT_EQ(c.ungrouped_cas, 32u);
  EXPECT_TRUE(c.findings.empty());
  // Names without a device: no host.
  RailFabric plain(1, 4, kDevices, {}, 1, [](int, int s, int h) { return "cn" + std::to_string(s * 4 + h); });
  EXPECT_EQ(Hosts(plain.fabric).layout, HostLayout::kNoHosts);
}

TEST(HostsTest, ASitePatternNamesHostsItsOwnWay) {
  // "node017-hca3": host before the dash.
  RailFabric t(2, 4, kDevices, {}, 1, [](int u, int s, int h) {
    return "node" + std::to_string(u) + std::to_string(s) + "-hca" + std::to_string(h);
  });
  EXPECT_EQ(Hosts(t.fabric).layout, HostLayout::kNoHosts);
  HostPattern p;
  std::string error;
  ASSERT_TRUE(ParseHostPattern(R"(^(node\d+)-(hca\d+)$)", &p, &error)) << error;
  const HostAnalysis a = AnalyzeHosts(t.fabric, p);
  EXPECT_EQ(a.layout, HostLayout::kRailOptimized);
  EXPECT_EQ(a.rails, (std::vector<std::string>{"hca0", "hca1", "hca2", "hca3"}));
  EXPECT_TRUE(a.findings.empty());
  EXPECT_FALSE(ParseHostPattern("(", &p, &error));
  EXPECT_NE(error.find("not a regular expression"), std::string::npos) << error;
  EXPECT_FALSE(ParseHostPattern(R"(^(\S+) \S+$)", &p, &error));
  EXPECT_NE(error.find("exactly two groups"), std::string::npos) << error;
}

}  // namespace
}  // namespace ibfabric::topology
