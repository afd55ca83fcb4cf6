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
// The shipped drain script (deploy/slurm/ibfabric-drain) on the exporter's
// drain list: of a planted bad host cable it drains exactly that host, with
// the alert's reason, and resumes it once the cable has been clean for
// --drain.resume-after; in dry-run, and past its cap, it drains nothing.
// The shipped NHC check (deploy/nhc/ibfabric.nhc) fails that host alone,
// with the same reason, until it may come back.

#include "tests/testbed/slurm.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <functional>
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

class SlurmDrainTest : public FabricSuite {
 protected:
  static void SetUpTestSuite() { StartFabric(Spec(2, 2, 3, 1, 8)); }
  void SetUp() override {
    dir_ = MakeTempDir("drain");
    WriteFile(dir_ + "/alerts.yaml", kPagingAlerts);
  }
  void TearDown() override { RemoveTree(dir_); }

  std::unique_ptr<ExporterProcess> Exporter() {
    // Every port's state read again within 2 s: a cable found down soon.
    return StartExporter({"--sweep.interval=500ms", "--sweep.rotation=2s", "--alerts.config=" + dir_ + "/alerts.yaml",
                          "--drain.resume-after=3s"});
  }
  // A controller of the fabric's hosts, given `e`'s topology.conf.
  static std::unique_ptr<SlurmController> Controller(const ExporterProcess& e) {
    int status = 0;
    std::string error;
    auto slurm = SlurmController::Start(tree_->hosts(), e.Get("/api/v1/slurm/topology.conf", &status), &error);
    EXPECT_NE(slurm, nullptr) << error;
    return slurm;
  }
  // The shipped script against `e` and `slurm`, its output.
  std::string Script(const ExporterProcess& e, const SlurmController& slurm, std::vector<std::string> args) {
    std::vector<std::string> argv{"python3",    std::string(IBFABRIC_SOURCE_DIR) + "/deploy/slurm/ibfabric-drain",
                                  "--url",      "http://127.0.0.1:" + std::to_string(e.port()),
                                  "--state",    dir_ + "/state.json",
                                  "--textfile", dir_ + "/drain.prom"};
    argv.insert(argv.end(), args.begin(), args.end());
    const CommandResult r = RunCommand(argv, slurm.ClientEnv(), std::chrono::seconds(30));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return r.out;
  }
  // NHC's check as NHC runs it: sourced into bash, failing through `die`.
  static std::string Nhc(int port, const std::string& host) {
    const std::string check = std::string(IBFABRIC_SOURCE_DIR) + "/deploy/nhc/ibfabric.nhc";
    const CommandResult r = RunCommand(
        {"bash", "-c",
         "die() { echo \"DIE $1 $2\"; return 1; }; . '" + check +
             "'; check_ibfabric_drain http://127.0.0.1:" + std::to_string(port) + " " + host + "; echo rc=$?"},
        {}, std::chrono::seconds(30));
    return r.out + r.err;
  }
  // "node: reason" of every drained node.
  static std::set<std::string> Drained(const SlurmController& slurm) {
    std::string error;
    std::set<std::string> out;
    for (const auto& [node, n] : slurm.Nodes(&error)) {
      if (n.state.count("DRAIN")) out.insert(node + ": " + n.reason);
    }
    return out;
  }
  // The drain list once `done` holds of it (within 30 s), else the last.
  static nlohmann::json ListWhen(const ExporterProcess& e, const std::function<bool(const nlohmann::json&)>& done) {
    nlohmann::json listed;
    WaitUntil(
        [&] {
          int status = 0;
          listed = nlohmann::json::parse(e.Get("/api/v1/drain", &status), nullptr, false);
          return status == 200 && done(listed);
        },
        seconds(30), std::chrono::milliseconds(250));
    return listed;
  }

  std::string dir_;
};

