// Several fabrics from one host (issue 37): two ibsim instances side by
// side (the second under its own IBSIM_SOCKNAME, its SM with another
// subnet prefix), this host attached to each by a port of its own
// (umad2sim's ibsim0, and mlx5_1 through tests/tools/more_fabrics.cc).

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>

#include "tests/integration/hardware_suite.h"
#include "tests/testbed/browser.h"
#include "tests/testbed/host_sysfs.h"
#include "tests/testbed/process.h"

namespace ibfabric::testbed {
namespace {

using std::chrono::seconds;

constexpr const char* kPrefixA = "0xfe80000000000001";
constexpr const char* kPrefixB = "0xfe80000000000002";

class TwoFabricsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    SimOptions a;
    a.attach = "cn0001";
    a.sm_config = std::string("subnet_prefix ") + kPrefixA + "\n";
    sim_a_ = SimFabric::Start(kTwoSwitchNet, a, &error).release();
    ASSERT_NE(sim_a_, nullptr) << error;
    SimOptions b;
    b.attach = "cn0001";
    b.socket_name = sim_a_->socket_name() + "b";
    b.sm_config = std::string("subnet_prefix ") + kPrefixB + "\n";
    sim_b_ = SimFabric::Start(kTwoSwitchNet, b, &error).release();
    ASSERT_NE(sim_b_, nullptr) << error;
  }
  static void TearDownTestSuite() {
    delete sim_b_;
    delete sim_a_;
    sim_a_ = sim_b_ = nullptr;
  }
  // A client on fabric A that also has mlx5_1 on fabric B.
  static Env BothEnv() {
    Env env = sim_a_->ClientEnv();
    Env more = MoreFabricEnv("mlx5_1", *sim_b_, "cn0001");
    env["LD_PRELOAD"] += " " + more["LD_PRELOAD"];
    env["MORE_FABRICS"] = more["MORE_FABRICS"];
    return env;
  }
  static inline SimFabric* sim_a_ = nullptr;
  static inline SimFabric* sim_b_ = nullptr;
};

// The test bed itself: a PMA read through mlx5_1 reaches fabric B, one
// through ibsim0 fabric A (the same node names, the same GUIDs: ibsim
// numbers both alike).
TEST_F(TwoFabricsTest, EachDeviceReachesItsOwnFabric) {
  bool ok = false;
  sim_b_->Console("PerformanceSet \"cn0002\"[1] PortCounters.SymbolErrorCounter=77", &ok);
  ASSERT_TRUE(ok);
  const auto query = [](const std::string& ca) {
    return RunCommand({"perfquery", "-C", ca, "-P", "1", "4", "1"}, BothEnv(), std::chrono::milliseconds(20000));
  };
  const CommandResult b = query("mlx5_1");
  EXPECT_NE(b.out.find("SymbolErrorCounter:..............77"), std::string::npos) << b.out << b.err;
  const CommandResult a = query("ibsim0");
  EXPECT_NE(a.out.find("SymbolErrorCounter:..............0"), std::string::npos) << a.out << a.err;
  sim_b_->Console("PerformanceSet \"cn0002\"[1] PortCounters.SymbolErrorCounter=0", nullptr);
}

