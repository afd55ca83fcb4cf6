// Subnet manager health on the simulated fabric: two opensm processes at
// different hosts with different priorities. The exporter reports the
// master and the standby (checked against `sminfo`), the failover when the
// master is killed (the standby takes over within about a second: short
// SMInfo polling in the SMs' config), no master once every SM is gone, and
// a master that answers but no longer sweeps (opensm -s 0), and two SMs
// that both claim master.

#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "tests/integration/fabric_suite.h"

namespace ibfabric::testbed {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// The standby polls the master every 500 ms and gives up after 2 misses.
constexpr const char* kFastPolling = "sminfo_polling_timeout 500\npolling_retry_number 2\n";

struct SmInfoLine {
  std::string guid;
  int priority = -1;
  int state = -1;
};
// `sminfo [LID]`: "sminfo: sm lid 1 sm guid 0x100001, activity count 209 priority 10 state 3 SMINFO_MASTER"
std::optional<SmInfoLine> SmInfoTool(const SimFabric& sim, const std::string& lid = "") {
  std::vector<std::string> argv{"sminfo"};
  if (!lid.empty()) argv.push_back(lid);
  const CommandResult r = sim.Tool(argv, std::chrono::milliseconds(20000));
  std::smatch m;
  static const std::regex kLine(R"(sm guid (0x[0-9a-f]+), activity count \d+ priority (\d+) state (\d+))");
  if (r.exit_code != 0 || !std::regex_search(r.out, m, kLine)) return std::nullopt;
  return SmInfoLine{m[1], std::stoi(m[2]), std::stoi(m[3])};
}

// `saquery SMIR` (the SA's SMInfoRecords): GUID -> (priority, state).
std::map<std::uint64_t, std::pair<int, int>> SaSmRecords(const SimFabric& sim) {
  const CommandResult r = sim.Tool({"saquery", "SMIR"}, std::chrono::milliseconds(20000));
  std::map<std::uint64_t, std::pair<int, int>> out;
  static const std::regex kRecord(R"(GUID\.+(0x[0-9a-f]+)[\s\S]*?Priority\.+(\d+)\s+SMState\.+(\d+))");
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), kRecord); it != std::sregex_iterator(); ++it) {
    out[std::stoull((*it)[1].str(), nullptr, 16)] = {std::stoi((*it)[2].str()), std::stoi((*it)[3].str())};
  }
  return out;
}

// GUIDs as the exporter prints them (16 hex digits) and sminfo does (short).
std::uint64_t Hex(const std::string& s) { return std::stoull(s, nullptr, 16); }

class SubnetManagerTest : public FabricSuite {
 protected:
  static void SetUpTestSuite() { StartFabric(Spec(4, 2, 4, 1, 8)); }

  static std::unique_ptr<Process> Sm(const std::string& host, int priority, bool standby, int sweep = 1,
                                     const std::string& config = "") {
    std::string error;
    SimFabric::SmOptions o;
    o.attach = host;
    o.priority = priority;
    o.sweep_seconds = sweep;
    o.config = kFastPolling + config;
    o.standby = standby;
    auto sm = sim_->StartSubnetManager(o, &error);
    EXPECT_NE(sm, nullptr) << error;
    return sm;
  }
  static json Sms(const ExporterProcess& e) {
    int status = 0;
    const std::string body = e.Get("/api/v1/subnet_managers", &status);
    EXPECT_EQ(status, 200) << body;
    return json::parse(body, nullptr, false);
  }
  static std::set<std::string> Conditions(const json& j) {
    std::set<std::string> out;
    for (const auto& c : j["conditions"]) out.insert(c["condition"].get<std::string>());
    return out;
  }
  // Sweeps the exporter has finished.
  static double Sweeps(const ExporterProcess& e) {
    return e.ScrapeMetrics().Value("infiniband_exporter_sweeps_total").value_or(-1);
  }
  // "Within a sweep", counted in sweeps so that a loaded machine's slower
  // ones do not matter: the sweep under way when the SM came, the one that
  // sees it, and those that end while the test polls (every 200 ms, sweeps
  // every 300 ms).
  static constexpr double kSweepsToSee = 4;
  static bool WaitJson(const ExporterProcess& e, const std::function<bool(const json&)>& done, json* last) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      *last = Sms(e);
      if (!last->is_discarded() && done(*last)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }
};

