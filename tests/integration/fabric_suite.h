#pragma once
// A GoogleTest fixture for suites that share one simulated fat tree: the
// suite starts it once (SetUpTestSuite calls StartFabric), every test uses
// it, and it is torn down after the suite. One ibsim runs per control
// socket name: ctest runs two lanes of suites, one suite of each at a time,
// each lane under its own IBSIM_SOCKNAME (tests/CMakeLists.txt).

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <string>

#include "tests/integration/counter_ramp.h"
#include "tests/testbed/exporter_process.h"
#include "tests/testbed/fat_tree.h"
#include "tests/testbed/personality.h"
#include "tests/testbed/sim_fabric.h"

namespace ibfabric::testbed {

// A file of the source tree as shipped (deploy/..., dashboards/...).
inline std::string SourceFile(const std::string& path) {
  return ReadFile(std::string(IBFABRIC_SOURCE_DIR) + "/" + path);
}
// Alert rules (or any YAML) with every "for: Nm" as "for: Ns": a test
// waits seconds where on-call waits minutes.
inline std::string ForInSeconds(const std::string& text) {
  return std::regex_replace(text, std::regex(R"(for: (\d+)m)"), "for: $1s");
}

// --alerts.config for suites that page through Prometheus and Alertmanager:
// a 2 s window, raised and cleared after two, a bad cable at 20 symbol
// errors a second critical, a link that went down 3 times flapping.
inline constexpr const char* kPagingAlerts = R"(window: 2s
raise_after: 2
clear_after: 2
bad_cable:
  symbol_errors_per_second: {warning: 1, critical: 20}
flapping_link:
  link_downs: {warning: 2, critical: 3}
)";

class FabricSuite : public ::testing::Test {
 protected:
  static void StartFabric(const FatTreeSpec& spec) {
    tree_ = new FatTree(FatTree::Generate(spec));
    SimOptions o;
    o.attach = tree_->Host(1);
    std::string error;
    sim_ = SimFabric::Start(tree_->NetFile(), o, &error).release();
    ASSERT_NE(sim_, nullptr) << error;
    PlantTrainedCables();
  }
  // The tree's trained cables (spec.trained), planted through the
  // hardware-personality preload for the exporters FabricEnv starts.
  static void PlantTrainedCables() {
    if (tree_->spec().trained.empty()) return;
    std::map<std::pair<std::string, int>, std::string> trained;
    for (const auto& [e, rate] : tree_->spec().trained) trained[{e.node, e.port}] = rate;
    std::string error;
    hw_ = PlantTrained(tree_->NetFile(), trained, sim_->dir(), sim_, &error).release();
    ASSERT_NE(hw_, nullptr) << error;
  }
  // What every exporter of the suite runs with: the hardware-personality
  // preload where cables were planted to train low (spec.trained).
  static Env FabricEnv(Env env = {}) {
    if (hw_) {
      for (const auto& [k, v] : hw_->PreloadEnv()) env[k] = k == "LD_PRELOAD" && env.count(k) ? v + " " + env[k] : v;
    }
    return env;
  }
  // A resident opensm (SM and SA) on the fabric, as production runs one;
  // StopFabric stops it first.
  static void StartResidentSm() {
    std::string error;
    resident_sm_ = sim_->StartSubnetManager(&error).release();
    ASSERT_NE(resident_sm_, nullptr) << error;
  }
  static void StopFabric() {
    delete resident_sm_;
    resident_sm_ = nullptr;
    delete hw_;
    hw_ = nullptr;
    delete sim_;
    sim_ = nullptr;
    delete tree_;
    tree_ = nullptr;
  }
  static void TearDownTestSuite() { StopFabric(); }
  void SetUp() override {
    ASSERT_NE(sim_, nullptr);
    ASSERT_TRUE(sim_->Alive());
  }

  // One console command that ibsim must accept.
  static void Console(const std::string& cmd) {
    bool ok = false;
    const std::string out = sim_->Console(cmd, &ok);
    ASSERT_TRUE(ok) << "ibsim did not take: " << cmd << " -> " << out;
  }
  // `"node"[port]` as ibsim's console spells a port.
  static std::string At(const Endpoint& e) { return "\"" + e.node + "\"[" + std::to_string(e.port) + "]"; }
  // PerformanceSet of one field, e.g. Plant(p, "PortCounters.PortRcvErrors", 5).
  static void Plant(const Endpoint& e, const std::string& field, unsigned long long value) {
    Console("PerformanceSet " + At(e) + " " + field + "=" + std::to_string(value));
  }

