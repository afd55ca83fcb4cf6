// The topology analysis on the simulated fabric: generated fat trees with
// planted wiring faults, read back from the exporter's metrics.

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "tests/testbed/exporter_process.h"
#include "tests/testbed/fat_tree.h"
#include "tests/testbed/personality.h"
#include "tests/testbed/sim_fabric.h"

namespace ibfabric::testbed {
namespace {

using std::chrono::seconds;

struct Running {
  std::unique_ptr<SimFabric> sim;
  std::unique_ptr<HardwareFabric> hw;  // the tree's trained cables, planted
  std::unique_ptr<ExporterProcess> exporter;
  std::optional<Scrape> scrape;
};

Running Start(const FatTree& tree, const std::vector<std::string>& args = {"--sweep.interval=200ms"}) {
  Running r;
  SimOptions o;
  o.attach = tree.Host(1);
  std::string error;
  r.sim = SimFabric::Start(tree.NetFile(), o, &error);
  EXPECT_NE(r.sim, nullptr) << error;
  if (!r.sim) return r;
  Env env;
  if (!tree.spec().trained.empty()) {
    std::map<std::pair<std::string, int>, std::string> trained;
    for (const auto& [e, rate] : tree.spec().trained) trained[{e.node, e.port}] = rate;
    r.hw = PlantTrained(tree.NetFile(), trained, r.sim->dir(), r.sim.get(), &error);
    EXPECT_NE(r.hw, nullptr) << error;
    if (!r.hw) return r;
    env = r.hw->PreloadEnv();
  }
  r.exporter = ExporterProcess::Start(*r.sim, args, &error, {}, env);
  EXPECT_NE(r.exporter, nullptr) << error;
  if (r.exporter) r.scrape = r.exporter->WaitForSweeps(1, seconds(60));
  EXPECT_TRUE(r.scrape);
  return r;
}

std::map<std::string, double> FindingCounts(const Scrape& s) {
  std::map<std::string, double> out;
  for (const auto& x : s.Find("infiniband_topology_findings")) out[x.labels.at("kind")] = x.value;
  return out;
}

double TotalFindings(const Scrape& s) {
  double n = 0;
  for (const auto& [k, v] : FindingCounts(s)) n += v;
  return n;
}

FatTreeSpec Small() {
  FatTreeSpec s = Spec(4, 2, 4, 2, 12);
  return s;
}

TEST(TopologyTest, CleanFabricsHaveNoFindings) {
  FatTreeSpec three = Small();
  three.links_per_pair = 3;
  const FatTreeSpec big = Spec324();
  for (const FatTreeSpec& spec : {Small(), three, big}) {
    const FatTree tree = FatTree::Generate(spec);
    Running r = Start(tree);
    ASSERT_TRUE(r.scrape);
    const Scrape& s = *r.scrape;
    EXPECT_EQ(s.Value("infiniband_topology_is_tree"), 1);
    EXPECT_EQ(s.Value("infiniband_topology_tiers"), 2);
    EXPECT_EQ(TotalFindings(s), 0) << "clean " << spec.leaves << "x" << spec.links_per_pair << ": "
                                   << r.exporter->Log();
    EXPECT_EQ(s.Find("infiniband_switch_tier", {{"tier", "leaf"}}).size(), static_cast<std::size_t>(spec.leaves));
    EXPECT_EQ(s.Find("infiniband_switch_tier", {{"tier", "spine"}}).size(), static_cast<std::size_t>(spec.spines));
    EXPECT_EQ(s.Value("infiniband_switch_uplinks", {{"switch", tree.Leaf(1)}}), spec.spines * spec.links_per_pair);
    // As many uplinks as hosts at the same rate: non-blocking.
    const double expected_bf = static_cast<double>(spec.hosts_per_leaf) / (spec.spines * spec.links_per_pair);
    EXPECT_DOUBLE_EQ(*s.Value("infiniband_leaf_blocking_factor", {{"switch", tree.Leaf(2)}}), expected_bf);
    EXPECT_TRUE(s.Find("infiniband_link_degraded").empty());
  }
}

TEST(TopologyTest, PlantedFaultsAreFoundAndNameBothEnds) {
  const FatTree clean = FatTree::Generate(Small());
  FatTreeSpec spec = Small();
  spec.missing = {clean.LeafUplink(2, 1, 0)};  // ib-leaf02 loses a link to ib-spine01
  spec.leaf_links = {{3, 4}};                  // ib-leaf03 cabled to ib-leaf04
  // One of ib-leaf01's links runs 1x, its ports enabled for 1x only (the
  // net file's note): below its peers, at its ends' best, so not degraded.
  spec.degraded = {{clean.LeafUplink(1, 2, 1), "1xQDR"}};
  // One of ib-leaf03's trained 1x where both ends allow 4x (planted
  // through the personality preload): degraded.
  spec.trained = {{clean.LeafUplink(3, 2, 1), "1x"}};
  const FatTree tree = FatTree::Generate(spec);
  Running r = Start(tree);
  ASSERT_TRUE(r.scrape);
  const Scrape& s = *r.scrape;
  EXPECT_EQ(s.Value("infiniband_topology_is_tree"), 1);

  const auto counts = FindingCounts(s);
  // The missing cable is one finding; the leaf's fewer uplinks and both
  // ends' uneven groups are what it explains.
  EXPECT_EQ(counts.at("missing_cable"), 1);
  EXPECT_EQ(counts.at("fewer_uplinks"), 0);
  EXPECT_EQ(counts.at("uneven_parallel_links"), 0);
  EXPECT_EQ(counts.at("asymmetric_switch"), 0);
  EXPECT_EQ(counts.at("same_tier_link"), 1);
  EXPECT_EQ(counts.at("below_tier_majority"), 1);
  EXPECT_EQ(counts.at("below_enabled"), 1);
  EXPECT_EQ(counts.at("not_a_tree"), 0);

  // Named at the ports the pattern says: the port the other leaves use for
  // ib-spine01 and the one the other spine uses for ib-leaf02.
  const auto missing = s.Find("infiniband_topology_finding", {{"kind", "missing_cable"}});
  ASSERT_EQ(missing.size(), 1u);
  const Endpoint lost = clean.LeafUplink(2, 1, 0), lost_far = *clean.Peer(lost);
  EXPECT_EQ(missing[0].labels.at("node"), "ib-leaf02");
  EXPECT_EQ(missing[0].labels.at("port"), std::to_string(lost.port));
  EXPECT_EQ(missing[0].labels.at("remote_node"), "ib-spine01");
  EXPECT_EQ(missing[0].labels.at("remote_port"), std::to_string(lost_far.port));

  const auto same = s.Find("infiniband_topology_finding", {{"kind", "same_tier_link"}});
  ASSERT_EQ(same.size(), 1u);
  const std::set<std::string> ends{same[0].labels.at("node") + "[" + same[0].labels.at("port") + "]",
                                   same[0].labels.at("remote_node") + "[" + same[0].labels.at("remote_port") + "]"};
  // The generator's first spare leaf port: 4 hosts + 2 spines x 2 links + 1.
  EXPECT_EQ(ends, (std::set<std::string>{"ib-leaf03[9]", "ib-leaf04[9]"}));

  const auto peers = s.Find("infiniband_topology_finding", {{"kind", "below_tier_majority"}});
  ASSERT_EQ(peers.size(), 1u);
  EXPECT_EQ(peers[0].labels.at("node") + "[" + peers[0].labels.at("port") + "]",
            "ib-leaf01[" + std::to_string(clean.LeafUplink(1, 2, 1).port) + "]");
  const Endpoint slow = clean.LeafUplink(3, 2, 1);
  const Endpoint far = *tree.Peer(slow);
  const auto degraded = s.Find("infiniband_link_degraded");
  ASSERT_EQ(degraded.size(), 1u);
  const auto guids = [&] {
    std::map<std::string, std::string> m;
    for (const auto& x : s.Find("infiniband_switch_info")) m[x.labels.at("switch")] = x.labels.at("guid");
    return m;
  }();
  const std::set<std::string> degraded_ends{
      degraded[0].labels.at("guid") + "/" + degraded[0].labels.at("port"),
      degraded[0].labels.at("remote_guid") + "/" + degraded[0].labels.at("remote_port")};
  EXPECT_EQ(degraded_ends, (std::set<std::string>{guids.at(slow.node) + "/" + std::to_string(slow.port),
                                                  guids.at(far.node) + "/" + std::to_string(far.port)}));
  EXPECT_EQ(degraded[0].labels.at("reason"), "below_enabled");
  // ib-leaf02 has 3 uplinks for 4 hosts.
  EXPECT_DOUBLE_EQ(*s.Value("infiniband_leaf_blocking_factor", {{"switch", "ib-leaf02"}}), 4.0 / 3.0);

  // The same, as JSON.
  int status = 0;
  const auto j = nlohmann::json::parse(r.exporter->Get("/api/v1/topology", &status));
  ASSERT_EQ(status, 200);
  EXPECT_EQ(j.at("schema_version"), 1);
  EXPECT_EQ(j.at("is_tree"), true);
  EXPECT_EQ(j.at("tiers"), 2);
  EXPECT_EQ(j.at("nodes").size(), 4u + 2u + 16u);
  EXPECT_EQ(j.at("links").size(), tree.cables().size());
  std::size_t degraded_links = 0;
  for (const auto& l : j.at("links")) degraded_links += l.at("degraded").is_null() ? 0 : 1;
  EXPECT_EQ(degraded_links, 1u);
  // Parallel groups: ib-leaf02 kept 1 of its 2 cables to ib-spine01.
  std::map<std::pair<std::string, std::string>, int> groups;
  for (const auto& g : j.at("groups")) {
    std::string a = g.at("a").at("name"), b = g.at("b").at("name");
    if (b < a) std::swap(a, b);
    groups[{a, b}] = g.at("links");
  }
  EXPECT_EQ(groups.at({"ib-leaf02", "ib-spine01"}), 1);
  EXPECT_EQ(groups.at({"ib-leaf02", "ib-spine02"}), 2);
  EXPECT_EQ(groups.at({"ib-leaf03", "ib-leaf04"}), 1);
  EXPECT_EQ(groups.size(), 4u * 2u + 1u);
  bool found = false;
  for (const auto& f : j.at("findings")) {
    if (f.at("kind") != "same_tier_link") continue;
    found = true;
    EXPECT_EQ(std::set<std::string>({f.at("a").at("name"), f.at("b").at("name")}),
              (std::set<std::string>{"ib-leaf03", "ib-leaf04"}));
    EXPECT_EQ(f.at("a").at("port"), 9);
  }
  EXPECT_TRUE(found);
  for (const auto& n : j.at("nodes")) {
    if (n.at("name") == "ib-leaf02") {
      EXPECT_EQ(n.at("tier_name"), "leaf");
      EXPECT_EQ(n.at("summary").at("up_links"), 3);
      EXPECT_DOUBLE_EQ(n.at("summary").at("blocking_factor").get<double>(), 4.0 / 3.0);
    }
  }

  // Filters and views: one node, one tier, the summary, the findings.
  const auto get = [&](const std::string& query, int want_status = 200) {
    int got = 0;
    const std::string body = r.exporter->Get("/api/v1/topology?" + query, &got);
    EXPECT_EQ(got, want_status) << query << ": " << body;
    return nlohmann::json::parse(body);
  };
  const auto names = [](const nlohmann::json& list, const char* key) {
    std::multiset<std::string> out;
    for (const auto& x : list)
      out.insert(key ? x.at(key).at("name").get<std::string>() : x.at("name").get<std::string>());
    return out;
  };
  const auto leaf02 = get("node=ib-leaf02");
  EXPECT_EQ(names(leaf02.at("nodes"), nullptr), std::multiset<std::string>{"ib-leaf02"});
  // Its 4 hosts and 3 uplinks, each with it at an end.
  ASSERT_EQ(leaf02.at("links").size(), 7u);
  for (const auto& l : leaf02.at("links")) {
    EXPECT_TRUE(l.at("a").at("name") == "ib-leaf02" || l.at("b").at("name") == "ib-leaf02") << l.dump();
  }
  std::multiset<std::string> kinds;
  for (const auto& f : leaf02.at("findings")) kinds.insert(f.at("kind").get<std::string>());
  EXPECT_EQ(kinds, (std::multiset<std::string>{"missing_cable"}));
  EXPECT_EQ(names(get("node=" + guids.at("ib-leaf02")).at("nodes"), nullptr), std::multiset<std::string>{"ib-leaf02"});
  EXPECT_EQ(names(get("tier=spine").at("nodes"), nullptr), (std::multiset<std::string>{"ib-spine01", "ib-spine02"}));
  const auto summary = get("view=summary");
  EXPECT_FALSE(summary.contains("nodes"));
  EXPECT_FALSE(summary.contains("links"));
  EXPECT_EQ(summary.at("counts").at("links"), tree.cables().size());
  EXPECT_EQ(summary.at("counts").at("degraded_links"), 1);
  EXPECT_EQ(summary.at("counts").at("nodes").at("switch"), 6);
  EXPECT_EQ(summary.at("counts").at("nodes").at("ca"), 16);
  EXPECT_EQ(summary.at("counts").at("findings").at("same_tier_link"), 1);
  const auto leaf03 = get("view=findings&node=ib-leaf03");
  EXPECT_FALSE(leaf03.contains("nodes"));
  EXPECT_EQ(names(leaf03.at("findings"), "b").count("ib-leaf04") + names(leaf03.at("findings"), "a").count("ib-leaf04"),
            1u);
  EXPECT_EQ(get("node=ib-leaf99", 404).at("error"), "no node named 'ib-leaf99' in the fabric");
  EXPECT_EQ(get("view=all", 400).at("error"), "view must be full, summary or findings, not 'all'");
}

TEST(TopologyTest, FindingsAppearAndClearWithTheWiring) {
  const FatTree tree = FatTree::Generate(Small());
  Running r = Start(tree, {"--sweep.interval=200ms", "--discovery.interval=500ms"});
  ASSERT_TRUE(r.scrape);
  ASSERT_EQ(TotalFindings(*r.scrape), 0);
  auto console = [&](const std::string& cmd) {
    bool ok = false;
    const std::string out = r.sim->Console(cmd, &ok);
    ASSERT_TRUE(ok) << cmd << " -> " << out;
  };
  auto at = [](const Endpoint& e) { return "\"" + e.node + "\"[" + std::to_string(e.port) + "]"; };

  const Endpoint uplink = tree.LeafUplink(3, 2, 1);
  console("Unlink " + at(uplink));                    // a cable comes out
  console("Link \"ib-leaf01\"[9] \"ib-leaf02\"[9]");  // one goes where none belongs
  auto s = r.exporter->WaitFor(
      [](const Scrape& x) {
        const auto c = FindingCounts(x);
        return c.count("missing_cable") && c.at("missing_cable") == 1 && c.at("same_tier_link") == 1;
      },
      seconds(30));
  ASSERT_TRUE(s) << r.exporter->Log();
  EXPECT_EQ(s->Find("infiniband_topology_finding", {{"kind", "missing_cable"}, {"node", "ib-leaf03"}}).size(), 1u);

  console("ReLink " + at(uplink));     // put back as it was
  console("Unlink \"ib-leaf01\"[9]");  // and the stray one out
  std::string error;
  ASSERT_TRUE(r.sim->SweepSubnet(&error)) << error;
  s = r.exporter->WaitFor([](const Scrape& x) { return TotalFindings(x) == 0; }, seconds(30));
  ASSERT_TRUE(s) << r.exporter->Log();
  EXPECT_EQ(s->Value("infiniband_switch_uplinks", {{"switch", "ib-leaf03"}}), 4);
}

// The same fabric judged live and from its ibnetdiscover capture
// (--analyze): the same findings, word for word, and the same tiers. A
// missing cable (its ports down, absent from the capture), a leaf-to-leaf
// cable and a storage host on a spine.
TEST(TopologyTest, ACaptureIsJudgedAsTheLiveFabricIs) {
  const FatTree clean = FatTree::Generate(Small());
  FatTreeSpec spec = Small();
  spec.missing = {clean.LeafUplink(2, 1, 1)};
  spec.leaf_links = {{3, 4}};
  spec.spine_cas = {2};
  const FatTree tree = FatTree::Generate(spec);
  Running r = Start(tree);
  ASSERT_TRUE(r.scrape);
  using nlohmann::json;
  const auto findings = [](const json& topology) {
    std::multiset<std::string> out;
    for (const auto& f : topology["findings"])
      out.insert(f["kind"].get<std::string>() + ": " + f["detail"].get<std::string>());
    return out;
  };
  const json live = json::parse(r.exporter->Get("/api/v1/topology?view=findings"));
  const auto d = r.sim->Tool({"ibnetdiscover"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  const std::string dir = MakeTempDir("capture");
  WriteFile(dir + "/fabric.net", d.out);
  const auto offline = r.sim->Tool({ExporterBinary(), "--analyze=" + dir + "/fabric.net", "--analyze.format=json"});
  EXPECT_EQ(offline.exit_code, 1) << offline.err;  // the missing and the leaf-to-leaf cables alert
  const json saved = json::parse(offline.out, nullptr, false);
  ASSERT_FALSE(saved.is_discarded()) << offline.out << offline.err;
  EXPECT_EQ(findings(saved), findings(live));
  EXPECT_EQ(findings(live).size(), 3u) << live.dump(1);  // missing_cable, same_tier_link, ca_on_non_leaf
  const auto text = r.sim->Tool({ExporterBinary(), "--analyze=" + dir + "/fabric.net"});
  EXPECT_NE(text.out.find("tiers: 2 (leaf 4, spine 2)\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  alert missing_cable: ib-leaf02 - ib-spine01: 1 of 2 cables missing"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("  info  ca_on_non_leaf: "), std::string::npos) << text.out;
  RemoveTree(dir);
}

// A fabric built short of a cable on purpose (ib-leaf02 with one cable to
// ib-spine01 where the other leaves have two), saved with ibnetdiscover and
// given as its own plan: the missing cable the pattern finds is accepted
// (counted, nothing raised); a cable pulled after is the plan's missing
// link and pages as a missing cable at its two ends, the accepted one
// still not.
TEST(TopologyTest, AnAcceptedFabricPagesOnlyForWhatChanges) {
  const FatTree clean = FatTree::Generate(Small());
  FatTreeSpec spec = Small();
  spec.missing = {clean.LeafUplink(2, 1, 1)};
  const FatTree tree = FatTree::Generate(spec);
  const std::vector<std::string> args{"--sweep.interval=200ms", "--discovery.interval=500ms"};
  Running r = Start(tree, args);
  ASSERT_TRUE(r.scrape);
  ASSERT_EQ(FindingCounts(*r.scrape).at("missing_cable"), 1);
  const auto d = r.sim->Tool({"ibnetdiscover"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  const std::string dir = MakeTempDir("accepted");
  WriteFile(dir + "/accepted.net", d.out);
  r.exporter.reset();
  auto with_plan = args;
  with_plan.push_back("--topology.plan=" + dir + "/accepted.net");
  std::string error;
  auto e = ExporterProcess::Start(*r.sim, with_plan, &error);
  ASSERT_NE(e, nullptr) << error;
  // What the wiring passes raise (the routing passes judge the switches'
  // tables, which no SM here rewrites once a cable is pulled).
  const auto raised = [](const Scrape& x) {
    const std::set<std::string> routing{"routing_imbalance", "unrouted_destination", "down_up_route"};
    std::map<std::string, double> out;
    for (const auto& f : x.Find("infiniband_topology_findings")) {
      const std::string kind = f.labels.at("kind");
      if (f.labels.at("level") != "information" && f.value > 0 && !routing.count(kind)) out[kind] = f.value;
    }
    return out;
  };
  using nlohmann::json;
  const auto cable_alerts = [&e] {
    std::set<std::string> out;
    const json alerts = json::parse(e->Get("/api/v1/alerts?state=active"));
    for (const auto& a : alerts["active"]) {
      if (a["cause"] != "missing_cable" && a["cause"] != "miswiring") continue;
      std::set<std::string> ends;
      for (const auto& x : a["ends"]) ends.insert(x["node"].get<std::string>() + "[" + x["port"].dump() + "]");
      std::string cable = a["cause"].get<std::string>() + ":";
      for (const auto& x : ends) cable += " " + x;
      out.insert(cable);
    }
    return out;
  };
  auto s = e->WaitForSweeps(2, seconds(60));
  ASSERT_TRUE(s) << e->Log();
  EXPECT_EQ(raised(*s), (std::map<std::string, double>{}));
  EXPECT_EQ(s->Value("infiniband_topology_findings_accepted", {{"kind", "missing_cable"}}), 1);
  EXPECT_EQ(cable_alerts(), std::set<std::string>{});

  const Endpoint pulled = tree.LeafUplink(3, 2, 1), far = *tree.Peer(pulled);
  bool ok = false;
  const std::string out = r.sim->Console("Unlink \"" + pulled.node + "\"[" + std::to_string(pulled.port) + "]", &ok);
  ASSERT_TRUE(ok) << out;
  s = e->WaitFor(
      [&](const Scrape& x) {
        return raised(x) == std::map<std::string, double>{{"plan_missing_link", 1}};
      },
      seconds(30));
  ASSERT_TRUE(s) << e->Log();
  EXPECT_EQ(s->Value("infiniband_topology_findings_accepted", {{"kind", "missing_cable"}}), 1);
  const std::set<std::string> want{
      "missing_cable: " +
      std::min(pulled.node + "[" + std::to_string(pulled.port) + "]", far.node + "[" + std::to_string(far.port) + "]") +
      " " +
      std::max(pulled.node + "[" + std::to_string(pulled.port) + "]", far.node + "[" + std::to_string(far.port) + "]")};
  std::set<std::string> got;
  for (int i = 0; i < 100 && got != want; ++i) {
    got = cable_alerts();
    if (got != want) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(got, want) << e->Get("/api/v1/alerts?state=active");
  RemoveTree(dir);
}

TEST(TopologyTest, NodeNameMapNamesNodesInMetricsAndFindings) {
  FatTreeSpec spec = Small();
  spec.leaf_links = {{1, 2}};
  const FatTree tree = FatTree::Generate(spec);
  Running r = Start(tree);
  ASSERT_TRUE(r.scrape);
  std::map<std::string, std::string> guid;
  for (const auto& x : r.scrape->Find("infiniband_switch_info")) guid[x.labels.at("switch")] = x.labels.at("guid");
  // A node-name map is keyed by node GUID (an HCA's series carry its port GUID).
  for (const auto& x : r.scrape->Find("infiniband_hca_info")) guid[x.labels.at("hca")] = x.labels.at("node_guid");
  r.exporter.reset();

  const std::string dir = MakeTempDir("names");
  WriteFile(dir + "/map",
            "# site names\n" + guid.at("ib-leaf01") + " \"rack1-leaf-a\"\n" + guid.at("cn0003") + " gpu-node-003\n");
  std::string error;
  auto e = ExporterProcess::Start(*r.sim, {"--sweep.interval=200ms", "--ib.node-name-map=" + dir + "/map"}, &error);
  ASSERT_NE(e, nullptr) << error;
  auto s = e->WaitForSweeps(1, seconds(60));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->Value("infiniband_hca_info", {{"node_guid", guid.at("cn0003")}, {"hca", "gpu-node-003"}}), 1);
  EXPECT_EQ(s->Find("infiniband_hca_port_receive_errors_total", {{"hca", "gpu-node-003"}}).size(), 1u);
  // 4 hosts, 2 spines x 2 links and the leaf-to-leaf link.
  EXPECT_EQ(s->Find("infiniband_switch_port_receive_errors_total", {{"switch", "rack1-leaf-a"}}).size(), 9u);
  EXPECT_TRUE(s->Find("infiniband_switch_info", {{"switch", "ib-leaf01"}}).empty());
  EXPECT_EQ(s->Value("infiniband_hca_uplink_info", {{"hca", tree.Host(1)}, {"uplink", "rack1-leaf-a"}}), 1);
  const auto same = s->Find("infiniband_topology_finding", {{"kind", "same_tier_link"}});
  ASSERT_EQ(same.size(), 1u);
  EXPECT_EQ(std::set<std::string>({same[0].labels.at("node"), same[0].labels.at("remote_node")}),
            (std::set<std::string>{"rack1-leaf-a", "ib-leaf02"}));
  RemoveTree(dir);
}

std::map<std::string, double> PlanFindings(const Scrape& s) {
  std::map<std::string, double> out;
  for (const auto& [kind, n] : FindingCounts(s)) {
    if (kind.rfind("plan_", 0) == 0) out[kind] = n;
  }
  return out;
}

// Every topology finding about a cable is a cable alert on exactly that
// cable (the two ends the finding names): a miswiring alert where it is
// where it should not be, a missing-cable alert where a planned one is not
// there; and the planted degraded link is a degraded-link alert:
// /api/v1/alerts against /api/v1/topology.
void ExpectCableAlerts(const ExporterProcess& e, const Endpoint& degraded) {
  using nlohmann::json;
  const std::map<std::string, std::string> cause_of{{"same_tier_link", "miswiring"},
                                                    {"skip_tier_link", "miswiring"},
                                                    {"ca_to_ca", "miswiring"},
                                                    {"plan_extra_link", "miswiring"},
                                                    {"plan_wrong_remote_node", "miswiring"},
                                                    {"plan_wrong_remote_port", "miswiring"},
                                                    {"plan_missing_link", "missing_cable"},
                                                    {"missing_cable", "missing_cable"}};
  auto end = [](const json& x, const char* name_key) {
    return x[name_key].get<std::string>() + "[" + std::to_string(x["port"].get<int>()) + "]";
  };
  std::map<std::string, std::set<std::set<std::string>>> want;  // cause -> cables
  const json topo = json::parse(e.Get("/api/v1/topology"));
  for (const auto& f : topo["findings"]) {
    const auto cause = cause_of.find(f["kind"].get<std::string>());
    if (cause != cause_of.end() && !f["a"].is_null() && !f["b"].is_null()) {
      want[cause->second].insert({end(f["a"], "name"), end(f["b"], "name")});
    }
  }
  ASSERT_GE(want["miswiring"].size(), 5u) << topo["findings"].dump(1);
  ASSERT_EQ(want["missing_cable"].size(), 1u) << topo["findings"].dump(1);
  std::map<std::string, std::set<std::set<std::string>>> got;
  std::set<std::string> degraded_ends;
  const auto deadline = std::chrono::steady_clock::now() + seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    const json alerts = json::parse(e.Get("/api/v1/alerts?state=active"));
    got.clear();
    degraded_ends.clear();
    for (const auto& a : alerts["active"]) {
      if (a["cause"] == "miswiring" || a["cause"] == "missing_cable") {
        got[a["cause"]].insert({end(a["ends"][0], "node"), end(a["ends"][1], "node")});
      }
      if (a["cause"] == "degraded_link") {
        for (const auto& x : a["ends"]) degraded_ends.insert(end(x, "node"));
      }
    }
    if (got == want && !degraded_ends.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(got, want);
  EXPECT_TRUE(degraded_ends.count(degraded.node + "[" + std::to_string(degraded.port) + "]"))
      << "degraded-link alert ends: " << degraded_ends.size();
}

TEST(TopologyTest, PlanDiffFindsEveryWiringFaultAndNothingOnTheCleanTwin) {
  const FatTree clean = FatTree::Generate(Small());
  const std::string dir = MakeTempDir("plan");
  WriteFile(dir + "/plan.net", clean.NetFile());    // keyed by node names
  WriteFile(dir + "/plan.yaml", clean.YamlPlan());  // explicit cabling plan with tiers
  for (const std::string plan : {"plan.yaml", "plan.net"}) {
    Running c = Start(clean, {"--sweep.interval=200ms", "--topology.plan=" + dir + "/" + plan});
    ASSERT_TRUE(c.scrape);
    EXPECT_EQ(PlanFindings(*c.scrape).size(), 8u) << "every plan_* kind exported, at 0";
    for (const auto& [kind, n] : PlanFindings(*c.scrape)) EXPECT_EQ(n, 0) << kind << "\n" << c.exporter->Log();
    EXPECT_EQ(TotalFindings(*c.scrape), 0) << plan;
    if (plan != "plan.net") continue;
    const auto d = c.sim->Tool({"ibnetdiscover"});
    ASSERT_EQ(d.exit_code, 0) << d.err;
    WriteFile(dir + "/plan.ibnetdiscover", d.out);  // keyed by GUIDs
  }
  FatTreeSpec spec = Small();
  spec.swaps = {{clean.LeafUplink(1, 1, 0), clean.LeafUplink(1, 1, 1)},   // swapped on the same spine
                {clean.LeafUplink(2, 1, 0), clean.LeafUplink(2, 2, 0)}};  // swapped between spines
  spec.missing = {clean.LeafUplink(3, 2, 1)};
  spec.leaf_links = {{3, 4}};
  spec.degraded = {{clean.LeafUplink(4, 1, 0), "1xQDR"}};
  const FatTree faulted = FatTree::Generate(spec);
  for (const std::string plan : {"plan.net", "plan.ibnetdiscover", "plan.yaml"}) {
    Running r = Start(faulted, {"--sweep.interval=200ms", "--topology.plan=" + dir + "/" + plan});
    ASSERT_TRUE(r.scrape);
    const auto got = PlanFindings(*r.scrape);
    const std::map<std::string, double> want{{"plan_extra_link", 1},        {"plan_missing_link", 1},
                                             {"plan_rate_mismatch", 1},     {"plan_tier_mismatch", 0},
                                             {"plan_unknown_node", 0},      {"plan_wrong_rail", 0},
                                             {"plan_wrong_remote_node", 2}, {"plan_wrong_remote_port", 2}};
    EXPECT_EQ(got, want) << plan << "\n" << r.exporter->Log();
    // Each names both ends, e.g. the cables swapped on one spine.
    const auto swapped = r.scrape->Find("infiniband_topology_finding", {{"kind", "plan_wrong_remote_port"}});
    std::set<std::string> ends;
    for (const auto& x : swapped)
      ends.insert(x.labels.at("node") + "[" + x.labels.at("port") + "]-" + x.labels.at("remote_node") + "[" +
                  x.labels.at("remote_port") + "]");
    const Endpoint u0 = clean.LeafUplink(1, 1, 0), u1 = clean.LeafUplink(1, 1, 1);
    const Endpoint s0 = clean.SpineDownlink(1, 1, 0), s1 = clean.SpineDownlink(1, 1, 1);
    auto e = [](const Endpoint& a, const Endpoint& b) {
      return a.node + "[" + std::to_string(a.port) + "]-" + b.node + "[" + std::to_string(b.port) + "]";
    };
    // Findings name the planned cable; its ends are ordered by GUID.
    EXPECT_TRUE(ends == (std::set<std::string>{e(u0, s0), e(u1, s1)}) ||
                ends == (std::set<std::string>{e(s0, u0), e(s1, u1)}))
        << plan;
    if (plan == "plan.yaml") ExpectCableAlerts(*r.exporter, faulted.LeafUplink(4, 1, 0));
  }
  RemoveTree(dir);
}

// Every planted fault kind, alone and all together, on three builds; each
// is found with and without a plan, every link finding names both ends, and
// nothing else is reported.
TEST(TopologyTest, EveryFaultAloneAndCombinedOnSeveralBuilds) {
  FatTreeSpec three = Small();
  three.links_per_pair = 3;
  three.radix = 14;  // 4 hosts + 2 spines x 3 links + spares
  const FatTreeSpec big = Spec324();
  struct Fault {
    std::string name;
    std::function<void(const FatTree&, FatTreeSpec&)> plant;
    std::map<std::string, double> plan;      // expected plan_* findings
    std::map<std::string, double> analysis;  // expected other findings
  };
  for (const FatTreeSpec& build : {Small(), three, big}) {
    const FatTree clean = FatTree::Generate(build);
    const bool parallel = build.links_per_pair > 1;
    const bool spare = build.hosts_per_leaf + build.spines * build.links_per_pair < build.radix;
    std::vector<Fault> faults{
        {"missing link",
         [](const FatTree& c, FatTreeSpec& s) { s.missing.push_back(c.LeafUplink(3, 2, 0)); },
         {{"plan_missing_link", 1}},
         {}},  // the plan's verdict: the pattern's missing_cable on the same pair is not said twice
        {"degraded link",
         [](const FatTree& c, FatTreeSpec& s) { s.degraded[c.LeafUplink(4, 1, 0)] = "1xQDR"; },
         {{"plan_rate_mismatch", 1}},
         {{"below_tier_majority", 1}}},
        {"swap between spines",
         [](const FatTree& c, FatTreeSpec& s) {
           s.swaps.push_back({c.LeafUplink(2, 1, 0), c.LeafUplink(2, 2, 0)});
         },
         {{"plan_wrong_remote_node", 2}},
         {}},
    };
    if (parallel) {
      faults.push_back({"swap on one spine",
                        [](const FatTree& c, FatTreeSpec& s) {
                          s.swaps.push_back({c.LeafUplink(1, 1, 0), c.LeafUplink(1, 1, 1)});
                        },
                        {{"plan_wrong_remote_port", 2}},
                        {}});
    }
    if (build.leaves * build.links_per_pair < build.radix) {  // a spare spine port
      faults.push_back({"CA on a spine",
                        [](const FatTree&, FatTreeSpec& s) { s.spine_cas.push_back(1); },
                        {{"plan_extra_link", 1}},
                        {{"ca_on_non_leaf", 1}}});
    }
    if (spare) {
      faults.push_back({"leaf-to-leaf link",
                        [](const FatTree&, FatTreeSpec& s) {
                          s.leaf_links.push_back({1, 2});
                        },
                        {{"plan_extra_link", 1}},
                        {{"same_tier_link", 1}}});
    }
    Fault all{"all combined", nullptr, {}, {}};
    for (const auto& f : faults) {
      for (const auto& [k, n] : f.plan) all.plan[k] += n;
      for (const auto& [k, n] : f.analysis) all.analysis[k] += n;
    }
    all.plant = [faults](const FatTree& c, FatTreeSpec& s) {
      for (const auto& f : faults) f.plant(c, s);
    };
    faults.push_back(all);

    const std::string dir = MakeTempDir("plans");
    WriteFile(dir + "/clean.net", clean.NetFile());
    for (const auto& fault : faults) {
      FatTreeSpec spec = build;
      fault.plant(clean, spec);
      const FatTree tree = FatTree::Generate(spec);
      Running r = Start(tree, {"--sweep.interval=1h", "--topology.plan=" + dir + "/clean.net"});
      ASSERT_TRUE(r.scrape) << fault.name;
      const std::string where = fault.name + " on " + std::to_string(build.leaves) + " leaves x " +
                                std::to_string(build.links_per_pair) + " links";
      std::map<std::string, double> plan_got, analysis_got;
      for (const auto& [kind, n] : FindingCounts(*r.scrape)) {
        if (n == 0) continue;
        (kind.rfind("plan_", 0) == 0 ? plan_got : analysis_got)[kind] = n;
      }
      EXPECT_EQ(plan_got, fault.plan) << where;
      EXPECT_EQ(analysis_got, fault.analysis) << where;
      for (const auto& x : r.scrape->Find("infiniband_topology_finding")) {
        EXPECT_FALSE(x.labels.at("node").empty()) << where;
        const std::string kind = x.labels.at("kind");
        const bool about_a_cable = kind.rfind("plan_", 0) == 0 || kind == "same_tier_link" ||
                                   kind == "below_tier_majority" || kind == "ca_on_non_leaf";
        if (about_a_cable) {
          EXPECT_FALSE(x.labels.at("remote_node").empty()) << where << ": " << kind;
          EXPECT_FALSE(x.labels.at("remote_port").empty()) << where << ": " << kind;
        }
      }
    }
    RemoveTree(dir);
  }
}

TEST(TopologyTest, ThreeTiersAndALinkThatSkipsOne) {
  FatTreeSpec spec = Spec(4, 4, 4, 1, 12);
  spec.cores = 2;
  const FatTree clean = FatTree::Generate(spec);
  {
    Running r = Start(clean, {"--sweep.interval=1h"});
    ASSERT_TRUE(r.scrape);
    EXPECT_EQ(r.scrape->Value("infiniband_topology_tiers"), 3);
    EXPECT_EQ(r.scrape->Value("infiniband_switch_tier", {{"switch", "ib-core02"}, {"tier", "core"}}), 2);
    EXPECT_EQ(r.scrape->Value("infiniband_switch_uplinks", {{"switch", "ib-spine03"}}), 2);
    EXPECT_EQ(TotalFindings(*r.scrape), 0) << r.exporter->Log();
  }
  spec.skip_links = {{1, 2}};  // ib-leaf01 straight to ib-core02
  const FatTree skipping = FatTree::Generate(spec);
  Running r = Start(skipping, {"--sweep.interval=1h"});
  ASSERT_TRUE(r.scrape);
  EXPECT_EQ(r.scrape->Value("infiniband_switch_tier", {{"switch", "ib-core02"}, {"tier", "core"}}), 2)
      << "a core cabled to a leaf is still a core";
  const auto counts = FindingCounts(*r.scrape);
  double others = 0;
  for (const auto& [k, n] : counts) others += k == "skip_tier_link" ? 0 : n;
  EXPECT_EQ(counts.at("skip_tier_link"), 1);
  EXPECT_EQ(others, 0) << r.exporter->Log();
  const auto f = r.scrape->Find("infiniband_topology_finding", {{"kind", "skip_tier_link"}});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(std::set<std::string>({f[0].labels.at("node"), f[0].labels.at("remote_node")}),
            (std::set<std::string>{"ib-leaf01", "ib-core02"}));
}

// A three-tier fat tree of pods gets the two-tier proofs: tiers ranked
// leaf/spine/core, nothing found on the clean fabric, and each planted
// fault found against the plan, every finding about a cable naming both of
// its ends.
TEST(TopologyTest, ThreeTierPodsGetTheSameProofs) {
  FatTreeSpec spec = Spec(2, 2, 2, 1, 8);  // per pod: 2 leaves of 2 hosts, 2 aggregation switches
  spec.pods = 2;
  spec.cores = 4;  // 2 groups of 2; aggregation switch a of each pod to both cores of group a
  spec.core_links = 2;
  const FatTree clean = FatTree::Generate(spec);
  const std::string dir = MakeTempDir("pods");
  WriteFile(dir + "/plan.yaml", clean.YamlPlan());
  {
    Running r = Start(clean, {"--sweep.interval=1h", "--topology.plan=" + dir + "/plan.yaml"});
    ASSERT_TRUE(r.scrape);
    EXPECT_EQ(r.scrape->Value("infiniband_topology_tiers"), 3);
    for (const auto& [node, tier] : std::map<std::string, std::string>{{"ib-p01-leaf01", "leaf"},
                                                                       {"ib-p02-leaf02", "leaf"},
                                                                       {"ib-p01-agg02", "spine"},
                                                                       {"ib-p02-agg01", "spine"},
                                                                       {"ib-core001", "core"},
                                                                       {"ib-core004", "core"}}) {
      EXPECT_EQ(r.scrape->Find("infiniband_switch_tier", {{"switch", node}, {"tier", tier}}).size(), 1u) << node;
    }
    EXPECT_EQ(r.scrape->Find("infiniband_switch_tier").size(), 2u * 2 + 2u * 2 + 4u);
    EXPECT_EQ(TotalFindings(*r.scrape), 0) << r.exporter->Log();
  }
  struct Fault {
    std::string name;
    std::function<void(FatTreeSpec&)> plant;
    std::map<std::string, double> findings;  // every finding, by kind
    std::set<std::string> ends;              // of the cable the cable findings name
  };
  const Endpoint agg_up = clean.SpineUplink(1, 2, 0);  // ib-p01-agg01 to its group's second core, first cable
  const Endpoint core_down = *clean.Peer(agg_up);
  const Endpoint swap_a = clean.CoreDownlink(1, 1, 0), swap_b = clean.CoreDownlink(1, 3, 0);  // pods 1 and 2
  const std::vector<Fault> faults{
      {"a leaf cabled to a core",
       [](FatTreeSpec& s) {
         s.skip_links = {{1, 3}};
       },
       {{"skip_tier_link", 1}, {"plan_extra_link", 1}},
       {"ib-p01-leaf01", "ib-core003"}},
      {"a missing aggregation-core cable",
       [&](FatTreeSpec& s) { s.missing = {agg_up}; },
       {{"plan_missing_link", 1}},
       {agg_up.node, core_down.node}},
      {"a degraded link",
       [&](FatTreeSpec& s) { s.degraded[agg_up] = "1xQDR"; },
       {{"below_tier_majority", 1}, {"plan_rate_mismatch", 1}},
       {agg_up.node, core_down.node}},
      {"two cables swapped on one core",
       [&](FatTreeSpec& s) {
         s.swaps = {{swap_a, swap_b}};
       },
       {{"plan_wrong_remote_node", 2}},  // each core port now leads to the other pod's aggregation switch
       {"ib-core001", "ib-p01-agg01", "ib-p02-agg01"}},
  };
  for (const Fault& fault : faults) {
    FatTreeSpec faulty = spec;
    fault.plant(faulty);
    Running r = Start(FatTree::Generate(faulty), {"--sweep.interval=1h", "--topology.plan=" + dir + "/plan.yaml"});
    ASSERT_TRUE(r.scrape) << fault.name;
    std::map<std::string, double> got;
    for (const auto& [kind, n] : FindingCounts(*r.scrape)) {
      if (n > 0) got[kind] = n;
    }
    EXPECT_EQ(got, fault.findings) << fault.name << "\n" << r.exporter->Log();
    std::set<std::string> ends;
    for (const auto& x : r.scrape->Find("infiniband_topology_finding")) {
      if (x.labels.at("remote_node").empty()) continue;  // about a switch, not a cable
      EXPECT_FALSE(x.labels.at("port").empty()) << fault.name;
      EXPECT_FALSE(x.labels.at("remote_port").empty()) << fault.name;
      ends.insert(x.labels.at("node"));
      ends.insert(x.labels.at("remote_node"));
    }
    EXPECT_EQ(ends, fault.ends) << fault.name;
  }
  RemoveTree(dir);
}

// A router (NodeType 3, to another subnet) cabled to the spine, as routers
// are: no HCA, no host, no CA above the leaves; the spine stays a spine.
// Listed as a router, with the switch port it is cabled to.
TEST(TopologyTest, ARouterOnTheSpineIsNoHostAndChangesNoTier) {
  const std::string net = R"(Switch 8 "ib-spine01"
[1] "ib-leaf01"[5]
[2] "ib-leaf02"[5]
[8] "rt01"[1]

Switch 8 "ib-leaf01"
[1] "cn0001"[1]
[2] "cn0002"[1]
[5] "ib-spine01"[1]

Switch 8 "ib-leaf02"
[1] "cn0003"[1]
[2] "cn0004"[1]
[5] "ib-spine01"[2]

Hca 1 "cn0001"
[1] "ib-leaf01"[1]

Hca 1 "cn0002"
[1] "ib-leaf01"[2]

Hca 1 "cn0003"
[1] "ib-leaf02"[1]

Hca 1 "cn0004"
[1] "ib-leaf02"[2]

Rt 2 "rt01"
[1] "ib-spine01"[8]
)";
  SimOptions o;
  o.attach = "cn0001";
  std::string error;
  auto sim = SimFabric::Start(net, o, &error);
  ASSERT_NE(sim, nullptr) << error;
  auto e = ExporterProcess::Start(*sim, {"--sweep.interval=500ms"}, &error);
  ASSERT_NE(e, nullptr) << error;
  const auto s = e->WaitForSweeps(2, seconds(60));
  ASSERT_TRUE(s.has_value()) << e->Log();
  EXPECT_EQ(TotalFindings(*s), 0) << e->Get("/api/v1/topology?view=findings");
  EXPECT_EQ(s->Value("infiniband_switch_tier", {{"switch", "ib-spine01"}, {"tier", "spine"}}), 1);
  EXPECT_EQ(s->Find("infiniband_hca_info").size(), 4u) << "the four hosts, not the router";
  EXPECT_TRUE(s->Find("infiniband_hca_port_symbol_error_total", {{"hca", "rt01"}}).empty());
  const auto rt = s->Find("infiniband_router_info", {{"router", "rt01"}});
  ASSERT_EQ(rt.size(), 1u);
  EXPECT_EQ(rt[0].labels.at("switch"), "ib-spine01");
  EXPECT_EQ(rt[0].labels.at("switch_port"), "8");
  EXPECT_TRUE(
      s->Value("infiniband_switch_port_symbol_error_total", {{"switch", "ib-spine01"}, {"port", "8"}}).has_value())
      << "its cable is read from the switch end";
}

// A chain of 66 switches behind the exporter's HCA: a directed route goes
// at most 63 hops (IBTA 14.2.2), so the exporter discovers the first 63
// and says, in its log, what lies beyond, rather than send a route that
// libibmad would cut short (and that would reach the wrong node).
TEST(TopologyTest, SwitchesBeyondSixtyThreeHopsAreNamedNotMistaken) {
  std::string net = "Hca 1 \"cn0001\"\n[1] \"sw01\"[1]\n\n";
  constexpr int kChain = 66;
  auto name = [](int i) { return "sw" + std::string(i < 10 ? "0" : "") + std::to_string(i); };
  for (int i = 1; i <= kChain; ++i) {
    net += "Switch 4 \"" + name(i) + "\"\n";
    net += i == 1 ? "[1] \"cn0001\"[1]\n" : "[1] \"" + name(i - 1) + "\"[2]\n";
    if (i < kChain) net += "[2] \"" + name(i + 1) + "\"[1]\n";
    net += "\n";
  }
  SimOptions o;
  o.attach = "cn0001";
  std::string error;
  auto sim = SimFabric::Start(net, o, &error);
  ASSERT_NE(sim, nullptr) << error;
  auto e = ExporterProcess::Start(*sim, {"--sweep.interval=1s"}, &error);
  ASSERT_NE(e, nullptr) << error;
  const auto s = e->WaitForSweeps(1, seconds(60));
  ASSERT_TRUE(s.has_value()) << e->Log();
  EXPECT_EQ(s->Find("infiniband_switch_info").size(), 63u);
  EXPECT_EQ(s->Find("infiniband_switch_info", {{"switch", name(63)}}).size(), 1u);
  EXPECT_TRUE(s->Find("infiniband_switch_info", {{"switch", name(64)}}).empty());
  EXPECT_NE(e->Log().find("more than 63 hops from here, beyond a directed route"), std::string::npos) << e->Log();
}

}  // namespace
}  // namespace ibfabric::testbed
