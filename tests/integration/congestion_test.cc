// Issue 22's acceptance on the simulated fabric: congestion trees built
// from opensm's real forwarding tables. PortXmitWait is planted as rising
// ramps on the ports of an incast (one host's leaf port, the spine ports
// that carry that host's traffic towards its leaf, other leaves' uplinks
// that carry it to those spines), the ports chosen by reading the tables
// with ibroute, not by the cabling. One tree, its root the host's leaf
// port and its victims exactly the others; two independent incasts are
// two trees; a lone congested port is its own root; head-of-queue discards
// planted on the root are in its evidence; a clean fabric has none; and
// PortXmitDiscardDetails agree with `perfquery -D`.

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "tests/integration/fabric_suite.h"
#include "tests/testbed/browser.h"

namespace ibfabric::testbed {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kCongestionConfig = R"(window: 2s
raise_after: 2
clear_after: 2
congestion:
  xmit_wait_fraction: {warning: 0.05, critical: 0.25}
)";

class CongestionTest : public FabricSuite {
 protected:
  static void SetUpTestSuite() {
    FatTreeSpec spec = Spec(4, 2, 4, 1, 8);
    spec.hcas_per_host = 1;  // HCAs named as rdma-ndd names them: "cn0001 mlx5_0", host cn0001
    StartFabric(spec);
    dir_ = MakeTempDir("congestion");
    WriteFile(dir_ + "/alerts.yaml", kCongestionConfig);
  }
  static void TearDownTestSuite() {
    RemoveTree(dir_);
    StopFabric();
  }
  static std::unique_ptr<ExporterProcess> Start() {
    return StartExporter({"--sweep.interval=200ms", "--discovery.interval=1m", "--mad.timeout=20ms",
                          "--alerts.config=" + dir_ + "/alerts.yaml"});
  }
  static std::string Str(const Endpoint& e) { return e.node + "[" + std::to_string(e.port) + "]"; }
  static std::string Str(const json& end) {
    return end["node"].get<std::string>() + "[" + std::to_string(end["port"].get<int>()) + "]";
  }

  // The LIDs of every node, from the exporter's info metrics.
  static std::map<std::string, std::string> Lids(const Scrape& s) { return ByName(s, "lid"); }

  // The port switch `sw` forwards host `ca`'s LID out of: its real
  // LinearForwardingTable, as ibroute reads it.
  static Endpoint EgressTo(const std::map<std::string, std::string>& lids, const std::string& sw,
                           const std::string& ca) {
    const CommandResult r = sim_->Tool({"ibroute", lids.at(sw)}, milliseconds(30000));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    static const std::regex kLine(R"(^0x[0-9a-f]+ (\d+) : \(Channel Adapter portguid 0x[0-9a-f]+: '(.*)'\))");
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (std::regex_search(line, m, kLine) && m[2] == ca) return {sw, std::stoi(m[1])};
    }
    ADD_FAILURE() << sw << " has no route to " << ca << ":\n" << r.out;
    return {sw, 0};
  }

  // An incast on host h seen from `leaves`: the host's leaf port, and for
  // each of those leaves its uplink that carries h's traffic and the port
  // of the spine it reaches that carries it on down to h's leaf.
  struct Incast {
    Endpoint root;
    std::set<Endpoint> victims;
    std::set<std::string> spines;
  };
  static Incast IncastOn(const std::map<std::string, std::string>& lids, int h, const std::vector<int>& leaves) {
    Incast out;
    out.root = tree_->LeafHostPort(h);
    for (int l : leaves) {
      const Endpoint up = EgressTo(lids, tree_->Leaf(l), tree_->Host(h));
      const Endpoint spine = *tree_->Peer(up);
      const Endpoint down = EgressTo(lids, spine.node, tree_->Host(h));
      EXPECT_EQ(tree_->Peer(down)->node, out.root.node) << "the spine sends it down to the host's leaf";
      out.victims.insert(up);
      out.victims.insert(down);
      out.spines.insert(spine.node);
    }
    return out;
  }

  // XmitWait rising on `at`: 20 M ticks a 100 ms at QDR (1 ns a tick) is
  // 20 % of the time, a warning; 32-bit, so it starts over below 2^32.
  static std::unique_ptr<Ramp> Wait(const Endpoint& at, unsigned long long step = 20'000'000) {
    return std::make_unique<Ramp>(at, "PortCounters.PortXmitWait", step, 4'000'000'000ULL);
  }

  static json Alerts(const ExporterProcess& e) {
    int status = 0;
    const std::string body = e.Get("/api/v1/alerts", &status);
    EXPECT_EQ(status, 200) << body;
    return json::parse(body, nullptr, false);
  }
  static std::vector<json> CongestionAlerts(const json& alerts) {
    std::vector<json> out;
    for (const auto& a : alerts["active"]) {
      if (a["cause"] == "congestion") out.push_back(a);
    }
    return out;
  }
  // Waits until the congestion alerts are `n` and every one names a root;
  // then the alerts JSON.
  static std::optional<json> WaitTrees(const ExporterProcess& e, std::size_t n,
                                       const std::function<bool(const json&)>& also = {}) {
    const auto end = std::chrono::steady_clock::now() + seconds(30);
    json last;
    while (std::chrono::steady_clock::now() < end) {
      last = Alerts(e);
      if (!last.is_discarded()) {
        const auto a = CongestionAlerts(last);
        if (a.size() == n && last["congestion_trees"].size() == n && (!also || also(last))) return last;
      }
      std::this_thread::sleep_for(milliseconds(100));
    }
    ADD_FAILURE() << "not " << n << " congestion trees: " << last.dump(2);
    return std::nullopt;
  }
  static std::set<std::string> Victims(const json& alert) {
    std::set<std::string> out;
    for (const auto& v : alert["congestion"]["victims"]) out.insert(Str(v));
    return out;
  }
  static std::set<std::string> Strs(const std::set<Endpoint>& ports) {
    std::set<std::string> out;
    for (const auto& p : ports) out.insert(Str(p));
    return out;
  }

  static inline std::string dir_;
};

