// The partition plan parser and the partition analysis on hand-made P_Key
// tables.

#include "topology/partitions.h"

#include <gtest/gtest.h>

#include "collectors/api/json.h"
#include "tests/unit/fabric_builder.h"

namespace ibfabric::topology {
namespace {

TEST(PartitionsTest, ParsesAPlan) {
  PartitionPlan p;
  std::string error;
  ASSERT_TRUE(
      ParsePartitionPlan("partitions:\n  - name: default\n    pkey: 0x7fff\n    full: all\n"
                         "  - name: t\n    pkey: 0x8001\n    full: [cn1, 0x0000000000000105]\n    limited: [cn3]\n",
                         &p, &error))
      << error;
  ASSERT_EQ(p.partitions.size(), 2u);
  EXPECT_TRUE(p.partitions[0].all_full);
  EXPECT_EQ(p.partitions[1].pkey, 0x0001);
  EXPECT_EQ(p.partitions[1].full, (std::set<std::string>{"cn1", "0x0000000000000105"}));
  EXPECT_EQ(p.partitions[1].limited, (std::set<std::string>{"cn3"}));
}

TEST(PartitionsTest, RefusesBadPlansNamingTheLine) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"", "line 1: expected a map with 'partitions:'"},
      {"partitions: {}\n", "line 1: partitions must be a list"},
      {"partitions:\n  - name: x\n", "line 2: a partition needs a pkey"},
      {"partitions:\n  - pkey: 0x10000\n", "line 2: pkey must be a P_Key"},
      {"partitions:\n  - pkey: 0x8000\n", "line 2: pkey must be a P_Key"},
      {"partitions:\n  - pkey: 1\n  - pkey: 0x8001\n", "is listed twice"},
      {"partitions:\n  - pkey: 1\n    full: cn1\n", "line 3: full must be a list"},
      {"partitions:\n  - pkey: 1\n    full: [a]\n    limited: [a]\n", "a is both a full and a limited member"},
      {"partitions:\n  - pkey: 1\n    members: [a]\n", "line 3: unknown key 'members'"},
      {"partition:\n  - pkey: 1\n", "expected a map with 'partitions:'"},
      {"partitions: [\n", "not YAML"},
  };
  for (const auto& [text, want] : cases) {
    PartitionPlan p;
    std::string error;
    EXPECT_FALSE(ParsePartitionPlan(text, &p, &error)) << text;
    EXPECT_NE(error.find(want), std::string::npos) << "'" << error << "' lacks '" << want << "'";
  }
}

TEST(PartitionsTest, OddPortsOnALeafAndAgainstAPlan) {
  testing::FabricBuilder b;
  const int leaf = b.Switch("leaf1", 8);
  std::vector<int> hosts;
  for (int i = 0; i < 4; ++i) {
    hosts.push_back(b.Ca("cn" + std::to_string(i + 1)));
    b.Link(leaf, i + 1, hosts.back(), 1);
  }
  const Fabric f = b.Build();
  PartitionTables t;
  for (int i = 0; i < 4; ++i) t[{b.Guid(hosts[i]), 1}] = {0xffff};
  t[{b.Guid(hosts[3]), 1}] = {0x0001, 0xffff};  // cn4: also a limited member of 0x0001
  const PartitionAnalysis a = AnalyzePartitions(f, t, nullptr);
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].kind, FindingKind::kPartitionMismatch);
  EXPECT_EQ(a.findings[0].node, b.Guid(hosts[3]));
  EXPECT_EQ(a.findings[0].detail,
            "cn4[1] holds {0x0001 limited, 0x7fff full} where 3 of 4 HCA ports on leaf1 hold {0x7fff full}");

  PartitionPlan plan;
  std::string error;
  ASSERT_TRUE(
      ParsePartitionPlan("partitions:\n  - pkey: 0x7fff\n    full: all\n  - pkey: 0x0001\n    limited: [cn4]\n"
                         "    full: [cn1]\n",
                         &plan, &error))
      << error;
  const PartitionAnalysis with_plan = AnalyzePartitions(f, t, &plan);
  std::vector<std::string> plan_findings;
  for (const auto& x : with_plan.findings) {
    if (x.kind == FindingKind::kPartitionPlanMismatch) plan_findings.push_back(x.detail);
  }
  EXPECT_EQ(
      plan_findings,
      (std::vector<std::string>{"cn1[1] holds {0x7fff full}, the partition plan says {0x0001 full, 0x7fff full}"}));
}

