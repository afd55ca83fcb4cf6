// Rail-optimized fabrics on the simulator (issue 21): 4 scalable units of
// 16 servers with 8 HCAs each (512 HCAs named as rdma-ndd names them,
// devices interleaved with storage ones: mlx5_0-3 and mlx5_6-9), one leaf
// per unit and rail. Clean, nothing is found; with a wrong-rail cable, a
// swapped pair and a cable to another unit planted, each is found naming
// host, HCA and both ends, and nothing else. A plain fat tree with one HCA
// per host and one with two HCAs per host on one leaf give no rail finding.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/integration/fabric_suite.h"
#include "tests/testbed/browser.h"

namespace ibfabric::testbed {
namespace {

using nlohmann::json;

const std::vector<std::string> kDevices{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"};

FatTreeSpec RailFabric() {
  FatTreeSpec s;
  s.rails.units = 4;
  s.rails.servers = 16;
  s.rails.devices = kDevices;
  s.spines = 16;
  s.links_per_pair = 1;
  s.radix = 40;  // a leaf: 16 servers, 16 uplinks, 8 spare ports; a spine: 32 leaves
  return s;
}

class RailsTest : public FabricSuite {
 protected:
  void SetUp() override {}
  void TearDown() override {
    exporter_.reset();
    StopFabric();
  }

  // The fabric of `spec` and the exporter on it, after its first sweep;
  // the topology's findings view.
  json Start(const FatTreeSpec& spec, const std::vector<std::string>& args = {}) {
    tree_ = new FatTree(FatTree::Generate(spec));
    SimOptions o;
    o.attach = tree_->Host(1);
    std::string error;
    sim_ = SimFabric::Start(tree_->NetFile(), o, &error).release();
    EXPECT_NE(sim_, nullptr) << error;
    if (!sim_) return nullptr;
    std::vector<std::string> all{"--sweep.interval=2s"};
    all.insert(all.end(), args.begin(), args.end());
    exporter_ = StartExporter(all);
    if (!exporter_) return nullptr;
    int status = 0;
    json j = json::parse(exporter_->Get("/api/v1/topology?view=findings", &status), nullptr, false);
    EXPECT_EQ(status, 200);
    return j;
  }

  static std::vector<json> OfKind(const json& topology, const std::string& prefix) {
    std::vector<json> out;
    for (const auto& f : topology["findings"]) {
      if (f["kind"].get<std::string>().rfind(prefix, 0) == 0) out.push_back(f);
    }
    return out;
  }
  static std::string End(const json& e) {
    return e["name"].get<std::string>() + "[" + std::to_string(e["port"].get<int>()) + "]";
  }
  static std::string Str(const Endpoint& e) { return e.node + "[" + std::to_string(e.port) + "]"; }
  // kind -> "a - b" of each finding.
  static std::map<std::string, std::set<std::string>> ByKind(const std::vector<json>& findings) {
    std::map<std::string, std::set<std::string>> out;
    for (const auto& f : findings) out[f["kind"]].insert(End(f["a"]) + " - " + End(f["b"]));
    return out;
  }
  static std::map<std::string, std::set<std::string>> ByKind(const json& topology) {
    return ByKind(std::vector<json>(topology["findings"].begin(), topology["findings"].end()));
  }
  // The cable at `e` of the running fabric, as ByKind writes it.
  static std::string Cable(const Endpoint& e) { return Str(e) + " - " + Str(*tree_->Peer(e)); }

  std::unique_ptr<ExporterProcess> exporter_;
};

TEST_F(RailsTest, ACleanRailOptimizedFabricHasItsRailsAndUnitsAndNoFinding) {
  const json t = Start(RailFabric());
  ASSERT_FALSE(t.is_null());
  EXPECT_EQ(t["hosts"]["layout"], "rail_optimized") << t["hosts"].dump();
  EXPECT_EQ(t["hosts"]["hosts"], 64);
  EXPECT_EQ(t["hosts"]["grouped_cas"], 512);
  EXPECT_EQ(t["hosts"]["rails"], json(kDevices));
  EXPECT_EQ(t["hosts"]["units"], json::array({"ib-su01", "ib-su02", "ib-su03", "ib-su04"}));
  EXPECT_TRUE(t["findings"].empty()) << t["findings"].dump();
  // The metrics: a host, and an HCA on its rail's leaf.
  const Scrape s = exporter_->ScrapeMetrics();
  EXPECT_EQ(s.Find("infiniband_host_info").size(), 64u);
  EXPECT_EQ(s.Value("infiniband_host_layout_info", {{"layout", "rail_optimized"}, {"rails", "8"}, {"units", "4"}}), 1);
  const auto hca = s.Find("infiniband_hca_rail_info", {{"hca", "gpu0037 mlx5_7"}});
  ASSERT_EQ(hca.size(), 1u);
  EXPECT_EQ(hca[0].labels.at("host"), "gpu0037");
  EXPECT_EQ(hca[0].labels.at("rail"), "mlx5_7");
  EXPECT_EQ(hca[0].labels.at("leaf"), tree_->RailLeaf(3, 6));  // server 37 is unit 3's fifth
  EXPECT_EQ(hca[0].labels.at("leaf_port"), "5");
  EXPECT_EQ(hca[0].labels.at("unit"), "ib-su03");
  // The topology's node says its host and device.
  int status = 0;
  const json node = json::parse(exporter_->Get("/api/v1/topology?node=gpu0037%20mlx5_7", &status), nullptr, false);
  ASSERT_EQ(status, 200);
  ASSERT_EQ(node["nodes"].size(), 1u);
  EXPECT_EQ(node["nodes"][0]["host"], "gpu0037");
  EXPECT_EQ(node["nodes"][0]["device"], "mlx5_7");

  // What taking out an HCA's cable, and its rail leaf, would cost: that
  // rail of that server, then of every server whose HCA the metrics put on
  // that leaf; wait (no jobs source: drain them first), nobody cut off.
  const auto whatif = [&](const std::string& query) {
    json j;
    EXPECT_TRUE(WaitUntil(
        [&] {
          j = json::parse(exporter_->Get("/api/v1/whatif?" + query + "&limit=0", &status), nullptr, false);
          return status == 200;
        },
        std::chrono::seconds(60), std::chrono::milliseconds(500)))
        << j.dump();
    return j;
  };
  const auto info = s.Find("infiniband_hca_info", {{"hca", "gpu0037 mlx5_7"}});
  ASSERT_EQ(info.size(), 1u);
  json w = whatif("cable=" + info[0].labels.at("node_guid") + ":1");
  EXPECT_EQ(w["rails_broken"], json::parse(R"([{"rail": "mlx5_7", "hosts": ["gpu0037"]}])")) << w.dump();
  EXPECT_EQ(w["hosts_losing_ports"], json::array({"gpu0037"}));
  EXPECT_EQ(w["hosts_cut_off"], json::array());
  EXPECT_EQ(w["verdict"], "wait");
  EXPECT_EQ(w["reason"],
            "1 hosts lose a rail (mlx5_7): a job across them runs at the pace of its slowest rail: drain them first");
  std::set<std::string> on_leaf;
  for (const auto& x : s.Find("infiniband_hca_rail_info", {{"leaf", tree_->RailLeaf(3, 6)}})) {
    on_leaf.insert(x.labels.at("host"));
  }
  EXPECT_EQ(on_leaf.size(), 16u);
  w = whatif("switch=" + Guid(s, tree_->RailLeaf(3, 6)));
  ASSERT_EQ(w["rails_broken"].size(), 1u) << w.dump();
  EXPECT_EQ(w["rails_broken"][0]["rail"], "mlx5_7");
  EXPECT_EQ(w["rails_broken"][0]["hosts"].get<std::set<std::string>>(), on_leaf);
  EXPECT_EQ(w["hosts_losing_ports"].size(), 16u);
  EXPECT_EQ(w["verdict"], "wait");
}

// Rails in pods (the 32k-GPU shape, small): 2 pods of 2 units of 4
// servers, each pod's aggregation switches its rail spines (2 a rail),
// every leaf cabled to its own rail's only, cores above. A swapped pair
// and HCAs of two servers swapped across rails are each found with both
// ends, and nothing else (scale_bench --fabric 32k plants the same at
// 32,768 HCAs).
TEST_F(RailsTest, RailsInPodsUnderRailSpinesAndCores) {
  FatTreeSpec spec;
  spec.rails.units = 4;
  spec.rails.servers = 4;
  spec.rails.devices = kDevices;
  spec.pods = 2;
  spec.spines = 16;  // a pod's: 2 rail spines a rail
  spec.cores = 4;    // 2 groups of 2: the first and second rail spines of every rail and pod
  spec.radix = 16;   // a leaf: 4 servers, 2 uplinks; an aggregation switch: 2 leaves, 2 cores; a core: 16
  const FatTree plain = FatTree::Generate(spec);
  // Each leaf reaches only its rail's spines; a rail-3 leaf of pod 2's.
  const std::string leaf = plain.RailLeaf(3, 3);  // unit 3 is pod 2's first
  std::set<std::string> up;
  for (int port : plain.CabledPorts(leaf)) {
    if (port > 4) up.insert(plain.Peer({leaf, port})->node);
  }
  EXPECT_EQ(up, (std::set<std::string>{"ib-p02-agg05", "ib-p02-agg06"}));
  EXPECT_EQ(leaf, "ib-su03-leaf03");
  EXPECT_EQ(plain.cables().size(), 128u + 32u * 2u + 32u * 2u);
  // A core joins every rail of every pod: 2 pods x 8 rails.
  std::set<std::string> under;
  for (int port : plain.CabledPorts(plain.Core(1))) under.insert(plain.Peer({plain.Core(1), port})->node);
  EXPECT_EQ(under.size(), 16u);
  EXPECT_TRUE(under.count("ib-p01-agg01") && under.count("ib-p01-agg15") && under.count("ib-p02-agg03"));

  const Endpoint pair_a = plain.RailHca(1, 2, 5), pair_b = plain.RailHca(1, 2, 6);    // gpu0002's
  const Endpoint cross_a = plain.RailHca(4, 3, 1), cross_b = plain.RailHca(4, 4, 2);  // gpu0015's and gpu0016's
  spec.swaps = {{pair_a, pair_b}, {cross_a, cross_b}};
  const json t = Start(spec);
  ASSERT_FALSE(t.is_null());
  EXPECT_EQ(t["hosts"]["layout"], "rail_optimized") << t["hosts"].dump();
  EXPECT_EQ(t["hosts"]["hosts"], 16);
  EXPECT_EQ(ByKind(t), (std::map<std::string, std::set<std::string>>{
                           {"rail_swapped", {Cable(pair_a), Cable(pair_b)}},
                           {"rail_wrong_leaf", {Cable(cross_a), Cable(cross_b)}},
                       }))
      << t["findings"].dump(1);
  // The status page's pods: the 2 pods, each leaf and rail spine in its
  // own (not 16: a pod's 8 rails meet only at the cores).
  int status = 0;
  const json structure = json::parse(exporter_->Get("/api/v1/structure", &status), nullptr, false);
  ASSERT_EQ(status, 200);
  std::map<std::string, std::set<std::string>> pods;  // pod -> its switches
  for (const auto& sw : structure["switches"]) {
    if (sw["pod"].is_null()) continue;
    pods[structure["pods"][sw["pod"].get<std::size_t>()]["name"].get<std::string>()].insert(
        sw["name"].get<std::string>());
  }
  ASSERT_EQ(pods.size(), 2u) << structure["pods"].dump();
  ASSERT_EQ(structure["pods"].size(), 2u);
  for (const auto& [name, switches] : pods) EXPECT_EQ(switches.size(), 2u * 8u + 16u) << name;  // 2 units of 8 rails
  EXPECT_EQ(structure["pods"][0]["switches"], 32);
  const auto& first = pods.begin()->second;
  EXPECT_TRUE(first.count("ib-su01-leaf08") && first.count("ib-su02-leaf01") && first.count("ib-p01-agg16"));
}

TEST_F(RailsTest, AWrongRailASwappedPairAndAnotherUnitAreEachFoundWithBothEnds) {
  FatTreeSpec spec = RailFabric();
  const FatTree plain = FatTree::Generate(spec);
  // Unit 1 server 5: its mlx5_3 (rail 4) in the rail-3 leaf.
  const Endpoint wrong = plain.RailHca(1, 5, 4);
  spec.moves.push_back({wrong, plain.RailLeaf(1, 3)});
  // Unit 2 server 9 (gpu0025): mlx5_1 and mlx5_2 swapped.
  const Endpoint swap_a = plain.RailHca(2, 9, 2), swap_b = plain.RailHca(2, 9, 3);
  spec.swaps.push_back({swap_a, swap_b});
  // Unit 4 server 16 (gpu0064): its mlx5_8 (rail 7) in unit 3's rail-7 leaf.
  const Endpoint cross = plain.RailHca(4, 16, 7);
  spec.moves.push_back({cross, plain.RailLeaf(3, 7)});
  const json t = Start(spec);
  ASSERT_FALSE(t.is_null());
  EXPECT_EQ(t["hosts"]["layout"], "rail_optimized");
  const FatTree& tree = *tree_;
  EXPECT_EQ(ByKind(t), (std::map<std::string, std::set<std::string>>{
                           {"rail_wrong_leaf", {Cable(wrong)}},
                           {"rail_swapped", {Cable(swap_a), Cable(swap_b)}},
                           {"rail_cross_unit", {Cable(cross)}},
                       }))
      << t["findings"].dump(1);
  // The far ends are the leaves the plants put them on, and the details
  // name the host, the HCA and where it belongs.
  EXPECT_EQ(tree.Peer(wrong)->node, tree.RailLeaf(1, 3));
  EXPECT_EQ(tree.Peer(swap_a)->node, tree.RailLeaf(2, 3));
  EXPECT_EQ(tree.Peer(cross)->node, tree.RailLeaf(3, 7));
  for (const auto& f : t["findings"]) {
    const std::string d = f["detail"];
    if (f["kind"] == "rail_wrong_leaf") {
      EXPECT_NE(d.find("gpu0005 mlx5_3[1] is cabled to " + Str(*tree.Peer(wrong)) +
                       ", a rail mlx5_2 leaf; rail mlx5_3 of ib-su01 is ib-su01-leaf04"),
                std::string::npos)
          << d;
    }
    if (f["kind"] == "rail_swapped") {
      EXPECT_NE(d.find("gpu0025 mlx5_1[1] and gpu0025 mlx5_2[1] are swapped"), std::string::npos) << d;
    }
    if (f["kind"] == "rail_cross_unit") {
      EXPECT_NE(d.find("gpu0064 mlx5_8[1] is cabled to " + Str(*tree.Peer(cross)) + " in ib-su03"), std::string::npos)
          << d;
      EXPECT_NE(d.find("where rail mlx5_8 of ib-su04 is ib-su04-leaf07"), std::string::npos) << d;
    }
  }
  // Each is a miswiring alert on its cable.
  ASSERT_TRUE(WaitUntil(
      [&] {
        const json a = json::parse(exporter_->Get("/api/v1/alerts?state=active"), nullptr, false);
        std::size_t miswired = 0;
        for (const auto& x : a.is_discarded() ? json::array() : a["active"]) miswired += x["cause"] == "miswiring";
        return miswired == 4;
      },
      std::chrono::seconds(30), std::chrono::milliseconds(500)))
      << exporter_->Get("/api/v1/alerts?state=active");

  // The status page finds the server with the swapped pair by its host
  // name and shows its HCAs by rail: each on its rail's row, the leaf it
  // reaches, the two swapped ones miswired.
  std::string error;
  auto browser = Browser::Start(&error);
  ASSERT_NE(browser, nullptr) << error;
  ASSERT_TRUE(browser->Navigate("http://127.0.0.1:" + std::to_string(exporter_->port()) + "/", &error)) << error;
  ASSERT_TRUE(browser->WaitFor("return document.body.dataset.loaded === 'true';", std::chrono::seconds(30), &error))
      << error << ": "
      << browser->Execute("return document.getElementById('footer').textContent;", &error).value_or("");
  ASSERT_TRUE(browser->Execute(R"(
      const input = document.getElementById('search');
      input.value = 'gpu0025';
      input.dispatchEvent(new Event('input'));
      return true;)",
                               &error))
      << error;
  ASSERT_TRUE(browser->WaitFor("return document.querySelector('#search-results li[data-type=host] a.host') !== null;",
                               std::chrono::seconds(10), &error))
      << error;
  const auto first = browser->Execute("return document.querySelector('#search-results li').dataset.host;", &error);
  ASSERT_TRUE(first) << error;
  EXPECT_EQ(*first, "gpu0025") << "the host comes before its HCAs";
  ASSERT_TRUE(browser->Click("#search-results li[data-type=host] a.host", &error)) << error;
  ASSERT_TRUE(
      browser->WaitFor("const t = document.getElementById('host-title'); return !!t && t.textContent === 'gpu0025';",
                       std::chrono::seconds(10), &error))
      << error;
  const auto rows = browser->Execute(R"(
      return [...document.querySelectorAll('#host-hcas tbody tr')].map((r) => ({
        rail: r.dataset.rail, device: r.dataset.device, state: r.dataset.state,
        leaf: r.children[2].textContent}));)",
                                     &error);
  ASSERT_TRUE(rows) << error;
  ASSERT_EQ(rows->size(), kDevices.size()) << rows->dump();
  for (std::size_t r = 0; r < kDevices.size(); ++r) {
    const json& row = (*rows)[r];
    EXPECT_EQ(row["rail"], kDevices[r]) << rows->dump();
    EXPECT_EQ(row["device"], kDevices[r]);
    const Endpoint leaf = *tree.Peer(tree.RailHca(2, 9, static_cast<int>(r) + 1));
    EXPECT_EQ(row["leaf"], Str(leaf));
    EXPECT_EQ(row["state"], r == 1 || r == 2 ? "miswired" : "ok") << row.dump();
  }
  EXPECT_EQ((*rows)[1]["leaf"], tree.RailLeaf(2, 3) + "[9]");
  EXPECT_TRUE(browser->Screenshot(std::string(IBFABRIC_ARTIFACT_DIR) + "/status-rails-host.png", &error)) << error;
}

TEST_F(RailsTest, AgainstAPlanNamingHostsAndHcasAWrongRailIsSaidSo) {
  FatTreeSpec spec = RailFabric();
  const FatTree plain = FatTree::Generate(spec);
  const TempDir tmp("rails");
  const std::string plan = tmp.path() + "/plan.yaml";
  ASSERT_TRUE(WriteFile(plan, plain.YamlPlan(true)));
  ASSERT_NE(plain.YamlPlan(true).find("{host: \"gpu0005\", hca: \"mlx5_3\", port: 1}"), std::string::npos);
  const Endpoint wrong = plain.RailHca(1, 5, 4), swap_a = plain.RailHca(2, 9, 2), swap_b = plain.RailHca(2, 9, 3),
                 cross = plain.RailHca(4, 16, 7);
  spec.moves = {{wrong, plain.RailLeaf(1, 3)}, {cross, plain.RailLeaf(3, 7)}};
  spec.swaps = {{swap_a, swap_b}};
  const json t = Start(spec, {"--topology.plan=" + plan});
  ASSERT_FALSE(t.is_null());
  // The cable to another unit reaches the right rail: a wrong node (the
  // planned cable, from its leaf end), not a wrong rail.
  EXPECT_EQ(ByKind(OfKind(t, "plan_")), (std::map<std::string, std::set<std::string>>{
                                            {"plan_wrong_rail", {Cable(wrong), Cable(swap_a), Cable(swap_b)}},
                                            {"plan_wrong_remote_node", {plain.RailLeaf(4, 7) + "[16] - " + Str(cross)}},
                                        }))
      << t["findings"].dump(1);
}

TEST_F(RailsTest, DualPortHcasHaveBothPortsReadGroupedAndChecked) {
  // 2 units of 8 servers, 4 dual-port HCAs each: 8 rails, a port each.
  FatTreeSpec spec;
  spec.rails.units = 2;
  spec.rails.servers = 8;
  spec.rails.devices = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"};
  spec.rails.ports_per_hca = 2;
  spec.spines = 8;
  spec.radix = 24;
  const FatTree plain = FatTree::Generate(spec);
  // gpu0003's mlx5_2: its two ports in each other's leaf.
  const Endpoint p1 = plain.RailHca(1, 3, 5), p2 = plain.RailHca(1, 3, 6);
  ASSERT_EQ(p1, (Endpoint{"gpu0003 mlx5_2", 1}));
  ASSERT_EQ(p2, (Endpoint{"gpu0003 mlx5_2", 2}));
  spec.swaps = {{p1, p2}};
  const json t = Start(spec);
  ASSERT_FALSE(t.is_null());
  EXPECT_EQ(t["hosts"]["layout"], "rail_optimized");
  EXPECT_EQ(t["hosts"]["rails"], json::array({"mlx5_0 port 1", "mlx5_0 port 2", "mlx5_1 port 1", "mlx5_1 port 2",
                                              "mlx5_2 port 1", "mlx5_2 port 2", "mlx5_3 port 1", "mlx5_3 port 2"}));
  std::set<std::string> found;
  for (const auto& f : t["findings"])
    found.insert(f["kind"].get<std::string>() + " " + End(f["a"]) + " - " + End(f["b"]));
  EXPECT_EQ(found, (std::set<std::string>{"rail_swapped " + Str(p1) + " - " + Str(*tree_->Peer(p1)),
                                          "rail_swapped " + Str(p2) + " - " + Str(*tree_->Peer(p2))}))
      << t["findings"].dump(1);
  // Both ports are read: a counter planted on a second port shows on its series.
  Console("PerformanceSet \"gpu0005 mlx5_1\"[2] PortCounters.PortRcvErrors=17");
  const auto scrape = exporter_->WaitFor(
      [](const Scrape& s) {
        return s.Value("infiniband_hca_port_receive_errors_total", {{"hca", "gpu0005 mlx5_1"}, {"port", "2"}}) == 17;
      },
      std::chrono::seconds(20));
  ASSERT_TRUE(scrape) << "port 2's receive errors never showed";
  EXPECT_EQ(scrape->Value("infiniband_hca_port_receive_errors_total", {{"hca", "gpu0005 mlx5_1"}, {"port", "1"}}), 0);
  const auto rail = scrape->Find("infiniband_hca_rail_info", {{"hca", "gpu0005 mlx5_1"}, {"port", "2"}});
  ASSERT_EQ(rail.size(), 1u);
  EXPECT_EQ(rail[0].labels.at("rail"), "mlx5_1 port 2");
  EXPECT_EQ(rail[0].labels.at("leaf"), tree_->RailLeaf(1, 4));
}

TEST_F(RailsTest, PlainFatTreesGiveNoRailFinding) {
  // One HCA per host, named as rdma-ndd names them.
  FatTreeSpec one = Spec(4, 2, 8, 1, 36);
  one.hcas_per_host = 1;
  json t = Start(one);
  ASSERT_FALSE(t.is_null());
  EXPECT_EQ(t["hosts"]["layout"], "single_hca");
  EXPECT_EQ(t["hosts"]["hosts"], 32);
  EXPECT_TRUE(OfKind(t, "rail_").empty()) << t["findings"].dump();
  EXPECT_TRUE(t["findings"].empty()) << t["findings"].dump();
  TearDown();
  // Two HCAs per host, both on the host's leaf.
  FatTreeSpec two = Spec(4, 2, 8, 1, 36);
  two.hcas_per_host = 2;
  t = Start(two);
  ASSERT_FALSE(t.is_null());
  EXPECT_EQ(t["hosts"]["layout"], "host_per_leaf");
  EXPECT_EQ(t["hosts"]["hosts"], 16);
  EXPECT_EQ(t["hosts"]["grouped_cas"], 32);
  EXPECT_TRUE(t["findings"].empty()) << t["findings"].dump();
}

}  // namespace
}  // namespace ibfabric::testbed
