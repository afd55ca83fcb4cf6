// Routing balance from the switches' forwarding tables on the simulated
// fabric, routed by opensm. Clean fat trees: no routing finding, every
// leaf's per-uplink destination counts equal to what `ibroute` prints. An
// uplink pulled after the SM swept: the destinations routed over it are
// unrouted on both ends. The SM sweeps around the gap and the cable comes
// back without a new sweep: the returned uplink carries nothing, an
// imbalance on that leaf.

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "tests/integration/fabric_suite.h"

namespace ibfabric::testbed {
namespace {

using std::chrono::milliseconds;

Scrape Once(const SimFabric& sim) {
  const CommandResult r = sim.Tool({ExporterBinary(), "--once", "--log.level=error"}, milliseconds(120000));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return Scrape::Parse(r.out);
}

// `ibroute LID`: egress port -> CA destinations, from lines like
// "0x0005 002 : (Channel Adapter portguid 0x...: 'cn0002')".
std::map<int, int> IbrouteCaCounts(const SimFabric& sim, const std::string& lid) {
  const CommandResult r = sim.Tool({"ibroute", lid}, milliseconds(30000));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<int, int> out;
  static const std::regex kLine(R"(^0x[0-9a-f]+ (\d+) : \(Channel Adapter)");
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, kLine)) ++out[std::stoi(m[1])];
  }
  return out;
}

std::map<std::string, double> RoutingFindings(const Scrape& s) {
  std::map<std::string, double> out;
  for (const auto& x : s.Find("infiniband_topology_findings")) {
    const std::string kind = x.labels.at("kind");
    if (kind == "routing_imbalance" || kind == "unrouted_destination" || kind == "down_up_route") out[kind] = x.value;
  }
  return out;
}

std::unique_ptr<SimFabric> Start(const FatTree& tree) {
  SimOptions o;
  o.attach = tree.Host(1);
  std::string error;
  auto sim = SimFabric::Start(tree.NetFile(), o, &error);
  EXPECT_NE(sim, nullptr) << error;
  return sim;
}

// A SHARP Aggregation Node in every switch of a clean fat tree: opensm
// routes their LIDs too, so a leaf's uplinks carry the hosts and the ANs
// unevenly; the hosts' traffic is what the balance is judged on, and the
// ANs are no hosts, no leaves and no cables: not one finding of any kind.
TEST(RoutingBalanceTest, ASharpFabricHasNoFindings) {
  for (FatTreeSpec spec : {Spec(4, 2, 4, 2, 12), Spec(8, 4, 6, 2, 24)}) {
    spec.aggregation_nodes = true;
    const FatTree tree = FatTree::Generate(spec);
    auto sim = Start(tree);
    ASSERT_NE(sim, nullptr);
    const Scrape s = Once(*sim);
    const std::string where = std::to_string(spec.leaves) + " leaves x " + std::to_string(spec.spines) + " spines";
    EXPECT_EQ(s.Find("infiniband_aggregation_node_info").size(), static_cast<std::size_t>(spec.leaves + spec.spines))
        << where;
    EXPECT_EQ(s.Value("infiniband_topology_is_tree"), 1) << where;
    EXPECT_EQ(s.Find("infiniband_switch_tier", {{"tier", "leaf"}}).size(), static_cast<std::size_t>(spec.leaves))
        << where;
    for (const auto& x : s.Find("infiniband_topology_findings")) {
      std::string which;
      for (const auto& f : s.Find("infiniband_topology_finding", {{"kind", x.labels.at("kind")}})) {
        which += "\n  " + f.labels.at("node") + " " + f.labels.at("remote_node");
      }
      EXPECT_EQ(x.value, 0) << where << ": " << x.labels.at("kind") << which;
    }
    EXPECT_FALSE(s.Find("infiniband_routing_spread").empty()) << where << ": the tables were read";
  }
}

