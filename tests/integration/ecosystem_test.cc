// The ecosystem end to end on the simulated fabric: the exporter serves
// TLS with basic auth from a web config, a real Prometheus server scrapes it
// (and fails to with a wrong password or plain HTTP), the alert rules load,
// and every query of every Grafana dashboard in dashboards/ runs through
// Prometheus's HTTP API and returns data, the panels meant for the planted
// faults showing them on exactly the planted ports. The status page renders
// in headless Chromium behind the same TLS and auth, shows the planted
// faults, drills down to a port, and leaves screenshots in the build's
// artifacts/ folder.

#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "exporter/web_config.h"
#include "tests/integration/fabric_suite.h"
#include "tests/integration/promql.h"
#include "tests/testbed/browser.h"
#include "tests/testbed/certificates.h"
#include "tests/testbed/prometheus_server.h"

namespace ibfabric::testbed {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kAlerts = R"(window: 2s
raise_after: 2
clear_after: 2
bad_cable:
  symbol_errors_per_second: {warning: 1, critical: 20}
congestion:
  xmit_wait_fraction: {warning: 0.05, critical: 0.25}
  xmit_discards_per_second: {warning: 1, critical: 1000}
)";

using Query = DashboardQuery;

// Every dashboard but the physical layer's (PhysicalLayerTest runs it on
// the personalities, which have FEC counters) and the hosts' (HostSideTest
// runs it with the hosts' local exporters).
std::vector<Query> DashboardQueries() {
  return testbed::DashboardQueries(
      [](const std::string& file) { return file != kPhysicalLayerDashboard && file != kHostsDashboard; });
}

