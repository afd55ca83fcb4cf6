// Protected fabrics (issue 37) on the hardware personalities: the real
// exporter binary on ibsim through tests/tools/hw_personality.cc, whose
// nodes planted an M_Key drop every SMP that does not carry it, as M_Key
// protection does, while their PMAs (GMPs) answer. A resident opensm (not
// behind the personalities: it holds the key) is the SM and SA, on cn0002.
//
// With the key (a file, a credentials directory) everything is read and
// the key shows nowhere; without it, one diagnosis within two sweeps, said
// in the log, the metrics, the alerts API and the status page, no page for
// the nodes or the SM, and SMPs backed off to probes (counted where MADs
// cross libibumad); protection that comes on later keeps the fabric whole
// and its counters read, and the fabric is walked again once SMPs answer.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/hardware_suite.h"
#include "tests/testbed/browser.h"
#include "tests/testbed/mad_tap.h"
#include "tests/testbed/process.h"

namespace ibfabric::testbed {
namespace {

using std::chrono::seconds;

constexpr const char* kDiagnosis = "looks M_Key-protected";

std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The sweeps done before the diagnosis, as its log line says (-1: none).
int DiagnosedAfter(const std::string& log) {
  const auto at = log.find(kDiagnosis);
  const auto sweeps = at == std::string::npos ? at : log.find(" sweeps=", at);
  return sweeps == std::string::npos ? -1 : std::stoi(log.substr(sweeps + 8));
}

// The preflight's lines and exit status (exporter/doctor.h).
struct Doctor {
  std::vector<std::string> lines;
  int exit_code = -1;
  std::string all;
};
Doctor RunDoctor(const Env& env, const std::vector<std::string>& flags) {
  std::vector<std::string> argv{ExporterBinary(), "--doctor"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  const CommandResult r = RunCommand(argv, env, std::chrono::milliseconds(60000));
  Doctor d;
  d.exit_code = r.exit_code;
  d.all = r.out + r.err;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) d.lines.push_back(line);
  return d;
}
// Whether `line` starts with `prefix`.
bool Starts(const std::string& line, const std::string& prefix) { return line.rfind(prefix, 0) == 0; }

double Sweeps(const Scrape& s) { return s.Value("infiniband_exporter_sweeps_total").value_or(0); }
bool Blocked(const Scrape& s) { return s.Value("infiniband_exporter_smps_blocked").value_or(0) == 1; }

// No page for a node, a link or the SM: every such series is quiet; the
// only alerts active are of `cause` (a fault planted on the counters).
void ExpectNoPage(const Scrape& s, const std::string& cause = "") {
  for (const auto& x : s.Find("infiniband_exporter_node_stale")) EXPECT_EQ(x.value, 0) << x.labels.at("guid");
  for (const auto& x : s.Find("infiniband_link_up")) EXPECT_EQ(x.value, 1) << x.labels.at("node");
  for (const auto& x : s.Find("infiniband_sm_condition")) EXPECT_EQ(x.value, 0) << x.labels.at("condition");
  for (const auto& x : s.Find("infiniband_alert_active")) {
    if (x.value != 0) {
      EXPECT_EQ(x.labels.at("cause"), cause);
    }
  }
}

class MKeyTest : public HardwareSuite<MKeyTest> {
 protected:
  static constexpr std::uint64_t kKey = 0x5eed0000c0ffee01ULL;
  static constexpr const char* kKeyHex = "0x5eed0000c0ffee01";
  static void SetUpTestSuite() {
    StartHardware(kTwoSwitchNet, "ib-*  quantum-2\ncn*  connectx-7\n");
    if (::testing::Test::HasFatalFailure()) return;
    std::string error;
    SimFabric::SmOptions o;
    o.attach = "cn0002";
    sm_ = sim_->StartSubnetManager(o, &error).release();
    ASSERT_NE(sm_, nullptr) << error;
  }
  static void TearDownTestSuite() {
    delete sm_;
    sm_ = nullptr;
    HardwareSuite::TearDownTestSuite();
  }
  // Each test starts on a fabric protected everywhere.
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(hw_->PlantMKey("all", kKey, &error)) << error;
  }
  // The personality preload, behind the MAD tap writing to `tap`.
  static Env TappedEnv(const std::string& tap) {
    Env env = hw_->PreloadEnv();
    const Env tap_env = MadTapEnv(tap);
    env["LD_PRELOAD"] = tap_env.at("LD_PRELOAD") + " " + env["LD_PRELOAD"];
    env["MAD_TAP_FILE"] = tap;
    return env;
  }
  static inline Process* sm_ = nullptr;
};

TEST_F(MKeyTest, WithTheKeyFromAFileEverythingIsReadAndTheKeyIsNowhere) {
  const Env env = hw_->ClientEnv(*sim_);
  const CommandResult without =
      RunCommand({"smpquery", "nodeinfo", "-D", "0,1"}, env, std::chrono::milliseconds(20000));
  EXPECT_NE(without.exit_code, 0) << "an SMP without the key is dropped: " << without.out;
  const CommandResult with =
      RunCommand({"smpquery", "-y", kKeyHex, "nodeinfo", "-D", "0,1"}, env, std::chrono::milliseconds(20000));
  EXPECT_EQ(with.exit_code, 0) << with.out << with.err;

  const std::string dir = MakeTempDir("mkey");
  WriteFile(dir + "/m_key", std::string(kKeyHex) + "\n");
  std::string error;
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=250ms", "--ib.m-key-file=" + dir + "/m_key"}, &error, {},
                                  hw_->PreloadEnv());
  ASSERT_NE(e, nullptr) << error;
  const auto s = e->WaitForSweeps(3, seconds(60));
  ASSERT_TRUE(s.has_value()) << e->Log();
  EXPECT_EQ(s->Find("infiniband_switch_info").size(), 2u);
  EXPECT_EQ(s->Find("infiniband_hca_info").size(), 2u);
  EXPECT_EQ(RateGbps(*s, "switch", "ib-leaf01", 5), 400) << "PortInfo read: Quantum-2 to Quantum-2, NDR";
  EXPECT_FALSE(s->Find("infiniband_routing_port_destinations").empty()) << "the forwarding tables read";
  EXPECT_EQ(s->Value("infiniband_exporter_mad_failures_total", {{"class", "dr_smp"}, {"reason", "timeout"}}), 0);
  EXPECT_EQ(s->Value("infiniband_exporter_smps_blocked"), 0);
  EXPECT_EQ(s->Value("infiniband_exporter_mkey_given"), 1);
  EXPECT_EQ(s->Value("infiniband_sm_masters"), 1) << "SMInfo read: the SM on cn0002 answers as master";
  // The key in none of its spellings: not in the log, the metrics, the
  // APIs, the status page or the process's command line.
  std::ifstream cmdline("/proc/" + std::to_string(e->process().pid()) + "/cmdline");
  const std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(args.empty());
  const std::vector<std::string> places{e->Log(),
                                        e->Get("/metrics"),
                                        e->Get("/api/v1/topology"),
                                        e->Get("/api/v1/alerts"),
                                        e->Get("/api/v1/subnet_managers"),
                                        e->Get("/"),
                                        args};
  for (const std::string& spelling :
       {std::string("5eed0000c0ffee01"), std::string("5EED0000C0FFEE01"), std::to_string(kKey)}) {
    for (std::size_t i = 0; i < places.size(); ++i) {
      EXPECT_EQ(places[i].find(spelling), std::string::npos) << "place " << i << " shows the key";
    }
  }
  RemoveTree(dir);
}