TEST(RoutingBalanceTest, OpensmRoutesOnCleanFatTreesAreBalancedAndMatchIbroute) {
  FatTreeSpec three = Spec(4, 2, 4, 3, 14);
  for (const FatTreeSpec& spec : {Spec(4, 2, 4, 2, 12), three, Spec324()}) {
    const FatTree tree = FatTree::Generate(spec);
    auto sim = Start(tree);
    ASSERT_NE(sim, nullptr);
    const Scrape s = Once(*sim);
    const std::string where =
        std::to_string(spec.leaves) + " leaves x " + std::to_string(spec.links_per_pair) + " links";
    EXPECT_EQ(RoutingFindings(s), (std::map<std::string, double>{
                                      {"down_up_route", 0}, {"routing_imbalance", 0}, {"unrouted_destination", 0}}))
        << where;
    EXPECT_EQ(s.Value("infiniband_routing_down_up_routes"), 0) << where;
    for (const auto& x : s.Find("infiniband_routing_spread"))
      EXPECT_LE(x.value, 1) << where << " " << x.labels.at("switch");
    for (const auto& x : s.Find("infiniband_routing_unrouted_destinations")) EXPECT_EQ(x.value, 0) << where;
    EXPECT_EQ(s.Find("infiniband_routing_spread").size(), static_cast<std::size_t>(spec.leaves + spec.spines));
    EXPECT_LE(*s.Value("infiniband_routing_fabric_max_spread"), 1) << where;
    // Leaf 2's uplinks: the exporter's counts are ibroute's CA destinations per port.
    const std::string leaf = tree.Leaf(2);
    const std::string lid = s.Find("infiniband_switch_info", {{"switch", leaf}}).at(0).labels.at("lid");
    const auto tool = IbrouteCaCounts(*sim, lid);
    const auto ours = s.Find("infiniband_routing_port_destinations", {{"switch", leaf}});
    ASSERT_EQ(ours.size(), static_cast<std::size_t>(spec.spines * spec.links_per_pair)) << where;
    int total = 0;
    for (const auto& x : ours) {
      const int port = std::stoi(x.labels.at("port"));
      EXPECT_EQ(x.labels.at("direction"), "up");
      EXPECT_EQ(x.value, tool.count(port) ? tool.at(port) : 0) << where << " port " << port;
      total += static_cast<int>(x.value);
    }
    EXPECT_EQ(total, (spec.leaves - 1) * spec.hosts_per_leaf) << where << ": every remote host goes up";
  }
}

