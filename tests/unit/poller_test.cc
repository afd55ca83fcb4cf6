// The scheduler's cycle (exporter/poller.h) over the fake transport: what
// makes it re-walk part of the fabric (a port newly not answering, a
// LinkDownedCounter that moved) or walk all of it (a LID answering with
// another GUID), and that a collector turned off sends none of its MADs
// and renders none of its families. The drop-in families for
// treydock/SckyzO infiniband_exporter users: PortRcvErrorDetails read only
// where it can have moved, HCA series under the port GUID, each device's
// collection health.

#include "exporter/poller.h"

#include <gtest/gtest.h>

#include <map>

#include "collectors/common/log.h"
#include "collectors/framework/table_retry.h"
#include "collectors/registry.h"
#include "exporter/gzip.h"
#include "exporter/snapshot_holder.h"
#include "tests/testbed/prom_text.h"
#include "tests/unit/fake_fabric.h"
#include "transport/codec.h"
#include "transport/mad_engine.h"

namespace ibfabric {
namespace {

using std::chrono::milliseconds;

// Two spines, two leaves, two hosts on each leaf; the exporter on the first host.
struct Bed {
  testing::FakeFabric f;
  std::vector<int> leaves, hosts;
  transport::testing::FakeMadPort port;
  transport::MadEngine engine;
  collectors::Logger log{collectors::LogLevel::kError};
  exporter::SnapshotHolder holder;
  std::unique_ptr<exporter::Poller> poller;

