// Blast radius on hand-built forwarding tables (tests/unit/routed_tree.h):
// routes traced hop by hop as ibtracert traces them, and for every cable
// of the tree the routes RoutesThrough counts are exactly the pairs whose
// traced route crosses it.

#include "topology/blast_radius.h"

#include <gtest/gtest.h>

#include "collectors/blast_radius_collector.h"
#include "collectors/metrics.h"
#include "collectors/parts/fabric_jobs.h"
#include "collectors/registry.h"
#include "tests/testbed/prom_text.h"
#include "tests/unit/routed_tree.h"
#include "topology/adaptive_routing.h"
#include "topology/analysis.h"
#include "topology/hosts.h"
#include "topology/link_rate.h"

namespace ibfabric::topology {
namespace {

struct BlastTree : testing::RoutedTree {
  PortRef P(int node, int port) const { return {b.Guid(node), static_cast<std::uint8_t>(port)}; }
  PortRef Up(int l, int s) const { return P(leaf[l], 3 + s); }     // leaf l's cable to spine s
  PortRef Down(int s, int l) const { return P(spine[s], 1 + l); }  // spine s's cable to leaf l
  PortRef ToHost(int h) const { return P(leaf[h / 2], h % 2 + 1); }
  PortRef Host(int h) const { return P(host[h], 1); }
};

// Every (source, destination) host pair whose traced route leaves by one
// of `egress`, counted the slow way.
BlastRadius BruteForce(const BlastTree& t, const std::set<PortRef>& egress) {
  BlastRadius out;
  for (const PortRef& s : HostPorts(t.fabric)) {
    for (const PortRef& d : HostPorts(t.fabric)) {
      if (s == d) continue;
      const Route r = TraceRoute(t.fabric, t.tables, s, t.fabric.FindPort(d)->lid);
      bool crosses = false;
      for (const PortRef& e : r.egress) crosses = crosses || egress.count(e) > 0;
      if (!crosses) continue;
      ++out.routes;
      ++out.ports[s].sends;
      ++out.ports[d].receives;
    }
  }
  return out;
}

void ExpectSame(const BlastRadius& got, const BlastRadius& want, const std::string& what) {
  EXPECT_EQ(got.routes, want.routes) << what;
  ASSERT_EQ(got.ports.size(), want.ports.size()) << what;
  for (const auto& [p, r] : want.ports) {
    ASSERT_TRUE(got.ports.count(p)) << what;
    EXPECT_EQ(got.ports.at(p).sends, r.sends) << what;
    EXPECT_EQ(got.ports.at(p).receives, r.receives) << what;
  }
}

TEST(BlastRadiusTest, ARouteIsTracedHopByHopToItsDestination) {
  BlastTree t;
  // cn3 (leaf2) to cn1 (leaf1, reached through spine1).
  const Route r = TraceRoute(t.fabric, t.tables, t.Host(2), t.Lid(t.host[0]));
  EXPECT_TRUE(r.arrives);
  EXPECT_EQ(r.egress, (std::vector<PortRef>{t.Host(2), t.Up(1, 0), t.Down(0, 0), t.ToHost(0)}));
  // A hole in spine1's table: the route stops there.
  BlastTree holed;
  holed.Route(holed.spine[0], holed.Lid(holed.host[0]), transport::kLftNoPort);
  const Route broken = TraceRoute(holed.fabric, holed.tables, holed.Host(2), holed.Lid(holed.host[0]));
  EXPECT_FALSE(broken.arrives);
  EXPECT_EQ(broken.egress, (std::vector<PortRef>{holed.Host(2), holed.Up(1, 0)}));
}

TEST(BlastRadiusTest, ASpineCableCarriesTheRoutesTheTablesSendThroughItBothWays) {
  BlastTree t;
  // leaf1 - spine1: down, the routes to cn1 from the other leaves (cn3-cn6);
  // up, leaf1's hosts' routes to cn3 and cn5.
  const BlastRadius r = RoutesThrough(t.fabric, t.tables, {t.Up(0, 0), t.Down(0, 0)});
  EXPECT_EQ(r.routes, 8u);
  EXPECT_EQ(r.ports.at(t.Host(0)).receives, 4u);
  EXPECT_EQ(r.ports.at(t.Host(0)).sends, 2u);
  EXPECT_EQ(r.ports.at(t.Host(1)).sends, 2u);
  EXPECT_EQ(r.ports.at(t.Host(1)).receives, 0u);
  EXPECT_EQ(r.ports.at(t.Host(2)).receives, 2u) << "from cn1 and cn2, up through spine1";
  EXPECT_EQ(r.ports.at(t.Host(2)).sends, 1u) << "to cn1, down from spine1";
  EXPECT_EQ(r.ports.at(t.Host(3)).receives, 0u) << "cn4 is reached through spine2";
  EXPECT_EQ(r.ports.size(), 6u);
}

// The leaf uplinks host routes go up by, against each leaf's first hop up
// traced from a host of it to every host of the others; and the pairs
// RoutesThrough lists are crossing ones, as many as asked.
TEST(BlastRadiusTest, TheUplinksUsedAreTheLeavesWaysUpAndTheListedPairsCross) {
  BlastTree t;
  std::set<Link> traced;
  for (int l = 0; l < 3; ++l) {
    for (int h = 0; h < 6; ++h) {
      if (h / 2 == l) continue;
      const Route r = TraceRoute(t.fabric, t.tables, t.Host(l * 2), t.fabric.FindPort(t.Host(h))->lid);
      ASSERT_GE(r.egress.size(), 2u);
      traced.insert(CableBetween(r.egress[1], *t.fabric.FindPort(r.egress[1])->remote));
    }
  }
  const Analysis a = Analyze(t.fabric);
  EXPECT_EQ(UplinksUsed(t.fabric, t.tables, a), traced);
  EXPECT_GT(traced.size(), 1u);
  EXPECT_DOUBLE_EQ(UplinksGbps(t.fabric, traced),
                   static_cast<double>(traced.size()) * ActiveGbps(*t.fabric.FindPort(traced.begin()->a)));
  const std::set<PortRef> cable{t.Up(0, 0), t.Down(0, 0)};
  const BlastRadius r = RoutesThrough(t.fabric, t.tables, cable, 3);
  ASSERT_EQ(r.listed.size(), 3u);
  for (const auto& [from, to] : r.listed) {
    const Route route = TraceRoute(t.fabric, t.tables, from, t.fabric.FindPort(to)->lid);
    EXPECT_TRUE(
        std::any_of(route.egress.begin(), route.egress.end(), [&](const PortRef& e) { return cable.count(e); }));
  }
  EXPECT_EQ(RoutesThrough(t.fabric, t.tables, cable, 100).listed.size(), r.routes) << "all, under the limit";
}

TEST(BlastRadiusTest, AHostsCableCarriesEveryRouteToAndFromIt) {
  BlastTree t;
  const BlastRadius r = RoutesThrough(t.fabric, t.tables, {t.Host(0), t.ToHost(0)});
  EXPECT_EQ(r.routes, 10u);
  EXPECT_EQ(r.ports.at(t.Host(0)).sends, 5u);
  EXPECT_EQ(r.ports.at(t.Host(0)).receives, 5u);
  EXPECT_EQ(r.ports.at(t.Host(5)).sends, 1u);
  // A congestion root at the host's leaf port: only the routes to it.
  const BlastRadius root = RoutesThrough(t.fabric, t.tables, {t.ToHost(0)});
  EXPECT_EQ(root.routes, 5u);
  EXPECT_EQ(root.ports.at(t.Host(0)).sends, 0u);
}

TEST(BlastRadiusTest, EveryCableCountsExactlyThePairsWhoseTracedRouteCrossesIt) {
  BlastTree t;
  // Every cable of the tree is compared (each host's, each leaf-spine one),
  // and every one carries routes: no comparison is of two empty counts.
  const std::size_t cables = std::size(t.host) + std::size(t.leaf) * std::size(t.spine);
  std::size_t compared = 0;
  for (const Link& l : Links(t.fabric)) {
    const std::string what = t.fabric.FindNode(l.a.node_guid)->description + "[" + std::to_string(l.a.port) + "] - " +
                             t.fabric.FindNode(l.b.node_guid)->description + "[" + std::to_string(l.b.port) + "]";
    const BlastRadius want = BruteForce(t, {l.a, l.b});
    EXPECT_GT(want.routes, 0u) << what;
    ExpectSame(RoutesThrough(t.fabric, t.tables, {l.a, l.b}), want, what);
    ExpectSame(RoutesThrough(t.fabric, t.tables, {l.a}), BruteForce(t, {l.a}), what + " one way");
    ++compared;
  }
  EXPECT_EQ(compared, cables);
  EXPECT_GE(cables, 10u);
  // With a loop between the spines' tables and a hole, still exact.
  BlastTree odd;
  odd.Route(odd.spine[0], odd.Lid(odd.host[4]), 2);  // spine1 sends cn5 to leaf2, which sends it back up
  odd.Route(odd.leaf[1], odd.Lid(odd.host[4]), 3);
  odd.Route(odd.spine[1], odd.Lid(odd.host[1]), transport::kLftNoPort);
  compared = 0;
  std::size_t routes = 0;
  for (const Link& l : Links(odd.fabric)) {
    const BlastRadius want = BruteForce(odd, {l.a, l.b});
    ExpectSame(RoutesThrough(odd.fabric, odd.tables, {l.a, l.b}), want, "odd tables");
    routes += want.routes;
    ++compared;
  }
  EXPECT_EQ(compared, cables);
  EXPECT_GT(routes, 0u);
}

}  // namespace
}  // namespace ibfabric::topology