TEST(RoutingBalanceTest, APulledUplinkIsUnroutedThenAReturnedOneCarriesNothing) {
  const FatTree tree = FatTree::Generate(Spec(4, 2, 4, 2, 12));
  auto sim = Start(tree);
  ASSERT_NE(sim, nullptr);
  const Endpoint uplink = tree.LeafUplink(2, 1, 1);
  const Endpoint spine_end = tree.SpineDownlink(1, 2, 1);
  const Scrape before = Once(*sim);
  const std::string leaf_lid = before.Find("infiniband_switch_info", {{"switch", uplink.node}}).at(0).labels.at("lid");
  const int routed_over = IbrouteCaCounts(*sim, leaf_lid)[uplink.port];
  ASSERT_GT(routed_over, 0);

  // Pulled, no SM sweep: what the tables send over it goes nowhere.
  bool ok = false;
  sim->Console("Unlink \"" + uplink.node + "\"[" + std::to_string(uplink.port) + "]", &ok);
  ASSERT_TRUE(ok);
  Scrape s = Once(*sim);
  EXPECT_EQ(s.Value("infiniband_routing_unrouted_destinations", {{"switch", uplink.node}}), routed_over);
  EXPECT_GT(*s.Value("infiniband_routing_unrouted_destinations", {{"switch", spine_end.node}}), 0);
  EXPECT_EQ(RoutingFindings(s)["unrouted_destination"], 2) << "the leaf and the spine";
  bool named = false;
  for (const auto& x : s.Find("infiniband_topology_finding", {{"kind", "unrouted_destination"}})) {
    named |= x.labels.at("node") == uplink.node;
  }
  EXPECT_TRUE(named);

  // The SM routes around the gap; the cable returns without a new sweep.
  std::string error;
  ASSERT_TRUE(sim->SweepSubnet(&error)) << error;
  sim->Console("ReLink \"" + uplink.node + "\"[" + std::to_string(uplink.port) + "]", &ok);
  ASSERT_TRUE(ok);
  s = Once(*sim);
  EXPECT_EQ(
      s.Value("infiniband_routing_port_destinations", {{"switch", uplink.node}, {"port", std::to_string(uplink.port)}}),
      0);
  EXPECT_GE(*s.Value("infiniband_routing_spread", {{"switch", uplink.node}}), 2);
  double worst = 0;  // fabric-wide: the worst switch
  for (const auto& x : s.Find("infiniband_routing_spread")) worst = std::max(worst, x.value);
  EXPECT_EQ(s.Value("infiniband_routing_fabric_max_spread"), worst);
  EXPECT_EQ(RoutingFindings(s)["unrouted_destination"], 0);
  EXPECT_GE(RoutingFindings(s)["routing_imbalance"], 1);
  named = false;
  for (const auto& x : s.Find("infiniband_topology_finding", {{"kind", "routing_imbalance"}})) {
    named |= x.labels.at("node") == uplink.node;
  }
  EXPECT_TRUE(named);
  // ibroute agrees: nothing leaves through the returned uplink.
  EXPECT_EQ(IbrouteCaCounts(*sim, leaf_lid).count(uplink.port), 0u);
  // A new sweep balances again.
  ASSERT_TRUE(sim->SweepSubnet(&error)) << error;
  s = Once(*sim);
  EXPECT_EQ(RoutingFindings(s)["routing_imbalance"], 0);
}

// Three forwarding-table entries planted with SubnSet (tests/tools/smp_set):
// leaf 1 sends a leaf-2 host up to spine 1, spine 1 sends it down to leaf 3,
// leaf 3 up to spine 2: down and up again. ibtracert walks the same path.
TEST(RoutingBalanceTest, APlantedDownAndUpRouteIsFoundAndIbtracertAgrees) {
  const FatTree tree = FatTree::Generate(Spec(4, 2, 4, 1, 8));
  auto sim = Start(tree);
  ASSERT_NE(sim, nullptr);
  Scrape s = Once(*sim);
  EXPECT_EQ(s.Value("infiniband_routing_down_up_routes"), 0);
  const auto lid = [&s](const std::string& metric, const std::string& label, const std::string& node) {
    return s.Find(metric, {{label, node}}).at(0).labels.at("lid");
  };
  const std::string dest = lid("infiniband_hca_info", "hca", tree.Host(5));    // on leaf 2
  const std::string source = lid("infiniband_hca_info", "hca", tree.Host(1));  // on leaf 1
  const auto set = [&](const std::string& sw, const Endpoint& out) {
    const CommandResult r = sim->Tool(
        {IBFABRIC_SMP_SET_BIN, "lft", lid("infiniband_switch_info", "switch", sw), dest, std::to_string(out.port)});
    EXPECT_EQ(r.exit_code, 0) << r.err;
  };
  set(tree.Leaf(1), tree.LeafUplink(1, 1));
  set(tree.Spine(1), tree.SpineDownlink(1, 3));
  set(tree.Leaf(3), tree.LeafUplink(3, 2));
  const CommandResult trace = sim->Tool({"ibtracert", source, dest});
  EXPECT_NE(trace.out.find(tree.Leaf(3)), std::string::npos) << trace.out << trace.err;

  s = Once(*sim);
  EXPECT_GE(*s.Value("infiniband_routing_down_up_routes"), 1);
  bool leaf1 = false;
  for (const auto& x : s.Find("infiniband_topology_finding", {{"kind", "down_up_route"}})) {
    leaf1 |= x.labels.at("node") == tree.Leaf(1);
  }
  EXPECT_TRUE(leaf1);
  // Spine 1 now sends one destination down the wrong downlink: leaf 3's
  // group carries one more, leaf 2's one fewer. Not an imbalance (1 link per pair).
  EXPECT_EQ(s.Value("infiniband_routing_port_destinations",
                    {{"switch", tree.Spine(1)}, {"port", std::to_string(tree.SpineDownlink(1, 3).port)}}),
            tree.spec().hosts_per_leaf + 1);
}