TEST_F(SlurmDrainTest, TheScriptDrainsTheHostOfABadCableAndResumesItWhenClean) {
  auto e = Exporter();
  ASSERT_NE(e, nullptr);
  auto slurm = Controller(*e);
  ASSERT_NE(slurm, nullptr);
  int status = 0;
  const auto script = [&](std::vector<std::string> args) { return Script(*e, *slurm, std::move(args)); };
  const auto nhc = [&](const std::string& host) { return Nhc(e->port(), host); };
  const auto drained = [&] { return Drained(*slurm); };

  // Host 2's own cable goes bad: it alone is listed, with the alert's reason.
  const std::string bad = tree_->Host(2);
  auto ramp = std::make_unique<Ramp>(tree_->LeafHostPort(2), "PortCounters.SymbolErrorCounter", 10, 60000);
  nlohmann::json listed;
  ASSERT_TRUE(WaitUntil(
      [&] {
        listed = nlohmann::json::parse(e->Get("/api/v1/drain", &status), nullptr, false);
        return status == 200 && listed["drain"].size() == 1;
      },
      seconds(30), std::chrono::milliseconds(250)))
      << listed.dump();
  const nlohmann::json& entry = listed["drain"][0];
  EXPECT_EQ(entry["node"], bad);
  EXPECT_EQ(entry["state"], "faulty");
  ASSERT_EQ(entry["faults"].size(), 1u);
  EXPECT_EQ(entry["faults"][0]["cause"], "bad_cable");
  const std::string cable =
      bad + "[1] - " + tree_->LeafHostPort(2).node + "[" + std::to_string(tree_->LeafHostPort(2).port) + "]";
  EXPECT_EQ(entry["faults"][0]["cable"], cable);
  const std::string reason = entry["reason"];
  EXPECT_EQ(reason.rfind("ibfabric: bad_cable " + cable + " since ", 0), 0u) << reason;
  const nlohmann::json alerts = nlohmann::json::parse(e->Get("/api/v1/alerts?state=active", &status), nullptr, false);
  std::set<std::string> ids;
  for (const auto& a : alerts["active"]) ids.insert(a["id"].get<std::string>());
  EXPECT_TRUE(ids.count(entry["faults"][0]["alert_id"].get<std::string>())) << alerts.dump();
  EXPECT_EQ(listed["fabric_hosts"], tree_->hosts().size());

  EXPECT_EQ(nhc(bad), "DIE 1 " + reason + "\nrc=1\n");
  EXPECT_EQ(nhc(tree_->Host(1)), "rc=0\n");

  // Dry-run (the default): said, not done. Past its cap: said, not done.
  std::string out = script({"--max-percent=50"});
  EXPECT_NE(out.find("would drain " + bad + ": ibfabric: bad_cable " + cable), std::string::npos) << out;
  EXPECT_TRUE(drained().empty());
  out = script({"--apply", "--max-hosts=0"});
  EXPECT_NE(out.find("skip " + bad + ": cap reached"), std::string::npos) << out;
  EXPECT_TRUE(drained().empty());
  // 5 % of 6 hosts is none: the default cap drains nothing here either.
  out = script({"--apply"});
  EXPECT_NE(out.find("cap reached (0 drained, at most 0)"), std::string::npos) << out;
  EXPECT_TRUE(drained().empty());

  // Applied: exactly that host, with the list's reason; again: nothing more.
  out = script({"--apply", "--max-percent=50"});
  EXPECT_NE(out.find("drain " + bad + ": "), std::string::npos) << out;
  EXPECT_EQ(drained(), (std::set<std::string>{bad + ": " + reason})) << slurm->Log();
  out = script({"--apply", "--max-percent=50"});
  EXPECT_EQ(out.find("drain "), std::string::npos) << out;

  // The cable clean: held for --drain.resume-after, then to resume; the
  // script resumes the node it drained.
  ramp.reset();
  ASSERT_TRUE(WaitUntil(
      [&] {
        listed = nlohmann::json::parse(e->Get("/api/v1/drain", &status), nullptr, false);
        return status == 200 && listed["drain"].size() == 1 && listed["drain"][0]["state"] == "holding";
      },
      seconds(30), std::chrono::milliseconds(250)))
      << listed.dump();
  out = script({"--apply", "--max-percent=50"});
  EXPECT_EQ(drained().size(), 1u) << "held: still drained\n" << out;
  EXPECT_NE(nhc(bad).find("DIE 1 ibfabric: cables clean since "), std::string::npos) << nhc(bad);
  ASSERT_TRUE(WaitUntil(
      [&] {
        listed = nlohmann::json::parse(e->Get("/api/v1/drain", &status), nullptr, false);
        return status == 200 && listed["drain"].empty() && listed["resume"].size() == 1;
      },
      seconds(30), std::chrono::milliseconds(250)))
      << listed.dump();
  EXPECT_EQ(listed["resume"][0]["node"], bad);
  out = script({"--apply", "--max-percent=50"});
  EXPECT_NE(out.find("resume " + bad), std::string::npos) << out << [&] {
    std::string states, error;
    for (const auto& [node, n] : slurm->Nodes(&error)) {
      states += node + ":";
      for (const auto& w : n.state) states += " " + w;
      states += "\n";
    }
    return states;
  }();
  EXPECT_TRUE(drained().empty()) << out;
  EXPECT_EQ(nhc(bad), "rc=0\n");
  // Counted where node_exporter's textfile collector reads them.
  const std::string counts = ReadFile(dir_ + "/drain.prom");
  for (const char* line : {R"(ibfabric_drain_actions_total{action="drain",result="done"} 1)",
                           R"(ibfabric_drain_actions_total{action="drain",result="dry_run"} 1)",
                           R"(ibfabric_drain_actions_total{action="drain",result="capped"} 2)",
                           R"(ibfabric_drain_actions_total{action="resume",result="done"} 1)"}) {
    EXPECT_NE(counts.find(line), std::string::npos) << line << "\n" << counts;
  }
}