TEST_F(CongestionTest, ACleanFabricHasNoTree) {
  auto e = Start();
  ASSERT_TRUE(e);
  const auto s = e->WaitForSweeps(20, seconds(60));  // four seconds: two windows
  ASSERT_TRUE(s);
  EXPECT_EQ(s->Value("infiniband_congestion_trees"), 0);
  EXPECT_TRUE(s->Find("infiniband_congestion_root").empty());
  EXPECT_TRUE(s->Find("infiniband_port_congestion_role").empty());
  // PortVLXmitWaitCounters is read only from congested ports: none.
  EXPECT_TRUE(s->Find("infiniband_switch_port_transmit_wait_vl_total").empty());
  const json j = Alerts(*e);
  EXPECT_TRUE(j["congestion_trees"].empty()) << j.dump(2);
  EXPECT_TRUE(CongestionAlerts(j).empty());
}

TEST_F(CongestionTest, AnIncastIsOneTreeRootedAtTheHostsLeafPortWithItsVictimsAndDiscards) {
  auto e = Start();
  ASSERT_TRUE(e);
  const Scrape first = e->ScrapeMetrics();
  const Incast incast = IncastOn(Lids(first), 1, {2, 3});
  ASSERT_GE(incast.victims.size(), 3u);  // two leaf uplinks and one or two spine ports
  std::vector<std::unique_ptr<Ramp>> ramps;
  ramps.push_back(Wait(incast.root, 50'000'000));  // 50 %: critical at the root
  for (const Endpoint& v : incast.victims) ramps.push_back(Wait(v));
  // The root's switch drops at head of queue: PortXmitDiscards moves, and
  // the breakdown PortXmitDiscardDetails says why.
  ramps.push_back(std::make_unique<Ramp>(incast.root, "PortCounters.PortXmitDiscards", 3, 60000));
  ramps.push_back(
      std::make_unique<Ramp>(incast.root, "PortXmitDiscardDetails.PortSwHOQLifetimeLimitDiscards", 3, 60000));

  // PortVLXmitWaitCounters and PortXmitDiscardDetails of a port are read
  // in the sweep after the one that found it congested or discarding: a
  // victim that joined the tree in the last sweep has neither yet. The
  // root's 32-bit PortXmitWait starts over every 8 s (4e9 at 5e8 a
  // second); a window across that reads as a counter restarted, its
  // fraction lower: critical is awaited, not read at one instant.
  const auto j = WaitTrees(*e, 1, [&](const json& x) {
    const auto a = CongestionAlerts(x);
    return Victims(a[0]) == Strs(incast.victims) && !x["congestion_trees"][0]["hoq_discarding"].empty() &&
           x["congestion_trees"][0]["root"]["xmit_wait_by_vl"].size() == 16 && a[0]["severity"] == "critical";
  });
  ASSERT_TRUE(j);
  const json alert = CongestionAlerts(*j)[0];
  EXPECT_EQ(Str(alert["congestion"]["root"]), Str(incast.root)) << alert.dump(2);
  EXPECT_EQ(Victims(alert), Strs(incast.victims));
  EXPECT_EQ(alert["congestion"]["depth"], 2);
  EXPECT_EQ(alert["severity"], "critical");
  EXPECT_NE(alert["summary"].get<std::string>().find("congestion rooted at " + Str(incast.root) + " towards " +
                                                     tree_->Host(1) + "[1] (not draining)"),
            std::string::npos)
      << alert["summary"];
  // The evidence: the root's own wait and discards, then each victim.
  std::set<std::string> victim_lines, signals;
  bool hoq_at_root = false;
  for (const auto& ev : alert["evidence"]) {
    signals.insert(ev["signal"].get<std::string>());
    if (ev["signal"] == "victim") victim_lines.insert(ev["detail"].get<std::string>());
    if (ev["signal"] == "hoq_lifetime_discards") {
      hoq_at_root = ev["end"].is_number() && Str(alert["ends"][ev["end"].get<int>()]) == Str(incast.root);
      EXPECT_GT(ev["delta"].get<double>(), 0);
    }
  }
  EXPECT_TRUE(hoq_at_root) << alert["evidence"].dump(2);
  EXPECT_TRUE(signals.count("xmit_wait_fraction")) << alert["evidence"].dump(2);
  EXPECT_EQ(victim_lines.size(), incast.victims.size());
  const json& tree = (*j)["congestion_trees"][0];
  EXPECT_EQ(Str(tree["root"]), Str(incast.root));
  EXPECT_EQ(tree["root"]["behind"]["node"], tree_->Host(1));
  EXPECT_EQ(tree["root"]["behind"]["host"], "cn0001") << "the host that does not drain";
  EXPECT_EQ(tree["root"]["xmit_wait_by_vl"], json(std::vector<int>(16, 0))) << "ibsim answers every VL with 0";
  ASSERT_EQ(tree["hoq_discarding"].size(), 1u);
  EXPECT_EQ(Str(tree["hoq_discarding"][0]), Str(incast.root));
  for (const auto& v : tree["victims"]) {
    const std::string port = Str(v);
    EXPECT_EQ(v["hops"], incast.spines.count(v["node"].get<std::string>()) ? 1 : 2) << port;
  }

  // The metrics: one root, its victims and depth, each port's role; once
  // every port of the tree was read by VL (the sweep after it joined).
  std::vector<Endpoint> tree_ports{incast.root};
  tree_ports.insert(tree_ports.end(), incast.victims.begin(), incast.victims.end());
  const auto vl_read = [&](const Scrape& x) {
    for (const Endpoint& p : tree_ports) {
      if (x.Find("infiniband_switch_port_transmit_wait_vl_total",
                 {{"switch", p.node}, {"port", std::to_string(p.port)}})
              .size() != 16) {
        return false;
      }
    }
    return true;
  };
  const auto scrape = e->WaitFor(vl_read, seconds(20));
  ASSERT_TRUE(scrape) << "a port of the tree was never read by VL";
  const Scrape* s = &*scrape;
  EXPECT_EQ(s->Value("infiniband_congestion_trees"), 1);
  const auto roots = s->Find("infiniband_congestion_root");
  ASSERT_EQ(roots.size(), 1u);
  EXPECT_EQ(roots[0].labels.at("node"), incast.root.node);
  EXPECT_EQ(roots[0].labels.at("port"), std::to_string(incast.root.port));
  EXPECT_EQ(roots[0].labels.at("remote_node"), tree_->Host(1));
  EXPECT_EQ(s->Value("infiniband_congestion_root_victims", {{"node", incast.root.node}}),
            static_cast<double>(incast.victims.size()));
  EXPECT_EQ(s->Value("infiniband_congestion_root_depth", {{"node", incast.root.node}}), 2);
  std::set<std::string> victims;
  for (const auto& x : s->Find("infiniband_port_congestion_role", {{"role", "victim"}})) {
    victims.insert(x.labels.at("node") + "[" + x.labels.at("port") + "]");
    EXPECT_EQ(x.labels.at("root_port"), std::to_string(incast.root.port));
  }
  EXPECT_EQ(victims, Strs(incast.victims));
  EXPECT_EQ(s->Find("infiniband_port_congestion_role", {{"role", "root"}}).size(), 1u);
  // One congestion alert series: the victims' cables raise none.
  EXPECT_EQ(s->Find("infiniband_alert_active", {{"cause", "congestion"}}).size(), 1u);
  // The ports of the tree were asked PortVLXmitWaitCounters (ibsim answers
  // every VL with 0); a quiet port never is.
  EXPECT_EQ(s->Value("infiniband_switch_port_transmit_wait_vl_total",
                     {{"switch", incast.root.node}, {"port", std::to_string(incast.root.port)}, {"vl", "0"}}),
            0);
  EXPECT_EQ(s->Find("infiniband_switch_port_transmit_wait_vl_total",
                    {{"switch", incast.root.node}, {"port", std::to_string(incast.root.port)}})
                .size(),
            16u);
  const Endpoint victim = *incast.victims.begin();
  EXPECT_EQ(s->Find("infiniband_switch_port_transmit_wait_vl_total",
                    {{"switch", victim.node}, {"port", std::to_string(victim.port)}})
                .size(),
            16u)
      << Str(victim);
  const Endpoint quiet = tree_->LeafUplink(4, 1);
  EXPECT_TRUE(s->Find("infiniband_switch_port_transmit_wait_vl_total",
                      {{"switch", quiet.node}, {"port", std::to_string(quiet.port)}})
                  .empty());
  // The root's head-of-queue discards as a counter of its own.
  EXPECT_GT(*s->Value("infiniband_switch_port_switch_hoq_lifetime_limit_discards_total",
                      {{"switch", incast.root.node}, {"port", std::to_string(incast.root.port)}}),
            0);

  // The status page shows the tree: its root and what is behind it, and
  // behind a click its victims.
  std::string error;
  auto browser = Browser::Start(&error);
  ASSERT_NE(browser, nullptr) << error;
  ASSERT_TRUE(browser->Navigate("http://127.0.0.1:" + std::to_string(e->port()) + "/", &error)) << error;
  ASSERT_TRUE(browser->WaitFor(
      "return document.body.dataset.loaded === 'true' && document.querySelector('#congestion details') !== null;",
      seconds(30), &error))
      << error;
  ASSERT_TRUE(browser->Click("#congestion details summary", &error)) << error;
  const auto view = browser->Execute(R"(
      const d = [...document.querySelectorAll('#congestion details')];
      return {trees: d.length, open: d[0].open, hidden: document.getElementById('congestion-section').hidden,
              summary: d[0].querySelector('summary').textContent,
              victims: [...d[0].querySelectorAll('li a')].map((a) => a.textContent)};)",
                                     &error);
  ASSERT_TRUE(view) << error;
  EXPECT_EQ((*view)["trees"], 1);
  EXPECT_EQ((*view)["open"], true);
  EXPECT_EQ((*view)["hidden"], false);
  const std::string summary = (*view)["summary"];
  EXPECT_EQ(summary.rfind("root " + Str(incast.root) + " → " + tree_->Host(1) + "[1] (host cn0001 not draining)", 0),
            0u)
      << summary;
  EXPECT_NE(summary.find(std::to_string(incast.victims.size()) + " victims · depth 2"), std::string::npos) << summary;
  EXPECT_EQ((*view)["victims"].get<std::set<std::string>>(), Strs(incast.victims)) << view->dump();
  // The problem line is the tree's one alert; its evidence names each victim.
  ASSERT_TRUE(browser->Click("#problems tr.problem[data-causes~=congestion] td.what", &error)) << error;
  ASSERT_TRUE(browser->WaitFor("return document.querySelector('#problems tr.evidence .evidence-list') !== null;",
                               seconds(10), &error))
      << error;
  const auto lines = browser->Execute(
      "return [...document.querySelectorAll('#problems tr.evidence .evidence-list li')].map((li) => li.textContent);",
      &error);
  ASSERT_TRUE(lines) << error;
  for (const Endpoint& v : incast.victims) {
    bool named = false;
    for (const auto& line : *lines)
      named |= line.get<std::string>().find("victim waiting") == 0 &&
               line.get<std::string>().find(Str(v) + " waits behind the root") != std::string::npos;
    EXPECT_TRUE(named) << Str(v) << " in " << lines->dump();
  }
  EXPECT_TRUE(browser->Screenshot(std::string(IBFABRIC_ARTIFACT_DIR) + "/status-congestion.png", &error)) << error;
}