// Switch ports against the CA ports they face: a partition the switch port
// lacks, one it has in excess, membership alone differing (not a finding),
// and the enforcement bits in the detail. Switch ports take no part in the
// leaf majority or the plan.
TEST(PartitionsTest, SwitchPortsAgainstTheHcaTheyFace) {
  testing::FabricBuilder b;
  const int leaf = b.Switch("leaf1", 8);
  std::vector<int> hosts;
  for (int i = 0; i < 3; ++i) {
    hosts.push_back(b.Ca("cn" + std::to_string(i + 1)));
    b.Link(leaf, i + 1, hosts.back(), 1);
  }
  b.PortOf(leaf, 2).partition_enforcement_inbound = true;
  const Fabric f = b.Build();
  PartitionTables t;
  for (int i = 0; i < 3; ++i) t[{b.Guid(hosts[i]), 1}] = {0x8001, 0xffff};
  t[{b.Guid(leaf), 1}] = {0xffff};                  // lacks 0x0001
  t[{b.Guid(leaf), 2}] = {0x8001, 0x0002, 0xffff};  // admits 0x0002 too
  t[{b.Guid(leaf), 3}] = {0x0001, 0xffff};          // limited where cn3 is full: same partitions
  PartitionPlan plan;
  std::string error;
  ASSERT_TRUE(ParsePartitionPlan(
      "partitions:\n  - pkey: 0x7fff\n    full: all\n  - pkey: 0x0001\n    full: [cn1, cn2, cn3]\n", &plan, &error))
      << error;
  const PartitionAnalysis a = AnalyzePartitions(f, t, &plan);
  ASSERT_EQ(a.findings.size(), 2u);
  for (const auto& x : a.findings) EXPECT_EQ(x.kind, FindingKind::kPartitionEnforcementMismatch);
  EXPECT_EQ(a.findings[0].a, (PortRef{b.Guid(leaf), 1}));
  EXPECT_EQ(a.findings[0].b, (PortRef{b.Guid(hosts[0]), 1}));
  EXPECT_EQ(a.findings[0].detail,
            "leaf1[1] holds {0x7fff full} facing cn1[1] which holds {0x0001 full, 0x7fff full}: its traffic in "
            "partition 0x0001 is dropped at the switch port once partition enforcement is switched on (it is off)");
  EXPECT_EQ(a.findings[1].a, (PortRef{b.Guid(leaf), 2}));
  EXPECT_EQ(a.findings[1].detail,
            "leaf1[2] holds {0x0001 full, 0x0002 limited, 0x7fff full} facing cn2[1] which holds {0x0001 full, 0x7fff "
            "full}: the switch port admits partition 0x0002 (partition enforcement inbound on, outbound off)");
  EXPECT_EQ(a.ports.size(), 6u);  // all six tables are exported
  // In the topology JSON: switch ports with their enforcement bits, HCA ports without.
  const topology::Analysis tree = Analyze(f);
  const auto j = collectors::TopologyJson({&f, &tree, nullptr, &a})["partitions"];
  ASSERT_EQ(j.size(), 6u);
  EXPECT_EQ(j[0]["name"], "leaf1");
  EXPECT_EQ(j[0]["partitions"], (nlohmann::json::array({{{"pkey", "0x7fff"}, {"membership", "full"}}})));
  EXPECT_EQ(j[1]["enforcement"], (nlohmann::json{{"inbound", true}, {"outbound", false}}));
  EXPECT_FALSE(j[3].contains("enforcement")) << j[3].dump();
}

}  // namespace
}  // namespace ibfabric::topology