TEST_F(SubnetManagerTest, MasterAndStandbyAreReportedAndAKilledMasterIsAFailover) {
  auto master = Sm(tree_->Host(2), 10, false);
  auto standby = Sm(tree_->Host(7), 1, true);
  ASSERT_TRUE(master && standby);
  auto e = StartExporter({"--sweep.interval=300ms", "--discovery.interval=1s", "--sm.stall-after=5s",
                          "--mad.timeout=50ms", "--mad.retries=1"});
  ASSERT_NE(e, nullptr);
  json j;
  ASSERT_TRUE(WaitJson(
      *e, [](const json& x) { return x["master"].is_object() && x["standbys"].size() == 1; }, &j))
      << j.dump(2) << e->Log();
  EXPECT_EQ(j["master"]["node"], tree_->Host(2));
  EXPECT_EQ(j["master"]["priority"], 10);
  EXPECT_EQ(j["master"]["state"], "master");
  EXPECT_EQ(j["standbys"][0]["node"], tree_->Host(7));
  EXPECT_EQ(j["standbys"][0]["priority"], 1);
  EXPECT_EQ(j["master_count"], 1);
  EXPECT_TRUE(Conditions(j).empty()) << j["conditions"].dump();
  // The same as sminfo says, for the master and, by its LID, the standby.
  const auto tool_master = SmInfoTool(*sim_);
  ASSERT_TRUE(tool_master);
  EXPECT_EQ(Hex(tool_master->guid), Hex(j["master"]["guid"]));
  EXPECT_EQ(tool_master->priority, 10);
  EXPECT_EQ(tool_master->state, 3);
  const auto tool_standby = SmInfoTool(*sim_, std::to_string(j["standbys"][0]["lid"].get<int>()));
  ASSERT_TRUE(tool_standby);
  EXPECT_EQ(Hex(tool_standby->guid), Hex(j["standbys"][0]["guid"]));
  EXPECT_EQ(tool_standby->state, 2);
  // And as the SA lists them: the same two SMs with the same priorities,
  // the master as master (the SA's record of a standby is what the master
  // last polled, possibly from while it was still discovering).
  // The master lists the standby once it has polled it: on a loaded
  // machine that can come after the exporter saw both (once in three
  // loaded runs the SA still held the master alone).
  std::map<std::uint64_t, int> ours;
  for (const auto& sm : j["sms"]) ours[Hex(sm["guid"])] = sm["priority"].get<int>();
  std::map<std::uint64_t, std::pair<int, int>> sa;
  std::map<std::uint64_t, int> theirs;
  EXPECT_TRUE(WaitUntil(
      [&] {
        sa = SaSmRecords(*sim_);
        theirs.clear();
        for (const auto& [guid, record] : sa) theirs[guid] = record.first;
        return theirs == ours;
      },
      seconds(60), std::chrono::milliseconds(500)));
  EXPECT_EQ(theirs, ours);
  ASSERT_TRUE(sa.count(Hex(j["master"]["guid"])));
  EXPECT_EQ(sa.at(Hex(j["master"]["guid"])).second, 3);
  // A master that sweeps (opensm -s 1) keeps its ActCount moving.
  std::this_thread::sleep_for(seconds(6));
  const Scrape s = e->ScrapeMetrics();
  EXPECT_EQ(s.Value("infiniband_sm_master_sweeping"), 1) << "the SMs as the exporter saw them: " << Sms(*e).dump(2);
  EXPECT_EQ(s.Value("infiniband_sm_masters"), 1);
  EXPECT_EQ(s.Value("infiniband_sm_standbys"), 1);
  EXPECT_EQ(s.Value("infiniband_sm_state", {{"node", tree_->Host(2)}, {"state", "master"}}), 1);
  EXPECT_EQ(s.Value("infiniband_sm_state", {{"node", tree_->Host(7)}, {"state", "standby"}}), 1);
  EXPECT_EQ(s.Value("infiniband_sm_priority", {{"node", tree_->Host(2)}}), 10);
  EXPECT_EQ(s.Value("infiniband_sm_master_changes_total"), 0);

  // Kill the master: the standby takes over and the exporter reports when,
  // from and to. On hardware the kernel drops a dead SM's port from the
  // SMs when its process goes (the umad file closes); ibsim keeps a killed
  // client's slot until told (once in a loaded run the standby stayed
  // DISCOVERING for a minute beside it).
  master->Signal(SIGKILL);
  sim_->DisconnectDeadClients();
  ASSERT_TRUE(WaitJson(
      *e,
      [&](const json& x) {
        return x["master"].is_object() && x["master"]["node"] == tree_->Host(7) && !x["events"].empty();
      },
      &j))
      << j.dump(2) << e->Log();
  EXPECT_EQ(j["events"][0]["kind"], "failover");
  EXPECT_EQ(j["events"][0]["from"]["node"], tree_->Host(2));
  EXPECT_EQ(j["events"][0]["to"]["node"], tree_->Host(7));
  EXPECT_EQ(j["master_changes"], 1);
  EXPECT_EQ(Conditions(j), (std::set<std::string>{"failover", "no_standby"})) << j["conditions"].dump();
  const auto after = SmInfoTool(*sim_);
  ASSERT_TRUE(after);
  EXPECT_EQ(Hex(after->guid), Hex(j["master"]["guid"]));
  EXPECT_EQ(after->state, 3);
  const auto scraped =
      e->WaitFor([](const Scrape& x) { return x.Value("infiniband_sm_master_changes_total") == 1; }, seconds(10));
  ASSERT_TRUE(scraped);
  EXPECT_EQ(scraped->Value("infiniband_sm_condition", {{"condition", "failover"}}), 1);
  EXPECT_EQ(scraped->Value("infiniband_sm_condition", {{"condition", "no_standby"}}), 1);
  EXPECT_EQ(scraped->Value("infiniband_sm_condition", {{"condition", "no_master"}}), 0);
  EXPECT_NE(e->Log().find("condition=failover"), std::string::npos);

  // And with no SM left at all: no master.
  standby->Signal(SIGKILL);
  ASSERT_TRUE(WaitJson(
      *e, [](const json& x) { return x["master_count"] == 0; }, &j))
      << j.dump(2);
  EXPECT_TRUE(Conditions(j).count("no_master")) << j["conditions"].dump();
  EXPECT_TRUE(j["master"].is_null());
}

