// collectors/fat_tree_collector.cc, made by the registry's factory and run
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

TEST(FatTreeCollectorTest, FatTreeSendsNothingRanksTheTiersAndFindsALeafToLeafCable) {
  Bed clean;
  clean.Sent();
  auto c = clean.Make("fat_tree");
  EXPECT_TRUE(clean.Run(*c).ok);
  EXPECT_TRUE(clean.Sent().empty());
  ASSERT_NE(clean.parts.topology, nullptr);
  EXPECT_TRUE(clean.parts.topology->findings.empty());
  ASSERT_NE(clean.parts.hosts, nullptr);
  EXPECT_EQ(clean.parts.hosts->hosts.size(), 4u);
  const Scrape s = clean.Render();
  EXPECT_EQ(s.Find("infiniband_topology_finding").size(), 0u);

  Bed miswired([](Bed& x) { x.f.Connect(x.leaves[0], 8, x.leaves[1], 8); });
  auto m = miswired.Make("fat_tree");
  m->Update(miswired.MakeCycle(Trigger::kFullWalk));
  m->Publish(&miswired.parts);
  ASSERT_NE(miswired.parts.topology, nullptr);
  const Scrape w = miswired.Render();
  EXPECT_GE(w.Find("infiniband_topology_finding").size(), 1u);
  bool leaf_link = false;
  for (const auto& f : miswired.parts.topology->findings) {
    leaf_link = leaf_link || (f.a && f.b && f.a->node_guid == miswired.f.Guid(miswired.leaves[0]) &&
                              f.b->node_guid == miswired.f.Guid(miswired.leaves[1]));
    leaf_link = leaf_link || (f.a && f.b && f.b->node_guid == miswired.f.Guid(miswired.leaves[0]) &&
                              f.a->node_guid == miswired.f.Guid(miswired.leaves[1]));
  }
  EXPECT_TRUE(leaf_link) << "a finding names both ends of the leaf-to-leaf cable";
}

}  // namespace
}  // namespace ibfabric::collectors
