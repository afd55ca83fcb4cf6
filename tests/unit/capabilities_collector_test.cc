// collectors/capabilities_collector.cc, made by the registry's factory and run
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

TEST(CapabilitiesCollectorTest, CapabilitiesAsksEachNodeOnceAndAgainOnlyWhatDidNotAnswer) {
  int mute = -1;
  Bed b([&](Bed& x) {
    mute = x.hosts[3];
    x.f.SetCapabilities(mute, 0, 0, /*answers=*/false);
    x.f.SetCapabilities(x.hosts[2], transport::pma_cap::kExtWidth);
  });
  b.Sent();
  auto c = b.Make("capabilities");
  const Outcome first = b.Run(*c);
  const auto sent = b.Sent();
  EXPECT_EQ(sent.at({kPmaClass, transport::pma_attr::kClassPortInfo}), 8 + 1) << "8 nodes, the mute one twice";
  EXPECT_TRUE(first.again) << "the mute node is asked again at the next sweep";
  EXPECT_EQ(b.parts.pma->size(), 7u);
  EXPECT_EQ(b.parts.pma->count(b.f.Guid(mute)), 0u);
  const Scrape s = b.Render();
  EXPECT_EQ(s.Find("infiniband_node_pma_capabilities_info").size(), 7u);
  EXPECT_EQ(s.Find("infiniband_node_pma_capabilities_info", {{"guid", topology::FormatGuid(b.f.Guid(b.hosts[2]))}})[0]
                .labels.at("capability_mask"),
            "0x0200");
  // The run the scheduler makes at the next sweep (Outcome::again) asks
  // only the node that did not answer.
  c->Update(b.MakeCycle(Trigger::kSweep));
  EXPECT_EQ(b.Sent().at({kPmaClass, transport::pma_attr::kClassPortInfo}), 2);
}

}  // namespace
}  // namespace ibfabric::collectors
