// The fabric's tree for Slurm (#61), on the simulated fabric and a real
// slurmctld (Debian's slurm-wlm, topology/tree): the exporter's
// topology.conf is accepted, `scontrol show topology` lists every leaf with
// exactly the hosts the fabric cables to it and every spine over every leaf;
// a host whose only cable goes down is left out of the next file, said so
// in it, and the controller takes the file again (scontrol reconfigure).
// On a rail-optimized fabric the controller takes the tree too (each server
// under its rail-0 leaf), and topology.yaml (Slurm 25.05's, which Debian's
// 22.05 does not read: checked against the file the controller took) holds
// that same tree and each scalable unit as a block of its servers.

#include "tests/testbed/slurm.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "tests/integration/fabric_suite.h"

namespace ibfabric::testbed {
namespace {

using std::chrono::seconds;

class SlurmTopologyTest : public FabricSuite {
 protected:
  static void SetUpTestSuite() { StartFabric(Spec(3, 2, 3, 1, 8)); }

  // Which hosts the generated fabric cables to each leaf: the truth the
  // file must tell.
  static std::map<std::string, std::set<std::string>> HostsByLeaf() {
    std::map<std::string, std::set<std::string>> out;
    const std::set<std::string> leaves(tree_->leaves().begin(), tree_->leaves().end());
    const std::set<std::string> hosts(tree_->hosts().begin(), tree_->hosts().end());
    for (const Cable& c : tree_->cables()) {
      if (leaves.count(c.a.node) && hosts.count(c.b.node)) out[c.a.node].insert(c.b.node);
      if (leaves.count(c.b.node) && hosts.count(c.a.node)) out[c.b.node].insert(c.a.node);
    }
    return out;
  }
  static std::string Conf(const ExporterProcess& e) {
    int status = 0;
    const std::string body = e.Get("/api/v1/slurm/topology.conf", &status);
    EXPECT_EQ(status, 200) << body;
    return body;
  }
};

TEST_F(SlurmTopologyTest, ARealSlurmctldTakesTheTreeAndAHostWhoseCableIsDownIsLeftOut) {
  // Sweeps often, every port's state read again within 3 s: the cable found down soon.
  auto e = StartExporter({"--sweep.interval=300ms", "--discovery.interval=1h", "--sweep.rotation=3s", "--sm.no-traps"});
  ASSERT_NE(e, nullptr);
  const std::map<std::string, std::set<std::string>> truth = HostsByLeaf();
  ASSERT_EQ(truth.size(), 3u);
  std::string error;
  auto slurm = SlurmController::Start(tree_->hosts(), Conf(*e), &error);
  ASSERT_NE(slurm, nullptr) << error;
  std::map<std::string, SlurmSwitchLine> topo = slurm->Topology(&error);
  ASSERT_EQ(topo.size(), 5u) << error << slurm->Log();
  for (const auto& [leaf, hosts] : truth) {
    ASSERT_TRUE(topo.count(leaf)) << leaf;
    EXPECT_EQ(topo[leaf].level, 0) << leaf;
    EXPECT_EQ(topo[leaf].nodes, hosts) << leaf;
  }
  const std::set<std::string> leaves(tree_->leaves().begin(), tree_->leaves().end());
  for (const std::string& spine : tree_->spines()) {
    ASSERT_TRUE(topo.count(spine)) << spine;
    EXPECT_EQ(topo[spine].level, 1);
    EXPECT_EQ(topo[spine].switches, leaves) << spine;
    EXPECT_EQ(topo[spine].nodes.size(), tree_->hosts().size()) << "every host under every spine";
  }
  EXPECT_EQ(slurm->Log().find("lack access"), std::string::npos) << "every node is under a switch";

  // Host 5's only cable down: the exporter re-walks, the host is gone and
  // left out (a comment of the file, the JSON, the gauge).
  const std::string gone = tree_->Host(5);
  Console("Unlink " + At(tree_->LeafHostPort(5)));
  auto s = e->WaitFor([](const Scrape& x) { return x.Value("infiniband_slurm_topology_nodes_left_out", {}) == 1; },
                      seconds(30));
  Console("ReLink " + At(tree_->LeafHostPort(5)));
  ASSERT_TRUE(s) << e->Log();
  EXPECT_EQ(s->Value("infiniband_slurm_topology_nodes", {}), 8);
  const std::string conf = Conf(*e);
  EXPECT_NE(conf.find("# left out (no port up, or cabled to no switch of the tree): " + gone + "\n"), std::string::npos)
      << conf;
  int status = 0;
  const nlohmann::json j = nlohmann::json::parse(e->Get("/api/v1/slurm/topology", &status), nullptr, false);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(j["left_out"], nlohmann::json::array({gone}));
  ASSERT_TRUE(slurm->Reconfigure(conf, &error)) << error;
  topo = slurm->Topology(&error);
  std::string leaf_of_gone;
  for (const auto& [leaf, hosts] : truth) {
    if (hosts.count(gone)) leaf_of_gone = leaf;
  }
  ASSERT_FALSE(leaf_of_gone.empty());
  std::set<std::string> rest = truth.at(leaf_of_gone);
  rest.erase(gone);
  EXPECT_EQ(topo[leaf_of_gone].nodes, rest) << error;
}

// Two scalable units of three servers with two HCAs each (rails mlx5_0 and
// mlx5_1), a leaf per unit and rail, two spines.
class SlurmUnitsTest : public FabricSuite {
 protected:
  static void SetUpTestSuite() {
    FatTreeSpec s = Spec(4, 2, 3, 1, 8);
    s.rails.units = 2;
    s.rails.servers = 3;
    s.rails.devices = {"mlx5_0", "mlx5_1"};
    StartFabric(s);
  }
};

TEST_F(SlurmUnitsTest, TheUnitsAreBlocksAndTheYamlTreeIsTheOneARealSlurmctldTakes) {
  auto e = StartExporter({"--sweep.interval=1s"});
  ASSERT_NE(e, nullptr);
  int status = 0;
  const std::string conf = e->Get("/api/v1/slurm/topology.conf", &status);
  ASSERT_EQ(status, 200) << conf;
  std::vector<std::string> servers;
  std::map<std::string, std::set<std::string>> truth;  // rail-0 leaf -> its unit's servers
  for (int u = 1; u <= 2; ++u) {
    for (int s = 1; s <= 3; ++s) {
      servers.push_back(tree_->Server(u, s));
      truth[tree_->RailLeaf(u, 1)].insert(tree_->Server(u, s));
    }
  }
  std::string error;
  auto slurm = SlurmController::Start(servers, conf, &error);
  ASSERT_NE(slurm, nullptr) << error << "\n" << conf;
  const std::map<std::string, SlurmSwitchLine> topo = slurm->Topology(&error);
  ASSERT_EQ(topo.size(), 4u) << error << "\n" << conf << slurm->Log();  // 2 rail-0 leaves, 2 spines
  for (const auto& [leaf, hosts] : truth) {
    ASSERT_TRUE(topo.count(leaf)) << leaf << "\n" << conf;
    EXPECT_EQ(topo.at(leaf).nodes, hosts) << leaf;
  }
  for (const std::string& spine : tree_->spines()) {
    ASSERT_TRUE(topo.count(spine)) << spine;
    EXPECT_EQ(topo.at(spine).switches, (std::set<std::string>{tree_->RailLeaf(1, 1), tree_->RailLeaf(2, 1)}));
  }
  EXPECT_EQ(slurm->Log().find("lack access"), std::string::npos) << "every node is under a switch";

  // topology.yaml: the tree of the file the controller took, line for line,
  // and a block a unit.
  const std::string yaml = e->Get("/api/v1/slurm/topology.yaml", &status);
  ASSERT_EQ(status, 200) << yaml;
  std::map<std::string, std::string> lines;  // SwitchName -> the rest of its topology.conf line
  std::istringstream in(conf);
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("SwitchName=", 0) != 0) continue;
    const auto space = l.find(' ');
    lines[l.substr(11, space - 11)] = l.substr(space + 1);
  }
  std::map<std::string, std::string> from_yaml, blocks;
  std::vector<std::size_t> sizes;
  const YAML::Node doc = YAML::Load(yaml);
  ASSERT_EQ(doc.size(), 2u) << yaml;
  EXPECT_EQ(doc[0]["topology"].as<std::string>(), "infiniband_tree");
  EXPECT_TRUE(doc[0]["cluster_default"].as<bool>());
  for (const YAML::Node& s : doc[0]["tree"]["switches"]) {
    from_yaml[s["switch"].as<std::string>()] =
        s["nodes"] ? "Nodes=" + s["nodes"].as<std::string>() : "Switches=" + s["children"].as<std::string>();
  }
  EXPECT_EQ(from_yaml, lines) << yaml << conf;
  EXPECT_EQ(doc[1]["topology"].as<std::string>(), "infiniband_units");
  EXPECT_FALSE(doc[1]["cluster_default"].as<bool>());
  sizes = doc[1]["block"]["block_sizes"].as<std::vector<std::size_t>>();
  for (const YAML::Node& b : doc[1]["block"]["blocks"])
    blocks[b["block"].as<std::string>()] = b["nodes"].as<std::string>();
  EXPECT_EQ(sizes, std::vector<std::size_t>{3});
  ASSERT_EQ(blocks.size(), 2u) << yaml;
  std::set<std::string> listed;
  for (const auto& [name, nodes] : blocks) listed.insert(nodes);
  EXPECT_EQ(listed, (std::set<std::string>{lines.at(tree_->RailLeaf(1, 1)).substr(6),
                                           lines.at(tree_->RailLeaf(2, 1)).substr(6)}))
      << "each unit's block lists the servers its rail-0 leaf does";
  EXPECT_EQ(e->ScrapeMetrics().Value("infiniband_slurm_topology_blocks", {}), 2);
}

}  // namespace
}  // namespace ibfabric::testbed
