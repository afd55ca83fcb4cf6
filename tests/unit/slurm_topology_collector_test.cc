// collectors/slurm_topology_collector.cc: the fabric's tree as Slurm's
// topology/tree plugin reads it, over the collector bed's small fabric
// (spine0, spine1 over leaf0 with cn0001-cn0002 and leaf1 with
// cn0003-cn0004): the file, its JSON, its gauges, the hosts' Slurm names,
// a host gone from the fabric left out and said so.

#include "collectors/slurm_topology_collector.h"

#include <gtest/gtest.h>

#include <map>

#include "collectors/registry.h"
#include "tests/testbed/prom_text.h"
#include "tests/unit/collector_bed.h"

namespace ibfabric::collectors {
namespace {

const ApiRoute& Route(std::string_view path) {
  for (const ApiRoute& r : FindCollector("slurm_topology")->routes) {
    if (r.path == path) return r;
  }
  ADD_FAILURE() << "no route " << path;
  static const ApiRoute kNone{"", [](const Snapshot&, const ApiParams&) { return ApiReply{}; }};
  return kNone;
}

TEST(SlurmTopologyCollectorTest, HostListsShareBracketsByPrefixAndWidth) {
  EXPECT_EQ(HostList({"cn0002", "cn0001", "cn0003", "cn0007"}), "cn[0001-0003,0007]");
  EXPECT_EQ(HostList({"login1", "cn0001"}), "cn0001,login1");
  // Widths apart: "gpu09" and "gpu9" are two names to Slurm.
  EXPECT_EQ(HostList({"gpu9", "gpu10", "gpu11", "gpu09"}), "gpu[09-11],gpu9");
  EXPECT_EQ(HostList({"a", "b", "a"}), "a,b");
  EXPECT_EQ(HostList({}), "");
}

TEST(SlurmTopologyCollectorTest, TheLeavesListTheirHostsAndTheSpinesTheirLeaves) {
  Bed b;
  auto tree = b.Make("fat_tree");
  b.Run(*tree);
  b.Sent();
  auto slurm = b.Make("slurm_topology");
  EXPECT_TRUE(b.Run(*slurm).ok);
  EXPECT_TRUE(b.Sent().empty()) << "no MAD: it reads fat_tree's part";
  const ApiReply conf = Route("/api/v1/slurm/topology.conf").reply(b.parts, {});
  ASSERT_EQ(conf.status, 200) << conf.error;
  EXPECT_EQ(conf.content_type, "text/plain; charset=utf-8");
  EXPECT_EQ(conf.text.substr(conf.text.find("\nSwitchName") + 1),
            "SwitchName=leaf0 Nodes=cn[0001-0002]\n"
            "SwitchName=leaf1 Nodes=cn[0003-0004]\n"
            "SwitchName=spine0 Switches=leaf[0-1]\n"
            "SwitchName=spine1 Switches=leaf[0-1]\n");
  const ApiReply json = Route("/api/v1/slurm/topology").reply(b.parts, {});
  ASSERT_EQ(json.status, 200) << json.error;
  EXPECT_EQ(json.body["nodes"], 4);
  EXPECT_EQ(json.body["switches"][2]["name"], "spine0");
  EXPECT_EQ(json.body["switches"][2]["level"], 1);
  EXPECT_EQ(json.body["switches"][0]["nodes"], nlohmann::json::array({"cn0001", "cn0002"}));
  EXPECT_TRUE(json.body["left_out"].empty());
  EXPECT_EQ(Route("/api/v1/slurm/topology").reply(b.parts, {{"x", "1"}}).status, 400);
  const testbed::Scrape s = b.Render();
  EXPECT_EQ(s.Value("infiniband_slurm_topology_switches", {}), 4);
  EXPECT_EQ(s.Value("infiniband_slurm_topology_nodes", {}), 4);
  EXPECT_EQ(s.Value("infiniband_slurm_topology_nodes_left_out", {}), 0);
}

TEST(SlurmTopologyCollectorTest, HostsAreNamedAsSlurmKnowsThemAndOneGoneIsLeftOut) {
  Bed b;
  CollectorOptions o;
  o.Own<SlurmTopologyOptions>().node_names = {{"cn0003", "gpu-a"}, {"cn0004", "gpu-b"}};
  auto tree = b.Make("fat_tree");
  b.Run(*tree);
  auto slurm = b.Make("slurm_topology", o);
  b.Run(*slurm);
  EXPECT_NE(Route("/api/v1/slurm/topology.conf").reply(b.parts, {}).text.find("SwitchName=leaf1 Nodes=gpu-a,gpu-b\n"),
            std::string::npos)
      << Route("/api/v1/slurm/topology.conf").reply(b.parts, {}).text;

  // cn0004's only cable goes down: nothing reaches it, the next walk has
  // no cn0004, and it is left out rather than silently dropped.
  std::set<std::uint64_t> kept;
  for (const auto& n : b.fabric.nodes()) {
    if (n.description != "cn0004 mlx5_0") kept.insert(n.guid);
  }
  ASSERT_EQ(kept.size(), b.fabric.nodes().size() - 1);
  b.fabric = topology::Part(b.fabric, kept);
  b.Run(*tree);
  b.Run(*slurm);
  const std::string conf = Route("/api/v1/slurm/topology.conf").reply(b.parts, {}).text;
  EXPECT_NE(conf.find("# left out (no port up, or cabled to no switch of the tree): gpu-b\n"), std::string::npos)
      << conf;
  EXPECT_NE(conf.find("SwitchName=leaf1 Nodes=gpu-a\n"), std::string::npos) << conf;
  EXPECT_EQ(b.Render().Value("infiniband_slurm_topology_nodes_left_out", {}), 1);
}

TEST(SlurmTopologyCollectorTest, ANodeNameMapIsCheckedLineByLine) {
  std::map<std::string, std::string> names;
  std::string error;
  EXPECT_TRUE(ParseSlurmNodeNames("# fabric slurm\ncn0001 node01\n\ncn0002 node02 # second\n", &names, &error));
  EXPECT_EQ(names, (std::map<std::string, std::string>{{"cn0001", "node01"}, {"cn0002", "node02"}}));
  names.clear();
  EXPECT_FALSE(ParseSlurmNodeNames("cn0001\n", &names, &error));
  EXPECT_EQ(error, "line 1: not FABRIC_HOST SLURM_NODE");
  EXPECT_FALSE(ParseSlurmNodeNames("cn0001 a\ncn0002 b[1]\n", &names, &error));
  EXPECT_EQ(error, "line 2: 'b[1]' is no Slurm node name (letters, digits, . - _)");
  names.clear();
  EXPECT_FALSE(ParseSlurmNodeNames("cn0001 a\ncn0001 b\n", &names, &error));
  EXPECT_EQ(error, "line 2: cn0001 named twice");
}

}  // namespace
}  // namespace ibfabric::collectors