// systemd's LoadCredential= and the DaemonSet's optional Secret both hand
// the key over as $CREDENTIALS_DIRECTORY/m_key: no flag at all.
TEST_F(MKeyTest, TheKeyFromTheCredentialsDirectoryNeedsNoFlag) {
  const std::string dir = MakeTempDir("mkey-credentials");
  WriteFile(dir + "/m_key", std::string(kKeyHex) + "\n");
  Env env = hw_->PreloadEnv();
  env["CREDENTIALS_DIRECTORY"] = dir;
  std::string error;
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=250ms"}, &error, {}, env);
  ASSERT_NE(e, nullptr) << error;
  const auto s = e->WaitForSweeps(3, seconds(60));
  ASSERT_TRUE(s.has_value()) << e->Log();
  EXPECT_EQ(s->Find("infiniband_switch_info").size(), 2u) << e->Log();
  EXPECT_EQ(s->Value("infiniband_exporter_mkey_given"), 1);
  EXPECT_EQ(s->Value("infiniband_exporter_smps_blocked"), 0);
  RemoveTree(dir);
}

// Protected everywhere, the exporter's own HCA too, and no key: the walk
// fails at the local NodeInfo while the local PMA answers. One diagnosis
// by the second sweep; no node, link or SM page, no local-port recovery
// loop; the alerts API and the status page say what to do; no walk after
// it, and SMPs only as probes, ever further apart.
TEST_F(MKeyTest, WithoutTheKeyOneDiagnosisWithinTwoSweepsAndNoPage) {
  const std::string dir = MakeTempDir("mkey-none");
  const std::string tap = dir + "/tap.log";
  std::string error;
  // No retries (one try a MAD) keeps the timed-out SMPs' cost, and the test, short.
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=250ms", "--mad.retries=0"}, &error, {}, TappedEnv(tap));
  ASSERT_NE(e, nullptr) << error;
  const auto diagnosed = e->WaitFor(Blocked, seconds(60));
  ASSERT_TRUE(diagnosed.has_value()) << e->Log();
  ASSERT_GE(DiagnosedAfter(e->Log()), 0) << e->Log();
  EXPECT_LE(DiagnosedAfter(e->Log()), 1) << "diagnosed by the second sweep: " << e->Log();
  EXPECT_EQ(diagnosed->Value("infiniband_exporter_mkey_given"), 0);
  EXPECT_GE(diagnosed->Value("infiniband_exporter_smps_blocked_lids").value_or(0), 1);

  const auto from = std::chrono::steady_clock::now();
  const double sweeps_before = Sweeps(*diagnosed);
  const auto later = e->WaitFor([&](const Scrape& x) { return Sweeps(x) >= sweeps_before + 16; }, seconds(60));
  ASSERT_TRUE(later.has_value()) << e->Log();
  const auto to = std::chrono::steady_clock::now();
  EXPECT_TRUE(Blocked(*later));
  ExpectNoPage(*later);
  EXPECT_EQ(later->Value("infiniband_exporter_discoveries_total", {{"mode", "full"}}), 1) << "no walk after the first";

  const nlohmann::json alerts = nlohmann::json::parse(e->Get("/api/v1/alerts"));
  ASSERT_EQ(alerts["exporter_blind_spots"].size(), 1u) << alerts.dump();
  EXPECT_EQ(alerts["exporter_blind_spots"][0]["kind"], "smps_blocked");
  EXPECT_NE(alerts["exporter_blind_spots"][0]["action"].get<std::string>().find("--ib.m-key-file"), std::string::npos);
  EXPECT_EQ(alerts["active"].size(), 0u) << alerts.dump();

  // The status page, as a person sees it: the diagnosis above everything.
  auto b = Browser::Start(&error);
  ASSERT_NE(b, nullptr) << error;
  ASSERT_TRUE(b->Navigate("http://127.0.0.1:" + std::to_string(e->port()) + "/", &error)) << error;
  ASSERT_TRUE(b->WaitFor("return document.body.dataset.loaded === 'true';", seconds(30), &error)) << error;
  const auto banner = b->Execute(R"(
    const box = document.getElementById('blind-spots');
    const r = box.getBoundingClientRect();
    return {hidden: box.hidden, text: box.innerText, top: r.top, height: r.height,
            kind: (box.querySelector('[data-kind]') || {dataset: {}}).dataset.kind || ''};
  )",
                                 &error);
  ASSERT_TRUE(banner.has_value()) << error;
  EXPECT_FALSE((*banner)["hidden"].get<bool>());
  EXPECT_EQ((*banner)["kind"], "smps_blocked");
  EXPECT_NE((*banner)["text"].get<std::string>().find("M_Key"), std::string::npos) << banner->dump();
  EXPECT_NE((*banner)["text"].get<std::string>().find("--ib.m-key-file"), std::string::npos) << banner->dump();
  EXPECT_GT((*banner)["height"].get<double>(), 0);
  EXPECT_LT((*banner)["top"].get<double>(), 200) << "in the header, above the problems";
  b.reset();

  const std::string log = e->Log();
  e.reset();  // the tap writes what it holds as the process ends
  EXPECT_EQ(Count(log, kDiagnosis), 1u) << log;
  EXPECT_EQ(Count(log, "no M_Key was given"), 1u) << log;
  EXPECT_EQ(Count(log, "local port still does not answer"), 0u) << "no recovery loop: the local port is there";
  EXPECT_EQ(Count(log, "node left the fabric"), 0u);
  // After the diagnosis: no walk (directed-route SMPs), and LID-routed
  // SMPs only as probes of the local LID and the SM's, 2, 4 and 8 sweeps
  // apart: at most three probes of two SMPs, one try each.
  const auto sent = SentBetween(tap, from, to);
  EXPECT_EQ(sent[0], 0u) << "directed-route SMPs onto the fabric";
  EXPECT_LE(sent[1], 6u) << "LID-routed SMPs in 16 sweeps";
  EXPECT_GE(sent[1], 2u) << "the probes";
  RemoveTree(dir);
}

