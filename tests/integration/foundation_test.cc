// Issue 2's acceptance on a 324-host fat tree (18 leaves, 9 spines, 36-port
// switches, 2 links per leaf-spine pair): planted counters appear with their
// exact values on exactly their series, every other series is present at 0,
// data counters agree with perfquery -x, and a port whose link went down
// keeps its series.

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <thread>

#include "tests/integration/fabric_suite.h"

namespace ibfabric::testbed {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class FoundationTest : public FabricSuite {
 protected:
  static void SetUpTestSuite() { StartFabric(Spec324()); }
};

TEST_F(FoundationTest, PlantedCountersAppearOnExactlyTheirSeries) {
  const Endpoint leaf_host = tree_->LeafHostPort(41);     // ib-leaf03 port 5 -> cn0041
  const Endpoint leaf_up = tree_->LeafUplink(7, 4, 1);    // ib-leaf07 second link to ib-spine04
  const Endpoint spine = tree_->SpineDownlink(5, 12, 0);  // ib-spine05 port 23 -> ib-leaf12
  const Endpoint ca = tree_->HostPort(200);               // cn0200 port 1
  // (port, metric) -> planted value. Distinct everywhere so that a value on
  // the wrong port or under the wrong counter cannot pass.
  std::map<std::pair<Endpoint, std::string>, double> planted{
      {{leaf_host, "receive_errors"}, 101}, {{leaf_host, "symbol_error"}, 11},
      {{leaf_up, "transmit_wait"}, 20202},  {{leaf_up, "link_downed"}, 5},
      {{spine, "symbol_error"}, 303},       {{spine, "receive_errors"}, 33},
      {{ca, "receive_errors"}, 44},         {{ca, "link_downed"}, 3},
      {{ca, "transmit_wait"}, 4444},        {{ca, "symbol_error"}, 1},
  };
  const std::map<std::string, std::string> field{{"receive_errors", "PortCounters.PortRcvErrors"},
                                                 {"symbol_error", "PortCounters.SymbolErrorCounter"},
                                                 {"transmit_wait", "PortCounters.PortXmitWait"},
                                                 {"link_downed", "PortCounters.LinkDownedCounter"}};
  for (const auto& [key, value] : planted) {
    Plant(key.first, field.at(key.second), static_cast<unsigned long long>(value));
  }

  auto exporter = StartExporter({"--sweep.interval=1h"});
  ASSERT_TRUE(exporter);
  const std::optional<Scrape> scrape = exporter->ScrapeMetrics();
  const auto guids = ByName(*scrape, "guid");
  ASSERT_EQ(guids.size(), 18u + 9u + 324u);

  std::map<std::string, Endpoint> by_guid_port;  // "guid/port" -> endpoint
  for (const auto& node : tree_->leaves()) {
    for (int p : tree_->CabledPorts(node)) by_guid_port[guids.at(node) + "/" + std::to_string(p)] = {node, p};
  }
  for (const auto& node : tree_->spines()) {
    for (int p : tree_->CabledPorts(node)) by_guid_port[guids.at(node) + "/" + std::to_string(p)] = {node, p};
  }
  for (const auto& node : tree_->hosts()) by_guid_port[guids.at(node) + "/1"] = {node, 1};

  for (const std::string metric : {"receive_errors", "symbol_error", "transmit_wait", "link_downed"}) {
    for (const std::string role : {"switch", "hca"}) {
      const std::string name = "infiniband_" + role + "_port_" + metric + "_total";
      const auto series = scrape->Find(name);
      // Every cabled port has exactly one series: 36 on each switch, one per host.
      EXPECT_EQ(series.size(), role == "switch" ? 27u * 36u : 324u) << name;
      std::set<std::string> seen;
      for (const auto& s : series) {
        const std::string key = s.labels.at("guid") + "/" + s.labels.at("port");
        ASSERT_TRUE(by_guid_port.count(key)) << name << " has a series for an uncabled port " << key;
        ASSERT_TRUE(seen.insert(key).second) << name << " repeats " << key;
        const Endpoint e = by_guid_port.at(key);
        EXPECT_EQ(s.labels.at(role), e.node);
        auto it = planted.find({e, metric});
        const double want = it == planted.end() ? 0 : it->second;
        EXPECT_EQ(s.value, want) << name << " on " << e.node << "[" << e.port << "]";
      }
    }
  }
  // Clean up for the other tests in this suite.
  for (const auto& [key, value] : planted) Plant(key.first, field.at(key.second), 0);
}

TEST_F(FoundationTest, DataCountersAgreeWithPerfquery) {
  // Large, distinct planted values: a field read from the wrong offset or
  // under the wrong name would be off by about 1e12, while the MADs the test
  // itself causes move a counter by a few hundred at most.
  struct Planted {
    Endpoint port;
    unsigned long long base;
  };
  const std::vector<Planted> plants{{tree_->LeafHostPort(100), 1'000'000'000'000ULL},
                                    {tree_->LeafUplink(3, 2, 0), 3'000'000'000'000ULL},
                                    {tree_->SpineDownlink(8, 17, 1), 5'000'000'000'000ULL},
                                    {tree_->HostPort(250), 7'000'000'000'000ULL}};
  const std::vector<std::pair<std::string, std::string>> fields{{"PortXmitData", "transmit_data_bytes"},
                                                                {"PortRcvData", "receive_data_bytes"},
                                                                {"PortXmitPkts", "transmit_packets"},
                                                                {"PortRcvPkts", "receive_packets"}};
  for (const auto& p : plants) {
    for (std::size_t i = 0; i < fields.size(); ++i) {
      Plant(p.port, "PortCountersExtended." + fields[i].first, p.base + i * 100'000'000'000ULL);
    }
  }
  auto exporter = StartExporter({"--sweep.interval=1h"});
  ASSERT_TRUE(exporter);
  const std::optional<Scrape> scrape = exporter->ScrapeMetrics();
  const auto guids = ByName(*scrape, "guid");
  const auto lids = ByName(*scrape, "lid");

  for (const auto& p : plants) {
    const auto q = sim_->Tool({"perfquery", "-x", lids.at(p.port.node), std::to_string(p.port.port)});
    ASSERT_EQ(q.exit_code, 0) << q.err;
    const std::string role = Role(p.port.node);
    for (std::size_t i = 0; i < fields.size(); ++i) {
      const std::string& ibta = fields[i].first;
      auto at = q.out.find(ibta + ":");
      ASSERT_NE(at, std::string::npos) << q.out;
      const std::string digits = q.out.substr(q.out.find_first_of("0123456789", at + ibta.size()));
      double perfquery = std::stod(digits);
      const bool bytes = ibta.find("Data") != std::string::npos;
      if (bytes) perfquery *= 4;  // perfquery prints 4-octet words
      const auto ours = scrape->Value("infiniband_" + role + "_port_" + fields[i].second + "_total",
                                      {{"guid", guids.at(p.port.node)}, {"port", std::to_string(p.port.port)}});
      ASSERT_TRUE(ours) << fields[i].second << " missing for " << p.port.node;
      const double planted = static_cast<double>(p.base + i * 100'000'000'000ULL) * (bytes ? 4 : 1);
      EXPECT_GE(*ours, planted) << p.port.node << " " << ibta;
      // perfquery reads later than the exporter: never less, and only the
      // MAD traffic of one sweep and the query itself more.
      EXPECT_GE(perfquery, *ours) << p.port.node << " " << ibta;
      EXPECT_LE(perfquery - *ours, bytes ? 2000.0 * 288 : 2000.0) << p.port.node << " " << ibta;
    }
  }
}

TEST_F(FoundationTest, UnlinkedPortKeepsItsSeries) {
  const Endpoint leaf_port = tree_->LeafHostPort(75);  // ib-leaf05 port 3 -> cn0075
  const Endpoint host_port = tree_->HostPort(75);
  Plant(leaf_port, "PortCounters.PortRcvErrors", 9);

  auto exporter = StartExporter({"--sweep.interval=300ms", "--discovery.interval=300ms", "--mad.timeout=50ms"});
  ASSERT_TRUE(exporter);
  const std::optional<Scrape> before = exporter->ScrapeMetrics();
  const auto guids = ByName(*before, "guid");
  const Labels leaf_labels{{"guid", guids.at(leaf_port.node)}, {"port", std::to_string(leaf_port.port)}};
  const Labels host_labels{{"guid", guids.at(host_port.node)}, {"port", "1"}};
  ASSERT_EQ(before->Value("infiniband_switch_port_receive_errors_total", leaf_labels), 9);
  ASSERT_TRUE(before->Value("infiniband_hca_port_receive_errors_total", host_labels));
  ASSERT_TRUE(before->Value("infiniband_switch_uplink_info", leaf_labels));

  Console("Unlink " + At(leaf_port));
  // Wait until a discovery after the unlink has dropped the cable.
  std::optional<Scrape> after;
  const auto deadline = std::chrono::steady_clock::now() + seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    after = exporter->ScrapeMetrics();
    if (!after->Value("infiniband_switch_uplink_info", leaf_labels)) break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_FALSE(after->Value("infiniband_switch_uplink_info", leaf_labels)) << "link still reported up";
  const double sweeps = *after->Value("infiniband_exporter_sweeps_total");
  after = exporter->WaitForSweeps(sweeps + 2, seconds(30));
  ASSERT_TRUE(after);
  // Both ends keep their series and their totals.
  EXPECT_EQ(after->Value("infiniband_switch_port_receive_errors_total", leaf_labels), 9);
  EXPECT_TRUE(after->Value("infiniband_hca_port_receive_errors_total", host_labels));
  EXPECT_GE(*after->Value("infiniband_exporter_stale_ports"), 1);
  EXPECT_EQ(after->Find("infiniband_switch_port_symbol_error_total").size(), 27u * 36u);
  EXPECT_EQ(after->Find("infiniband_hca_port_symbol_error_total").size(), 324u);

  Console("ReLink " + At(leaf_port));
  Plant(leaf_port, "PortCounters.PortRcvErrors", 0);
  std::string error;
  ASSERT_TRUE(sim_->SweepSubnet(&error)) << error;
}

TEST_F(FoundationTest, ExpositionPassesPromtoolAndEndpointsAnswer) {
  // The simulated CA and port named explicitly, as on a host with several.
  auto exporter = StartExporter({"--sweep.interval=1h", "--ib.ca=ibsim0", "--ib.port=1"});
  ASSERT_TRUE(exporter);
  int status = 0;
  exporter->Get("/readyz", &status);  // 503 before the first sweep: see HttpServerTest
  EXPECT_EQ(status, 200);
  EXPECT_EQ(exporter->Get("/healthz", &status), "ok\n");
  EXPECT_EQ(status, 200);
  // The status page links the metrics relative to itself (it may sit behind a proxy path).
  EXPECT_NE(exporter->Get("/", &status).find("href=\"metrics\""), std::string::npos);
  EXPECT_EQ(status, 200);
  exporter->Get("/no/such/page", &status);
  EXPECT_EQ(status, 404);

  const std::string body = exporter->Get("/metrics", &status);
  ASSERT_EQ(status, 200);
  const auto lint = PromtoolCheckMetrics(body);
  EXPECT_EQ(lint.exit_code, 0) << lint.out << lint.err;
  EXPECT_EQ(lint.out + lint.err, "");

  // A browser offers brotli; the exposition comes back as gzip (brotli at
  // httplib's quality costs tens of seconds of CPU per scrape).
  const auto headers =
      RunCommand({"curl", "-s", "-D", "-", "-o", "/dev/null", "-H", "Accept-Encoding: gzip, deflate, br",
                  "http://127.0.0.1:" + std::to_string(exporter->port()) + "/metrics"},
                 {}, seconds(30));
  EXPECT_NE(headers.out.find("Content-Encoding: gzip"), std::string::npos) << headers.out;

  const auto wrong = sim_->Tool({ExporterBinary(), "--ib.ca=ibsim0", "--ib.port=2", "--once"});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.err.find("port 2 not found on 'ibsim0'"), std::string::npos) << wrong.err;
}

}  // namespace
}  // namespace ibfabric::testbed
