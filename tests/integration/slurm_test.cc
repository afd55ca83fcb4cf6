// The fabric's tree for Slurm (#61), on the simulated fabric and a real
// slurmctld (Debian's slurm-wlm, topology/tree): the exporter's
// topology.conf is accepted, `scontrol show topology` lists every leaf with
// exactly the hosts the fabric cables to it and every spine over every leaf;
// a host whose only cable goes down is left out of the next file, said so
// in it, and the controller takes the file again (scontrol reconfigure).

#include "tests/testbed/slurm.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
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

}  // namespace
}  // namespace ibfabric::testbed