// The tables from the SA (--routing.tables=sa, the default) where a
// resident SM answers: every switch's from its LinearForwardingTableRecords
// (one SubnAdmGetTable a switch; three blocks here, two RMPP segments),
// equal to what each switch holds and to ibroute, and none of the LFT
// SMPs sent. What the SA holds is the SM's copy: an entry planted in one
// switch behind its back shows only where the switches are read. The SA
// gone, every table comes from its switch again, and the log says why.
TEST(RoutingBalanceTest, TablesFromTheSaAreTheSwitchesOwnWithoutTheirSmps) {
  const FatTree tree = FatTree::Generate(Spec(4, 2, 32, 1, 40));
  auto sim = Start(tree);
  ASSERT_NE(sim, nullptr);
  std::string error;
  SimFabric::SmOptions quiet;
  quiet.sweep_seconds = 0;  // nothing reprograms a switch meanwhile
  auto sm = sim->StartSubnetManager(quiet, &error);
  ASSERT_NE(sm, nullptr) << error;
  const std::string stats = sim->dir() + "/rmpp.txt";
  const auto run = [&](const std::string& tables, std::string* log = nullptr) {
    Env env = sim->ClientEnv();
    env["RMPP_STATS"] = stats;
    const CommandResult r = RunCommand({ExporterBinary(), "--once", "--log.level=warn", "--routing.tables=" + tables},
                                       env, milliseconds(120000));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (log) *log = r.err;
    return Scrape::Parse(r.out);
  };
  const auto tables = [](const Scrape& s, const char* source) {
    return s.Value("infiniband_routing_tables", {{"source", source}}).value_or(-1);
  };
  const auto routes = [](const Scrape& s) {
    std::map<std::string, double> out;
    for (const char* family : {"infiniband_routing_port_destinations", "infiniband_routing_unrouted_destinations"}) {
      for (const auto& x : s.Find(family)) {
        const std::string port = x.labels.count("port") ? x.labels.at("port") : "";
        out[std::string(family) + " " + x.labels.at("switch") + " " + port] += x.value;
      }
    }
    return out;
  };
  // Requests of the last discovery by kind: each sent once (a retry is no new request).
  const auto sent = [](const Scrape& s, const char* kind) {
    const auto of = [&](const char* outcome) {
      return s
          .Value("infiniband_exporter_last_run_mads", {{"phase", "discovery"}, {"class", kind}, {"outcome", outcome}})
          .value_or(-1);
    };
    return of("sent") - of("retried");
  };
  const double switches = static_cast<double>(tree.leaves().size() + tree.spines().size());
  const Scrape sa = run("sa");
  const std::string crossed = ReadFile(stats);
  const Scrape own = run("switches");
  EXPECT_EQ(tables(sa, "sa"), switches);
  EXPECT_EQ(tables(sa, "switch"), 0);
  EXPECT_EQ(tables(own, "sa"), 0);
  EXPECT_EQ(tables(own, "switch"), switches);
  ASSERT_FALSE(routes(sa).empty());
  EXPECT_EQ(routes(sa), routes(own));
  EXPECT_EQ(RoutingFindings(sa)["unrouted_destination"], 0);
  // ibroute agrees on every uplink of leaf 1.
  const std::string leaf_lid = sa.Find("infiniband_switch_info", {{"switch", tree.Leaf(1)}}).at(0).labels.at("lid");
  const std::map<int, int> ib = IbrouteCaCounts(*sim, leaf_lid);
  const auto uplinks = sa.Find("infiniband_routing_port_destinations", {{"switch", tree.Leaf(1)}});
  ASSERT_EQ(uplinks.size(), 2u);
  for (const auto& x : uplinks) {
    const int port = std::stoi(x.labels.at("port"));
    EXPECT_EQ(x.value, ib.count(port) ? ib.at(port) : 0) << "port " << port;
  }
  // MADs: one SA query a switch instead of its three LFT blocks; each
  // table two RMPP segments (crossed: what the exporter's RMPP took in).
  EXPECT_EQ(sent(own, "lid_smp") - sent(sa, "lid_smp"), 3 * switches);
  EXPECT_EQ(sent(sa, "gmp") - sent(own, "gmp"), switches);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(crossed, m, std::regex(R"(segments_received (\d+) .*transfers_received (\d+))")))
      << crossed;
  EXPECT_GE(std::stod(m[1]), 2 * switches) << crossed;
  EXPECT_GE(std::stod(m[2]), switches) << crossed;

  // A destination of leaf 1 sent out of a port with no cable, behind the
  // SM's back: unrouted in the switch's own table, not in the SM's copy.
  const std::string dest = sa.Find("infiniband_hca_info", {{"hca", tree.Host(5)}}).at(0).labels.at("lid");  // on leaf 2
  const CommandResult planted = sim->Tool({IBFABRIC_SMP_SET_BIN, "lft", leaf_lid, dest, "40"});
  ASSERT_EQ(planted.exit_code, 0) << planted.err;
  EXPECT_EQ(run("switches").Value("infiniband_routing_unrouted_destinations", {{"switch", tree.Leaf(1)}}), 1);
  EXPECT_EQ(run("sa").Value("infiniband_routing_unrouted_destinations", {{"switch", tree.Leaf(1)}}), 0);

  // No SA any more: one query, no answer, every table from its switch.
  sm.reset();
  std::string log;
  const Scrape gone = run("sa", &log);
  EXPECT_EQ(tables(gone, "sa"), 0);
  EXPECT_EQ(tables(gone, "switch"), switches);
  EXPECT_NE(log.find("gave no LinearForwardingTableRecords"), std::string::npos) << log;
  EXPECT_EQ(gone.Value("infiniband_routing_unrouted_destinations", {{"switch", tree.Leaf(1)}}), 1);
}

