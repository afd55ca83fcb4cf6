#pragma once
// What the suites on hardware personalities share (personality_test.cc,
// protected_fabric_test.cc): a fabric of device models of their own, and
// the rate a port reports.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testbed/exporter_process.h"
#include "tests/testbed/personality.h"
#include "tests/testbed/prom_text.h"
#include "tests/testbed/sim_fabric.h"

namespace ibfabric::testbed {

// Two switches joined by two cables, a host on each of two ports of the
// leaf: ib-spine01[1,2] - ib-leaf01[5,6], ib-leaf01[1] - cn0001 (where
// the suites attach), ib-leaf01[2] - cn0002.
inline constexpr const char* kTwoSwitchNet = R"(Switch 8 "ib-spine01"
[1] "ib-leaf01"[5]
[2] "ib-leaf01"[6]

Switch 8 "ib-leaf01"
[1] "cn0001"[1]
[2] "cn0002"[1]
[5] "ib-spine01"[1]
[6] "ib-spine01"[2]

Hca 1 "cn0001"
[1] "ib-leaf01"[1]

Hca 1 "cn0002"
[1] "ib-leaf01"[2]
)";

// The rate a port reports, in Gb/s (-1: none).
inline double RateGbps(const Scrape& s, const std::string& role, const std::string& node, int port) {
  const auto v =
      s.Value("infiniband_" + role + "_port_rate_bytes_per_second", {{role, node}, {"port", std::to_string(port)}});
  return v ? *v * 8 / 1e9 : -1;
}

// A suite on a fabric of hardware personalities of its own, shared by its
// tests: ibsim, the models, and the suite's exporter if it starts one.
template <typename Suite>
class HardwareSuite : public ::testing::Test {
 protected:
  // ibsim on `net` attached at cn0001, each node the model `personalities`
  // gives it, the LIDs resolved.
  static void StartHardware(const std::string& net, const std::string& personalities) {
    std::string error;
    SimOptions o;
    o.attach = "cn0001";
    sim_ = SimFabric::Start(net, o, &error).release();
    ASSERT_NE(sim_, nullptr) << error;
    std::vector<PersonalityRule> rules;
    ASSERT_TRUE(ParsePersonalityFile(personalities, &rules, &error)) << error;
    hw_ = HardwareFabric::Make(net, rules, sim_->dir(), &error).release();
    ASSERT_NE(hw_, nullptr) << error;
    ASSERT_TRUE(hw_->ResolveLids(*sim_, &error)) << error;
  }
  static void TearDownTestSuite() {
    delete exporter_;
    delete hw_;
    delete sim_;
    exporter_ = nullptr;
    hw_ = nullptr;
    sim_ = nullptr;
  }
  static inline SimFabric* sim_ = nullptr;
  static inline HardwareFabric* hw_ = nullptr;
  static inline ExporterProcess* exporter_ = nullptr;
};

}  // namespace ibfabric::testbed