TEST_F(CongestionTest, TwoIndependentIncastsAreTwoTrees) {
  auto e = Start();
  ASSERT_TRUE(e);
  const Scrape first = e->ScrapeMetrics();
  const auto lids = Lids(first);
  const Incast a = IncastOn(lids, 1, {2});
  // A host on leaf 4 whose traffic from leaf 3 goes through the other spine.
  std::optional<Incast> b;
  for (int h = 13; h <= 16 && !b; ++h) {
    Incast x = IncastOn(lids, h, {3});
    if (*x.spines.begin() != *a.spines.begin()) b = x;
  }
  ASSERT_TRUE(b) << "opensm sent every leaf-4 host through " << *a.spines.begin();
  std::vector<std::unique_ptr<Ramp>> ramps;
  for (const Incast* i : {&a, static_cast<const Incast*>(&*b)}) {
    ramps.push_back(Wait(i->root));
    for (const Endpoint& v : i->victims) ramps.push_back(Wait(v));
  }
  const auto j = WaitTrees(*e, 2, [&](const json& x) {
    const auto alerts = CongestionAlerts(x);
    return Victims(alerts[0]).size() + Victims(alerts[1]).size() == a.victims.size() + b->victims.size();
  });
  ASSERT_TRUE(j);
  std::map<std::string, std::set<std::string>> trees;  // root -> victims
  for (const json& alert : CongestionAlerts(*j)) trees[Str(alert["congestion"]["root"])] = Victims(alert);
  EXPECT_EQ(trees, (std::map<std::string, std::set<std::string>>{{Str(a.root), Strs(a.victims)},
                                                                 {Str(b->root), Strs(b->victims)}}))
      << j->dump(2);
}