// The switches and the SM's host protected, this host's HCA not: the walk
// reaches only the local node, and what it missed has no LID it knows;
// the master SM's LID (from the local PortInfo) is probed instead, its
// PMA answers, and a probe in the next sweep confirms it.
TEST_F(MKeyTest, ProtectedBeyondThisHostIsDiagnosedThroughTheSm) {
  std::string error;
  ASSERT_TRUE(hw_->PlantMKey("cn0001", 0, &error)) << error;
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=250ms"}, &error, {}, hw_->PreloadEnv());
  ASSERT_NE(e, nullptr) << error;
  const auto diagnosed = e->WaitFor(Blocked, seconds(60));
  ASSERT_TRUE(diagnosed.has_value()) << e->Log();
  ASSERT_GE(DiagnosedAfter(e->Log()), 0) << e->Log();
  EXPECT_LE(DiagnosedAfter(e->Log()), 2) << e->Log();
  EXPECT_EQ(diagnosed->Find("infiniband_hca_info").size(), 1u) << "the local HCA answers";
  EXPECT_TRUE(diagnosed->Find("infiniband_switch_info").empty());
  ExpectNoPage(*diagnosed);
}

// Protection that comes on while the exporter runs (the SM set a key): the
// next sweeps' SMPs go unanswered while the PMAs answer. One diagnosis
// within two sweeps; the fabric stays whole (no node dropped, no link
// down), the counters are still read (one planted after it arrives on its
// port), the sweeps' SMPs stop; when the key is lifted, a probe sees SMPs
// answer and the fabric is walked again.
TEST_F(MKeyTest, ProtectionThatComesOnLaterKeepsTheFabricAndItsCounters) {
  std::string error;
  ASSERT_TRUE(hw_->PlantMKey("all", 0, &error)) << error;
  const std::string dir = MakeTempDir("mkey-later");
  const std::string tap = dir + "/tap.log";
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=250ms", "--mad.retries=0"}, &error, {}, TappedEnv(tap));
  ASSERT_NE(e, nullptr) << error;
  const auto open = e->WaitForSweeps(3, seconds(60));
  ASSERT_TRUE(open.has_value()) << e->Log();
  ASSERT_EQ(open->Find("infiniband_switch_info").size(), 2u);
  ASSERT_EQ(open->Find("infiniband_hca_info").size(), 2u);
  const std::size_t links = open->Find("infiniband_link_up").size();
  ASSERT_EQ(links, 4u) << "four cables";

  ASSERT_TRUE(hw_->PlantMKey("all", kKey, &error)) << error;
  const double planted_at = Sweeps(e->ScrapeMetrics());
  const auto diagnosed = e->WaitFor(Blocked, seconds(60));
  ASSERT_TRUE(diagnosed.has_value()) << e->Log();
  // The sweep under way when the key came, and two more.
  ASSERT_GE(DiagnosedAfter(e->Log()), 0) << e->Log();
  EXPECT_LE(DiagnosedAfter(e->Log()) - planted_at, 2) << "sweeps from the key to the diagnosis: " << e->Log();

  // 12 sweeps with the diagnosis, the SMPs sent counted.
  const auto from = std::chrono::steady_clock::now();
  const double sweeps_before = Sweeps(*diagnosed);
  ASSERT_TRUE(e->WaitFor([&](const Scrape& x) { return Sweeps(x) >= sweeps_before + 12; }, seconds(60)).has_value());
  const auto to = std::chrono::steady_clock::now();
  bool ok = false;
  sim_->Console("PerformanceSet \"ib-leaf01\"[2] PortCounters.SymbolErrorCounter=55", &ok);
  ASSERT_TRUE(ok);
  const auto later = e->WaitFor(
      [&](const Scrape& x) {
        return x.Value("infiniband_switch_port_symbol_error_total", {{"switch", "ib-leaf01"}, {"port", "2"}}) == 55;
      },
      seconds(60));
  ASSERT_TRUE(later.has_value()) << e->Log();
  EXPECT_TRUE(Blocked(*later));
  EXPECT_EQ(later->Find("infiniband_switch_info").size(), 2u);
  EXPECT_EQ(later->Find("infiniband_hca_info").size(), 2u);
  EXPECT_EQ(later->Find("infiniband_link_up").size(), links);
  // The symbol errors page as a bad cable (the PMA still reads them); nothing else does.
  ExpectNoPage(*later, "bad_cable");

  // The key lifted: the next probe sees SMPs answer, and the fabric is walked.
  const double walks = later->Value("infiniband_exporter_discoveries_total", {{"mode", "full"}}).value_or(0);
  ASSERT_TRUE(hw_->PlantMKey("all", 0, &error)) << error;
  const auto cleared = e->WaitFor(
      [&](const Scrape& x) {
        return !Blocked(x) && x.Value("infiniband_exporter_discoveries_total", {{"mode", "full"}}) > walks;
      },
      seconds(60));
  ASSERT_TRUE(cleared.has_value()) << e->Log();
  EXPECT_EQ(cleared->Find("infiniband_switch_info").size(), 2u);
  const std::string log = e->Log();
  e.reset();
  sim_->Console("PerformanceSet \"ib-leaf01\"[2] PortCounters.SymbolErrorCounter=0", nullptr);
  EXPECT_EQ(Count(log, kDiagnosis), 1u) << log;
  EXPECT_EQ(Count(log, "SMPs answer again"), 1u) << log;
  EXPECT_EQ(Count(log, "node left the fabric"), 0u) << log;
  // While diagnosed: no directed-route SMP, and LID-routed ones only as
  // probes (2 and 4 sweeps apart, and maybe the one 8 after: four LIDs at
  // most, one try each).
  const auto sent = SentBetween(tap, from, to);
  EXPECT_EQ(sent[0], 0u) << "directed-route SMPs";
  EXPECT_LE(sent[1], 12u) << "LID-routed SMPs in 12 sweeps";
  RemoveTree(dir);
}

