// collectors/port_counters_collector.cc, made by the registry's factory and run
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

TEST(PortCountersCollectorTest, PortCountersReadsEveryPortInTheSweepsBatchAndPutsAPlantedCounterOnItsPortOnly) {
  int host = -1;
  Bed b([&](Bed& x) {
    host = x.hosts[1];
    transport::PortCounters pc;
    pc.symbol_error = 42;
    x.f.SetCounters(host, 1, pc);
  });
  auto caps = b.Make("capabilities");
  b.Run(*caps);
  b.Sent();
  auto c = b.Make("port_counters");
  EXPECT_TRUE(b.Run(*c).ok);
  const auto sent = b.Sent();
  // 4 HCA ports and 12 switch ports with a link: PortCounters and Extended each.
  EXPECT_EQ(sent.at({kPmaClass, transport::pma_attr::kPortCounters}), 16);
  EXPECT_EQ(sent.at({kPmaClass, transport::pma_attr::kPortCountersExtended}), 16);
  const Scrape s = b.Render();
  const auto errors = s.Find("infiniband_hca_port_symbol_error_total");
  ASSERT_EQ(errors.size(), 4u);
  for (const auto& e : errors) {
    EXPECT_EQ(e.value, e.labels.at("hca") == "cn0002 mlx5_0" ? 42 : 0) << e.labels.at("hca");
  }
  for (const auto& e : s.Find("infiniband_switch_port_symbol_error_total")) EXPECT_EQ(e.value, 0);
}

// An HCA whose PMA does not claim PortXmitWait (as mlx5's ClassPortInfo)
// but fills it: read by the value, zero included once seen.
TEST(PortCountersCollectorTest, PortXmitWaitOfAPmaThatDoesNotClaimItIsReadByItsValue) {
  Bed b([](Bed& x) { x.f.SetCapabilities(x.hosts[2], transport::pma_cap::kExtWidth); });
  auto caps = b.Make("capabilities");
  b.Run(*caps);
  auto counters = b.Make("port_counters");
  const std::string host = "cn0003 mlx5_0";
  auto waits = [&](const Scrape& s) {
    return s.Find("infiniband_hca_port_transmit_wait_total", {{"hca", host}, {"port", "1"}});
  };
  b.Run(*counters);
  EXPECT_TRUE(waits(b.Render()).empty()) << "0 from a PMA that does not claim it: not known to be there";
  transport::PortCounters wait;
  wait.xmit_wait = 700;
  b.f.SetCounters(b.hosts[2], 1, wait);
  b.Run(*counters);
  auto w = waits(b.Render());
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].value, 700);
  // Cleared to 0 (by another tool): still read, the total kept.
  b.f.SetCounters(b.hosts[2], 1, {});
  b.Run(*counters);
  wait.xmit_wait = 50;
  b.f.SetCounters(b.hosts[2], 1, wait);
  b.Run(*counters);
  w = waits(b.Render());
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].value, 750);
}

}  // namespace
}  // namespace ibfabric::collectors
