// collectors/xmit_wait_tick_collector.cc, made by the registry's factory and run
// as the scheduler runs it (tests/unit/collector_bed.h), over the fake
// transport on a small in-memory fabric: what it sends, what it publishes
// and what its Render names, exactly.

#include "collectors/xmit_wait_tick_collector.h"

#include <gtest/gtest.h>

#include <map>

#include "collectors/registry.h"
#include "tests/testbed/prom_text.h"
#include "tests/unit/collector_bed.h"
#include "tests/unit/fake_fabric.h"
#include "transport/codec.h"
#include "transport/mad.h"

namespace ibfabric::collectors {
namespace {

using testbed::Scrape;

TEST(XmitWaitTickCollectorTest, XmitWaitTickAsksOnlyNodesThatWaitedOnceEachAndAgainWhatFailedLater) {
  // leaf0 reports Tick 7 (a Quantum-family switch); cn0003 answers
  // "unsupported attribute" (the fake's default, as ibsim's PMA has no
  // PortSamplesControl); spine1 answers with another error status.
  Bed b([](Bed& x) {
    x.f.SetSampleTick(x.leaves[0], 7);
    x.f.SetSampleTick(x.spines[1], 31, /*status=*/0x001C);
    x.f.SetSampleTick(x.spines[0], 31);  // never waits: never asked
  });
  auto caps = b.Make("capabilities");
  b.Run(*caps);
  auto counters = b.Make("port_counters");
  auto ticks = b.Make("xmit_wait_tick");
  constexpr int kPsc = transport::pma_attr::kPortSamplesControl;
  auto psc = [&] {
    const auto sent = b.Sent();
    const auto it = sent.find({kPmaClass, kPsc});
    return it == sent.end() ? 0 : it->second;
  };
  b.Sent();
  // A quiet fabric: no tick is asked, and no family.
  for (int sweep = 0; sweep < 2; ++sweep) b.SweepWith({counters.get(), ticks.get()});
  EXPECT_EQ(psc(), 0);
  EXPECT_TRUE(b.Render().Find("infiniband_node_pma_samples_tick").empty());

  transport::PortCounters wait;
  wait.xmit_wait = 5000;
  b.f.SetCounters(b.leaves[0], 5, wait);  // an uplink
  b.f.SetCounters(b.leaves[0], 6, wait);  // another: the node is asked once
  b.f.SetCounters(b.hosts[2], 1, wait);
  b.f.SetCounters(b.spines[1], 1, wait);
  b.SweepWith({counters.get(), ticks.get()});  // the counters see the waits
  EXPECT_EQ(psc(), 0) << "asked from the sweep after the one that read the waits";
  b.SweepWith({counters.get(), ticks.get()});
  EXPECT_EQ(psc(), 3) << "leaf0, cn0003 and spine1, one each";
  const auto* part = b.parts.by_collector.Get<XmitWaitTicks>("xmit_wait_tick");
  ASSERT_NE(part, nullptr);
  EXPECT_EQ(part->tick, (std::map<std::uint64_t, std::uint8_t>{{b.f.Guid(b.leaves[0]), 7}}));
  EXPECT_EQ(part->unsupported, (std::set<std::uint64_t>{b.f.Guid(b.hosts[2])}));
  const Scrape s = b.Render();
  const auto series = s.Find("infiniband_node_pma_samples_tick");
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].labels.at("guid"), topology::FormatGuid(b.f.Guid(b.leaves[0])));
  EXPECT_EQ(series[0].value, 7);

  // Only spine1, which failed, is asked again: 1, 2, 4 and 8 sweeps later,
  // then never; each ask is one MAD to spine1.
  std::vector<int> asked_in;
  for (int sweep = 1; sweep <= 20; ++sweep) {
    const std::size_t before = b.port.sent_mads().size();
    b.SweepWith({counters.get(), ticks.get()});
    int n = 0;
    for (std::size_t i = before; i < b.port.sent_mads().size(); ++i) {
      const auto h = transport::DecodeHeader(b.port.sent_mads()[i]);
      if (h.mgmt_class == kPmaClass && h.attr_id == kPsc) ++n;
    }
    if (n > 0) asked_in.push_back(sweep);
    EXPECT_LE(n, 1) << "sweep " << sweep;
  }
  EXPECT_EQ(asked_in, (std::vector<int>{1, 3, 7, 15}));
  // spine1 still unknown: no series, no unsupported mark.
  part = b.parts.by_collector.Get<XmitWaitTicks>("xmit_wait_tick");
  EXPECT_EQ(part->tick.count(b.f.Guid(b.spines[1])), 0u);
  EXPECT_EQ(part->unsupported.count(b.f.Guid(b.spines[1])), 0u);
}

// PortXmitWait into seconds: each port's counts since the exporter first
// read it, once its node's Tick is settled, at the length the Tick and the
// port's speed give (the fake's links are 4xQDR: one symbol time is 1 ns;
// its devices are of no known family, so a count is Tick + 1 symbol times
// of a lane).