// The preflight on the protected fabric, line by line: without the key it
// fails and says to give it; with it, it passes.
TEST_F(MKeyTest, ThePreflightFailsWithoutTheKeyAndPassesWithIt) {
  const Env env = hw_->ClientEnv(*sim_);
  const Doctor without = RunDoctor(env, {});
  ASSERT_EQ(without.lines.size(), 7u) << without.all;
  EXPECT_TRUE(Starts(without.lines[0], "ok    local port: ibsim0 port 1, LID ")) << without.all;
  EXPECT_EQ(without.lines[1], "ok    p_key: index 0 = 0xffff, the full-member default") << without.all;
  EXPECT_EQ(without.lines[2],
            "fail  smps: this host's NodeInfo (SMP) goes unanswered while its PMA (GMP) answers: the fabric looks "
            "M_Key-protected; give the SM's M_Key with --ib.m-key-file=FILE");
  EXPECT_EQ(without.lines[3], "fail  walk: not possible: this host's NodeInfo does not answer");
  EXPECT_TRUE(Starts(without.lines[4], "fail  sample: SMPs answer at 0 of 2, GMPs at 2: this host (LID "))
      << without.lines[4];
  EXPECT_TRUE(Starts(without.lines[5], "ok    traps: the SA at LID ")) << without.lines[5];
  EXPECT_EQ(without.lines[6], "fail  verdict: fail (the exporter would not see the fabric from here)");
  EXPECT_EQ(without.exit_code, 1);

  const std::string dir = MakeTempDir("mkey-doctor");
  WriteFile(dir + "/m_key", std::string(kKeyHex) + "\n");
  const Doctor with = RunDoctor(env, {"--ib.m-key-file=" + dir + "/m_key"});
  ASSERT_EQ(with.lines.size(), 9u) << with.all;
  EXPECT_EQ(with.lines[2], "ok    smps: this host's NodeInfo answers (M_Key given)");
  EXPECT_TRUE(Starts(with.lines[3], "ok    walk: 2 switches, 2 CAs in ")) << with.lines[3];
  EXPECT_EQ(with.lines[4], "ok    sample: SMPs answer at 3 of 3, GMPs at 3");
  EXPECT_TRUE(Starts(with.lines[6],
                     "info  capabilities: PortCountersExtended at 4 of 4 PMAs (4 asked), every counter "
                     "in one GMP at 2; vendor SMPs (AdaptiveRoutingInfo) answered by 2 of 2 NVIDIA "
                     "switches; RS-FEC counters are not read by this version"))
      << with.lines[6];
  // Eight ports read: six of Quantum-2 switches (one GMP each, CapabilityMask2
  // bit 1), two of ConnectX-7 hosts (two each); a thirtieth of the PortInfo
  // reads and LID checks a sweep (10 s sweeps, 5 min rotation: at least one
  // each), and the local PortInfo;
  // the tables: per switch SwitchInfo and one LFT block, a P_Key block per
  // up port; a ClassPortInfo per node.
  EXPECT_TRUE(Starts(with.lines[7], "info  mad load: a sweep: ~10 GMPs and ~3 SMPs; a full walk: ")) << with.lines[7];
  EXPECT_NE(with.lines[7].find(" SMPs for the graph, ~12 for the tables and 4 GMPs"), std::string::npos)
      << with.lines[7];
  EXPECT_EQ(with.lines[8], "ok    verdict: pass");
  EXPECT_EQ(with.exit_code, 0);
  EXPECT_EQ(with.all.find("5eed0000c0ffee01"), std::string::npos) << "the key is not printed";
  RemoveTree(dir);
}

// P_Keys: this host's port holds the limited default P_Key at index 0 and
// the full one at index 1 (as a port made a full member by partitions.conf
// next to the limited default may); cn0002 is a limited member only, the
// switches full members. Set in ibsim (smp_set: its SMPs and the sysfs
// umad2sim makes show them) and in the personalities (which drop a PMA
// request whose P_Key the target does not share, IBTA 10.9.3).
class PKeyTest : public HardwareSuite<PKeyTest> {
 protected:
  static void SetUpTestSuite() {
    StartHardware(kTwoSwitchNet, "ib-*  quantum-2\ncn*  connectx-7\n");
    if (::testing::Test::HasFatalFailure()) return;
    std::string error;
    const auto set = [&](const std::string& node, std::vector<std::string> pkeys) {
      std::vector<std::string> argv{IBFABRIC_SMP_SET_BIN, "pkeys", std::to_string(hw_->LidOf(node)), "1"};
      argv.insert(argv.end(), pkeys.begin(), pkeys.end());
      const CommandResult r = sim_->Tool(argv);
      ASSERT_EQ(r.exit_code, 0) << r.err;
    };
    set("cn0001", {"0x7fff", "0xffff"});
    set("cn0002", {"0x7fff"});
    ASSERT_TRUE(hw_->PlantPKeys("cn0001", {0x7fff, 0xffff}, &error)) << error;
    ASSERT_TRUE(hw_->PlantPKeys("cn0002", {0x7fff}, &error)) << error;
    ASSERT_TRUE(hw_->PlantPKeys("ib-leaf01", {0xffff}, &error)) << error;
    ASSERT_TRUE(hw_->PlantPKeys("ib-spine01", {0xffff}, &error)) << error;
  }
};

