// collectors/link_health_collector.cc, made by the registry's factory and run
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

using testbed::Scrape;

TEST(LinkHealthCollectorTest, LinkHealthJudgesACableFromBothEndsAndRaisesOneAlertOnIt) {
  Bed b;
  CollectorOptions o;
  o.alerts.raise_after = 2;
  auto tree = b.Make("fat_tree");
  auto caps = b.Make("capabilities");
  b.Run(*tree);
  b.Run(*caps);
  auto counters = b.Make("port_counters");
  auto health = b.Make("link_health", o);
  b.Sent();
  transport::PortCounters pc;
  for (int sweep = 0; sweep < 4; ++sweep) {
    pc.symbol_error = static_cast<std::uint16_t>(1000 * sweep);  // far past 1 a second
    b.f.SetCounters(b.hosts[2], 1, pc);
    b.SweepWith({counters.get(), health.get()});
  }
  // The batch is the counters' and its LID checks': link_health adds nothing.
  constexpr int kLidSmp = static_cast<int>(transport::MgmtClass::kSubnLidRouted);
  for (const auto& [what, n] : b.Sent()) {
    const bool lid_check = what.first == kLidSmp && what.second == transport::smp_attr::kNodeInfo;
    EXPECT_TRUE(what.first == kPmaClass || lid_check) << what.first << "/" << what.second;
  }
  ASSERT_NE(b.parts.health, nullptr);
  ASSERT_EQ(b.parts.health->active.size(), 1u);
  const Alert& a = b.parts.health->active[0];
  EXPECT_EQ(a.cause, Cause::kBadCable);
  EXPECT_EQ(a.severity, Severity::kCritical);
  const std::set<std::uint64_t> ends{a.cable.a.node_guid, a.cable.b.node_guid};
  EXPECT_EQ(ends, (std::set<std::uint64_t>{b.f.Guid(b.hosts[2]), b.f.Guid(b.leaves[1])}));
  const Scrape s = b.Render();
  const auto active = s.Find("infiniband_alert_active", {{"cause", "bad_cable"}});
  ASSERT_EQ(active.size(), 1u);
  EXPECT_EQ(active[0].labels.at("remote_node") == "cn0003 mlx5_0" || active[0].labels.at("node") == "cn0003 mlx5_0",
            true);
}

}  // namespace
}  // namespace ibfabric::collectors
