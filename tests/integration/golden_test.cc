// The exporter's whole exposition on a small simulated fabric, diffed
// against tests/golden/small_fabric.prom: every metric name, label set and
// stable value is a contract (dashboards and alert rules depend on them).
// Values that move on their own (data and packet counters grow with the
// MADs themselves, timings, LIDs an SM hands out) are masked.
//
//   IBFABRIC_UPDATE_GOLDEN=1 build/tests/integration_tests --gtest_filter=Golden*
// rewrites the file; review the diff before committing it.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <sstream>

#include "tests/testbed/exporter_process.h"
#include "tests/testbed/fat_tree.h"
#include "tests/testbed/sim_fabric.h"

#ifndef IBFABRIC_SOURCE_DIR
#error "IBFABRIC_SOURCE_DIR must be defined by the build"
#endif

namespace ibfabric::testbed {
namespace {

// Families whose values are not the fabric's planted state.
bool Volatile(const std::string& name) {
  static const std::regex kVolatile(
      "^infiniband_(switch|hca)_port_(transmit|receive)_(data_bytes|packets)_total$|"
      "^infiniband_(switch|hca)_port_(unicast|multicast)_(transmit|receive)_packets_total$|"
      "^infiniband_(switch|hca)_collect_duration_seconds$|^infiniband_exporter_last_execution$|"
      "^infiniband_exporter_(collector_duration_seconds|collector_seconds_total|discovery_phase_seconds|"
      "sweep_duration_seconds|"
      "last_successful_sweep_timestamp_seconds|node_last_success_timestamp_seconds|mads_sent_total|"
      "mads_ignored_total|mad_retries_total|mad_failures_total|mad_busy_total|mad_round_trip_seconds|"
      "mad_timeout_seconds|last_run_mads)$");
  return std::regex_match(name, kVolatile);
}

// One line a sample, sorted; LIDs and volatile values masked.
std::string Normalize(const std::string& exposition) {
  static const std::regex kLid("(lid)=\"[0-9]+\"");
  std::vector<std::string> lines;
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    line = std::regex_replace(line, kLid, "$1=\"L\"");
    const std::string name = line.substr(0, line.find_first_of("{ "));
    if (Volatile(name)) line = line.substr(0, line.rfind(' ')) + " <volatile>";
    lines.push_back(line);
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TEST(GoldenTest, ExpositionOfASmallFabric) {
  const FatTree tree = FatTree::Generate(Spec(2, 2, 2, 1, 4));
  SimOptions o;
  o.attach = tree.Host(1);
  std::string error;
  auto sim = SimFabric::Start(tree.NetFile(), o, &error);
  ASSERT_NE(sim, nullptr) << error;
  bool ok = false;
  sim->Console("PerformanceSet \"ib-leaf02\"[3] PortCounters.SymbolErrorCounter=12", &ok);
  ASSERT_TRUE(ok);
  sim->Console("PerformanceSet \"cn0004\"[1] PortCounters.PortRcvErrors=5", &ok);
  ASSERT_TRUE(ok);
  auto e = ExporterProcess::Start(*sim, {"--sweep.interval=1h"}, &error);
  ASSERT_NE(e, nullptr) << error;
  ASSERT_TRUE(e->WaitForSweeps(1, std::chrono::seconds(60)));
  // A full walk's tables are read once its first sweep is published, and
  // published again then (exporter/poller.h RunDeferred): the exposition
  // is the one after them. Scraped between the two publications (a busy
  // machine), the routing, partition and adaptive routing families were
  // missing.
  ASSERT_TRUE(e->WaitFor(
      [](const Scrape& x) {
        return x.Value("infiniband_routing_tables", {{"source", "switch"}}).value_or(0) > 0 &&
               x.Value("infiniband_partition_tables", {{"source", "port"}}).value_or(0) > 0;
      },
      std::chrono::seconds(60)));
  const std::string got = Normalize(e->Get("/metrics"));

  const std::string path = std::string(IBFABRIC_SOURCE_DIR) + "/tests/golden/small_fabric.prom";
  if (std::getenv("IBFABRIC_UPDATE_GOLDEN") != nullptr) {
    ASSERT_TRUE(WriteFile(path, got)) << path;
    GTEST_SKIP() << "rewrote " << path;
  }
  const std::string want = ReadFile(path);
  ASSERT_FALSE(want.empty()) << path << " is missing; run with IBFABRIC_UPDATE_GOLDEN=1";
  if (got != want) {
    const TempDir tmp("golden");
    const std::string& dir = tmp.path();
    WriteFile(dir + "/got.prom", got);
    const auto diff = RunCommand({"diff", "-u", path, dir + "/got.prom"}, {}, std::chrono::seconds(10));
    ADD_FAILURE() << "the exposition differs from " << path << ":\n" << diff.out;
  }
}

}  // namespace
}  // namespace ibfabric::testbed