// The found full-member index reads every PMA, the limited host's too; a
// symbol error planted there arrives on its port.
TEST_F(PKeyTest, GmpsLeaveOnTheFullMemberDefaultPKeyAndReachALimitedHost) {
  bool ok = false;
  sim_->Console("PerformanceSet \"cn0002\"[1] PortCounters.SymbolErrorCounter=31", &ok);
  ASSERT_TRUE(ok);
  std::string error;
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=250ms"}, &error, {}, hw_->PreloadEnv());
  ASSERT_NE(e, nullptr) << error;
  const auto s = e->WaitForSweeps(3, seconds(60));
  ASSERT_TRUE(s.has_value()) << e->Log();
  EXPECT_NE(e->Log().find("pkey_index=1 pkey=0xffff"), std::string::npos) << e->Log();
  EXPECT_EQ(Count(e->Log(), "limited default P_Key"), 0u) << e->Log();
  EXPECT_EQ(s->Value("infiniband_hca_port_symbol_error_total", {{"hca", "cn0002"}, {"port", "1"}}), 31);
  EXPECT_EQ(s->Value("infiniband_exporter_sweep_ports", {{"result", "failed"}}), 0);
  sim_->Console("PerformanceSet \"cn0002\"[1] PortCounters.SymbolErrorCounter=0", nullptr);
}

// --ib.pkey-index=0, the limited entry: one warning at start that says
// what will not answer and what to do; the limited host's PMA does not
// answer, the switches' and this host's own (a full member) do. (No
// retries: each sweep waits out the limited host's timeouts.)
TEST_F(PKeyTest, TheLimitedEntryWarnsAndLeavesTheLimitedHostUnread) {
  std::string error;
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=250ms", "--ib.pkey-index=0", "--mad.retries=0"}, &error, {},
                                  hw_->PreloadEnv());
  ASSERT_NE(e, nullptr) << error;
  const auto s = e->WaitForSweeps(3, seconds(60));
  ASSERT_TRUE(s.has_value()) << e->Log();
  const std::string log = e->Log();
  EXPECT_NE(log.find("pkey_index=0 pkey=0x7fff"), std::string::npos) << log;
  EXPECT_EQ(Count(log, "limited default P_Key"), 1u) << log;
  EXPECT_NE(log.find("--ib.pkey-index"), std::string::npos) << log;
  EXPECT_FALSE(s->Value("infiniband_hca_port_symbol_error_total", {{"hca", "cn0002"}, {"port", "1"}}).has_value());
  EXPECT_TRUE(s->Value("infiniband_hca_port_symbol_error_total", {{"hca", "cn0001"}, {"port", "1"}}).has_value());
  EXPECT_TRUE(
      s->Value("infiniband_switch_port_symbol_error_total", {{"switch", "ib-leaf01"}, {"port", "2"}}).has_value());
  EXPECT_GE(s->Value("infiniband_exporter_sweep_ports", {{"result", "failed"}}).value_or(0), 1);
}

// The preflight, line by line: on the found full-member index it passes;
// pointed at the limited entry it is degraded and says what fails and why.
// (No SM runs here: traps are not asked.)
TEST_F(PKeyTest, ThePreflightSaysWhatTheLimitedEntryCannotReach) {
  const Env env = hw_->ClientEnv(*sim_);
  const Doctor found = RunDoctor(env, {"--sm.no-traps"});
  ASSERT_EQ(found.lines.size(), 9u) << found.all;
  EXPECT_EQ(found.lines[1], "ok    p_key: index 1 = 0xffff, the full-member default");
  EXPECT_EQ(found.lines[4], "ok    sample: SMPs answer at 3 of 3, GMPs at 3");
  EXPECT_EQ(found.lines[5], "info  traps: not asked (--sm.no-traps): changes are found by the sweeps' rotation");
  EXPECT_EQ(found.lines[8], "ok    verdict: pass");
  EXPECT_EQ(found.exit_code, 0);

  const Doctor limited = RunDoctor(env, {"--sm.no-traps", "--ib.pkey-index=0"});
  ASSERT_EQ(limited.lines.size(), 9u) << limited.all;
  EXPECT_EQ(limited.lines[1],
            "warn  p_key: index 0 = 0x7fff, a limited member: the PMAs of other limited members will not answer, each "
            "request raises a Bad P_Key trap at the SM, and their traps do not reach this exporter "
            "(--ib.pkey-index=1 is 0xffff)");
  EXPECT_EQ(limited.lines[4],
            "warn  sample: SMPs answer at 3 of 3, GMPs at 2: the PMA of cn0002 (LID " +
                std::to_string(hw_->LidOf("cn0002")) +
                ") does not answer on the limited P_Key 0x7fff: a limited member drops it (see p_key)");
  EXPECT_EQ(limited.lines[8], "warn  verdict: degraded (2 warnings)");
  EXPECT_EQ(limited.exit_code, 3);
}