class EcosystemTest : public FabricSuite {
 protected:
  static void SetUpTestSuite() {
    const FatTreeSpec clean_spec = Spec(4, 2, 4, 2, 12);
    const FatTree clean = FatTree::Generate(clean_spec);
    FatTreeSpec spec = clean_spec;
    spec.swaps.push_back({clean.LeafUplink(2, 1, 0), clean.LeafUplink(2, 2, 0)});  // miswired against the plan
    spec.trained[clean.LeafUplink(4, 1, 0)] = "1x";                                // below what both ends allow
    StartFabric(spec);
    if (!sim_) return;
    // A resident SM, as on a real fabric: the subnet-manager panels watch it.
    std::string sm_error;
    sm_ = sim_->StartSubnetManager(&sm_error).release();
    ASSERT_NE(sm_, nullptr) << sm_error;
    certs_ = new Certificates();
    ASSERT_TRUE(certs_->ok());
    dir_ = MakeTempDir("ecosystem");
    WriteFile(dir_ + "/plan.net", clean.NetFile());
    WriteFile(dir_ + "/alerts.yaml", kAlerts);
    WriteFile(dir_ + "/web.yml", "tls_server_config:\n  cert_file: " + (*certs_)("server.crt") +
                                     "\n  key_file: " + (*certs_)("server.key") +
                                     "\nbasic_auth_users:\n  prometheus: " + exporter::HashPassword("s3cret", 6) +
                                     "\n");
    std::string error;
    exporter_ =
        ExporterProcess::Start(*sim_,
                               {"--sweep.interval=500ms", "--discovery.interval=1m", "--mad.timeout=20ms",
                                "--alerts.config=" + dir_ + "/alerts.yaml", "--topology.plan=" + dir_ + "/plan.net",
                                "--web.config.file=" + dir_ + "/web.yml"},
                               &error, ClientOptions{(*certs_)("server.crt"), "prometheus", "s3cret"}, FabricEnv())
            .release();
    ASSERT_NE(exporter_, nullptr) << error;
    ASSERT_TRUE(exporter_->WaitForSweeps(2, seconds(60))) << exporter_->Log();

    // The planted faults: errors on one cable, congestion on another,
    // discards on a host port, and a host cable pulled.
    ramps_.push_back(new Ramp(SymbolPort(), "PortCounters.SymbolErrorCounter", 10));
    // 100 M ticks a second: ~10 % of the time at QDR. PortXmitWait is 32 bits.
    ramps_.push_back(new Ramp(WaitPort(), "PortCounters.PortXmitWait", 10'000'000, 4'000'000'000ULL));
    ramps_.push_back(new Ramp(DiscardPort(), "PortCounters.PortXmitDiscards", 20));
    Console("Unlink " + At(tree_->HostPort(16)));

    const std::string port = std::to_string(exporter_->port());
    const std::string ca = (*certs_)("server.crt");
    const std::string rules = ReadFile(std::string(IBFABRIC_SOURCE_DIR) + "/deploy/prometheus/infiniband-rules.yml");
    const std::string config =
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "rule_files: [infiniband-rules.yml]\n"
        "scrape_configs:\n"
        "  - job_name: infiniband\n"
        "    scheme: https\n"
        "    tls_config: {ca_file: " +
        ca +
        "}\n"
        "    basic_auth: {username: prometheus, password: s3cret}\n"
        "    static_configs: [{targets: ['127.0.0.1:" +
        port +
        "'], labels: {fabric: sim}}]\n"
        "  - job_name: wrong-password\n"
        "    scheme: https\n"
        "    tls_config: {ca_file: " +
        ca +
        "}\n"
        "    basic_auth: {username: prometheus, password: guess}\n"
        "    static_configs: [{targets: ['127.0.0.1:" +
        port +
        "']}]\n"
        "  - job_name: plain-http\n"
        "    scheme: http\n"
        "    static_configs: [{targets: ['127.0.0.1:" +
        port + "']}]\n";
    prometheus_ = PrometheusServer::Start(config, {{"infiniband-rules.yml", rules}}, &error).release();
    ASSERT_NE(prometheus_, nullptr) << error;
    // Until the faults show in Prometheus: alerts raised, rates over 10 s.
    const auto deadline = std::chrono::steady_clock::now() + seconds(90);
    bool ready = false;
    while (!ready && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(seconds(1));
      ready = Number("sum(infiniband_alerts{cause=\"bad_cable\"})") > 0 &&
              Number("sum(infiniband_alerts{cause=\"congestion\"})") > 0 &&
              Number("count(infiniband_link_up == 0)") > 0 &&
              Number("count_over_time(infiniband_exporter_sweeps_total{job=\"infiniband\"}[10s])") >= 8;
    }
    ASSERT_TRUE(ready) << "faults did not show in Prometheus: " << exporter_->Log() << prometheus_->Log();
  }
  static void TearDownTestSuite() {
    for (Ramp* r : ramps_) delete r;
    ramps_.clear();
    delete prometheus_;
    delete exporter_;
    delete sm_;
    delete certs_;
    if (!dir_.empty()) RemoveTree(dir_);
    StopFabric();
  }

  static Endpoint SymbolPort() { return tree_->LeafUplink(1, 1, 0); }
  static Endpoint WaitPort() { return tree_->LeafUplink(3, 2, 1); }
  static Endpoint DiscardPort() { return tree_->LeafHostPort(5); }

  static json Run(const std::string& expr) { return RunPromQL(*prometheus_, expr); }
  // The value of a query that yields one series (0 when it yields none).
  static double Number(const std::string& expr) { return PromQLNumber(*prometheus_, expr); }
  static json Panel(const std::string& dashboard, const std::string& title) {
    for (const Query& q : DashboardQueries()) {
      if (q.dashboard == dashboard && q.panel == title) return Run(Substitute(q.expr));
    }
    ADD_FAILURE() << "no panel '" << title << "' in " << dashboard;
    return json::array();
  }
  static double ValueOf(const json& series) { return std::stod(series["value"][1].get<std::string>()); }

  static inline Process* sm_ = nullptr;
  static inline Certificates* certs_ = nullptr;
  static inline std::string dir_;
  static inline ExporterProcess* exporter_ = nullptr;
  static inline PrometheusServer* prometheus_ = nullptr;
  static inline std::vector<Ramp*> ramps_;
};

// Each of the switch and node variables narrows the ports of its kind, also
// when the other is All (a `node=~"$switch|$node"` matcher did not).
TEST_F(EcosystemTest, SwitchAndNodeFiltersEachNarrowTheirKindWhenTheOtherIsAll) {
  std::string expr;
  for (const Query& q : DashboardQueries()) {
    if (q.dashboard == "congestion.json" && q.panel == "Transmit wait ratio: top $topn ports") expr = q.expr;
  }
  ASSERT_FALSE(expr.empty());
  auto nodes = [&](const std::string& sw, const std::string& node) {
    std::set<std::string> out;
    for (const auto& x : Run(Substitute(expr, sw, node, "1000"))) out.insert(x["metric"]["node"].get<std::string>());
    return out;
  };
  auto hcas = [](const std::set<std::string>& names) {
    std::set<std::string> out;
    for (const auto& n : names) {
      if (n.rfind("cn", 0) == 0) out.insert(n);
    }
    return out;
  };
  auto switches = [&](const std::set<std::string>& names) { return names.size() - hcas(names).size(); };
  const std::set<std::string> all = nodes(".*", ".*");
  ASSERT_GT(hcas(all).size(), 2u) << "the panel shows HCA ends";
  ASSERT_GT(switches(all), 2u);
  const std::string host = *hcas(all).begin();
  const std::set<std::string> one_host = nodes(".*", host);
  EXPECT_EQ(hcas(one_host), std::set<std::string>{host});
  EXPECT_EQ(switches(one_host), switches(all)) << "switch All: every switch";
  const std::string leaf = WaitPort().node;
  const std::set<std::string> one_leaf = nodes(leaf, ".*");
  EXPECT_EQ(switches(one_leaf), 1u);
  EXPECT_TRUE(one_leaf.count(leaf));
  EXPECT_EQ(hcas(one_leaf), hcas(all)) << "node All: every HCA";
}

TEST_F(EcosystemTest, PrometheusScrapesOverTlsWithBasicAuthAndIsRefusedOtherwise) {
  std::string error;
  const auto targets = prometheus_->Api("/api/v1/targets", &error);
  ASSERT_TRUE(targets) << error;
  std::map<std::string, json> by_job;
  for (const auto& t : (*targets)["activeTargets"]) by_job[t["labels"]["job"].get<std::string>()] = t;
  ASSERT_EQ(by_job.size(), 3u);
  EXPECT_EQ(by_job["infiniband"]["health"], "up") << by_job["infiniband"].dump();
  EXPECT_EQ(by_job["wrong-password"]["health"], "down");
  EXPECT_NE(by_job["wrong-password"]["lastError"].get<std::string>().find("401"), std::string::npos)
      << by_job["wrong-password"].dump();
  EXPECT_EQ(by_job["plain-http"]["health"], "down") << by_job["plain-http"].dump();
  EXPECT_EQ(Number("up{job=\"infiniband\"}"), 1);
  EXPECT_EQ(Number("up{job=\"wrong-password\"}"), 0);
  EXPECT_EQ(Number("up{job=\"plain-http\"}"), 0);
  // The rules file loaded and its rules are evaluated.
  const auto rules = prometheus_->Api("/api/v1/rules", &error);
  ASSERT_TRUE(rules) << error;
  std::size_t n = 0;
  for (const auto& g : (*rules)["groups"]) {
    for (const auto& r : g["rules"]) {
      ++n;
      EXPECT_EQ(r.value("health", ""), "ok") << r.dump();
    }
  }
  EXPECT_GE(n, 16u);
}

TEST_F(EcosystemTest, EveryDashboardQueryReturnsData) {
  const auto queries = DashboardQueries();
  std::set<std::string> dashboards;
  for (const auto& q : queries) dashboards.insert(q.dashboard);
  EXPECT_EQ(dashboards, (std::set<std::string>{"congestion.json", "exporter-health.json", "fabric-overview.json",
                                               "port-errors.json", "topology-health.json"}));
  EXPECT_GE(queries.size(), 40u);
  for (const auto& q : queries) {
    ASSERT_FALSE(q.expr.empty()) << q.dashboard << ": " << q.panel;
    const json r = Run(Substitute(q.expr));
    EXPECT_FALSE(r.empty()) << q.dashboard << " / " << q.panel << ": no data for " << Substitute(q.expr);
  }
}

TEST_F(EcosystemTest, DashboardVariablesListTheFabricItsSwitchesAndNodes) {
  std::string error;
  auto values = [&](const std::string& label, const std::string& match) {
    auto r = prometheus_->Api(httplib::append_query_params("/api/v1/label/" + label + "/values", {{"match[]", match}}),
                              &error);
    EXPECT_TRUE(r) << error;
    std::set<std::string> out;
    if (r) {
      for (const auto& v : *r) out.insert(v.get<std::string>());
    }
    return out;
  };
  EXPECT_EQ(values("fabric", "infiniband_exporter_build_info"), std::set<std::string>{"sim"});
  std::set<std::string> switches(tree_->leaves().begin(), tree_->leaves().end());
  switches.insert(tree_->spines().begin(), tree_->spines().end());
  EXPECT_EQ(values("switch", "infiniband_switch_info{fabric=~\"sim\"}"), switches);
  const auto hcas = values("hca", "infiniband_hca_info{fabric=~\"sim\"}");
  EXPECT_EQ(hcas.size(), tree_->hosts().size() - 1) << "all hosts but the unplugged one";
  EXPECT_TRUE(hcas.count(tree_->Host(1)));
}

TEST_F(EcosystemTest, FaultPanelsShowThePlantedFaultsOnThePlantedPorts) {
  const auto port_of = [](const json& s) { return s["metric"]["port"].get<std::string>(); };
  // Port errors: the planted cable end tops the symbol error panel, alone.
  const json symbols = Panel("port-errors.json", "Symbol errors: top $topn switch ports");
  ASSERT_FALSE(symbols.empty());
  json top = symbols[0];
  for (const auto& s : symbols) {
    if (ValueOf(s) > ValueOf(top)) top = s;
  }
  EXPECT_EQ(top["metric"]["switch"], SymbolPort().node);
  EXPECT_EQ(port_of(top), std::to_string(SymbolPort().port));
  EXPECT_GT(ValueOf(top), 20);  // 100 per second planted; rate over 10 s
  for (const auto& s : symbols) {
    if (s != top) {
      EXPECT_EQ(ValueOf(s), 0) << s.dump();
    }
  }
  // The heat map's cell for that port holds its errors; no other cell does.
  for (const auto& s : Panel("port-errors.json", "Errors by switch and port over the range")) {
    const bool planted = s["metric"]["switch"] == SymbolPort().node && port_of(s) == std::to_string(SymbolPort().port);
    if (planted) {
      EXPECT_GT(ValueOf(s), 100);
    }
    if (!planted) {
      EXPECT_EQ(ValueOf(s), 0) << s.dump();
    }
  }
  // Congestion: the XmitWait port tops the ratio, the discard port the discards.
  const json wait = Panel("congestion.json", "Transmit wait ratio: top $topn ports");
  ASSERT_FALSE(wait.empty());
  bool wait_seen = false;
  for (const auto& s : wait) {
    const bool planted = s["metric"]["node"] == WaitPort().node && port_of(s) == std::to_string(WaitPort().port);
    wait_seen |= planted && ValueOf(s) > 0.05;
    if (!planted) {
      EXPECT_LT(ValueOf(s), 0.01) << s.dump();
    }
  }
  EXPECT_TRUE(wait_seen) << wait.dump();
  bool discards_seen = false;
  for (const auto& s : Panel("congestion.json", "Transmit discards: top $topn switch ports")) {
    const bool planted =
        s["metric"]["switch"] == DiscardPort().node && port_of(s) == std::to_string(DiscardPort().port);
    discards_seen |= planted && ValueOf(s) > 50;
    if (!planted) {
      EXPECT_EQ(ValueOf(s), 0) << s.dump();
    }
  }
  EXPECT_TRUE(discards_seen);
  EXPECT_FALSE(Panel("congestion.json", "Congestion alerts").empty());
  // Overview: alerts and a link down, on the right cables.
  std::set<std::string> causes;
  for (const auto& s : Panel("fabric-overview.json", "Active alerts by cable")) causes.insert(s["metric"]["cause"]);
  EXPECT_TRUE(causes.count("bad_cable") && causes.count("congestion") && causes.count("miswiring") &&
              causes.count("degraded_link"))
      << [&] {
           std::string c;
           for (const auto& x : causes) c += x + " ";
           return c;
         }();
  const json down = Panel("fabric-overview.json", "Links down");
  ASSERT_EQ(down.size(), 1u);
  EXPECT_EQ(ValueOf(down[0]), 1);
  std::set<std::string> rules;
  for (const auto& s : Panel("fabric-overview.json", "Firing and pending alert rules"))
    rules.insert(s["metric"]["alertname"]);
  EXPECT_TRUE(rules.count("InfinibandBadCable") && rules.count("InfinibandLinkDown")) << rules.size();
  EXPECT_GT(ValueOf(Panel("fabric-overview.json", "Topology findings")[0]), 0);
  // Topology: the degraded cable and the miswiring.
  const json degraded = Panel("topology-health.json", "Degraded links by cable");
  ASSERT_EQ(degraded.size(), 1u);
  const Endpoint slow = tree_->LeafUplink(4, 1, 0);
  const json& m = degraded[0]["metric"];
  EXPECT_TRUE((m["node"] == slow.node && m["port"] == std::to_string(slow.port)) ||
              (m["remote_node"] == slow.node && m["remote_port"] == std::to_string(slow.port)))
      << m.dump();
  EXPECT_GE(ValueOf(Panel("topology-health.json", "Miswired or missing cables")[0]), 1);
}

TEST_F(EcosystemTest, StatusPageInChromiumShowsThePlantedFaultsAndDrillsDownToAPort) {
  std::string error;
  auto browser = Browser::Start(&error);
  ASSERT_NE(browser, nullptr) << error;
  ASSERT_TRUE(browser->SetExtraHeaders({{"Authorization", "Basic cHJvbWV0aGV1czpzM2NyZXQ="}}, &error))
      << error;  // prometheus:s3cret
  const std::string origin = "https://127.0.0.1:" + std::to_string(exporter_->port());
  ASSERT_TRUE(browser->Navigate(origin + "/", &error)) << error;
  ASSERT_TRUE(
      browser->WaitFor("return document.body.dataset.loaded === 'true' && "
                       "document.querySelectorAll('#problems tr.problem').length > 0 && "
                       "document.querySelector('#fabric-svg') !== null;",
                       seconds(30), &error))
      << error;
  const auto page = browser->Execute(R"(
    const texts = (sel) => [...document.querySelectorAll(sel)].map((e) => e.textContent);
    return {
      causes: [...document.querySelectorAll('#problems tr.problem')].flatMap((r) => r.dataset.causes.split(' ')),
      smAlerts: [...document.querySelectorAll('#problems tr.problem[data-causes=subnet_manager] td')].map((td) => td.textContent),
      problems: [...document.querySelectorAll('#problems tr.problem')].filter((r) => !r.dataset.cable.startsWith('fabric:'))
                  .map((r) => ({state: r.dataset.state, text: r.textContent})),
      lines: [...document.querySelectorAll('#fabric-svg line.link')].map((l) => ({cls: l.getAttribute('class'), cable: l.dataset.cable})),
      tiers: texts('#fabric-svg .tier-label'),
      switches: document.querySelectorAll('#fabric-svg g.node').length,
      hcas: document.querySelectorAll('#fabric-svg g.ca').length,
      verdict: document.querySelector('#verdict').textContent,
      sm: document.querySelector('#sm-chip') ? document.querySelector('#sm-chip').textContent : '',
      resources: performance.getEntriesByType('resource').map((e) => e.name),
      origin: location.origin,
    };)",
                                     &error);
  ASSERT_TRUE(page) << error;
  const json& p = *page;
  std::set<std::string> causes(p["causes"].begin(), p["causes"].end());
  for (const char* c : {"bad_cable", "congestion", "miswiring", "degraded_link"}) EXPECT_TRUE(causes.count(c)) << c;
  EXPECT_EQ(p["tiers"], json::array({"spine", "leaf"}));
  EXPECT_EQ(p["switches"], 6);
  EXPECT_EQ(p["hcas"], static_cast<int>(tree_->hosts().size()) - 1) << "the unplugged host is not discovered";
  EXPECT_EQ(p["verdict"].get<std::string>().find(" 0 critical"), std::string::npos) << p["verdict"];
  // The subnet manager chip names the resident SM's node as master, and
  // the lack of a standby is an alert whose row names the master's port.
  EXPECT_EQ(p["sm"].get<std::string>().rfind("SM " + tree_->Host(1) + " + 0 standby", 0), 0u) << p["sm"];
  ASSERT_EQ(p["smAlerts"].size(), 5u) << p["smAlerts"].dump();  // one line: severity, condition, where, evidence, since
  EXPECT_EQ(p["smAlerts"][0], "warning");
  EXPECT_EQ(p["smAlerts"][1], "no standby");
  EXPECT_EQ(p["smAlerts"][2], tree_->Host(1) + "[1]");
  EXPECT_NE(p["smAlerts"][3].get<std::string>().find("no standby subnet manager"), std::string::npos)
      << p["smAlerts"][3];
  // The highlighted links: the bad cable on exactly the planted port, and
  // the degraded, miswired and congested ones.
  const Scrape scrape = exporter_->ScrapeMetrics();
  const std::string symbol_end = Guid(scrape, SymbolPort().node) + ":" + std::to_string(SymbolPort().port);
  std::map<std::string, std::set<std::string>> by_state;
  for (const auto& l : p["lines"]) {
    const std::string cls = l["cls"];
    by_state[cls.substr(cls.find(' ') + 1)].insert(l["cable"].get<std::string>());
  }
  ASSERT_EQ(by_state["bad"].size(), 1u);
  EXPECT_NE(by_state["bad"].begin()->find(symbol_end), std::string::npos) << *by_state["bad"].begin();
  EXPECT_FALSE(by_state["degraded"].empty());
  EXPECT_EQ(by_state["miswired"].size(), 2u) << p["lines"].dump();
  EXPECT_FALSE(by_state["congested"].empty());
  std::set<std::string> problem_states;
  for (const auto& r : p["problems"]) problem_states.insert(r["state"].get<std::string>());
  EXPECT_EQ(problem_states, (std::set<std::string>{"bad", "congested", "degraded", "miswired"}));
  // Nothing was loaded from anywhere but the exporter.
  for (const auto& r : p["resources"])
    EXPECT_EQ(r.get<std::string>().rfind(p["origin"].get<std::string>(), 0), 0u) << r;
  EXPECT_TRUE(browser->Screenshot(std::string(IBFABRIC_ARTIFACT_DIR) + "/status-page.png", &error)) << error;

  // Drill down: the planted port's counters, its link's rates and its alert.
  ASSERT_TRUE(browser->Click("#problems a.port[data-port='" + symbol_end + "']", &error)) << error;
  ASSERT_TRUE(browser->WaitFor("return document.querySelector('#port-counters') !== null;", seconds(10), &error))
      << error;
  const auto port = browser->Execute(R"(
    const row = document.querySelector('#port-counters tr[data-counter="symbol_error"]');
    return {title: document.querySelector('#port-title').textContent,
            symbols: row ? Number(row.children[1].dataset.value) : -1,
            alerts: [...document.querySelectorAll('#port-alerts li')].map((li) => li.dataset.cause),
            rates: document.querySelector('#port-rates') !== null};)",
                                     &error);
  ASSERT_TRUE(port) << error;
  EXPECT_EQ((*port)["title"], SymbolPort().node + "[" + std::to_string(SymbolPort().port) + "]");
  EXPECT_GT((*port)["symbols"].get<double>(), 100);
  ASSERT_FALSE((*port)["alerts"].empty());
  EXPECT_EQ((*port)["alerts"][0], "bad_cable");
  EXPECT_TRUE((*port)["rates"].get<bool>());
  EXPECT_TRUE(browser->Screenshot(std::string(IBFABRIC_ARTIFACT_DIR) + "/status-page-port.png", &error)) << error;
}