// A routing loop for one host's LID (its leaf sends it up to spine 1,
// spine 1 back down): ibsim hands a packet that loops to whatever switch
// it is at when its hop limit (16) runs out, so SMPs to that LID are
// answered by a switch, as a LID the SM just gave to another node would be
// on hardware. The host keeps its own name and its cable; the log says
// its LID answered as another node; nothing else is named after it.
TEST(RoutingBalanceTest, AnswersByLidFromAnotherNodeAreNotTaken) {
  const FatTree tree = FatTree::Generate(Spec(4, 2, 4, 1, 8));
  auto sim = Start(tree);
  ASSERT_NE(sim, nullptr);
  Scrape s = Once(*sim);
  const auto lid = [&s](const std::string& metric, const std::string& label, const std::string& node) {
    return s.Find(metric, {{label, node}}).at(0).labels.at("lid");
  };
  const std::string host = tree.Host(5);  // on leaf 2
  const std::string dest = lid("infiniband_hca_info", "hca", host);
  const std::string guid = s.Find("infiniband_hca_info", {{"hca", host}}).at(0).labels.at("guid");
  const auto set = [&](const std::string& sw, const Endpoint& out) {
    const CommandResult r = sim->Tool(
        {IBFABRIC_SMP_SET_BIN, "lft", lid("infiniband_switch_info", "switch", sw), dest, std::to_string(out.port)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  };
  set(tree.Leaf(2), tree.LeafUplink(2, 1));
  set(tree.Spine(1), tree.SpineDownlink(1, 2));
  // What answers at that LID now: a switch.
  const CommandResult who = sim->Tool({"smpquery", "nodedesc", dest});
  ASSERT_EQ(who.exit_code, 0) << who.err;
  ASSERT_EQ(who.out.find(host), std::string::npos) << who.out;

  const CommandResult r =
      sim->Tool({ExporterBinary(), "--once", "--log.level=warn", "--no-collector.routing"}, milliseconds(120000));
  s = Scrape::Parse(r.out);
  const auto named = s.Find("infiniband_hca_info", {{"guid", guid}});
  ASSERT_EQ(named.size(), 1u) << r.err;
  EXPECT_EQ(named[0].labels.at("hca"), host);
  std::map<std::string, int> names;
  for (const auto& x : s.Find("infiniband_switch_info")) ++names[x.labels.at("switch")];
  for (const auto& x : s.Find("infiniband_hca_info")) ++names[x.labels.at("hca")];
  for (const auto& [name, n] : names) EXPECT_EQ(n, 1) << name;
  EXPECT_EQ(names.size(), tree.leaves().size() + tree.spines().size() + tree.hosts().size());
  EXPECT_EQ(s.Value("infiniband_link_up", {{"node", host}})
                .value_or(s.Value("infiniband_link_up", {{"remote_node", host}}).value_or(-1)),
            1);
  const std::regex said("LID " + dest + " of 0x[0-9a-f]+ answered as " + tree.Leaf(2) +
                        ": its answers by LID not taken");
  EXPECT_TRUE(std::regex_search(r.err, said)) << r.err;
}

// The routing and partitions collectors turned off on the same fabric: none
// of their families, no run of theirs timed, and discovery's LID-routed
// SMPs short of at least a SwitchInfo and an LFT block per switch and a
// P_Key block per host (the exporter's own count; the unit test
// PollerTest.ADisabledCollectorSendsNoMadAndRendersNoFamily counts at the
// transport seam).
TEST(RoutingBalanceTest, WithoutTheRoutingAndPartitionsCollectorsNoneOfTheirReads) {
  const FatTree tree = FatTree::Generate(Spec(4, 2, 4, 2, 12));
  auto sim = Start(tree);
  ASSERT_NE(sim, nullptr);
  const auto lid_smps = [](const Scrape& s) {
    return s
        .Value("infiniband_exporter_last_run_mads", {{"phase", "discovery"}, {"class", "lid_smp"}, {"outcome", "sent"}})
        .value_or(-1);
  };
  const Scrape all = Once(*sim);
  const CommandResult r = sim->Tool(
      {ExporterBinary(), "--once", "--log.level=error", "--no-collector.routing", "--no-collector.partitions"},
      milliseconds(120000));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Scrape some = Scrape::Parse(r.out);
  ASSERT_FALSE(all.Find("infiniband_routing_spread").empty());
  ASSERT_FALSE(all.Find("infiniband_port_partition_info").empty());
  for (const char* family : {"infiniband_routing_spread", "infiniband_routing_down_up_routes",
                             "infiniband_port_partition_info", "infiniband_switch_port_partition_info"}) {
    EXPECT_TRUE(some.Find(family).empty()) << family;
  }
  EXPECT_EQ(all.Value("infiniband_exporter_collector_success", {{"collector", "routing"}}), 1);
  EXPECT_FALSE(some.Value("infiniband_exporter_collector_success", {{"collector", "routing"}}).has_value());
  EXPECT_FALSE(some.Value("infiniband_exporter_collector_success", {{"collector", "partitions"}}).has_value());
  EXPECT_EQ(some.Value("infiniband_exporter_collector_success", {{"collector", "port_counters"}}), 1);
  const double switches = static_cast<double>(tree.leaves().size() + tree.spines().size());
  const double hosts = static_cast<double>(tree.hosts().size());
  EXPECT_GE(lid_smps(all) - lid_smps(some), 2 * switches + hosts) << lid_smps(all) << " vs " << lid_smps(some);
  // Everything else is the same: the fabric, the counters, the tree.
  EXPECT_EQ(some.Find("infiniband_switch_info").size(), all.Find("infiniband_switch_info").size());
  EXPECT_EQ(some.Value("infiniband_topology_is_tree"), 1);
}

}  // namespace
}  // namespace ibfabric::testbed