// The SM reprograms this port's P_Key table while the exporter runs: the
// full-member entry moves from index 1 to 0, and index 1 becomes the
// limited one (the kernel's sysfs shows the new table; umad2sim's copy of
// it is rewritten here as the kernel would). Within a recheck (10 s) GMPs
// follow the entry, one line says so, and the limited host, dropping the
// limited P_Key, is read again.
TEST_F(PKeyTest, WhenTheSmMovesTheFullMemberEntryGmpsFollowIt) {
  bool ok = false;
  sim_->Console("PerformanceSet \"cn0002\"[1] PortCounters.SymbolErrorCounter=5", &ok);
  ASSERT_TRUE(ok);
  std::string error;
  const auto reprogram = [&](const std::vector<std::string>& table, const std::vector<std::uint16_t>& planted) {
    std::vector<std::string> argv{IBFABRIC_SMP_SET_BIN, "pkeys", std::to_string(hw_->LidOf("cn0001")), "1"};
    argv.insert(argv.end(), table.begin(), table.end());
    const CommandResult r = sim_->Tool(argv);
    std::string why;
    const bool planted_ok = hw_->PlantPKeys("cn0001", planted, &why);
    return r.exit_code == 0 && planted_ok;
  };
  // Whatever happens below, the suite's table comes back.
  struct Restore {
    std::function<void()> undo;
    ~Restore() { undo(); }
  } restore{[&] {
    if (!reprogram({"0x7fff", "0xffff"}, {0x7fff, 0xffff})) ADD_FAILURE() << "the P_Key table was not restored";
    sim_->Console("PerformanceSet \"cn0002\"[1] PortCounters.SymbolErrorCounter=0", nullptr);
  }};
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=250ms", "--mad.retries=0", "--ib.pkey-recheck=1s"}, &error,
                                  {}, hw_->PreloadEnv());
  ASSERT_NE(e, nullptr) << error;
  const Labels cn0002{{"hca", "cn0002"}, {"port", "1"}};
  ASSERT_TRUE(
      e->WaitFor([&](const Scrape& s) { return s.Value("infiniband_hca_port_symbol_error_total", cn0002) == 5; },
                 seconds(30))
          .has_value())
      << e->Log();
  ASSERT_TRUE(reprogram({"0xffff", "0x7fff"}, {0xffff, 0x7fff}));
  const pid_t pid = e->process().pid();
  char cwd[4096] = {};
  ASSERT_GT(readlink(("/proc/" + std::to_string(pid) + "/cwd").c_str(), cwd, sizeof cwd - 1), 0);
  const std::string pkeys =
      std::string(cwd) + "/sys-" + std::to_string(pid) + "/sys/class/infiniband/ibsim0/ports/1/pkeys/";
  ASSERT_EQ(ReadFile(pkeys + "1"), "0xffff\n");
  // Each entry replaced whole, as the kernel's file is never half-written.
  const auto set = [&](const std::string& entry, const std::string& value) {
    return WriteFile(pkeys + entry + ".new", value) &&
           std::rename((pkeys + entry + ".new").c_str(), (pkeys + entry).c_str()) == 0;
  };
  ASSERT_TRUE(set("0", "0xffff\n"));
  ASSERT_TRUE(set("1", "0x7fff\n"));
  sim_->Console("PerformanceSet \"cn0002\"[1] PortCounters.SymbolErrorCounter=9", &ok);
  ASSERT_TRUE(ok);
  const auto read = e->WaitFor(
      [&](const Scrape& s) { return s.Value("infiniband_hca_port_symbol_error_total", cn0002) == 9; }, seconds(30));
  EXPECT_TRUE(read.has_value()) << e->Log();
  EXPECT_EQ(Count(e->Log(),
                  "the P_Key table of ibsim0 port 1 changed: GMPs now leave on index 0 = 0xffff (index 1, used "
                  "until now, holds 0x7fff)"),
            1u)
      << e->Log();
}

// An index outside the table, or of an empty entry: one line, non-zero exit.
TEST_F(PKeyTest, AnIndexTheTableDoesNotHaveIsOneLineAndAnError) {
  Env env = hw_->ClientEnv(*sim_);
  const CommandResult r =
      RunCommand({ExporterBinary(), "--ib.pkey-index=7", "--once"}, env, std::chrono::milliseconds(20000));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--ib.pkey-index=7: the port's P_Key table has"), std::string::npos) << r.err;
  EXPECT_EQ(Count(r.err, "\n"), 1u) << r.err;
}

// A multi-plane ConnectX-8 host (tests/tools/split_smi.cc over the
// personalities): its port's parent device mlx5_0 has no QP0 (IsSMDisabled)
// and the SMI sub-device smi0 shares its port GUID. SMPs must leave from
// smi0 and GMPs from mlx5_0: the model fails a send through an agent the
// device did not register, so a mix-up reads nothing.
class MultiPlaneTest : public HardwareSuite<MultiPlaneTest> {
 protected:
  static void SetUpTestSuite() { StartHardware(kTwoSwitchNet, "ib-*  quantum-3\ncn*  connectx-8\n"); }
  static Env Split(const std::string& smi = "smi0") { return SplitSmiEnv(*sim_, hw_, "mlx5_0", smi); }
};

// Found by itself (no flag), the pair discovers and sweeps the whole
// fabric: a symbol error planted on the far host arrives on its port, and
// the metrics say which device each kind of MAD leaves from.
TEST_F(MultiPlaneTest, SmpsLeaveFromTheSmiSubDeviceAndTheFabricIsSwept) {
  bool ok = false;
  sim_->Console("PerformanceSet \"cn0002\"[1] PortCounters.SymbolErrorCounter=23", &ok);
  ASSERT_TRUE(ok);
  std::string error;
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=250ms"}, &error, {}, Split());
  ASSERT_NE(e, nullptr) << error;
  const auto s = e->WaitForSweeps(3, seconds(60));
  ASSERT_TRUE(s.has_value()) << e->Log();
  const std::string log = e->Log();
  EXPECT_NE(log.find("ca=mlx5_0 port=1 smi_ca=smi0 smi_port=1"), std::string::npos) << log;
  EXPECT_EQ(Count(log, "cannot register"), 0u) << log;
  EXPECT_EQ(s->Value("infiniband_hca_port_symbol_error_total", {{"hca", "cn0002"}, {"port", "1"}}), 23);
  EXPECT_EQ(s->Find("infiniband_switch_info").size(), 2u);
  EXPECT_EQ(s->Value("infiniband_link_up", {{"node", "ib-spine01"}, {"port", "2"}}), 1);
  EXPECT_EQ(s->Value("infiniband_exporter_sweep_ports", {{"result", "failed"}}), 0);
  EXPECT_EQ(s->Value("infiniband_exporter_local_port_info",
                     {{"ca", "mlx5_0"}, {"port", "1"}, {"smi_ca", "smi0"}, {"smi_port", "1"}}),
            1);
  for (const char* c : {"smp_lid", "smp_directed", "perf", "sa"}) {
    EXPECT_EQ(s->Value("infiniband_exporter_mad_agent_registered", {{"class", c}}), 1) << c;
  }
  sim_->Console("PerformanceSet \"cn0002\"[1] PortCounters.SymbolErrorCounter=0", nullptr);
}