TEST_F(SubnetManagerTest, AMasterThatStopsSweepingIsReported) {
  auto lazy = Sm(tree_->Host(3), 5, false, /*sweep=*/0);  // opensm -s 0: no periodic sweeps
  ASSERT_NE(lazy, nullptr);
  auto e = StartExporter({"--sweep.interval=300ms", "--discovery.interval=1s", "--sm.stall-after=2s"});
  ASSERT_NE(e, nullptr);
  json j;
  ASSERT_TRUE(WaitJson(
      *e,
      [](const json& x) {
        for (const auto& c : x["conditions"])
          if (c["condition"] == "master_not_sweeping") return true;
        return false;
      },
      &j))
      << j.dump(2);
  EXPECT_EQ(j["master"]["node"], tree_->Host(3));
  EXPECT_FALSE(j["master"]["act_count_moving"].get<bool>());
  const Scrape s = e->ScrapeMetrics();
  EXPECT_EQ(s.Value("infiniband_sm_master_sweeping"), 0);
  EXPECT_EQ(s.Value("infiniband_sm_condition", {{"condition", "master_not_sweeping"}}), 1);
  // sminfo agrees that it is the master, and its ActCount stands still.
  const auto a = SmInfoTool(*sim_);
  std::this_thread::sleep_for(seconds(1));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->state, 3);
  EXPECT_EQ(Hex(a->guid), Hex(j["master"]["guid"]));
  lazy->Signal(SIGKILL);
}