namespace ibfabric::collectors {
namespace {

// The collector over a hand-built snapshot: the routed tree's tables, one
// bad spine cable and one flapping host cable alerted on, adaptive routing
// on at one spine.
struct Snap {
  testing::RoutedTree t;
  Snapshot parts;
  Logger log{LogLevel::kError};
  Snap() {
    parts.fabric = std::make_shared<topology::Fabric>(t.fabric);
    parts.forwarding = std::make_shared<topology::ForwardingTables>(t.tables);
    auto labels = std::make_shared<NodeLabels>();
    for (const auto& n : t.fabric.nodes()) (*labels)[n.guid].name = n.description;
    parts.nodes = std::move(labels);
  }
  topology::PortRef P(int node, int port) const { return {t.b.Guid(node), static_cast<std::uint8_t>(port)}; }
  void Alerts(const std::vector<Alert>& active) {
    auto h = std::make_shared<HealthReport>();
    h->active = active;
    parts.health = h;
  }
  Cycle MakeCycle() {
    Cycle c;
    c.fabric = &t.fabric;
    c.parts = &parts;
    c.log = &log;
    return c;
  }
};

Alert On(Cause cause, const topology::PortRef& x, const topology::PortRef& y) {
  Alert a;
  a.cause = cause;
  a.cable = topology::CableBetween(x, y);
  return a;
}

TEST(BlastRadiusCollectorTest, EachFaultItsRoutesAndTheHostPortsItHurts) {
  Snap s;
  const topology::PortRef up = s.P(s.t.leaf[0], 3), down = s.P(s.t.spine[0], 1);
  const topology::PortRef host = s.P(s.t.host[5], 1), leaf_port = s.P(s.t.leaf[2], 2);
  s.Alerts({On(Cause::kBadCable, up, down), On(Cause::kFlappingLink, host, leaf_port),
            On(Cause::kDegradedLink, s.P(s.t.leaf[1], 4), s.P(s.t.spine[1], 2))});
  topology::AdaptiveSwitches ar;
  ar[s.t.b.Guid(s.t.spine[0])] = topology::AdaptiveRouting::kOn;
  s.parts.by_collector.Set("adaptive_routing", std::make_shared<const topology::AdaptiveSwitches>(ar));
  auto c = FindCollector("blast_radius")->make({});
  c->Update(s.MakeCycle());
  c->Publish(&s.parts);
  const auto* report = s.parts.by_collector.Get<BlastReport>(kBlastRadiusCollector);
  ASSERT_NE(report, nullptr);
  ASSERT_EQ(report->entries.size(), 2u) << "a degraded link hurts no route";
  const BlastEntry* spine = report->Find(Cause::kBadCable, topology::CableBetween(up, down));
  ASSERT_NE(spine, nullptr);
  EXPECT_EQ(spine->radius.routes, 8u);
  EXPECT_TRUE(spine->adaptive) << "spine1 routes adaptively: the tables' routes are its fallback";
  EXPECT_EQ(HurtPorts(s.t.fabric, *spine).size(), 6u) << "between switches: every port of the radius";
  const BlastEntry* own = report->Find(Cause::kFlappingLink, topology::CableBetween(host, leaf_port));
  ASSERT_NE(own, nullptr);
  EXPECT_FALSE(own->adaptive);
  EXPECT_EQ(own->radius.routes, 10u);
  EXPECT_EQ(HurtPorts(s.t.fabric, *own), std::vector<topology::PortRef>{host}) << "a host's own cable: that host";

  s.parts.collectors = {"blast_radius"};
  testbed::Scrape m = testbed::Scrape::Parse(RenderExposition(s.parts, "test"));
  EXPECT_EQ(m.Value("infiniband_alert_blast_radius_routes", {{"cause", "bad_cable"}, {"routing", "adaptive"}}), 8);
  EXPECT_EQ(m.Value("infiniband_alert_blast_radius_ports", {{"cause", "flapping_link"}, {"routing", "static"}}), 6);
  EXPECT_EQ(m.Value("infiniband_blast_radius_port_faults",
                    {{"node_guid", topology::FormatGuid(host.node_guid)},
                     {"faults", "bad_cable leaf1[3] - spine1[1]; flapping_link leaf3[2] - cn6[1]"}}),
            2);
  EXPECT_EQ(m.Find("infiniband_blast_radius_port_faults").size(), 6u);

  // The routes the published report says cross the bad cable.
  const auto routes = [&] {
    return s.parts.by_collector.Get<BlastReport>(kBlastRadiusCollector)
        ->Find(Cause::kBadCable, topology::CableBetween(up, down))
        ->radius.routes;
  };
  // Cached while nothing changes; traced again for new tables (cn1 now
  // reached through spine2 from the other leaves: the spine1 cable carries
  // only leaf1's way up) and for a new graph with the same tables.
  c->Update(s.MakeCycle());
  c->Publish(&s.parts);
  EXPECT_EQ(routes(), 8u);
  auto tables = s.t.tables;
  for (int l : {1, 2}) tables[s.t.b.Guid(s.t.leaf[l])][s.t.Lid(s.t.host[0])] = 4;  // up to spine2
  s.parts.forwarding = std::make_shared<topology::ForwardingTables>(tables);
  c->Update(s.MakeCycle());
  c->Publish(&s.parts);
  EXPECT_EQ(routes(), 4u) << "new tables: traced again";
  // A walk adopts a graph without cn2: its routes up through spine1 are gone.
  std::set<std::uint64_t> kept;
  for (const auto& n : s.t.fabric.nodes()) {
    if (n.guid != s.t.b.Guid(s.t.host[1])) kept.insert(n.guid);
  }
  const topology::Fabric without = topology::Part(s.t.fabric, kept);
  Cycle later = s.MakeCycle();
  later.fabric = &without;
  c->Update(later);
  c->Publish(&s.parts);
  EXPECT_EQ(routes(), 4u) << "the same generation: the cached trace";
  later.fabric_generation = 1;
  c->Update(later);
  c->Publish(&s.parts);
  EXPECT_EQ(routes(), 2u) << "a new graph: traced again";

  // Outside fabric scope (or shard 0) nothing is traced.
  s.parts.scope.kind = topology::ScopeKind::kLocal;
  Cycle local = s.MakeCycle();
  local.scope = s.parts.scope;
  c->Update(local);
  c->Publish(&s.parts);
  EXPECT_EQ(s.parts.by_collector.Get<BlastReport>(kBlastRadiusCollector), nullptr);
}

// The what-if's verdict with the jobs on the fabric's host ports (the
// fabric_jobs part): a host's only cable waits for the job on that host
// and names it; a host cable under no job is safe now (drain it first); a
// spine cable names the jobs whose routes move and is safe now; without a
// jobs source a host cable is "wait" (the jobs are not known), and a job
// on another fabric's port counts for nothing.
TEST(BlastRadiusCollectorTest, TheWhatIfWaitsForTheJobsOnTheHostsItCutsOff) {
  Snap s;
  topology::HostPattern pattern;  // the tree's CAs are "cn1".."cn6": each a host
  std::string error;
  ASSERT_TRUE(topology::ParseHostPattern(R"(^((cn)\d+)$)", &pattern, &error)) << error;
  s.parts.hosts = std::make_shared<topology::HostAnalysis>(topology::AnalyzeHosts(s.t.fabric, pattern));
  const auto whatif = [&](const topology::PortRef& end) {
    const ApiReply r =
        FindCollector("blast_radius")
            ->routes[0]
            .reply(s.parts, {{"cable", topology::FormatGuid(end.node_guid) + ":" + std::to_string(end.port)}});
    EXPECT_EQ(r.status, 200) << r.error;
    return r.body;
  };
  const topology::PortRef cn1 = s.P(s.t.host[0], 1), cn3 = s.P(s.t.host[2], 1), cn5 = s.P(s.t.host[4], 1);
  nlohmann::json w = whatif(cn1);
  EXPECT_EQ(w["verdict"], "wait");
  EXPECT_EQ(w["reason"], "1 hosts lose every path (cn1): drain them first");
  EXPECT_TRUE(w["jobs"].is_null());
  EXPECT_EQ(w["jobs_source"]["error"], "no jobs source: --jobs.prometheus-url");

  auto jobs = std::make_shared<FabricJobs>();
  jobs->known = true;
  jobs->at[cn1] = {{"slurm", "4242"}};
  jobs->at[cn3] = {{"slurm", "4242"}, {"kubernetes", "team-a/train-0"}};
  jobs->at[{0x99, 1}] = {{"slurm", "7777"}};  // a port of another fabric
  s.parts.by_collector.Set(kFabricJobsCollector, std::shared_ptr<const FabricJobs>(jobs));
  w = whatif(cn1);
  EXPECT_EQ(w["verdict"], "wait");
  EXPECT_EQ(w["reason"], "wait for job 4242 (cn1 loses every path); 1 hosts lose every path (cn1)");
  ASSERT_EQ(w["jobs"].size(), 2u) << w["jobs"].dump();
  EXPECT_EQ(w["jobs"][0]["job"], "team-a/train-0");
  EXPECT_EQ(w["jobs"][0]["hosts_whose_routes_move"], nlohmann::json::array({"cn3"}));
  EXPECT_EQ(w["jobs"][1]["job"], "4242");
  EXPECT_EQ(w["jobs"][1]["hosts"], nlohmann::json::array({"cn1", "cn3"}));
  EXPECT_EQ(w["jobs"][1]["hosts_cut_off"], nlohmann::json::array({"cn1"}));
  EXPECT_TRUE(w["jobs_source"]["known"]);

  w = whatif(cn5);
  EXPECT_EQ(w["verdict"], "safe now") << "no job on cn5";
  EXPECT_EQ(w["reason"], "1 hosts lose every path (cn5) but run no job: drain them first so that none starts there");
  EXPECT_EQ(w["jobs"].size(), 2u) << "cn1 and cn3 talk to cn5: their routes to it move" << w["jobs"].dump();

  // leaf1's cable up to spine1: routes move, nobody is cut off.
  w = whatif(s.P(s.t.leaf[0], 3));
  EXPECT_EQ(w["verdict"], "safe now");
  EXPECT_EQ(w["reason"],
            "8 routes between 6 host ports move to other paths once the subnet manager routes around it "
            "(pod team-a/train-0, job 4242 among them)");

  // CAs whose descriptions are no host's: each its own host, by its name.
  s.parts.hosts = std::make_shared<topology::HostAnalysis>();
  w = whatif(cn1);
  EXPECT_EQ(w["hosts_cut_off"], nlohmann::json::array({"cn1"}));
  EXPECT_EQ(w["verdict"], "wait");
}

}  // namespace
}  // namespace ibfabric::collectors