// --ib.ca names either device (and --ib.port its port): the other one of
// the pair is found from the port GUID; one cycle reads the fabric.
TEST_F(MultiPlaneTest, IbCaNamesEitherDevice) {
  for (const std::string ca : {"mlx5_0", "smi0"}) {
    const CommandResult r = RunCommand({ExporterBinary(), "--ib.ca=" + ca, "--ib.port=1", "--once"}, Split(),
                                       std::chrono::milliseconds(30000));
    ASSERT_EQ(r.exit_code, 0) << ca << ": " << r.err;
    EXPECT_NE(r.err.find("ca=mlx5_0 port=1 smi_ca=smi0 smi_port=1"), std::string::npos) << ca << ": " << r.err;
    const Scrape s = Scrape::Parse(r.out);
    EXPECT_EQ(s.Find("infiniband_switch_info").size(), 2u) << ca;
    EXPECT_TRUE(s.Value("infiniband_hca_port_symbol_error_total", {{"hca", "cn0002"}, {"port", "1"}}).has_value())
        << ca;
  }
}

// No SMI sub-device created: the SMP agents cannot register on the parent.
// One line each naming the device and the class, and the exporter runs
// with what it has (serving, saying which agents are missing), without
// the local-port recovery probing a port whose QP0 will not come; the
// preflight fails on it.
TEST_F(MultiPlaneTest, WithoutTheSmiSubDeviceEachMissingAgentIsOneLine) {
  std::string error;
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=250ms", "--discovery.interval=1s"}, &error, {}, Split(""));
  ASSERT_NE(e, nullptr) << error;
  std::this_thread::sleep_for(seconds(4));
  int status = 0;
  const Scrape s = Scrape::Parse(e->Get("/metrics", &status));
  ASSERT_EQ(status, 200);
  const std::string log = e->Log();
  EXPECT_EQ(Count(log,
                  "cannot register the directed-route SMP agent (class 0x81) on mlx5_0 port 1: Protocol not "
                  "supported (the port says IsSMDisabled and no SMI sub-device shares its port GUID)"),
            1u)
      << log;
  EXPECT_EQ(Count(log, "cannot register the LID-routed SMP agent (class 0x01) on mlx5_0 port 1"), 1u) << log;
  EXPECT_EQ(Count(log, "cannot register"), 2u) << log;
  EXPECT_EQ(Count(log, "local port still does not answer"), 0u) << log;
  EXPECT_EQ(s.Value("infiniband_exporter_mad_agent_registered", {{"class", "smp_directed"}}), 0);
  EXPECT_EQ(s.Value("infiniband_exporter_mad_agent_registered", {{"class", "smp_lid"}}), 0);
  EXPECT_EQ(s.Value("infiniband_exporter_mad_agent_registered", {{"class", "perf"}}), 1);
  EXPECT_EQ(s.Value("infiniband_exporter_local_port_info", {{"ca", "mlx5_0"}, {"smi_ca", "mlx5_0"}}), 1);

  const Doctor d = RunDoctor(Split(""), {"--sm.no-traps"});
  EXPECT_EQ(d.exit_code, 1) << d.all;
  ASSERT_GE(d.lines.size(), 4u) << d.all;
  EXPECT_TRUE(Starts(d.lines[1], "warn  mad agents: cannot register the LID-routed SMP agent (class 0x01) on mlx5_0"))
      << d.all;
  EXPECT_TRUE(Starts(d.lines[2], "fail  mad agents: cannot register the directed-route SMP agent")) << d.all;
  EXPECT_EQ(d.lines.back(), "fail  verdict: fail (the exporter would not see the fabric from here)") << d.all;
}