  // The exporter on the suite's fabric, after its first sweep.
  static std::unique_ptr<ExporterProcess> StartExporter(const std::vector<std::string>& args) {
    std::string error;
    auto e = ExporterProcess::Start(*sim_, args, &error, {}, FabricEnv());
    EXPECT_NE(e, nullptr) << error;
    if (e && !e->WaitForSweeps(1, std::chrono::seconds(60))) {
      ADD_FAILURE() << "no sweep: " << e->Log();
      return nullptr;
    }
    return e;
  }

  // A CounterRamp (counter_ramp.h) on a port of the suite's fabric.
  class Ramp : public CounterRamp {
   public:
    Ramp(const Endpoint& at, const std::string& field, unsigned long long step, unsigned long long wrap_at = ~0ULL)
        : CounterRamp(*sim_, At(at), field, step, wrap_at) {}
  };

  // node name -> the value of `label` (guid, lid) in the info metrics.
  static std::map<std::string, std::string> ByName(const Scrape& s, const std::string& label) {
    std::map<std::string, std::string> out;
    for (const auto& x : s.Find("infiniband_switch_info")) out[x.labels.at("switch")] = x.labels.at(label);
    for (const auto& x : s.Find("infiniband_hca_info")) out[x.labels.at("hca")] = x.labels.at(label);
    return out;
  }
  // A node's `guid` on its port series: a switch's node GUID, an HCA's
  // port GUID (treydock/infiniband_exporter's convention).
  static std::string Guid(const Scrape& s, const std::string& node) {
    const auto m = ByName(s, "guid");
    auto it = m.find(node);
    return it == m.end() ? "" : it->second;
  }
  // A node's node GUID (what the exporter's own per-node metrics carry).
  static std::string NodeGuid(const Scrape& s, const std::string& node) {
    for (const auto& x : s.Find("infiniband_hca_info", {{"hca", node}})) return x.labels.at("node_guid");
    return Guid(s, node);
  }
  // A resident opensm on `sm_host` (not the exporter's node: one SM port
  // per node) that hands the SA's Reports (traps) to an exporter started
  // with traps. The exporter's port then shows IsSM (SIM_SET_ISSM) but
  // answers no SMInfo; an opensm that polls it waits out a timeout in
  // every sweep (tests/tools/mad_timeouts.cc), hence ignore_other_sm.
  static void StartTrapSm(const std::string& sm_host) {
    SimFabric::SmOptions sm;
    sm.attach = sm_host;
    sm.config = "ignore_other_sm TRUE\n";
    std::string error;
    sm_ = sim_->StartSubnetManager(sm, &error).release();
    ASSERT_NE(sm_, nullptr) << error;
  }
  static void StopTrapSm() {
    delete sm_;
    sm_ = nullptr;
  }
  // The exporter, with `traps` its port an SM port so that ibsim hands it
  // the SA's Reports (ibsim.c find_client); without, the Reports are
  // dropped. ibsim allows one SM client per node: one killed before
  // umad2sim said goodbye is disconnected first.
  static std::unique_ptr<ExporterProcess> SpawnExporter(const std::vector<std::string>& args, bool traps,
                                                        Env env = {}) {
    const int dead = sim_->DisconnectDeadClients();
    if (traps) env["SIM_SET_ISSM"] = "1";
    std::string error;
    auto e = ExporterProcess::Start(*sim_, args, &error, {}, FabricEnv(env));
    EXPECT_NE(e, nullptr) << error << " (dead clients disconnected: " << dead
                          << "; attached now: " << sim_->Console("Attached") << ")";
    return e;
  }

  // "hca" for the generator's hosts (cn....), "switch" otherwise.
  static std::string Role(const std::string& node) { return node.rfind("cn", 0) == 0 ? "hca" : "switch"; }

  static inline FatTree* tree_ = nullptr;
  static inline SimFabric* sim_ = nullptr;
  static inline HardwareFabric* hw_ = nullptr;    // spec.trained's plants, when any
  static inline Process* resident_sm_ = nullptr;  // StartResidentSm's
  static inline Process* sm_ = nullptr;           // StartTrapSm's
};

}  // namespace ibfabric::testbed