TEST_F(EcosystemTest, PortDrillDownApiAnswersAndRefusesBadQueries) {
  const Scrape scrape = exporter_->ScrapeMetrics();
  const std::string guid = Guid(scrape, SymbolPort().node);
  int status = 0;
  const json d =
      json::parse(exporter_->Get("/api/v1/port?guid=" + guid + "&port=" + std::to_string(SymbolPort().port), &status));
  ASSERT_EQ(status, 200);
  EXPECT_EQ(d["end"]["node"], SymbolPort().node);
  EXPECT_GT(d["counters"]["symbol_error"].get<double>(), 100);
  EXPECT_EQ(d["link"]["state"], "active");
  EXPECT_GT(d["health"]["this_end"]["per_second"]["symbol_errors"].get<double>(), 20);
  for (const auto& [query, want] : std::vector<std::pair<std::string, int>>{{"guid=" + guid, 400},
                                                                            {"guid=zz&port=1", 400},
                                                                            {"guid=" + guid + "&port=300", 400},
                                                                            {"guid=" + guid + "&port=1&x=1", 400},
                                                                            {"guid=0x1234&port=1", 404}}) {
    const std::string body = exporter_->Get("/api/v1/port?" + query, &status);
    EXPECT_EQ(status, want) << query << ": " << body;
    EXPECT_TRUE(json::parse(body, nullptr, false).contains("error")) << body;
  }
}

}  // namespace
}  // namespace ibfabric::testbed