// An SMI sub-device with a port per plane (three here): each plane is a
// fabric of its own, read at once, SMPs from its own SMI port and GMPs
// from the parent, every series labelled with its plane. In the test bed
// each plane is ibsim's one port (the same simulated network three times),
// so a counter planted on the far host arrives on each plane's series;
// the model routes each answer to the descriptor whose agent asked, as the
// kernel does, so a pipeline reading another's answers would see nothing.
// Naming a plane's port reads that plane alone.
TEST_F(MultiPlaneTest, EveryPlaneIsReadAsAFabricOfItsOwn) {
  bool ok = false;
  sim_->Console("PerformanceSet \"cn0002\"[1] PortCounters.SymbolErrorCounter=23", &ok);
  ASSERT_TRUE(ok);
  Env env = Split();
  env["SPLIT_SMI_PLANES"] = "3";
  env["SPLIT_SMI_TRACE"] = "1";
  std::string error;
  auto e = ExporterProcess::Start(*sim_, {"--sweep.interval=250ms"}, &error, {}, env);
  ASSERT_NE(e, nullptr) << error;
  // Each plane swept twice (a sweeps_total series per plane).
  const auto s = e->WaitFor(
      [](const Scrape& x) {
        const auto sweeps = x.Find("infiniband_exporter_sweeps_total");
        return sweeps.size() == 3 &&
               std::all_of(sweeps.begin(), sweeps.end(), [](const Sample& y) { return y.value >= 2; });
      },
      seconds(60));
  ASSERT_TRUE(s.has_value()) << e->Log();
  const std::string log = e->Log();
  for (int plane = 1; plane <= 3; ++plane) {
    const std::string n = std::to_string(plane);
    EXPECT_EQ(Count(log, "split_smi: opened smi0 port " + n + "\n"), 1u) << log;
    EXPECT_NE(log.find("ca=mlx5_0 port=1 smi_ca=smi0 smi_port=" + n + " plane=" + n), std::string::npos) << log;
    EXPECT_EQ(s->Value("infiniband_hca_port_symbol_error_total", {{"hca", "cn0002"}, {"port", "1"}, {"plane", n}}), 23)
        << n;
    EXPECT_EQ(s->Find("infiniband_switch_info", {{"plane", n}}).size(), 2u) << n;
    EXPECT_EQ(s->Value("infiniband_exporter_local_port_info", {{"smi_port", n}, {"plane", n}}), 1) << n;
    EXPECT_EQ(s->Value("infiniband_exporter_mad_agent_registered", {{"class", "perf"}, {"plane", n}}), 1) << n;
  }
  EXPECT_EQ(Count(log, "split_smi: opened mlx5_0 port 1\n"), 3u) << log;
  // The SA's Reports go to one agent of the parent's port: the first
  // plane's; the others say so and subscribe to nothing.
  EXPECT_EQ(Count(log, "receives the SA's Reports"), 2u) << log;
  EXPECT_EQ(Count(log,
                  "receives the SA's Reports (another plane of this HCA, or another process): no trap "
                  "subscription here, changes are found by the sweeps\" subnet_prefix=0xfe80000000000000 plane=1"),
            0u)
      << log;
  EXPECT_EQ(Count(log, "cannot register"), 0u) << log;
  EXPECT_EQ(s->Find("infiniband_switch_info").size(), 6u);
  // Every series names its plane (and its subnet prefix).
  for (const Sample& x : s->samples()) {
    ASSERT_TRUE(x.labels.count("plane") && x.labels.count("subnet_prefix")) << x.name;
  }
  EXPECT_EQ(s->Sum("infiniband_exporter_sweep_ports", {{"result", "failed"}}), 0);

  // The JSON routes answer for one plane at a time, named as the list says.
  int status = 0;
  const auto fabrics = nlohmann::json::parse(e->Get("/api/v1/fabrics", &status));
  ASSERT_EQ(status, 200);
  ASSERT_EQ(fabrics["fabrics"].size(), 3u) << fabrics.dump();
  const std::string prefix = fabrics["fabrics"][0]["subnet_prefix"];
  for (int i = 0; i < 3; ++i) {
    const auto& f = fabrics["fabrics"][i];
    EXPECT_EQ(f["plane"], i + 1) << f.dump();
    EXPECT_EQ(f["name"], prefix + "/plane" + std::to_string(i + 1)) << f.dump();
    EXPECT_EQ(f["smi_port"], i + 1) << f.dump();
  }
  const auto topology = nlohmann::json::parse(e->Get("/api/v1/topology?fabric=" + prefix + "/plane2", &status));
  EXPECT_EQ(status, 200);
  int switches = 0;
  for (const auto& n : topology["nodes"]) switches += n["type"] == "switch" ? 1 : 0;
  EXPECT_EQ(switches, 2) << topology.dump().substr(0, 400);
  e->Get("/api/v1/topology?fabric=" + prefix, &status);
  EXPECT_EQ(status, 404);
  e.reset();
  sim_->Console("PerformanceSet \"cn0002\"[1] PortCounters.SymbolErrorCounter=0", nullptr);

  // Naming the parent reads every plane too.
  const CommandResult parent =
      RunCommand({ExporterBinary(), "--ib.ca=mlx5_0", "--once"}, env, std::chrono::milliseconds(30000));
  ASSERT_EQ(parent.exit_code, 0) << parent.err;
  EXPECT_EQ(Scrape::Parse(parent.out).Find("infiniband_switch_info").size(), 6u) << parent.err;
  EXPECT_EQ(Count(parent.err, "split_smi: opened smi0 port"), 3u) << parent.err;

  const CommandResult second =
      RunCommand({ExporterBinary(), "--ib.ca=smi0", "--ib.port=2", "--once"}, env, std::chrono::milliseconds(30000));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("ca=mlx5_0 port=1 smi_ca=smi0 smi_port=2 plane=2"), std::string::npos) << second.err;
  EXPECT_EQ(Count(second.err, "split_smi: opened smi0 port 2"), 1u) << second.err;
  EXPECT_EQ(Count(second.err, "split_smi: opened smi0 port 1"), 0u) << second.err;
  const Scrape lone = Scrape::Parse(second.out);
  EXPECT_EQ(lone.Find("infiniband_switch_info").size(), 2u);
  EXPECT_EQ(lone.Find("infiniband_switch_info", {{"plane", "2"}}).size(), 2u) << "a lone plane still names itself";

  const Doctor d = RunDoctor(env, {"--sm.no-traps"});
  ASSERT_GE(d.lines.size(), 3u) << d.all;
  EXPECT_EQ(d.lines[2],
            "info  planes: plane 1 of 3 of a multi-plane HCA; the exporter reads each plane as a fabric of its own "
            "(label plane), this examines this one; another with --ib.ca=smi0 --ib.port=N")
      << d.all;
  EXPECT_EQ(d.exit_code, 0) << d.all;
}

// The preflight on the pair: where each kind of MAD leaves from, and a pass.
TEST_F(MultiPlaneTest, ThePreflightSaysWhereSmpsLeaveFrom) {
  const Doctor d = RunDoctor(Split(), {"--sm.no-traps"});
  ASSERT_GE(d.lines.size(), 3u) << d.all;
  EXPECT_EQ(d.lines[1],
            "info  management: SMPs leave from smi0 port 1 (the SMI sub-device sharing the port's GUID), GMPs from "
            "mlx5_0 port 1")
      << d.all;
  EXPECT_EQ(d.lines.back(), "ok    verdict: pass") << d.all;
  EXPECT_EQ(d.exit_code, 0) << d.all;
}

}  // namespace
}  // namespace ibfabric::testbed