// Two SMs configured to ignore other SMs (opensm's ignore_other_sm) both
// claim master: the exporter reports both and the multiple_masters
// condition, as sminfo does. (Fresh hosts: ibsim clears IsSM on the node of
// an SM killed earlier when it notices, which could hit a new SM there.)
TEST_F(SubnetManagerTest, TwoSmsClaimingMasterAreReported) {
  const std::string kIgnoreOthers = "ignore_other_sm TRUE\n";
  auto first = Sm(tree_->Host(4), 10, false, 1, kIgnoreOthers);
  auto second = Sm(tree_->Host(12), 1, false, 1, kIgnoreOthers);
  ASSERT_TRUE(first && second);
  auto e = StartExporter({"--sweep.interval=300ms", "--discovery.interval=1s", "--sm.stall-after=5s"});
  ASSERT_NE(e, nullptr);
  json j;
  ASSERT_TRUE(WaitJson(
      *e, [](const json& x) { return x["master_count"] == 2; }, &j))
      << j.dump(2) << e->Log();
  EXPECT_TRUE(Conditions(j).count("multiple_masters")) << j["conditions"].dump();
  std::map<std::string, int> masters;  // node -> priority
  for (const auto& sm : j["sms"]) {
    if (sm["state"] == "master") masters[sm["node"].get<std::string>()] = sm["priority"].get<int>();
  }
  EXPECT_EQ(masters, (std::map<std::string, int>{{tree_->Host(4), 10}, {tree_->Host(12), 1}}));
  // sminfo, asked at each SM's LID, hears "master" from both.
  for (const auto& sm : j["sms"]) {
    const auto tool = SmInfoTool(*sim_, std::to_string(sm["lid"].get<int>()));
    ASSERT_TRUE(tool) << sm.dump();
    EXPECT_EQ(Hex(tool->guid), Hex(sm["guid"]));
    EXPECT_EQ(tool->state, 3) << sm.dump();
  }
  // And in /api/v1/alerts, beside the cable alerts: critical, naming both SM ports.
  int status = 0;
  const json alerts = json::parse(e->Get("/api/v1/alerts?severity=critical", &status), nullptr, false);
  ASSERT_EQ(status, 200);
  json multiple;
  for (const auto& a : alerts["active"]) {
    if (a["id"] == "subnet_manager:multiple_masters") multiple = a;
  }
  ASSERT_TRUE(multiple.is_object()) << alerts.dump(2);
  EXPECT_EQ(multiple["cause"], "subnet_manager");
  std::set<std::string> ends;
  for (const auto& end : multiple["ends"]) ends.insert(end["node"].get<std::string>() + "[" + end["port"].dump() + "]");
  EXPECT_EQ(ends, (std::set<std::string>{tree_->Host(4) + "[1]", tree_->Host(12) + "[1]"}));
  const auto s = e->WaitFor([](const Scrape& x) { return x.Value("infiniband_sm_masters") == 2; }, seconds(10));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->Value("infiniband_sm_condition", {{"condition", "multiple_masters"}}), 1);
  EXPECT_EQ(s->Value("infiniband_sm_condition", {{"condition", "no_master"}}), 0);
  EXPECT_EQ(s->Value("infiniband_sm_state", {{"node", tree_->Host(4)}, {"state", "master"}}), 1);
  EXPECT_EQ(s->Value("infiniband_sm_state", {{"node", tree_->Host(12)}, {"state", "master"}}), 1);
  first->Signal(SIGKILL);
  second->Signal(SIGKILL);
}

// A master that starts long after the exporter's last full walk: the local
// port's MasterSMLID, read every sweep, names it, and the SM view is right
// within about a sweep of the SM taking mastership, no walk needed.
TEST_F(SubnetManagerTest, AMasterStartedAfterTheLastWalkIsReportedWithinASweep) {
  auto e = StartExporter({"--sweep.interval=300ms", "--discovery.interval=1h", "--sm.stall-after=5s",
                          "--mad.timeout=50ms", "--mad.retries=1"});
  ASSERT_NE(e, nullptr);
  json j;
  ASSERT_TRUE(WaitJson(
      *e, [](const json& x) { return Conditions(x).count("no_master") > 0; }, &j))
      << j.dump(2);
  const double walks = *e->ScrapeMetrics().Value("infiniband_exporter_discoveries_total", {{"mode", "full"}});
  auto master = Sm(tree_->Host(3), 10, false);  // returns once opensm says SUBNET UP: it is master
  ASSERT_TRUE(master);
  const auto up = std::chrono::steady_clock::now();
  const double sweeps_at_up = Sweeps(*e);
  ASSERT_TRUE(WaitJson(
      *e, [](const json& x) { return x["master"].is_object() && Conditions(x).count("no_master") == 0; }, &j))
      << j.dump(2) << e->Log();
  const double seconds_after = std::chrono::duration<double>(std::chrono::steady_clock::now() - up).count();
  const double sweeps_after = Sweeps(*e) - sweeps_at_up;
  EXPECT_EQ(j["master"]["node"], tree_->Host(3));
  EXPECT_EQ(j["master"]["state"], "master");
  EXPECT_LE(sweeps_after, kSweepsToSee) << "reported " << seconds_after << " s after";
  std::printf("late master reported %.2f s, %.0f sweeps after opensm's SUBNET UP (sweep 0.3 s)\n", seconds_after,
              sweeps_after);
  const auto s = e->ScrapeMetrics();
  EXPECT_EQ(s.Value("infiniband_sm_condition", {{"condition", "no_master"}}), 0);
  EXPECT_EQ(s.Value("infiniband_exporter_discoveries_total", {{"mode", "full"}}), walks) << "no full walk did it";
  master->Signal(SIGKILL);
}

