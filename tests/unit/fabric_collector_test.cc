// collectors/fabric_collector.cc, made by the registry's factory and run
// as the scheduler runs it (tests/unit/collector_bed.h), over the fake
// transport on a small in-memory fabric: what it sends, what it publishes
// and what its Render names, exactly.

#include <gtest/gtest.h>

#include <map>

#include "collectors/registry.h"
#include "tests/testbed/prom_text.h"
#include "tests/unit/collector_bed.h"
#include "tests/unit/fake_fabric.h"

namespace ibfabric::collectors {
namespace {

using testbed::Scrape;

TEST(FabricCollectorTest, FabricSendsNothingAndNamesEveryNodeAndCable) {
  Bed b;
  b.Sent();
  auto c = b.Make("fabric");
  EXPECT_TRUE(b.Run(*c).ok);
  EXPECT_TRUE(b.Sent().empty());
  const Scrape s = b.Render();
  EXPECT_EQ(s.Find("infiniband_switch_info").size(), 4u);
  EXPECT_EQ(s.Find("infiniband_hca_info").size(), 4u);
  EXPECT_EQ(s.Find("infiniband_hca_info", {{"hca", "cn0003 mlx5_0"}}).size(), 1u);
  // Each HCA's uplink is its leaf's port.
  const auto up = s.Find("infiniband_hca_uplink_info", {{"hca", "cn0003 mlx5_0"}});
  ASSERT_EQ(up.size(), 1u);
  EXPECT_EQ(up[0].labels.at("uplink"), "leaf1");
  EXPECT_EQ(up[0].labels.at("uplink_port"), "1");
}

}  // namespace
}  // namespace ibfabric::collectors
