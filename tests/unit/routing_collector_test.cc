// collectors/routing_collector.cc, made by the registry's factory and run
// as the scheduler runs it (tests/unit/collector_bed.h), over the fake
// transport on a small in-memory fabric: what it sends, what it publishes
// and what its Render names, exactly.

#include <gtest/gtest.h>

#include <map>

#include "collectors/registry.h"
#include "tests/testbed/prom_text.h"
#include "tests/unit/collector_bed.h"
#include "tests/unit/fake_fabric.h"
#include "transport/mad.h"

namespace ibfabric::collectors {
namespace {

TEST(RoutingCollectorTest, RoutingAndPartitionsAskEachSwitchAndAskAgainWhatDidNotAnswer) {
  // The in-memory fabric answers neither SwitchInfo nor P_KeyTable: each
  // collector says so, publishes no table and asks again at the next sweep.
  Bed b;
  auto tree = b.Make("fat_tree");
  b.Run(*tree);
  constexpr int kDr = static_cast<int>(transport::MgmtClass::kSubnDirectRoute);
  constexpr int kLidSmp = static_cast<int>(transport::MgmtClass::kSubnLidRouted);
  for (const char* name : {"routing", "partitions"}) {
    b.Sent();
    auto c = b.Make(name);
    const Outcome out = b.Run(*c);
    EXPECT_TRUE(out.again) << name;
    EXPECT_FALSE(out.problems.empty()) << name;
    int smps = 0;
    for (const auto& [what, n] : b.Sent()) {
      EXPECT_TRUE(what.first == kDr || what.first == kLidSmp) << name << " sends SMPs only";
      smps += n;
    }
    EXPECT_GT(smps, 0) << name;
  }
  EXPECT_TRUE(!b.parts.forwarding || b.parts.forwarding->empty()) << "no table read";
  const auto* partitions = b.parts.by_collector.Get<topology::PartitionAnalysis>("partitions");
  EXPECT_TRUE(!partitions || partitions->ports.empty()) << "no P_Key table read";
}

}  // namespace
}  // namespace ibfabric::collectors