// And a standby that starts after that: the master's SA lists it (the
// exporter asks for the SMInfoRecords every sweep) and its own SMInfo
// confirms it, within about a sweep of it polling the master, no walk
// needed. Fresh hosts (see TwoSmsClaimingMasterAreReported).
TEST_F(SubnetManagerTest, AStandbyStartedAfterTheLastWalkIsReportedWithinASweep) {
  auto master = Sm(tree_->Host(5), 10, false);
  ASSERT_TRUE(master);
  auto e = StartExporter({"--sweep.interval=300ms", "--discovery.interval=1h", "--sm.stall-after=5s",
                          "--mad.timeout=50ms", "--mad.retries=1"});
  ASSERT_NE(e, nullptr);
  json j;
  ASSERT_TRUE(WaitJson(
      *e, [](const json& x) { return x["master"].is_object() && Conditions(x).count("no_standby") > 0; }, &j))
      << j.dump(2) << e->Log();
  const double walks = *e->ScrapeMetrics().Value("infiniband_exporter_discoveries_total", {{"mode", "full"}});
  auto standby = Sm(tree_->Host(13), 1, true);  // returns once opensm logs STANDBY
  ASSERT_TRUE(standby);
  const auto up = std::chrono::steady_clock::now();
  const double sweeps_at_up = Sweeps(*e);
  ASSERT_TRUE(WaitJson(
      *e, [](const json& x) { return x["standbys"].size() == 1 && Conditions(x).empty(); }, &j))
      << j.dump(2) << e->Log();
  const double seconds_after = std::chrono::duration<double>(std::chrono::steady_clock::now() - up).count();
  const double sweeps_after = Sweeps(*e) - sweeps_at_up;
  EXPECT_EQ(j["master"]["node"], tree_->Host(5));
  EXPECT_EQ(j["standbys"][0]["node"], tree_->Host(13));
  EXPECT_EQ(j["standbys"][0]["priority"], 1);
  EXPECT_EQ(j["standbys"][0]["state"], "standby");
  EXPECT_LE(sweeps_after, kSweepsToSee) << "reported " << seconds_after << " s after";
  std::printf("late standby reported %.2f s, %.0f sweeps after opensm's STANDBY (sweep 0.3 s)\n", seconds_after,
              sweeps_after);
  // As sminfo sees it at the standby's LID.
  const auto tool = SmInfoTool(*sim_, std::to_string(j["standbys"][0]["lid"].get<int>()));
  ASSERT_TRUE(tool);
  EXPECT_EQ(Hex(tool->guid), Hex(j["standbys"][0]["guid"]));
  EXPECT_EQ(tool->state, 2);
  const auto s = e->ScrapeMetrics();
  EXPECT_EQ(s.Value("infiniband_sm_standbys"), 1);
  EXPECT_EQ(s.Value("infiniband_sm_condition", {{"condition", "no_standby"}}), 0);
  EXPECT_EQ(s.Value("infiniband_sm_state", {{"node", tree_->Host(13)}, {"state", "standby"}}), 1);
  EXPECT_EQ(s.Value("infiniband_exporter_discoveries_total", {{"mode", "full"}}), walks) << "no full walk did it";
  standby->Signal(SIGKILL);
  master->Signal(SIGKILL);
}

TEST_F(SubnetManagerTest, LocalExportersDoNotWatchSubnetManagers) {
  auto e = StartExporter({"--scope=local", "--sweep.interval=300ms"});
  ASSERT_NE(e, nullptr);
  int status = 0;
  const std::string body = e->Get("/api/v1/subnet_managers", &status);
  EXPECT_EQ(status, 404);
  EXPECT_NE(body.find("does not watch subnet managers"), std::string::npos) << body;
  EXPECT_TRUE(e->ScrapeMetrics().Find("infiniband_sm_masters").empty());
}

}  // namespace
}  // namespace ibfabric::testbed
