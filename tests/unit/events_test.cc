// Fewer MADs for the same knowledge: the SA subscription and Reports on the
// wire, the engine taking Reports in (acknowledged, once), incremental
// re-walks over a fake fabric (what they send and what they find), and the
// rotation that spreads PortInfo and LID checks over sweeps.

#include <gtest/gtest.h>

#include <set>

#include "collectors/sweep.h"
#include "tests/unit/fake_fabric.h"
#include "topology/discovery.h"
#include "transport/attributes.h"
#include "transport/codec.h"
#include "transport/mad_engine.h"
#include "transport/testing/encoders.h"
#include "transport/testing/fake_mad_port.h"

namespace ibfabric {
namespace {

using std::chrono::milliseconds;
using topology::PortRef;
using transport::MadBytes;

TEST(TrapWireTest, SubscriptionIsAnSaSetOfInformInfo) {
  const transport::MadRequest r = transport::InformInfoSubscribe(7, transport::trap::kLinkStateChange);
  const MadBytes m = transport::EncodeRequest(r, 0x1234);
  const transport::MadHeader h = transport::DecodeHeader(m);
  EXPECT_EQ(h.mgmt_class, 0x03);
  EXPECT_EQ(h.class_version, 2) << "the SA speaks class version 2";
  EXPECT_EQ(h.method, 0x02);
  EXPECT_EQ(h.attr_id, 0x0003);
  EXPECT_EQ(r.address.lid, 7);
  EXPECT_EQ(transport::KindOf(r.mgmt_class), transport::MadKind::kGmp);
  // InformInfo at byte 56: LIDRangeBegin 0xFFFF, IsGeneric, Subscribe,
  // Type 0xFFFF, TrapNumber, ProducerType 0xFFFFFF.
  const std::uint8_t* d = m.data() + 56;
  EXPECT_EQ(d[16], 0xff);
  EXPECT_EQ(d[17], 0xff);
  EXPECT_EQ(d[22], 1);
  EXPECT_EQ(d[23], 1);
  EXPECT_EQ((d[26] << 8) | d[27], 128);
  EXPECT_EQ(d[35], 0xff);
  EXPECT_EQ(transport::EncodeRequest(transport::InformInfoSubscribe(7, 64, false), 1)[56 + 23], 0)
      << "unsubscribe";
}

TEST(TrapWireTest, NoticesDecodeAndReportsAreAcknowledged) {
  transport::Notice n;
  n.trap_number = 128;
  n.lid = 42;
  n.issuer_lid = 1;
  n.producer_type = 2;
  const MadBytes link = transport::testing::EncodeNoticeReport(n, 0xabcdef);
  ASSERT_TRUE(transport::IsNoticeReport(link));
  const transport::Notice got = transport::DecodeNotice(link);
  EXPECT_TRUE(got.generic);
  EXPECT_EQ(got.trap_number, 128);
  EXPECT_EQ(got.lid, 42);
  EXPECT_EQ(got.issuer_lid, 1);
  EXPECT_EQ(got.producer_type, 2u);

  n.trap_number = 144;
  n.lid = 77;
  EXPECT_EQ(transport::DecodeNotice(transport::testing::EncodeNoticeReport(n, 1)).lid, 77);
  n = {};
  n.trap_number = 64;
  n.port_guid = 0x0002c90300a1b2c3ULL;
  const transport::Notice in_service = transport::DecodeNotice(transport::testing::EncodeNoticeReport(n, 2));
  EXPECT_EQ(in_service.port_guid, 0x0002c90300a1b2c3ULL);
  EXPECT_EQ(in_service.lid, 0);

  const MadBytes ack = transport::ReportResponse(link);
  const transport::MadHeader h = transport::DecodeHeader(ack);
  EXPECT_EQ(h.method, 0x86);
  EXPECT_EQ(h.tid, 0xabcdefu);
  EXPECT_EQ(h.attr_id, 0x0002);
  EXPECT_FALSE(transport::IsNoticeReport(ack));
  EXPECT_FALSE(transport::IsNoticeReport(transport::EncodeRequest(transport::NodeInfoQuery(transport::MadAddress::Lid(3)), 9)));
}

TEST(TrapEngineTest, ReportsAreAcknowledgedAndTakenOnce) {
  std::vector<std::pair<std::uint16_t, MadBytes>> acks;
  transport::testing::FakeMadPort port([&](const transport::MadAddress& to, const MadBytes& m) -> std::optional<MadBytes> {
    if (transport::DecodeHeader(m).method == 0x86) {
      acks.emplace_back(to.lid, m);
      return std::nullopt;
    }
    return transport::EncodeResponse(m, {});
  });
  transport::MadEngine engine(port, {});
  transport::Notice n;
  n.trap_number = 128;
  n.lid = 9;
  const MadBytes report = transport::testing::EncodeNoticeReport(n, 77);
  // One arrives during a Run, then the SA sends it again (our ack was lost).
  port.Inject(report, 1);
  const auto r = engine.Run(std::vector{transport::PortCountersQuery(5, 1)});
  EXPECT_EQ(r[0].outcome, transport::MadOutcome::kOk);
  EXPECT_EQ(engine.stats().reports, 1u) << "taken during the Run";
  const auto taken = engine.TakeReports();
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(transport::DecodeNotice(taken[0]).lid, 9);
  EXPECT_TRUE(engine.TakeReports().empty());
  port.Inject(report, 1);
  EXPECT_FALSE(engine.WaitForReports(milliseconds(30))) << "a repeat is no news";
  ASSERT_EQ(acks.size(), 2u) << "every copy acknowledged";
  EXPECT_EQ(acks[0].first, 1) << "to the SA that sent it";
  EXPECT_EQ(transport::DecodeHeader(acks[0].second).tid, 77u);
  EXPECT_EQ(engine.stats().reports, 1u);
  EXPECT_EQ(engine.stats().reports_repeated, 1u);
  // Between Runs, a new one ends the wait.
  port.Inject(transport::testing::EncodeNoticeReport(n, 78), 1);
  EXPECT_TRUE(engine.WaitForReports(milliseconds(1000)));
  EXPECT_EQ(engine.TakeReports().size(), 1u);
}

// host0 - leaf0 - spine - leaf1 - host1/host2; the exporter on host0.
struct Two {
  testing::FakeFabric f;
  int leaf0, leaf1, spine, host0, host1, host2, spare;
  Two() {
    leaf0 = f.AddSwitch("leaf0", 8, 10);
    leaf1 = f.AddSwitch("leaf1", 8, 11);
    spine = f.AddSwitch("spine0", 8, 12);
    host0 = f.AddCa("host0", 1);
    host1 = f.AddCa("host1", 1);
    host2 = f.AddCa("host2", 1);
    spare = f.AddCa("spare", 1);
    f.SetCaLid(host0, 1, 1);
    f.SetCaLid(host1, 1, 2);
    f.SetCaLid(host2, 1, 3);
    f.SetCaLid(spare, 1, 4);
    f.Connect(host0, 1, leaf0, 1);
    f.Connect(host1, 1, leaf1, 1);
    f.Connect(host2, 1, leaf1, 2);
    f.Connect(leaf0, 5, spine, 1);
    f.Connect(leaf1, 5, spine, 2);
  }
};

struct Walked {
  topology::IncrementalResult result;
  int directed = 0;
  int total = 0;
};

topology::Port PortNow(const topology::Fabric& fabric, const PortRef& ref, bool up) {
  topology::Port p = *fabric.FindPort(ref);
  p.phys_state = up ? 5 : 2;
  p.state = up ? 4 : 1;
  return p;
}

Walked Rewalk(testing::FakeFabric& f, int local, const topology::Fabric& base, std::uint64_t local_guid,
              const std::vector<topology::PortChange>& changes) {
  transport::testing::FakeMadPort mad(f.Responder(local, 1));
  transport::MadEngine engine(mad, {16, milliseconds(20), 1});
  Walked w{topology::Rediscover(engine, base, local_guid, 1, changes)};
  const testing::SentSmps sent = testing::CountSent(mad);
  w.directed = sent.directed;
  w.total = sent.total;
  return w;
}

topology::Fabric Full(testing::FakeFabric& f, int local) {
  transport::testing::FakeMadPort mad(f.Responder(local, 1));
  transport::MadEngine engine(mad, {16, milliseconds(20), 1});
  auto r = topology::Discover(engine);
  EXPECT_TRUE(r.ok);
  return r.fabric;
}

TEST(IncrementalDiscoveryTest, HostCableDownAndUpIsAFewSmpsNotAWalk) {
  Two t;
  const topology::Fabric base = Full(t.f, t.host0);
  const std::uint64_t local = t.f.Guid(t.host0);
  const PortRef leaf1_2{t.f.Guid(t.leaf1), 2};
  ASSERT_EQ(base.ca_count(), 4u - 1u) << "the spare is not cabled";

  t.f.SetLinkDown(t.leaf1, 2);
  const Walked down = Rewalk(t.f, t.host0, base, local, {{leaf1_2, PortNow(base, leaf1_2, false), "trap 128"}});
  ASSERT_TRUE(down.result.trusted);
  EXPECT_EQ(down.total, 0) << "a port that went down needs no SMP";
  EXPECT_EQ(down.result.gone_nodes, std::vector<std::uint64_t>{t.f.Guid(t.host2)});
  const topology::Fabric& after_down = down.result.discovery.fabric;
  EXPECT_EQ(after_down.FindNode(t.f.Guid(t.host2)), nullptr);
  EXPECT_FALSE(after_down.FindPort(leaf1_2)->link_up());
  EXPECT_FALSE(after_down.FindPort(leaf1_2)->remote.has_value());
  EXPECT_NE(after_down.FindNode(t.f.Guid(t.host1)), nullptr) << "the other host stays";

  t.f.Connect(t.host2, 1, t.leaf1, 2);
  const Walked up = Rewalk(t.f, t.host0, after_down, local,
                           {{leaf1_2, PortNow(after_down, leaf1_2, true), "LinkDownedCounter moved"}});
  ASSERT_TRUE(up.result.trusted);
  EXPECT_EQ(up.result.new_nodes, std::vector<std::uint64_t>{t.f.Guid(t.host2)});
  // NodeInfo through the cable and the CA port's PortInfo (its LID) go
  // directed; its description LID-routed.
  EXPECT_EQ(up.directed, 2);
  EXPECT_LE(up.total, 3);
  const topology::Fabric& again = up.result.discovery.fabric;
  const topology::Node* h2 = again.FindNode(t.f.Guid(t.host2));
  ASSERT_NE(h2, nullptr);
  EXPECT_EQ(h2->description, "host2");
  EXPECT_EQ(h2->lid, 3);
  EXPECT_EQ(again.FindPort(leaf1_2)->remote, (PortRef{t.f.Guid(t.host2), 1}));
  EXPECT_EQ(again.FindPort({t.f.Guid(t.host2), 1})->remote, leaf1_2);
  EXPECT_EQ(again.ca_count(), base.ca_count());
}

TEST(IncrementalDiscoveryTest, ACableMovedToAnotherHostIsSeen) {
  Two t;
  const topology::Fabric base = Full(t.f, t.host0);
  const PortRef leaf1_2{t.f.Guid(t.leaf1), 2};
  // host2's cable now leads to the spare host (a flap that was a swap).
  t.f.SetLinkDown(t.leaf1, 2);
  t.f.Connect(t.spare, 1, t.leaf1, 2);
  const Walked w = Rewalk(t.f, t.host0, base, t.f.Guid(t.host0),
                          {{leaf1_2, PortNow(base, leaf1_2, true), "LinkDownedCounter moved"}});
  ASSERT_TRUE(w.result.trusted);
  const topology::Fabric& fab = w.result.discovery.fabric;
  EXPECT_EQ(fab.FindPort(leaf1_2)->remote, (PortRef{t.f.Guid(t.spare), 1}));
  EXPECT_EQ(w.result.new_nodes, std::vector<std::uint64_t>{t.f.Guid(t.spare)});
  EXPECT_EQ(w.result.gone_nodes, std::vector<std::uint64_t>{t.f.Guid(t.host2)}) << "host2 is reached no more";
  EXPECT_EQ(fab.FindNode(t.f.Guid(t.spare))->lid, 4);
}

TEST(IncrementalDiscoveryTest, ANewSwitchIsWalkedUpToWhatIsKnown) {
  Two t;
  const topology::Fabric base = Full(t.f, t.host0);
  // A new leaf with a host, cabled to the spine on a port that was down.
  const int leaf2 = t.f.AddSwitch("leaf2", 8, 13);
  const int host3 = t.f.AddCa("host3", 1);
  t.f.SetCaLid(host3, 1, 5);
  t.f.Connect(host3, 1, leaf2, 1);
  t.f.Connect(leaf2, 5, t.spine, 3);
  const PortRef spine3{t.f.Guid(t.spine), 3};
  topology::Port now = *base.FindPort(spine3);
  now.phys_state = 5;
  now.state = 4;
  const Walked w = Rewalk(t.f, t.host0, base, t.f.Guid(t.host0), {{spine3, now, "port state changed"}});
  ASSERT_TRUE(w.result.trusted);
  const topology::Fabric& fab = w.result.discovery.fabric;
  EXPECT_EQ(fab.switch_count(), 4u);
  EXPECT_EQ(fab.ca_count(), 4u);
  EXPECT_EQ(fab.FindPort({t.f.Guid(host3), 1})->remote, (PortRef{t.f.Guid(leaf2), 1}));
  EXPECT_EQ(fab.FindPort(spine3)->remote, (PortRef{t.f.Guid(leaf2), 5}));
  EXPECT_EQ(std::set<std::uint64_t>(w.result.new_nodes.begin(), w.result.new_nodes.end()),
            (std::set<std::uint64_t>{t.f.Guid(leaf2), t.f.Guid(host3)}));
  // A full walk of this fabric would send 1 + 5 cables + 4 switches + 4 CA ports directed.
  EXPECT_LT(w.directed, 14);
}

TEST(IncrementalDiscoveryTest, WhatCannotBeTrustedAsksForAFullWalk) {
  Two t;
  const topology::Fabric base = Full(t.f, t.host0);
  // A port of a node the fabric lacks.
  const Walked unknown = Rewalk(t.f, t.host0, base, t.f.Guid(t.host0),
                                {{PortRef{0xdead, 1}, topology::Port{}, "trap 128"}});
  EXPECT_FALSE(unknown.result.trusted);
}

TEST(IncrementalDiscoveryTest, NothingAnsweringBehindAnUpPortKeepsItsLinkAndAsksAgain) {
  Two t;
  const topology::Fabric base = Full(t.f, t.host0);
  // Up (its PortInfo says so), but nothing answers behind it: unknown, not gone.
  t.f.Silence(t.host2);
  const PortRef leaf1_2{t.f.Guid(t.leaf1), 2};
  const Walked silent = Rewalk(t.f, t.host0, base, t.f.Guid(t.host0),
                               {{leaf1_2, PortNow(base, leaf1_2, true), "LinkDownedCounter moved"}});
  EXPECT_TRUE(silent.result.trusted) << "a lost MAD is no reason for a full walk";
  EXPECT_FALSE(silent.result.discovery.problems.empty());
  ASSERT_EQ(silent.result.retry.size(), 1u);
  EXPECT_EQ(silent.result.retry[0].port, leaf1_2);
  EXPECT_TRUE(silent.result.discovery.unanswered.behind.count(leaf1_2));
  EXPECT_TRUE(silent.result.gone_nodes.empty());
  const auto* host2 = silent.result.discovery.fabric.FindNode(t.f.Guid(t.host2));
  ASSERT_NE(host2, nullptr) << "the host stays, with its name and its cable";
  EXPECT_EQ(host2->description, "host2");
  EXPECT_EQ(silent.result.discovery.fabric.FindPort(leaf1_2)->remote, (PortRef{t.f.Guid(t.host2), 1}));
}

TEST(RotationTest, EveryElementOnceInEachRoundOfSweeps) {
  std::vector<int> all(103);
  for (int i = 0; i < 103; ++i) all[i] = i;
  for (std::uint64_t rounds : {1u, 7u, 30u, 200u}) {
    std::multiset<int> seen;
    for (std::uint64_t sweep = 0; sweep < rounds; ++sweep) {
      const auto slice = collectors::RotationSlice(all, sweep, rounds);
      EXPECT_LE(slice.size(), (all.size() + rounds - 1) / rounds);
      seen.insert(slice.begin(), slice.end());
    }
    for (int i = 0; i < 103; ++i) EXPECT_GE(seen.count(i), 1u) << "element " << i << " rounds " << rounds;
    EXPECT_LE(seen.size(), all.size() + rounds) << "hardly any twice";
  }
  EXPECT_TRUE(collectors::RotationSlice(std::vector<int>{}, 3, 10).empty());
}

TEST(RotationTest, LinkChangesListThePortsThatChanged) {
  Two t;
  const topology::Fabric base = Full(t.f, t.host0);
  const PortRef a{t.f.Guid(t.leaf1), 2}, b{t.f.Guid(t.leaf1), 1}, c{t.f.Guid(t.leaf0), 5};
  std::map<PortRef, topology::Port> read;
  read[a] = PortNow(base, a, false);
  topology::Port init = PortNow(base, b, true);
  init.state = 2;  // Init: up, not Active
  read[b] = init;
  read[c] = *base.FindPort(c);  // unchanged
  const auto changes = collectors::CompareLinks(base, read);
  EXPECT_EQ(changes.went_down, 1u);
  EXPECT_EQ(changes.activated, 1u);
  EXPECT_EQ(changes.ports.size(), 2u);
  EXPECT_TRUE(changes.ports.count(a));
  EXPECT_TRUE(changes.ports.count(b));
  EXPECT_FALSE(changes.ports.count(c));
}

}  // namespace
}  // namespace ibfabric