  explicit Bed(std::optional<std::vector<std::string>> collectors = std::nullopt)
      : port(Build(), {std::chrono::microseconds(0), 0}), engine(port, testing::QuickEngine()) {
    exporter::PollerOptions o;
    o.fabric.sweep_interval = milliseconds(10);
    o.fabric.sweep_rotation = milliseconds(10);  // every PortInfo and every LID's owner each sweep
    o.fabric.subscribe_traps = false;
    o.collectors = std::move(collectors);
    poller = std::make_unique<exporter::Poller>(engine, o, holder, log);
  }
  transport::testing::FakeMadPort::Responder Build() {
    const testing::SmallTree t =
        testing::BuildSmallTree(f, [](int i) { return "h" + std::to_string(i / 2) + std::to_string(i % 2); });
    leaves = t.leaves;
    hosts = t.hosts;
    return f.Responder(hosts[0], 1);
  }
  std::shared_ptr<const collectors::Snapshot> Cycle() {
    poller->Cycle();
    return holder.Get();
  }
  // MADs sent so far, by (management class, attribute).
  std::map<std::pair<int, int>, int> Sent() const {
    std::map<std::pair<int, int>, int> out;
    for (const auto& m : port.sent_mads()) {
      const auto h = transport::DecodeHeader(m);
      ++out[{h.mgmt_class, h.attr_id}];
    }
    return out;
  }
};

// A walk, then a sweep that finds nothing new: the baseline of every case.
void Settle(Bed& b) {
  auto s = b.Cycle();
  ASSERT_EQ(s->discoveries, 1u);
  ASSERT_EQ(s->fabric->ca_count(), 4u);
  s = b.Cycle();
  ASSERT_EQ(s->discoveries, 1u);
  ASSERT_EQ(s->rewalks, 0u);
}

TEST(PollerTest, APortNewlyNotAnsweringIsRewalked) {
  Bed b;
  Settle(b);
  b.f.SetSilent(b.hosts[3], true);
  auto s = b.Cycle();
  EXPECT_EQ(s->rewalks, 1u);
  EXPECT_EQ(s->discoveries, 1u);  // a re-walk of its leaf port, not a full walk
  EXPECT_TRUE(s->node_health->at(b.f.Guid(b.hosts[3])).stale);
  // Still silent: asked again 1, 2, 4 sweeps later, not every sweep.
  for (int i = 0; i < 6; ++i) s = b.Cycle();
  EXPECT_GE(s->rewalks, 2u);
  EXPECT_LE(s->rewalks, 4u);
}

TEST(PollerTest, ALinkDownedCounterThatMovedIsRewalked) {
  Bed b;
  Settle(b);
  transport::PortCounters c;
  c.link_downed = 1;
  b.f.SetCounters(b.hosts[2], 1, c);
  auto s = b.Cycle();
  EXPECT_EQ(s->rewalks, 1u);
  EXPECT_EQ(s->discoveries, 1u);
  const auto ld = collectors::Index(collectors::Counter::kLinkDowned);
  EXPECT_EQ(s->ports->at({b.f.Guid(b.hosts[2]), 1}).Total(ld), 1u);
  s = b.Cycle();  // counted once, re-walked once
  EXPECT_EQ(s->rewalks, 1u);
}

// Whether LinkDownedCounter moved is decided once, by the counter store's
// rule: a counter another tool cleared to 0 did not move (no flap, no
// re-walk, the total unchanged); cleared and then up by one, it moved once.
TEST(PollerTest, ALinkDownedCounterClearedElsewhereIsNoFlapUnlessItCountsAgain) {
  Bed b;
  transport::PortCounters c;
  c.link_downed = 3;
  b.f.SetCounters(b.hosts[2], 1, c);
  Settle(b);
  const auto ld = collectors::Index(collectors::Counter::kLinkDowned);
  const topology::PortRef port{b.f.Guid(b.hosts[2]), 1};
  ASSERT_EQ(b.Cycle()->ports->at(port).Total(ld), 3u);
  c.link_downed = 0;  // perfquery -R on the host
  b.f.SetCounters(b.hosts[2], 1, c);
  auto s = b.Cycle();
  EXPECT_EQ(s->rewalks, 0u);
  EXPECT_EQ(s->ports->at(port).Total(ld), 3u);
  c.link_downed = 1;
  b.f.SetCounters(b.hosts[2], 1, c);
  s = b.Cycle();
  EXPECT_EQ(s->rewalks, 1u);
  EXPECT_EQ(s->ports->at(port).Total(ld), 4u);
}

TEST(PollerTest, ALidAnsweringWithAnotherGuidWalksEverything) {
  Bed b;
  Settle(b);
  // Two hosts trade LIDs (an SM restart handing them out anew).
  b.f.SetCaLid(b.hosts[1], 1, 7);
  b.f.SetCaLid(b.hosts[3], 1, 5);
  auto s = b.Cycle();
  EXPECT_GE(s->lid_moves, 1u);
  EXPECT_EQ(s->discoveries, 1u);  // the next cycle walks
  s = b.Cycle();
  EXPECT_EQ(s->discoveries, 2u);
  const topology::Node* moved = s->fabric->FindNode(b.f.Guid(b.hosts[1]));
  ASSERT_NE(moved, nullptr);
  EXPECT_EQ(moved->lid, 7);
}

// No other node answers (a hung fabric: the exporter's own HCA still
// answers its own PortInfo and counters; or its own HCA dropping every
// MAD): it cannot tell the fabric from itself, so it calls no node stale;
// its own stale sweeps are the news. One node silent among answering ones
// is stale (APortNewlyNotAnsweringIsRewalked).
TEST(PollerTest, AnExporterNothingAnswersCallsNoNodeStale) {
  Bed b;
  Settle(b);
  for (int n = 0; n < b.f.node_count(); ++n) b.f.SetSilent(n, n != b.hosts[0]);
  auto s = b.Cycle();
  for (const auto& [guid, h] : *s->node_health) EXPECT_FALSE(h.stale) << "hung: " << std::hex << guid;
  const auto success = s->last_success;
  b.f.SetSilent(b.hosts[0], true);
  s = b.Cycle();
  for (const auto& [guid, h] : *s->node_health) EXPECT_FALSE(h.stale) << "all silent: " << std::hex << guid;
  EXPECT_EQ(s->last_success, success);  // no counter answered
  // The fabric answers again, but for one host: that one is stale.
  for (int n = 0; n < b.f.node_count(); ++n) b.f.SetSilent(n, n == b.hosts[3]);
  s = b.Cycle();
  for (const auto& [guid, h] : *s->node_health) {
    EXPECT_EQ(h.stale, guid == b.f.Guid(b.hosts[3])) << std::hex << guid;
  }
  EXPECT_GT(s->last_success, success);
}

bool HasFamily(const std::string& exposition, const std::string& family) {
  return exposition.find("\n# TYPE " + family + " ") != std::string::npos ||
         exposition.rfind("# TYPE " + family + " ", 0) == 0;
}

TEST(PollerTest, ADisabledCollectorSendsNoMadAndRendersNoFamily) {
  using transport::MgmtClass;
  const auto pma = [](int attr) { return std::pair{static_cast<int>(MgmtClass::kPerformance), attr}; };
  const auto smp = [](int attr) { return std::pair{static_cast<int>(MgmtClass::kSubnLidRouted), attr}; };
  // A port that waited to send, so that xmit_wait_tick has a node to ask.
  const auto waiting = [](Bed& b) {
    transport::PortCounters wait;
    wait.xmit_wait = 100;
    b.f.SetCounters(b.leaves[0], 1, wait);
    b.f.SetSampleTick(b.leaves[0], 7);
  };
  // Everything on: the reads of each collector are there.
  Bed all;
  waiting(all);
  Settle(all);
  all.Cycle();  // the tick is asked in the sweep after the one that saw the wait
  auto sent = all.Sent();
  EXPECT_EQ(sent[pma(transport::pma_attr::kPortSamplesControl)], 1);
  EXPECT_GT(sent[pma(transport::pma_attr::kPortCounters)], 0);
  EXPECT_GT(sent[pma(transport::pma_attr::kClassPortInfo)], 0);
  EXPECT_GT(sent[smp(transport::smp_attr::kSwitchInfo)], 0);
  EXPECT_GT(sent[smp(transport::smp_attr::kPKeyTable)], 0);
  std::string text = exporter::Gunzip(all.holder.Get()->exposition_gz);
  EXPECT_TRUE(HasFamily(text, "infiniband_hca_port_receive_errors_total")) << text;
  EXPECT_TRUE(HasFamily(text, "infiniband_node_pma_capabilities_info"));
  EXPECT_TRUE(HasFamily(text, "infiniband_routing_down_up_routes"));  // the fake has no tables: none routed
  EXPECT_TRUE(HasFamily(text, "infiniband_topology_is_tree"));
  EXPECT_TRUE(HasFamily(text, "infiniband_node_pma_samples_tick"));

  // port_counters, capabilities, xmit_wait_tick, routing, partitions and fat_tree off.
  Bed some(std::vector<std::string>{"fabric", "link_health", "subnet_managers"});
  waiting(some);
  Settle(some);
  some.Cycle();
  sent = some.Sent();
  EXPECT_EQ(sent[pma(transport::pma_attr::kPortSamplesControl)], 0);
  EXPECT_EQ(sent[pma(transport::pma_attr::kPortCounters)], 0);
  EXPECT_EQ(sent[pma(transport::pma_attr::kPortCountersExtended)], 0);
  EXPECT_EQ(sent[pma(transport::pma_attr::kClassPortInfo)], 0);
  EXPECT_EQ(sent[smp(transport::smp_attr::kSwitchInfo)], 0);
  EXPECT_EQ(sent[smp(transport::smp_attr::kLinearForwardingTable)], 0);
  EXPECT_EQ(sent[smp(transport::smp_attr::kPKeyTable)], 0);
  // What the scheduler reads for everyone still goes: PortInfo and NodeInfo.
  EXPECT_GT(sent[smp(transport::smp_attr::kPortInfo)], 0);
  EXPECT_GT(sent[smp(transport::smp_attr::kNodeInfo)], 0);
  text = exporter::Gunzip(some.holder.Get()->exposition_gz);
  for (const char* family :
       {"infiniband_hca_port_receive_errors_total", "infiniband_node_pma_capabilities_info",
        "infiniband_port_partition_info", "infiniband_topology_is_tree", "infiniband_routing_down_up_routes",
        "infiniband_switch_tier", "infiniband_node_pma_samples_tick"}) {
    EXPECT_FALSE(HasFamily(text, family)) << family;
  }
  EXPECT_TRUE(HasFamily(text, "infiniband_switch_info"));
  EXPECT_TRUE(HasFamily(text, "infiniband_link_up"));
  // Each collector on is timed; those off are not.
  const auto scrape = testbed::Scrape::Parse(text);
  EXPECT_EQ(scrape.Value("infiniband_exporter_collector_success", {{"collector", "link_health"}}), 1);
  EXPECT_FALSE(scrape.Value("infiniband_exporter_collector_success", {{"collector", "port_counters"}}).has_value());
}

// A table-reading discovery phase (partitions, routing) fails when a full
// walk's run reads none of the tables it asked for, until a run reads one;
// a node that does not answer is that node's news (stale), not a failing
// phase. (The fake answers no P_Key table: the phase reads nothing. One
// dead host among answering ones on the simulator: the deployments test.)
// A full walk's forwarding tables are read once its first sweep's
// counters are published, not before (issue 59: at 16k hosts the tables
// held the first publication back by seconds; without an SA, by minutes):
// the first PortCounters goes out before the first table SMP (SwitchInfo,
// LinearForwardingTable, P_KeyTable: the fake fabric has no SA, so every
// table is read from its node), and the cycle ends with both published,
// with the walk's phases.
TEST(PollerTest, AFullWalksTablesAreReadAfterItsFirstCountersArePublished) {
  Bed b;
  const auto s = b.Cycle();
  std::optional<std::size_t> first_counters, first_table;
  const auto sent = b.port.sent_mads();
  for (std::size_t i = 0; i < sent.size(); ++i) {
    const auto h = transport::DecodeHeader(sent[i]);
    const bool pma = h.mgmt_class == static_cast<std::uint8_t>(transport::MgmtClass::kPerformance);
    const bool smp = !pma && h.mgmt_class != static_cast<std::uint8_t>(transport::MgmtClass::kSubnAdm);
    if (pma && h.attr_id == transport::pma_attr::kPortCounters && !first_counters) first_counters = i;
    // The routing collector's SwitchInfo and forwarding tables, the
    // partitions collector's P_Key tables.
    const bool table = h.attr_id == transport::smp_attr::kSwitchInfo ||
                       h.attr_id == transport::smp_attr::kLinearForwardingTable ||
                       h.attr_id == transport::smp_attr::kPKeyTable;
    if (smp && table && !first_table) first_table = i;
  }
  ASSERT_TRUE(first_counters && first_table) << [&] {
    std::string what;
    for (const auto& [k, n] : b.Sent())
      what += " " + std::to_string(k.first) + "/" + std::to_string(k.second) + ":" + std::to_string(n);
    return what;
  }();
  EXPECT_LT(*first_counters, *first_table) << "the counters first, then the tables";
  EXPECT_NE(s->routing, nullptr) << "both published by the cycle's end";
  EXPECT_TRUE(s->discovery_phases.ran);
  EXPECT_GT(s->discovery_phases.walk_seconds, 0);
  EXPECT_GT(s->discovery_phases.tables_seconds, 0) << "the tables' time is the walk's, read after it";
  const auto scrape = testbed::Scrape::Parse(exporter::Gunzip(s->exposition_gz));
  for (const char* phase : {"walk", "tables", "analysis"}) {
    EXPECT_TRUE(scrape.Value("infiniband_exporter_discovery_phase_seconds", {{"phase", phase}}).has_value()) << phase;
  }
}

TEST(PollerTest, ADiscoveryPhaseFailsWhenItReadsNoTable) {
  Bed b;
  Settle(b);
  const auto scrape = testbed::Scrape::Parse(exporter::Gunzip(b.holder.Get()->exposition_gz));
  EXPECT_EQ(scrape.Value("infiniband_exporter_collector_success", {{"collector", "partitions"}}), 0);
  EXPECT_EQ(scrape.Value("infiniband_exporter_collector_success", {{"collector", "port_counters"}}), 1);

  collectors::TablePhaseHealth h;
  collectors::Cycle walk, retry;
  walk.trigger = collectors::Trigger::kFullWalk;
  retry.trigger = collectors::Trigger::kSweep;
  EXPECT_TRUE(h.Judge(walk, true, true)) << "some tables read, one node silent";
  EXPECT_TRUE(h.Judge(retry, true, false)) << "a retry of the silent node alone changes nothing";
  EXPECT_FALSE(h.Judge(walk, true, false)) << "a full walk's run read nothing";
  EXPECT_FALSE(h.Judge(retry, true, false));
  EXPECT_TRUE(h.Judge(retry, true, true)) << "a retry read a table";
  EXPECT_TRUE(h.Judge(walk, false, false)) << "nothing asked";
}

TEST(PollerTest, RcvErrorDetailsAreReadWhereSupportedAndOnlyWhenPortRcvErrorsMoved) {
  const auto details_sent = [](const Bed& b) {
    return b.Sent()[{static_cast<int>(transport::MgmtClass::kPerformance), transport::pma_attr::kPortRcvErrorDetails}];
  };
  Bed b;
  transport::PortRcvErrorDetails d;
  d.malformed_packet_errors = 5;
  d.vl_mapping_errors = 2;
  b.f.SetRcvErrorDetails(b.leaves[1], 2, d);  // leaf1 port 2 (to h11)
  b.f.DisableRcvErrorDetails(b.hosts[3]);     // h11's PMA lacks the attribute
  Settle(b);
  // The first sweep asked every counter target once (2 cabled ports on each
  // spine, 4 on each leaf, 4 host ports); the second asked nothing.
  const int first = details_sent(b);
  EXPECT_EQ(first, 16);
  auto scrape = testbed::Scrape::Parse(exporter::Gunzip(b.holder.Get()->exposition_gz));
  const std::string leaf1 = topology::FormatGuid(b.f.Guid(b.leaves[1]));
  EXPECT_EQ(scrape.Value("infiniband_switch_port_malformed_packet_errors_total", {{"guid", leaf1}, {"port", "2"}}), 5);
  EXPECT_EQ(scrape.Value("infiniband_switch_port_vl_mapping_errors_total", {{"guid", leaf1}, {"port", "2"}}), 2);
  EXPECT_EQ(scrape.Value("infiniband_switch_port_malformed_packet_errors_total", {{"guid", leaf1}, {"port", "1"}}), 0);
  EXPECT_EQ(scrape.Find("infiniband_switch_port_malformed_packet_errors_total", {{"guid", leaf1}}).size(), 4u);
  // Where the PMA lacks it: absent, not 0, and not asked again.
  EXPECT_EQ(scrape.Find("infiniband_hca_port_dli_mapping_errors_total").size(), 3u);
  b.Cycle();
  EXPECT_EQ(details_sent(b), first);

  // PortRcvErrors moves with the details: the next sweep sees the move,
  // the one after reads the details (of that port only).
  transport::PortCounters c;
  c.rcv_errors = 9;
  b.f.SetCounters(b.leaves[1], 2, c);
  d.malformed_packet_errors = 9;
  b.f.SetRcvErrorDetails(b.leaves[1], 2, d);
  b.Cycle();
  EXPECT_EQ(details_sent(b), first);
  b.Cycle();
  EXPECT_EQ(details_sent(b), first + 1);
  scrape = testbed::Scrape::Parse(exporter::Gunzip(b.holder.Get()->exposition_gz));
  EXPECT_EQ(scrape.Value("infiniband_switch_port_malformed_packet_errors_total", {{"guid", leaf1}, {"port", "2"}}), 9);
  EXPECT_EQ(scrape.Value("infiniband_switch_port_receive_errors_total", {{"guid", leaf1}, {"port", "2"}}), 9);
}

TEST(PollerTest, XmitDiscardDetailsAreReadWhereSupportedAndOnlyWhenPortXmitDiscardsMoved) {
  const auto sent = [](const Bed& b) {
    return b
        .Sent()[{static_cast<int>(transport::MgmtClass::kPerformance), transport::pma_attr::kPortXmitDiscardDetails}];
  };
  Bed b;
  transport::PortXmitDiscardDetails d;
  d.sw_hoq_lifetime_limit_discards = 7;
  d.neighbor_mtu_discards = 3;
  b.f.SetXmitDiscardDetails(b.leaves[1], 2, d);  // leaf1 port 2 (to h11)
  b.f.DisableXmitDiscardDetails(b.hosts[3]);     // h11's PMA lacks the attribute
  Settle(b);
  const int first = sent(b);
  EXPECT_EQ(first, 16) << "every counter target once";
  auto scrape = testbed::Scrape::Parse(exporter::Gunzip(b.holder.Get()->exposition_gz));
  const std::string leaf1 = topology::FormatGuid(b.f.Guid(b.leaves[1]));
  EXPECT_EQ(
      scrape.Value("infiniband_switch_port_switch_hoq_lifetime_limit_discards_total", {{"guid", leaf1}, {"port", "2"}}),
      7);
  EXPECT_EQ(scrape.Value("infiniband_switch_port_neighbor_mtu_discards_total", {{"guid", leaf1}, {"port", "2"}}), 3);
  EXPECT_EQ(scrape.Value("infiniband_switch_port_inactive_discards_total", {{"guid", leaf1}, {"port", "2"}}), 0);
  EXPECT_EQ(scrape.Find("infiniband_hca_port_inactive_discards_total").size(), 3u) << "absent where unsupported";
  b.Cycle();
  EXPECT_EQ(sent(b), first);
  // PortXmitDiscards moves: the sweep after reads that port's details.
  transport::PortCounters c;
  c.xmit_discards = 12;
  b.f.SetCounters(b.leaves[1], 2, c);
  d.sw_hoq_lifetime_limit_discards = 19;
  b.f.SetXmitDiscardDetails(b.leaves[1], 2, d);
  b.Cycle();
  EXPECT_EQ(sent(b), first);
  b.Cycle();
  EXPECT_EQ(sent(b), first + 1);
  scrape = testbed::Scrape::Parse(exporter::Gunzip(b.holder.Get()->exposition_gz));
  EXPECT_EQ(
      scrape.Value("infiniband_switch_port_switch_hoq_lifetime_limit_discards_total", {{"guid", leaf1}, {"port", "2"}}),
      19);
  // 12 discards a second made leaf1 port 2 a congestion tree of its own:
  // the sweep after asked its PortVLXmitWaitCounters, which this PMA
  // answers with an error status, so it is never asked again.
  const auto vl_sent = [&b] {
    return b
        .Sent()[{static_cast<int>(transport::MgmtClass::kPerformance), transport::pma_attr::kPortVlXmitWaitCounters}];
  };
  EXPECT_EQ(vl_sent(), 1);
  b.f.SetCounters(b.leaves[1], 2, transport::PortCounters{.xmit_discards = 40});
  b.Cycle();
  b.Cycle();
  EXPECT_EQ(vl_sent(), 1);
}

TEST(PollerTest, HcaSeriesCarryThePortGuidAndEachDeviceItsCollectionHealth) {
  Bed b;
  Settle(b);
  auto scrape = testbed::Scrape::Parse(exporter::Gunzip(b.holder.Get()->exposition_gz));
  // The fake's port GUIDs differ from its node GUIDs (node << 8 | port).
  const std::uint64_t node = b.f.Guid(b.hosts[2]);
  const std::string port_guid = topology::FormatGuid(node << 8 | 1);
  EXPECT_EQ(scrape.Value("infiniband_hca_port_transmit_data_bytes_total", {{"guid", port_guid}, {"port", "1"}}), 0);
  EXPECT_TRUE(
      scrape.Find("infiniband_hca_port_transmit_data_bytes_total", {{"guid", topology::FormatGuid(node)}}).empty());
  EXPECT_EQ(scrape.Value("infiniband_hca_info",
                         {{"guid", port_guid}, {"node_guid", topology::FormatGuid(node)}, {"hca", "h10"}}),
            1);
  EXPECT_EQ(scrape.Value("infiniband_hca_up", {{"guid", port_guid}, {"hca", "h10"}}), 1);
  const std::string spine0 = topology::FormatGuid(b.f.Guid(0));
  EXPECT_EQ(scrape.Value("infiniband_switch_up", {{"guid", spine0}, {"switch", "spine0"}}), 1);
  EXPECT_EQ(scrape.Value("infiniband_switch_collect_timeout", {{"guid", spine0}, {"collector", "switch"}}), 0);
  EXPECT_EQ(scrape.Value("infiniband_exporter_collect_timeouts", {{"collector", "switch"}}), 0);
  EXPECT_GT(*scrape.Value("infiniband_exporter_last_execution"), 1.7e9);
  // Port state and rates from PortInfo: a cabled port up, an empty one down.
  const std::string leaf0 = topology::FormatGuid(b.f.Guid(b.leaves[0]));
  EXPECT_EQ(scrape.Value("infiniband_switch_port_state", {{"guid", leaf0}, {"port", "1"}}), 1);
  EXPECT_EQ(scrape.Value("infiniband_switch_port_state", {{"guid", leaf0}, {"port", "3"}}), 0);
  EXPECT_EQ(scrape.Value("infiniband_switch_port_link_state", {{"guid", leaf0}, {"port", "1"}}), 4);
  EXPECT_EQ(scrape.Value("infiniband_switch_port_rate_bytes_per_second", {{"guid", leaf0}, {"port", "3"}}), 0);
  EXPECT_GT(*scrape.Value("infiniband_switch_port_raw_rate_bytes_per_second", {{"guid", leaf0}, {"port", "1"}}),
            *scrape.Value("infiniband_switch_port_rate_bytes_per_second", {{"guid", leaf0}, {"port", "1"}}));

  // spine0 stops answering: down, its reads timed out, the sum says so.
  b.f.SetSilent(0, true);
  b.Cycle();
  scrape = testbed::Scrape::Parse(exporter::Gunzip(b.holder.Get()->exposition_gz));
  EXPECT_EQ(scrape.Value("infiniband_switch_up", {{"guid", spine0}, {"switch", "spine0"}}), 0);
  EXPECT_EQ(scrape.Value("infiniband_switch_collect_timeout", {{"guid", spine0}, {"collector", "switch"}}), 1);
  EXPECT_EQ(scrape.Value("infiniband_exporter_collect_timeouts", {{"collector", "switch"}}), 1);
  EXPECT_EQ(scrape.Value("infiniband_switch_up", {{"guid", topology::FormatGuid(b.f.Guid(1))}, {"switch", "spine1"}}),
            1);

  // h00's PMA answers PortCounters with an error status: a collect error
  // (treydock's InfinibandCollectError condition), not a timeout.
  b.f.SetPortCountersStatus(b.hosts[0], 0x0c);
  b.Cycle();
  scrape = testbed::Scrape::Parse(exporter::Gunzip(b.holder.Get()->exposition_gz));
  const std::string h00 = topology::FormatGuid(b.f.Guid(b.hosts[0]) << 8 | 1);
  EXPECT_EQ(scrape.Value("infiniband_hca_collect_error", {{"guid", h00}, {"collector", "hca"}}), 1);
  EXPECT_EQ(scrape.Value("infiniband_hca_collect_timeout", {{"guid", h00}, {"collector", "hca"}}), 0);
  EXPECT_EQ(scrape.Value("infiniband_exporter_collect_errors", {{"collector", "hca"}}), 1);
  EXPECT_EQ(scrape.Value("infiniband_exporter_collect_errors", {{"collector", "switch"}}), 0);
  EXPECT_EQ(scrape.Value("infiniband_hca_up", {{"guid", h00}, {"hca", "h00"}}), 0);
}

// Readings no link can produce (issue 63: the test bed's unfilled answer,
// a firmware bug, a corrupted MAD): a PortXmitWait up by 2^56 in one
// cycle, a symbol error counter that fell to 0 and came back while the data
// went on, a data counter up by 4 PB. None reaches a total, a rate or an
// alert; each is counted by its reason; the next plausible reading goes on.
TEST(PollerTest, ReadingsNoLinkCanProduceReachNoTotalRateOrAlertAndAreCounted) {
  Bed b;
  const int host = b.hosts[1];
  b.f.SetCapabilities(host, transport::pma_cap::kExtWidth | transport::pma_cap::kXmitWait,
                      transport::pma_cap::kAdditionalExtended);
  transport::PortCountersExtended x;
  x.symbol_error = 500;
  x.xmit_data = 1000;
  b.f.SetExtended(host, 1, x);
  Settle(b);
  const topology::PortRef port{b.f.Guid(host), 1};
  const auto total = [&](collectors::Counter c) { return b.holder.Get()->ports->at(port).Total(collectors::Index(c)); };
  const auto rejected = [&](const char* reason) {
    const auto scrape = testbed::Scrape::Parse(exporter::Gunzip(b.holder.Get()->exposition_gz));
    return scrape.Value("infiniband_exporter_readings_rejected_total", {{"reason", reason}}).value_or(-1);
  };
  const auto quiet = [&] {
    const auto s = b.holder.Get();
    ASSERT_NE(s->health, nullptr);
    EXPECT_TRUE(s->health->active.empty()) << s->health->active.front().summary;
    EXPECT_TRUE(s->health->congestion.empty());
    for (const auto& c : s->health->cables) {
      EXPECT_LT(c.a.xmit_wait_fraction().value_or(0), 1e-3);  // 2^56 would be all of the time
      EXPECT_LT(c.b.xmit_wait_fraction().value_or(0), 1e-3);
    }
  };
  ASSERT_EQ(total(collectors::Counter::kSymbolError), 500u);
  ASSERT_EQ(rejected("xmit_wait_over_elapsed_time"), 0);

  x.xmit_wait = std::uint64_t{1} << 56;  // the over-read umad2sim left
  x.xmit_data += 100;
  b.f.SetExtended(host, 1, x);
  b.Cycle();
  EXPECT_EQ(total(collectors::Counter::kXmitWait), 0u);
  EXPECT_EQ(total(collectors::Counter::kXmitData), 1000u) << "the whole reading was let go";
  EXPECT_EQ(rejected("xmit_wait_over_elapsed_time"), 1);
  quiet();
  x.xmit_wait = 3;  // a plausible one goes on from the last folded in
  x.xmit_data += 100;
  b.f.SetExtended(host, 1, x);
  b.Cycle();
  EXPECT_EQ(total(collectors::Counter::kXmitWait), 3u);
  EXPECT_EQ(total(collectors::Counter::kXmitData), 1200u);

  x.symbol_error = 0;  // a companion lost: the errors unfilled
  x.xmit_data += 100;
  b.f.SetExtended(host, 1, x);
  b.Cycle();
  EXPECT_EQ(total(collectors::Counter::kSymbolError), 500u);
  EXPECT_EQ(total(collectors::Counter::kXmitData), 1300u) << "the rest of the reading is folded in";
  x.symbol_error = 500;
  b.f.SetExtended(host, 1, x);
  b.Cycle();
  EXPECT_EQ(total(collectors::Counter::kSymbolError), 500u) << "not 1000: the fall was the wrong reading";
  EXPECT_EQ(rejected("fell_and_rose"), 1);
  quiet();

  x.xmit_data += std::uint64_t{1'000'000'000'000'000};  // 4 PB in a moment
  b.f.SetExtended(host, 1, x);
  b.Cycle();
  EXPECT_EQ(total(collectors::Counter::kXmitData), 1300u);
  EXPECT_EQ(rejected("data_over_link_rate"), 1);
  quiet();
  EXPECT_EQ(rejected("errors_over_symbol_rate"), 0);
  EXPECT_EQ(rejected("xmit_wait_over_elapsed_time"), 1);
}

}  // namespace
}  // namespace ibfabric