// The exporter on that host, no flag naming a port: it reads both fabrics,
// each series labelled by its subnet prefix; the two fabrics have the same
// node names and GUIDs and are never merged: each planted counter arrives
// on its own fabric's series only, each fabric has its own two switches,
// the JSON routes answer for the fabric ?fabric= names, and the merged
// exposition is valid (each family once).
TEST_F(TwoFabricsTest, TheExporterReadsBothAsTwoFabricsNeverOne) {
  bool ok = false;
  sim_a_->Console("PerformanceSet \"cn0002\"[1] PortCounters.SymbolErrorCounter=11", &ok);
  ASSERT_TRUE(ok);
  sim_b_->Console("PerformanceSet \"cn0002\"[1] PortCounters.SymbolErrorCounter=77", &ok);
  ASSERT_TRUE(ok);
  std::string error;
  auto e = ExporterProcess::Start(*sim_a_, {"--sweep.interval=250ms"}, &error, {},
                                  MoreFabricEnv("mlx5_1", *sim_b_, "cn0001"));
  ASSERT_NE(e, nullptr) << error;
  const auto s = e->WaitFor(
      [](const Scrape& x) {
        return x.Value("infiniband_exporter_sweeps_total", {{"subnet_prefix", kPrefixA}}).value_or(0) >= 3 &&
               x.Value("infiniband_exporter_sweeps_total", {{"subnet_prefix", kPrefixB}}).value_or(0) >= 3;
      },
      seconds(60));
  ASSERT_TRUE(s.has_value()) << e->Log();
  const std::string log = e->Log();
  EXPECT_NE(log.find("ca=ibsim0 port=1"), std::string::npos) << log;
  EXPECT_NE(log.find("ca=mlx5_1 port=1"), std::string::npos) << log;
  EXPECT_NE(log.find(std::string("subnet_prefix=") + kPrefixB), std::string::npos) << log;
  // Each fabric's own lines say which fabric they are of.
  for (const char* prefix : {kPrefixA, kPrefixB})
    EXPECT_NE(log.find(std::string("msg=\"discovery done\" subnet_prefix=") + prefix), std::string::npos) << log;

  for (const auto& [prefix, planted] : {std::pair{kPrefixA, 11}, std::pair{kPrefixB, 77}}) {
    EXPECT_EQ(s->Value("infiniband_hca_port_symbol_error_total",
                       {{"subnet_prefix", prefix}, {"hca", "cn0002"}, {"port", "1"}}),
              planted)
        << prefix;
    EXPECT_EQ(s->Find("infiniband_switch_info", {{"subnet_prefix", prefix}}).size(), 2u) << prefix;
    EXPECT_EQ(s->Value("infiniband_exporter_sweep_ports", {{"subnet_prefix", prefix}, {"result", "failed"}}), 0)
        << prefix;
    EXPECT_EQ(s->Value("infiniband_exporter_local_port_info", {{"subnet_prefix", prefix}}), 1) << prefix;
  }
  // Nothing without its fabric, nothing twice.
  EXPECT_EQ(s->Find("infiniband_switch_info").size(), 4u);
  EXPECT_EQ(s->Find("infiniband_hca_port_symbol_error_total", {{"hca", "cn0002"}}).size(), 2u);
  int status = 0;
  const std::string text = e->Get("/metrics", &status);
  EXPECT_EQ(status, 200);
  std::size_t types = 0;
  for (auto at = text.find("# TYPE infiniband_switch_info "); at != std::string::npos;
       at = text.find("# TYPE infiniband_switch_info ", at + 1))
    ++types;
  EXPECT_EQ(types, 1u);
  const auto lint = PromtoolCheckMetrics(text);
  EXPECT_EQ(lint.exit_code, 0) << lint.out << lint.err;
  EXPECT_EQ(lint.out + lint.err, "");

  const auto json = [&](const std::string& path) {
    int code = 0;
    const std::string body = e->Get(path, &code);
    EXPECT_EQ(code, 200) << path << ": " << body;
    return nlohmann::json::parse(body, nullptr, false);
  };
  const nlohmann::json fabrics = json("/api/v1/fabrics");
  ASSERT_EQ(fabrics["fabrics"].size(), 2u) << fabrics.dump();
  EXPECT_EQ(fabrics["fabrics"][0]["subnet_prefix"], kPrefixA);
  EXPECT_EQ(fabrics["fabrics"][1]["subnet_prefix"], kPrefixB);
  EXPECT_EQ(fabrics["fabrics"][1]["name"], kPrefixB);  // no plane: the prefix names it
  EXPECT_EQ(fabrics["fabrics"][1]["plane"], 0);
  EXPECT_EQ(fabrics["fabrics"][1]["ca"], "mlx5_1");
  EXPECT_EQ(fabrics["fabrics"][1]["nodes"], 4);
  // cn0002 has one GUID on both fabrics (ibsim numbers nodes alike): the
  // port API gives each fabric's own reading of it.
  const auto guid = [&](const char* prefix) {
    const auto x = s->Find("infiniband_hca_port_symbol_error_total", {{"subnet_prefix", prefix}, {"hca", "cn0002"}});
    return x.empty() ? std::string() : x.front().labels.at("guid");
  };
  ASSERT_EQ(guid(kPrefixA), guid(kPrefixB));
  const std::string port = "guid=" + guid(kPrefixA) + "&port=1";
  EXPECT_EQ(json(std::string("/api/v1/port?fabric=") + kPrefixB + "&" + port)["counters"]["symbol_error"], 77);
  EXPECT_EQ(json("/api/v1/port?" + port)["counters"]["symbol_error"], 11);
  EXPECT_EQ(json(std::string("/api/v1/port?fabric=") + kPrefixA + "&" + port)["counters"]["symbol_error"], 11);
  const auto topo_b = json(std::string("/api/v1/topology?fabric=") + kPrefixB);
  EXPECT_FALSE(topo_b.is_discarded());
  int code = 0;
  const std::string none = e->Get("/api/v1/topology?fabric=0x1", &code);
  EXPECT_EQ(code, 404);
  EXPECT_NE(none.find(kPrefixB), std::string::npos) << none;

  // A cable going bad on fabric B pages on B, not on A; the status page
  // lists both fabrics and shows each its own problems.
  sim_b_->Console("PerformanceSet \"cn0002\"[1] PortCounters.SymbolErrorCounter=5000", &ok);
  ASSERT_TRUE(ok);
  const auto active = [&](const std::string& query) {  // bad cables paging
    const nlohmann::json a = json("/api/v1/alerts?state=active" + query);
    std::size_t n = 0;
    if (a.is_object() && a.contains("active")) {
      for (const auto& x : a["active"]) n += x.value("cause", "") == "bad_cable" ? 1 : 0;
    }
    return n;
  };
  const auto deadline = std::chrono::steady_clock::now() + seconds(30);
  while (active(std::string("&fabric=") + kPrefixB) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_GE(active(std::string("&fabric=") + kPrefixB), 1u);
  EXPECT_EQ(active(""), 0u) << json("/api/v1/alerts?state=active").dump();

  auto browser = Browser::Start(&error);
  ASSERT_NE(browser, nullptr) << error;
  const std::string base = "http://127.0.0.1:" + std::to_string(e->port()) + "/";
  const auto problems = [&](const std::string& url) {
    EXPECT_TRUE(browser->Navigate(url, &error)) << error;
    EXPECT_TRUE(
        browser->WaitFor("return document.body.dataset.loaded === 'true' && "
                         "!document.getElementById('fabrics').hidden;",
                         seconds(30), &error))
        << error;
    const auto shown = browser->Execute(
        "return [document.getElementById('fabrics').textContent, "
        "document.getElementById('fabrics').querySelector('strong').textContent, "
        "document.getElementById('problems').textContent];",
        &error);
    EXPECT_TRUE(shown.has_value()) << error;
    return shown.value_or(nlohmann::json::array({"", "", ""}));
  };
  const nlohmann::json on_b = problems(base + "?fabric=" + kPrefixB);
  EXPECT_NE(on_b[0].get<std::string>().find(kPrefixA), std::string::npos) << on_b.dump();
  EXPECT_NE(on_b[1].get<std::string>().find(std::string(kPrefixB) + " (mlx5_1 port 1, 4 nodes)"), std::string::npos)
      << on_b.dump();
  EXPECT_NE(on_b[2].get<std::string>().find("cn0002"), std::string::npos) << on_b.dump();
  const nlohmann::json on_a = problems(base);
  EXPECT_NE(on_a[1].get<std::string>().find(kPrefixA), std::string::npos) << on_a.dump();
  EXPECT_EQ(on_a[2].get<std::string>().find("cn0002"), std::string::npos) << on_a.dump();

  sim_a_->Console("PerformanceSet \"cn0002\"[1] PortCounters.SymbolErrorCounter=0", nullptr);
  sim_b_->Console("PerformanceSet \"cn0002\"[1] PortCounters.SymbolErrorCounter=0", nullptr);
}

// A host on two fabrics in local scope: its own devices and jobs are the
// host's, stated once (by the first fabric's pipeline), whatever the number
// of fabrics, so that the host rules' joins find one series a port.
TEST_F(TwoFabricsTest, AHostsOwnDevicesAreStatedOnceWhateverItsFabrics) {
  HostSysfs sysfs;
  sysfs.AddHca("mlx5_0", 0x100001, "cn0001 mlx5_0", "0000:3b:00.0");
  sysfs.AddHca("mlx5_1", 0x100002, "cn0001 mlx5_1", "0000:86:00.0");
  const std::string jobs = MakeTempDir("two-fabrics-jobs");
  ASSERT_TRUE(WriteFile(jobs + "/mlx5_1", "31337\n"));
  std::string error;
  auto e = ExporterProcess::Start(
      *sim_a_,
      {"--sweep.interval=250ms", "--scope=local", "--host.sysfs=" + sysfs.root(), "--host.job-mapping-dir=" + jobs},
      &error, {}, MoreFabricEnv("mlx5_1", *sim_b_, "cn0001"));
  ASSERT_NE(e, nullptr) << error;
  const auto s = e->WaitFor(
      [](const Scrape& x) {
        return x.Value("infiniband_exporter_sweeps_total", {{"subnet_prefix", kPrefixA}}).value_or(0) >= 2 &&
               x.Value("infiniband_exporter_sweeps_total", {{"subnet_prefix", kPrefixB}}).value_or(0) >= 2;
      },
      seconds(60));
  ASSERT_TRUE(s.has_value()) << e->Log();
  EXPECT_EQ(s->Find("infiniband_host_device_info").size(), 2u);
  EXPECT_EQ(s->Find("infiniband_host_port_info", {{"device", "mlx5_1"}, {"port", "1"}}).size(), 1u);
  EXPECT_EQ(s->Find("infiniband_host_port_job_info", {{"hpc_job", "31337"}}).size(), 1u);
  EXPECT_EQ(s->Find("infiniband_host_device_info", {{"subnet_prefix", kPrefixA}}).size(), 2u);
  RemoveTree(jobs);
}

// A host with two ports on one fabric whose SM is no longer resident (no
// SA to name the far end of the other port's cable), in local scope: the
// exporter reads its own port's cable and says which of the host's ports
// it could not (ScopeTest.LocalReadsEveryCableOfAHostOfSeveralHcas reads
// both with an SA). A fabric exporter reads every cable and says nothing
// of it.
TEST_F(TwoFabricsTest, InLocalScopeWithoutAnSaTheHostsOtherPortOnTheFabricIsSaidUnread) {
  std::string error;
  auto local = ExporterProcess::Start(*sim_a_, {"--sweep.interval=250ms", "--scope=local"}, &error, {},
                                      MoreFabricEnv("mlx5_1", *sim_a_, "cn0002"));
  ASSERT_NE(local, nullptr) << error;
  ASSERT_TRUE(local->WaitForSweeps(1, seconds(60))) << local->Log();
  const Scrape s = local->ScrapeMetrics();
  EXPECT_EQ(s.Value("infiniband_exporter_local_ports_unread", {{"ca", "mlx5_1"}, {"port", "1"}}), 1) << local->Log();
  EXPECT_EQ(s.Find("infiniband_exporter_local_ports_unread").size(), 1u);
  EXPECT_NE(local->Log().find("this host's port mlx5_1/1 (LID "), std::string::npos) << local->Log();
  auto fabric = ExporterProcess::Start(*sim_a_, {"--sweep.interval=250ms"}, &error, {},
                                       MoreFabricEnv("mlx5_1", *sim_a_, "cn0002"));
  ASSERT_NE(fabric, nullptr) << error;
  ASSERT_TRUE(fabric->WaitForSweeps(1, seconds(60))) << fabric->Log();
  EXPECT_TRUE(fabric->ScrapeMetrics().Find("infiniband_exporter_local_ports_unread").empty());
}

}  // namespace
}  // namespace ibfabric::testbed
