// README command 1 as a newcomer runs it: scripts/demo.sh (its build step
// left out: this build is the one it would make) brings up the simulated
// fabric with faults that keep happening, and within a minute of the
// exporter's start /api/v1/alerts has every kind of cable problem, each on
// the cable the script names, and nothing else.

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/testbed/exporter_process.h"
#include "tests/testbed/process.h"

namespace ibfabric::testbed {
namespace {

using nlohmann::json;

// "a[p] - b[q]", the two ends in name order.
std::string CableOf(const json& alert) {
  std::string ends[2];
  for (int k = 0; k < 2; ++k) {
    const json& e = alert.at("ends").at(k);
    ends[k] = e.at("node").get<std::string>() + "[" + std::to_string(e.at("port").get<int>()) + "]";
  }
  return ends[0] < ends[1] ? ends[0] + " - " + ends[1] : ends[1] + " - " + ends[0];
}

TEST(DemoTest, EveryKindOfCableProblemIsAlertedWithinAMinute) {
  const std::string dir = MakeTempDir("demo");
  ASSERT_FALSE(dir.empty());
  const std::string exporter = ExporterBinary();
  const std::string build = exporter.substr(0, exporter.rfind("/exporter/"));
  const int port = FreeLocalPort();
  SpawnOptions o;
  o.argv = {"bash",
            std::string(IBFABRIC_SOURCE_DIR) + "/scripts/demo.sh",
            "--no-build",
            "--build",
            build,
            "--dir",
            dir + "/state",
            "--listen",
            "127.0.0.1:" + std::to_string(port)};
  o.stdout_path = dir + "/demo.log";
  std::string error;
  auto demo = Process::Spawn(o, &error);
  ASSERT_NE(demo, nullptr) << error;

  // The default 8 leaves of 8 hosts and 4 spines: a leaf's first uplink is
  // port 9, its spare port 17 (demo.sh).
  const std::map<std::string, std::string> want{
      {"bad_cable", "cn0011[1] - ib-leaf02[3]"},         {"congestion", "ib-leaf03[9] - ib-spine01[5]"},
      {"flapping_link", "ib-leaf01[9] - ib-spine01[1]"}, {"degraded_link", "ib-leaf02[9] - ib-spine01[3]"},
      {"miswiring", "ib-leaf01[17] - ib-leaf02[17]"},    {"cable_degrading", "cn0025[1] - ib-leaf04[1]"},
  };
  std::map<std::string, std::string> got;
  std::vector<std::string> victims;  // of the congestion alert's tree
  std::string body;
  auto alerts = [&] {
    got.clear();
    const auto r =
        RunCommand({"curl", "-s", "--max-time", "5", "http://127.0.0.1:" + std::to_string(port) + "/api/v1/alerts"}, {},
                   std::chrono::seconds(10));
    body = r.out;
    const json j = json::parse(body, nullptr, false);
    if (!j.is_object() || !j.contains("active")) return false;
    victims.clear();
    for (const json& a : j.at("active")) {
      got[a.at("cause").get<std::string>()] = CableOf(a);
      if (a.contains("congestion")) {
        for (const json& v : a["congestion"]["victims"]) {
          victims.push_back(v.at("node").get<std::string>() + "[" + std::to_string(v.at("port").get<int>()) + "]");
        }
      }
    }
    // The HCA waiting to send behind the congested uplink is its victim.
    return got == want && victims == std::vector<std::string>{"cn0017[1]"};
  };
  // The demo starts ibsim and two subnet managers before the exporter (a
  // few seconds), and the exporter sweeps every 5 s: a minute after it
  // answers, every fault is alerted.
  EXPECT_TRUE(WaitUntil(
      [&] {
        return RunCommand({"curl", "-s", "-o", "/dev/null", "--max-time", "2",
                           "http://127.0.0.1:" + std::to_string(port) + "/healthz"},
                          {}, std::chrono::seconds(5))
                   .exit_code == 0;
      },
      std::chrono::seconds(120), std::chrono::milliseconds(200)))
      << ReadFile(dir + "/demo.log");
  EXPECT_TRUE(WaitUntil(alerts, std::chrono::seconds(60), std::chrono::milliseconds(500)))
      << body << "\n"
      << ReadFile(dir + "/demo.log");
  for (const auto& [cause, cable] : want) EXPECT_EQ(got[cause], cable) << cause;
  EXPECT_EQ(victims, std::vector<std::string>{"cn0017[1]"});

  demo->Stop(std::chrono::milliseconds(10000));
  // Everything it started is gone with it: ibsim's socket is free again.
  const char* name = std::getenv("IBSIM_SOCKNAME");
  const std::string ctl = "@" + std::string(name && *name ? name : "sim") + ":ctl@";
  EXPECT_TRUE(WaitUntil([&] { return ReadFile("/proc/net/unix").find(ctl) == std::string::npos; },
                        std::chrono::seconds(10), std::chrono::milliseconds(100)));
  RemoveTree(dir);
}

}  // namespace
}  // namespace ibfabric::testbed
