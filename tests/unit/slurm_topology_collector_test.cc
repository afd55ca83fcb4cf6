// collectors/slurm_topology_collector.cc: the fabric's tree as Slurm's
// topology/tree plugin reads it, over the collector bed's small fabric
// (spine0, spine1 over leaf0 with cn0001-cn0002 and leaf1 with
// cn0003-cn0004): the file, its JSON, its gauges, the hosts' Slurm names,
// a host gone from the fabric left out and said so.

#include "collectors/slurm_topology_collector.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <map>

#include "collectors/registry.h"
#include "tests/testbed/prom_text.h"
#include "tests/unit/collector_bed.h"
#include "tests/unit/rail_fabric.h"
#include "topology/hosts.h"

namespace ibfabric::collectors {
namespace {

const ApiRoute& Route(std::string_view path) {
  for (const ApiRoute& r : FindCollector("slurm_topology")->routes) {
    if (r.path == path) return r;
  }
  ADD_FAILURE() << "no route " << path;
  static const ApiRoute kNone{"", "", [](const Snapshot&, const ApiParams&) { return ApiReply{}; }};
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
  o.slurm_node_names = {{"cn0003", "gpu-a"}, {"cn0004", "gpu-b"}};
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

// topology.yaml read back as YAML: each topology's switches (name ->
// children, nodes) or blocks (name -> nodes), and its block sizes.
struct YamlTopology {
  bool cluster_default = false;
  std::map<std::string, std::pair<std::string, std::string>> switches;
  std::map<std::string, std::string> blocks;
  std::vector<std::size_t> block_sizes;
};
std::map<std::string, YamlTopology> ReadYaml(const std::string& text) {
  std::map<std::string, YamlTopology> out;
  for (const YAML::Node& t : YAML::Load(text)) {
    YamlTopology& y = out[t["topology"].as<std::string>()];
    y.cluster_default = t["cluster_default"].as<bool>();
    if (t["tree"]) {
      for (const YAML::Node& s : t["tree"]["switches"]) {
        y.switches[s["switch"].as<std::string>()] = {s["children"] ? s["children"].as<std::string>() : "",
                                                     s["nodes"] ? s["nodes"].as<std::string>() : ""};
      }
    }
    if (t["block"]) {
      y.block_sizes = t["block"]["block_sizes"].as<std::vector<std::size_t>>();
      for (const YAML::Node& b : t["block"]["blocks"])
        y.blocks[b["block"].as<std::string>()] = b["nodes"].as<std::string>();
    }
  }
  return out;
}

TEST(SlurmTopologyCollectorTest, TopologyYamlHoldsTheTreeAndNoBlocksWithoutUnits) {
  Bed b;
  auto tree = b.Make("fat_tree");
  b.Run(*tree);
  auto slurm = b.Make("slurm_topology");
  b.Run(*slurm);
  const ApiReply yaml = Route("/api/v1/slurm/topology.yaml").reply(b.parts, {});
  ASSERT_EQ(yaml.status, 200) << yaml.error;
  EXPECT_EQ(yaml.content_type, "application/yaml; charset=utf-8");
  const auto read = ReadYaml(yaml.text);
  ASSERT_EQ(read.size(), 1u) << yaml.text;
  const YamlTopology& t = read.at("infiniband_tree");
  EXPECT_TRUE(t.cluster_default);
  using Switch = std::pair<std::string, std::string>;
  EXPECT_EQ(t.switches, (std::map<std::string, Switch>{{"leaf0", {"", "cn[0001-0002]"}},
                                                       {"leaf1", {"", "cn[0003-0004]"}},
                                                       {"spine0", {"leaf[0-1]", ""}},
                                                       {"spine1", {"leaf[0-1]", ""}}}));
  const ApiReply json = Route("/api/v1/slurm/topology").reply(b.parts, {});
  EXPECT_EQ(json.body["blocks"], nlohmann::json::array());
  EXPECT_EQ(json.body["block_size"], 0);
  EXPECT_EQ(b.Render().Value("infiniband_slurm_topology_blocks", {}), 0);
  EXPECT_EQ(Route("/api/v1/slurm/topology.yaml").reply(b.parts, {{"x", "1"}}).status, 400);
}

// A rail-optimized fabric: each scalable unit a block of its servers, the
// base block size the servers a unit is built of, a server whose every
// cable is down left out of its block (and the tree) but still counted in
// its unit's size.
TEST(SlurmTopologyCollectorTest, ScalableUnitsAreBlocks) {
  testing::RailFabric rails(3, 4, {"mlx5_0", "mlx5_1"});
  // Server 3 of unit 2 (gpu23): both cables down.
  for (int h = 0; h < 2; ++h) {
    topology::Port& p = rails.b.PortOf(rails.hca.at({1, 2, h}), 1);
    p.phys_state = 2;
    p.state = 1;
  }
  const topology::Fabric f = rails.b.Build();
  const topology::HostAnalysis hosts = topology::AnalyzeHosts(f, topology::HostPattern{});
  ASSERT_EQ(hosts.layout, topology::HostLayout::kRailOptimized);
  const SlurmTree t = BuildSlurmTree(f, topology::Analyze(f), hosts, {{"gpu11", "node-a"}});
  ASSERT_EQ(t.blocks.size(), 3u);
  EXPECT_EQ(t.blocks[0].name, "su1");
  EXPECT_EQ(t.blocks[0].nodes, (std::vector<std::string>{"gpu12", "gpu13", "gpu14", "node-a"}));
  EXPECT_EQ(t.blocks[1].nodes, (std::vector<std::string>{"gpu21", "gpu22", "gpu24"}));
  EXPECT_EQ(t.block_size, 4u);
  EXPECT_EQ(t.left_out, std::vector<std::string>{"gpu23"});
  const auto read = ReadYaml(TopologyYaml(t));
  ASSERT_EQ(read.size(), 2u) << TopologyYaml(t);
  EXPECT_TRUE(read.at("infiniband_tree").cluster_default);
  const YamlTopology& units = read.at("infiniband_units");
  EXPECT_FALSE(units.cluster_default);
  EXPECT_EQ(units.block_sizes, std::vector<std::size_t>{4});
  EXPECT_EQ(units.blocks, (std::map<std::string, std::string>{
                              {"su1", "gpu[12-14],node-a"}, {"su2", "gpu[21-22,24]"}, {"su3", "gpu[31-34]"}}));
  EXPECT_NE(TopologyYaml(t).find("# left out (no port up, or cabled to no switch of the tree): gpu23\n"),
            std::string::npos);
  // The tree's leaves list each server once, under its rail-0 leaf; a
  // rail-1 leaf (no host of its own there) is neither listed nor named as
  // a spine's child: Slurm takes only switches it was told of.
  const YamlTopology& tree = read.at("infiniband_tree");
  EXPECT_EQ(tree.switches.at("su2-leaf1").second, "gpu[21-22,24]");
  EXPECT_FALSE(tree.switches.count("su2-leaf2"));
  EXPECT_EQ(tree.switches.at("spine1").first, "su1-leaf1,su2-leaf1,su3-leaf1");
}

// Where each placed server sits (GET /api/v1/placement; the Kubernetes
// labels): its rail-0 leaf, its unit's block, the rails it is up on; no
// spine group on a fabric of two tiers (every leaf reaches every spine).
TEST(SlurmTopologyCollectorTest, EachPlacedHostHasItsLeafUnitAndRails) {
  testing::RailFabric rails(2, 3, {"mlx5_0", "mlx5_1"});
  topology::Port& down = rails.b.PortOf(rails.hca.at({1, 1, 1}), 1);  // gpu22's rail 1
  down.phys_state = 2;
  down.state = 1;
  const topology::Fabric f = rails.b.Build();
  const topology::HostAnalysis hosts = topology::AnalyzeHosts(f, topology::HostPattern{});
  const SlurmTree t = BuildSlurmTree(f, topology::Analyze(f), hosts, {{"gpu11", "node-a"}});
  ASSERT_EQ(t.placement.size(), 6u);
  EXPECT_EQ(PlacementJson("node-a", t.placement.at("node-a")), (nlohmann::json{{"host", "gpu11"},
                                                                               {"node", "node-a"},
                                                                               {"leaf", "su1-leaf1"},
                                                                               {"spine_group", nullptr},
                                                                               {"unit", "su1"},
                                                                               {"rails", 2}}));
  EXPECT_EQ(PlacementJson("gpu22", t.placement.at("gpu22")), (nlohmann::json{{"host", "gpu22"},
                                                                             {"node", "gpu22"},
                                                                             {"leaf", "su2-leaf1"},
                                                                             {"spine_group", nullptr},
                                                                             {"unit", "su2"},
                                                                             {"rails", 1}}));
  // Every placed host is on a leaf the file lists with it.
  for (const auto& [node, p] : t.placement) {
    const auto leaf =
        std::find_if(t.switches.begin(), t.switches.end(), [&p](const SlurmSwitch& s) { return s.name == p.leaf; });
    ASSERT_NE(leaf, t.switches.end()) << node;
    EXPECT_NE(std::find(leaf->nodes.begin(), leaf->nodes.end(), node), leaf->nodes.end()) << node;
  }
}

}  // namespace
}  // namespace ibfabric::collectors