// A host whose only cable is down (gone from the fabric: nothing reaches
// it) is drained as link_down by the name it was last seen with; an
// exporter restarted meanwhile knows no history: once it has judged the
// cables for longer than the hold without naming the node, the script lets
// its drain go. NHC passes every node while no exporter answers.
TEST_F(SlurmDrainTest, ADownCableDrainsItsHostAndARestartedExporterLetsTheDrainGo) {
  auto e = Exporter();
  ASSERT_NE(e, nullptr);
  auto slurm = Controller(*e);
  ASSERT_NE(slurm, nullptr);
  const std::string host = tree_->Host(4);
  const Endpoint leaf = tree_->LeafHostPort(4);
  Console("Unlink " + At(leaf));
  nlohmann::json listed = ListWhen(*e, [](const nlohmann::json& l) { return l["drain"].size() == 1; });
  ASSERT_EQ(listed["drain"].size(), 1u) << listed.dump();
  EXPECT_EQ(listed["drain"][0]["node"], host);
  ASSERT_EQ(listed["drain"][0]["faults"].size(), 1u) << listed.dump();
  EXPECT_EQ(listed["drain"][0]["faults"][0]["cause"], "link_down");
  EXPECT_EQ(listed["drain"][0]["faults"][0]["cable"],
            host + "[1] - " + leaf.node + "[" + std::to_string(leaf.port) + "]");
  std::string out = Script(*e, *slurm, {"--apply", "--max-percent=50"});
  EXPECT_NE(out.find("drain " + host + ": ibfabric: link_down " + host + "[1]"), std::string::npos) << out;
  EXPECT_EQ(Drained(*slurm).size(), 1u) << out;

  // The exporter restarts with the cable back: it lists nothing; once it
  // has judged for the hold (3 s), the script undrains the node it drained.
  Console("ReLink " + At(leaf));
  const int old_port = e->port();
  e.reset();
  EXPECT_EQ(Nhc(old_port, host), "rc=0\n") << "no exporter answers: no node fails";
  e = Exporter();
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(WaitUntil(
      [&] {
        out = Script(*e, *slurm, {"--apply", "--max-percent=50"});
        return out.find("resume " + host + ": ibfabric: no fault listed since ") != std::string::npos;
      },
      seconds(30), std::chrono::milliseconds(500)))
      << out;
  EXPECT_TRUE(Drained(*slurm).empty());
}

}  // namespace
}  // namespace ibfabric::testbed
