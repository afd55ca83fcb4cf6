// The test bed itself against the real simulator: a generated fat tree with
// every planted fault kind loads in ibsim, and ibnetdiscover sees exactly
// the cables the generator meant; console verbs are accepted or rejected as
// ibsim does; the fixture leaves no process behind.

#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <regex>
#include <sstream>

#include "tests/testbed/exporter_process.h"
#include "tests/testbed/fat_tree.h"
#include "tests/testbed/process.h"
#include "tests/testbed/sim_fabric.h"

namespace ibfabric::testbed {
namespace {

struct Seen {
  Endpoint peer;
  std::string rate;
};

// Switch port -> far end and rate, from ibnetdiscover's output (node names
// from the NodeDescription comments).
std::map<Endpoint, Seen> SwitchLinks(const std::string& text) {
  std::map<std::string, std::string> guid_name;  // "S-..." / "H-..." -> description
  const std::regex header(R"re(^(?:Switch|Ca)\s+\d+\s+"([SH]-[0-9a-f]+)"\s+# "([^"]+)")re");
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, header)) guid_name[m[1]] = m[2];
  }
  std::map<Endpoint, Seen> out;
  const std::regex port(R"re(^\[(\d+)\]\S*\s+"([SH]-[0-9a-f]+)"\[(\d+)\].*\s(\d+x[A-Z]+)\s*$)re");
  std::string current;
  std::istringstream again(text);
  while (std::getline(again, line)) {
    std::smatch m;
    if (std::regex_search(line, m, header)) {
      current = line.rfind("Switch", 0) == 0 ? m[2].str() : "";
      continue;
    }
    if (!current.empty() && std::regex_search(line, m, port)) {
      out[{current, std::stoi(m[1])}] = {{guid_name[m[2]], std::stoi(m[3])}, m[4]};
    }
  }
  return out;
}

// The simulator on `t`, its clients attached at the first host.
std::unique_ptr<SimFabric> StartAt1(const FatTree& t, std::string* error) {
  SimOptions o;
  o.attach = t.Host(1);
  return SimFabric::Start(t.NetFile(), o, error);
}

TEST(TestbedTest, GeneratedFaultsAreWhatIbnetdiscoverSees) {
  FatTreeSpec s = Spec(4, 3, 4, 2, 12);
  const FatTree clean = FatTree::Generate(s);
  s.swaps = {{clean.LeafUplink(1, 1, 0), clean.LeafUplink(1, 2, 1)}};  // cables swapped between spines
  s.missing = {clean.LeafUplink(2, 3, 0)};
  s.leaf_links = {{3, 4}};
  s.degraded = {{clean.LeafUplink(4, 2, 1), "1xQDR"}, {clean.LeafHostPort(5), "4xSDR"}};
  const FatTree t = FatTree::Generate(s);

  std::string error;
  auto sim = StartAt1(t, &error);
  ASSERT_NE(sim, nullptr) << error;
  const auto d = sim->Tool({"ibnetdiscover"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  const auto seen = SwitchLinks(d.out);

  std::size_t expected = 0;
  for (const auto& sw : {t.leaves(), t.spines()}) {
    for (const auto& node : sw) {
      for (int p : t.CabledPorts(node)) {
        ++expected;
        const Endpoint here{node, p};
        auto it = seen.find(here);
        ASSERT_NE(it, seen.end()) << node << "[" << p << "] not seen by ibnetdiscover";
        EXPECT_EQ(it->second.peer, *t.Peer(here)) << node << "[" << p << "]";
        const auto rate = s.degraded.count(here)            ? s.degraded.at(here)
                          : s.degraded.count(*t.Peer(here)) ? s.degraded.at(*t.Peer(here))
                                                            : s.rate;
        EXPECT_EQ(it->second.rate, rate) << node << "[" << p << "]";
      }
    }
  }
  EXPECT_EQ(seen.size(), expected) << "ibnetdiscover sees cables the generator did not plant";
  // The faults themselves, spelled out.
  EXPECT_EQ(seen.at(clean.LeafUplink(1, 1, 0)).peer, clean.SpineDownlink(2, 1, 1));
  EXPECT_FALSE(seen.count(clean.LeafUplink(2, 3, 0)));
  EXPECT_EQ(seen.at({"ib-leaf03", 11}).peer, (Endpoint{"ib-leaf04", 11}));
  EXPECT_EQ(seen.at(clean.LeafUplink(4, 2, 1)).rate, "1xQDR");
}

TEST(TestbedTest, ConsoleVerbsAndCleanup) {
  const FatTree t = FatTree::Generate(FatTreeSpec{});
  std::string error;
  auto sim = StartAt1(t, &error);
  ASSERT_NE(sim, nullptr) << error;
  bool ok = false;
  for (const std::string cmd :
       {"PerformanceSet \"ib-leaf01\"[2] PortCounters.PortRcvErrors=5", "Unlink \"ib-leaf02\"[1]",
        "ReLink \"ib-leaf02\"[1]", "Error \"ib-leaf01\"[3] 0", "Baselid \"cn0002\"[1] 77"}) {
    sim->Console(cmd, &ok);
    EXPECT_TRUE(ok) << cmd;
  }
  sim->Console("NoSuchVerb", &ok);
  EXPECT_FALSE(ok);
  sim->Console("PerformanceSet \"nosuch\"[1] PortCounters.PortRcvErrors=1", &ok);
  EXPECT_FALSE(ok);

  std::string dir = sim->dir();
  ASSERT_TRUE(sim->Alive());
  sim.reset();
  const auto left = RunCommand({"pgrep", "-f", dir}, {}, std::chrono::seconds(5));
  EXPECT_NE(left.exit_code, 0) << "still running: " << left.out;
}

// The kernel's MAD timeouts for opensm (tests/tools/mad_timeouts.cc): a
// port that shows IsSM but whose client answers no SMInfo (an exporter
// started with SIM_SET_ISSM) holds the first sweep of an opensm on bare
// umad2sim for ever, the SMInfo it sent there outstanding; the test bed's
// opensm times that SMInfo out as the kernel would, says so in its log and
// brings the subnet up.
TEST(TestbedTest, OpensmTimesOutAnSmInfoNobodyAnswersAsTheKernelWould) {
  const FatTree t = FatTree::Generate(FatTreeSpec{});
  std::string error;
  auto sim = StartAt1(t, &error);
  ASSERT_NE(sim, nullptr) << error;
  // At a node of its own: ibsim takes one SM client a node.
  auto silent = ExporterProcess::Start(*sim, {"--sweep.interval=10s"}, &error, {},
                                       Env{{"SIM_SET_ISSM", "1"}, {"SIM_HOST", t.Host(3)}});
  ASSERT_NE(silent, nullptr) << error;

  const std::string bare_log = sim->dir() + "/opensm.bare.log";
  SpawnOptions bare;
  bare.argv = {"opensm", "-d2", "-f", bare_log};
  bare.env = sim->ClientEnv();
  bare.env["SIM_HOST"] = t.Host(2);
  bare.env["OSM_CACHE_DIR"] = sim->dir() + "/bare-cache";
  auto sm = Process::Spawn(bare, &error);
  ASSERT_NE(sm, nullptr) << error;
  EXPECT_FALSE(WaitUntil([&] { return ReadFile(bare_log).find("SUBNET UP") != std::string::npos; },
                         std::chrono::seconds(8), std::chrono::milliseconds(200)))
      << "bare umad2sim: the SMInfo to the silent port never comes back";
  sm->Signal(SIGKILL);
  sm.reset();
  sim->DisconnectDeadClients();

  SimFabric::SmOptions with;
  with.attach = t.Host(2);
  auto timed = sim->StartSubnetManager(with, &error);  // returns at SUBNET UP
  ASSERT_NE(timed, nullptr) << error;
  const std::string log = ReadFile(sim->dir() + "/opensm.resident.log");
  EXPECT_NE(log.find("Timeout while getting attribute 0x20 (SMInfo)"), std::string::npos) << log;
}

}  // namespace
}  // namespace ibfabric::testbed
