// Each collector on its own (collectors/*_collector.h), made by the
// registry's factory and run as the scheduler runs it, over the fake
// transport on a small in-memory fabric: what it sends, what it publishes
// and what its Render names, exactly.

#include <gtest/gtest.h>

#include <map>

#include "collectors/metrics.h"
#include "collectors/registry.h"
#include "collectors/xmit_wait_tick_collector.h"
#include "tests/testbed/prom_text.h"
#include "tests/unit/collector_bed.h"
#include "tests/unit/fake_fabric.h"
#include "topology/discovery.h"
#include "transport/codec.h"
#include "transport/mad.h"

namespace ibfabric::collectors {
namespace {

using std::chrono::milliseconds;
using testbed::Scrape;

constexpr int kPma = static_cast<int>(transport::MgmtClass::kPerformance);

TEST(CollectorsTest, FabricSendsNothingAndNamesEveryNodeAndCable) {
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

TEST(CollectorsTest, CapabilitiesAsksEachNodeOnceAndAgainOnlyWhatDidNotAnswer) {
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
  EXPECT_EQ(sent.at({kPma, transport::pma_attr::kClassPortInfo}), 8 + 1) << "8 nodes, the mute one twice";
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
  EXPECT_EQ(b.Sent().at({kPma, transport::pma_attr::kClassPortInfo}), 2);
}

TEST(CollectorsTest, FatTreeSendsNothingRanksTheTiersAndFindsALeafToLeafCable) {
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

TEST(CollectorsTest, PortCountersReadsEveryPortInTheSweepsBatchAndPutsAPlantedCounterOnItsPortOnly) {
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
  EXPECT_EQ(sent.at({kPma, transport::pma_attr::kPortCounters}), 16);
  EXPECT_EQ(sent.at({kPma, transport::pma_attr::kPortCountersExtended}), 16);
  const Scrape s = b.Render();
  const auto errors = s.Find("infiniband_hca_port_symbol_error_total");
  ASSERT_EQ(errors.size(), 4u);
  for (const auto& e : errors) {
    EXPECT_EQ(e.value, e.labels.at("hca") == "cn0002 mlx5_0" ? 42 : 0) << e.labels.at("hca");
  }
  for (const auto& e : s.Find("infiniband_switch_port_symbol_error_total")) EXPECT_EQ(e.value, 0);
}

TEST(CollectorsTest, LinkHealthJudgesACableFromBothEndsAndRaisesOneAlertOnIt) {
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
    EXPECT_TRUE(what.first == kPma || lid_check) << what.first << "/" << what.second;
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

TEST(CollectorsTest, RoutingAndPartitionsAskEachSwitchAndAskAgainWhatDidNotAnswer) {
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

TEST(CollectorsTest, XmitWaitTickAsksOnlyNodesThatWaitedOnceEachAndAgainWhatFailedLater) {
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
    const auto it = sent.find({kPma, kPsc});
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
      if (h.mgmt_class == kPma && h.attr_id == kPsc) ++n;
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
TEST(CollectorsTest, XmitWaitTickTurnsEachPortsCountsIntoSecondsOnceItsTickIsSettled) {
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

  // Across a re-exec the seconds go on from where they were.
  const auto* part = b.parts.by_collector.Get<XmitWaitTicks>("xmit_wait_tick");
  ASSERT_NE(part, nullptr);
  CollectorOptions again;
  again.restored_waits = *part->waits;
  auto restarted = FindCollector("xmit_wait_tick")->make(again);
  restarted->Publish(&b.parts);
  EXPECT_DOUBLE_EQ(seconds(b.Render(), "switch", leaf, 5), 6000 * 8e-9);
}

// An HCA whose PMA does not claim PortXmitWait (as mlx5's ClassPortInfo)
// but fills it: read by the value, zero included once seen.
TEST(CollectorsTest, PortXmitWaitOfAPmaThatDoesNotClaimItIsReadByItsValue) {
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