TEST_F(CongestionTest, ACongestedPortWithNoCongestedNextHopIsItsOwnRoot) {
  auto e = Start();
  ASSERT_TRUE(e);
  const Scrape first = e->ScrapeMetrics();
  // Leaf 2's uplink towards cn0001 waits, but nothing past it does.
  const Endpoint up = EgressTo(Lids(first), tree_->Leaf(2), tree_->Host(1));
  auto ramp = Wait(up);
  const auto j = WaitTrees(*e, 1);
  ASSERT_TRUE(j);
  const json alert = CongestionAlerts(*j)[0];
  EXPECT_EQ(Str(alert["congestion"]["root"]), Str(up));
  EXPECT_TRUE(alert["congestion"]["victims"].empty());
  EXPECT_EQ(alert["congestion"]["depth"], 0);
  EXPECT_EQ((*j)["congestion_trees"][0]["root"]["behind"]["node"], tree_->Peer(up)->node);
}

TEST_F(CongestionTest, TransmitDiscardDetailsAgreeWithPerfquery) {
  // Planted before the exporter starts: its first sweep reads every port's
  // details, and then only where PortXmitDiscards moves.
  const Endpoint a = tree_->LeafUplink(3, 2), b = tree_->LeafHostPort(7), quiet = tree_->SpineDownlink(2, 4);
  Plant(a, "PortXmitDiscardDetails.PortInactiveDiscards", 11);
  Plant(a, "PortXmitDiscardDetails.PortNeighborMTUDiscards", 12);
  Plant(a, "PortXmitDiscardDetails.PortSwLifetimeLimitDiscards", 13);
  Plant(a, "PortXmitDiscardDetails.PortSwHOQLifetimeLimitDiscards", 14);
  Plant(b, "PortXmitDiscardDetails.PortSwHOQLifetimeLimitDiscards", 40000);
  auto e = Start();
  ASSERT_TRUE(e);
  const auto s = e->WaitForSweeps(3, seconds(30));
  ASSERT_TRUE(s);
  const auto lids = Lids(*s);
  const std::map<std::string, std::string> fields{
      {"PortInactiveDiscards", "inactive_discards"},
      {"PortNeighborMTUDiscards", "neighbor_mtu_discards"},
      {"PortSwLifetimeLimitDiscards", "switch_lifetime_limit_discards"},
      {"PortSwHOQLifetimeLimitDiscards", "switch_hoq_lifetime_limit_discards"}};
  static const std::regex kField(R"(^(\w+):\.+(\d+)$)");
  for (const Endpoint& p : {a, b, quiet}) {
    const CommandResult q = sim_->Tool({"perfquery", "-D", lids.at(p.node), std::to_string(p.port)});
    ASSERT_EQ(q.exit_code, 0) << q.err;
    int compared = 0;
    std::istringstream in(q.out);
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, kField) || !fields.count(m[1])) continue;
      EXPECT_EQ(s->Value("infiniband_switch_port_" + fields.at(m[1]) + "_total",
                         {{"switch", p.node}, {"port", std::to_string(p.port)}}),
                std::stod(m[2]))
          << Str(p) << " " << m[1];
      ++compared;
    }
    EXPECT_EQ(compared, 4) << q.out;
  }
  EXPECT_EQ(s->Value("infiniband_switch_port_switch_hoq_lifetime_limit_discards_total",
                     {{"switch", b.node}, {"port", std::to_string(b.port)}}),
            40000);
  EXPECT_EQ(s->Value("infiniband_switch_port_neighbor_mtu_discards_total",
                     {{"switch", a.node}, {"port", std::to_string(a.port)}}),
            12);
}

}  // namespace
}  // namespace ibfabric::testbed