// PortXmitWait into seconds: each port's counts since the exporter first
// read it, once its node's Tick is settled, at the length the Tick and the
// port's speed give (the fake's links are 4xQDR: one symbol time is 1 ns;
// its devices are of no known family, so a count is Tick + 1 symbol times
// of a lane).
TEST(XmitWaitTickCollectorTest, XmitWaitTickTurnsEachPortsCountsIntoSecondsOnceItsTickIsSettled) {
  Bed b([](Bed& x) { x.f.SetSampleTick(x.leaves[0], 7); });
  auto caps = b.Make("capabilities");
  b.Run(*caps);
  auto counters = b.Make("port_counters");
  auto ticks = b.Make("xmit_wait_tick");
  const std::string leaf = "leaf0", host = "cn0003 mlx5_0";
  auto seconds = [&](const Scrape& s, const std::string& role, const std::string& node, int port) {
    return s
        .Value("infiniband_" + role + "_port_transmit_wait_seconds_total",
               {{role, node}, {"port", std::to_string(port)}})
        .value_or(-1);
  };
  b.SweepWith({counters.get(), ticks.get()});
  Scrape s = b.Render();
  EXPECT_EQ(seconds(s, "switch", leaf, 5), 0) << "a port that never waited has waited 0 s";
  EXPECT_EQ(s.Find("infiniband_switch_port_transmit_wait_seconds_total").size(),
            s.Find("infiniband_switch_port_transmit_wait_total").size())
      << "one series per port that reports PortXmitWait";

  transport::PortCounters wait;
  wait.xmit_wait = 5000;
  b.f.SetCounters(b.leaves[0], 5, wait);
  b.f.SetCounters(b.hosts[2], 1, wait);  // its PMA: "unsupported attribute" for PortSamplesControl
  b.SweepWith({counters.get(), ticks.get()});
  s = b.Render();
  EXPECT_EQ(seconds(s, "switch", leaf, 5), 0) << "not converted before its Tick is read";
  EXPECT_EQ(seconds(s, "hca", host, 1), 0);
  EXPECT_TRUE(s.Find("infiniband_node_transmit_wait_unit_info").empty()) << "nothing converted yet";
  b.SweepWith({counters.get(), ticks.get()});  // the Ticks are asked and answered
  s = b.Render();
  EXPECT_DOUBLE_EQ(seconds(s, "switch", leaf, 5), 5000 * 8e-9) << "Tick 7: 8 symbol times a count";
  EXPECT_DOUBLE_EQ(seconds(s, "hca", host, 1), 5000 * 1e-9) << "no Tick to read: one symbol time a count";
  const auto unit =
      s.Find("infiniband_node_transmit_wait_unit_info", {{"guid", topology::FormatGuid(b.f.Guid(b.leaves[0]))}});
  ASSERT_EQ(unit.size(), 1u);
  EXPECT_EQ(unit[0].labels.at("family"), "ibta");
  EXPECT_EQ(unit[0].labels.at("counting"), "lane");
  EXPECT_EQ(unit[0].labels.at("tick_source"), "device");
  EXPECT_EQ(s.Find("infiniband_node_transmit_wait_unit_info", {{"tick_source", "minimum"}}).size(), 1u);

  wait.xmit_wait = 6000;  // 1000 more
  b.f.SetCounters(b.leaves[0], 5, wait);
  b.SweepWith({counters.get(), ticks.get()});
  EXPECT_DOUBLE_EQ(seconds(b.Render(), "switch", leaf, 5), 6000 * 8e-9);

  // What a port counted before the exporter first read it stays in the raw
  // total, not in the seconds (the series never jumps by a port's past);
  // the alerts config's multiplier overrides every device's Tick + 1, from
  // the first sweep that reads new counts.
  Bed o([](Bed& x) { x.f.SetSampleTick(x.leaves[0], 7); });
  CollectorOptions options;
  options.alerts.xmit_wait_tick_multiplier = 4;
  auto ocaps = o.Make("capabilities");
  o.Run(*ocaps);
  auto ocounters = o.Make("port_counters");
  auto oticks = o.Make("xmit_wait_tick", options);
  wait.xmit_wait = 5000;
  o.f.SetCounters(o.leaves[0], 5, wait);
  o.SweepWith({ocounters.get(), oticks.get()});
  EXPECT_EQ(seconds(o.Render(), "switch", leaf, 5), 0);
  wait.xmit_wait = 7000;
  o.f.SetCounters(o.leaves[0], 5, wait);
  o.SweepWith({ocounters.get(), oticks.get()});
  EXPECT_DOUBLE_EQ(seconds(o.Render(), "switch", leaf, 5), 2000 * 4e-9);

  // Across a re-exec (what it saved, through the state's JSON text) the
  // seconds go on from where they were.
  const auto saved = ticks->Saved();
  ASSERT_TRUE(saved);
  CollectorOptions again;
  again.restored["xmit_wait_tick"] = nlohmann::json::parse(saved->dump());
  auto restarted = FindCollector("xmit_wait_tick")->make(again);
  restarted->Publish(&b.parts);
  EXPECT_DOUBLE_EQ(seconds(b.Render(), "switch", leaf, 5), 6000 * 8e-9);
  // What it cannot read: it starts afresh (no series until a port waits).
  CollectorOptions garbled;
  garbled.restored["xmit_wait_tick"] = nlohmann::json::parse(R"([["x"]])");
  auto fresh = FindCollector("xmit_wait_tick")->make(garbled);
  fresh->Publish(&b.parts);
  EXPECT_LT(seconds(b.Render(), "switch", leaf, 5), 0);
}

// An HCA whose PMA does not claim PortXmitWait (as mlx5's ClassPortInfo)
// but fills it: read by the value, zero included once seen.

}  // namespace
}  // namespace ibfabric::collectors
