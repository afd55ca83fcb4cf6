// Discovery and sweep over a fake fabric: nodes, links (both ends), LIDs,
// down links, silent nodes; counters land on the right ports. Incremental
// re-walks (Rediscover: what they send and what they find), and the
// rotation that spreads PortInfo and LID checks over sweeps.

#include "topology/discovery.h"

#include <gtest/gtest.h>

#include <set>

#include "collectors/reads/sweep.h"
#include "tests/unit/fake_fabric.h"
#include "topology/analysis.h"
#include "topology/link_rate.h"
#include "topology/merge.h"
#include "topology/scope.h"
#include "transport/codec.h"
#include "transport/mad_engine.h"

namespace ibfabric {
namespace {

using std::chrono::milliseconds;
using topology::NodeKind;
using topology::PortRef;

// host0 - leaf0 - spine0 - leaf1 - host1, two cables leaf0<->spine0, a
// second HCA port (host1 port 2) cabled to leaf0.
struct Small {
  testing::FakeFabric f;
  int leaf0, leaf1, spine, host0, host1;
  Small() {
    leaf0 = f.AddSwitch("leaf0", 8, 10);
    leaf1 = f.AddSwitch("leaf1", 8, 11);
    spine = f.AddSwitch("spine0", 8, 12);
    host0 = f.AddCa("host0", 1);
    host1 = f.AddCa("host1", 2);
    f.SetCaLid(host0, 1, 1);
    f.SetCaLid(host1, 1, 2);
    f.SetCaLid(host1, 2, 3);
    f.Connect(host0, 1, leaf0, 1);
    f.Connect(host1, 1, leaf1, 1);
    f.Connect(host1, 2, leaf0, 2);
    f.Connect(leaf0, 5, spine, 1);
    f.Connect(leaf0, 6, spine, 2);
    f.Connect(leaf1, 5, spine, 3);
  }
};

// How many SMPs of each routing a discovery sent, and what it found.
struct Counted {
  topology::DiscoveryResult result;
  int directed = 0;
  int lid_routed = 0;
};

Counted DiscoverCounting(testing::FakeFabric& f, int local, int port, milliseconds timeout = milliseconds(20)) {
  transport::testing::FakeMadPort mad(f.Responder(local, port));
  transport::MadEngine engine(mad, {16, timeout, 1});
  Counted c{topology::Discover(engine)};
  const testing::SentSmps sent = testing::CountSent(mad);
  c.directed = sent.directed;
  c.lid_routed = sent.lid_routed;
  return c;
}

topology::DiscoveryResult Discover(testing::FakeFabric& f, int local, int port) {
  return DiscoverCounting(f, local, port).result;
}

TEST(DiscoveryTest, FindsEveryNodeAndBothEndsOfEveryLink) {
  Small s;
  const auto r = Discover(s.f, s.host0, 1);
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(r.problems.empty());
  EXPECT_EQ(r.local_node_guid, s.f.Guid(s.host0));
  EXPECT_EQ(r.local_port, 1);
  const auto& fab = r.fabric;
  EXPECT_EQ(fab.switch_count(), 3u);
  EXPECT_EQ(fab.ca_count(), 2u);

  const auto* leaf0 = fab.FindNode(s.f.Guid(s.leaf0));
  ASSERT_NE(leaf0, nullptr);
  EXPECT_EQ(leaf0->kind, NodeKind::kSwitch);
  EXPECT_EQ(leaf0->description, "leaf0");
  EXPECT_EQ(leaf0->lid, 10);
  EXPECT_EQ(leaf0->ports.size(), 8u);  // every port, up or not
  EXPECT_EQ(leaf0->FindPort(6)->remote, (PortRef{s.f.Guid(s.spine), 2}));
  EXPECT_FALSE(leaf0->FindPort(7)->remote);
  EXPECT_FALSE(leaf0->FindPort(7)->link_up());

  const auto* spine = fab.FindNode(s.f.Guid(s.spine));
  EXPECT_EQ(spine->FindPort(2)->remote, (PortRef{s.f.Guid(s.leaf0), 6}));
  EXPECT_EQ(spine->FindPort(3)->remote, (PortRef{s.f.Guid(s.leaf1), 5}));

  // Both ports of the dual-port HCA, reached through different leaves.
  const auto* host1 = fab.FindNode(s.f.Guid(s.host1));
  ASSERT_NE(host1, nullptr);
  ASSERT_EQ(host1->ports.size(), 2u);
  EXPECT_EQ(host1->FindPort(1)->lid, 2);
  EXPECT_EQ(host1->FindPort(2)->lid, 3);
  EXPECT_EQ(host1->FindPort(2)->remote, (PortRef{s.f.Guid(s.leaf0), 2}));
  EXPECT_EQ(fab.FindNode(s.f.Guid(s.host0))->FindPort(1)->remote, (PortRef{s.f.Guid(s.leaf0), 1}));
}

TEST(DiscoveryTest, DownLinksAndSilentNodes) {
  Small s;
  s.f.SetLinkDown(s.leaf1, 5);  // leaf1 and host1 port 1 now only via host1 port 2
  const auto r = Discover(s.f, s.host0, 1);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.fabric.FindNode(s.f.Guid(s.leaf1)), nullptr);
  const auto* host1 = r.fabric.FindNode(s.f.Guid(s.host1));
  ASSERT_NE(host1, nullptr);
  EXPECT_EQ(host1->ports.size(), 1u);

  Small t;
  t.f.Silence(t.spine);
  const auto q = Discover(t.f, t.host0, 1);
  ASSERT_TRUE(q.ok);
  EXPECT_EQ(q.fabric.FindNode(t.f.Guid(t.spine)), nullptr);
  EXPECT_EQ(q.problems.size(), 2u) << "one per leaf0 uplink that led to the silent spine";
}

// XDR links (PortInfo LinkSpeedExt*2): honoured only where the port carrying
// the capability masks (a switch's port 0, a CA's own port) says so.
TEST(DiscoveryTest, XdrSpeedsFromPortInfoCapabilities) {
  Small s;
  s.f.SetXdr(s.leaf0);
  s.f.SetXdr(s.spine);
  s.f.SetXdr(s.host0);
  s.f.SetXdr(s.leaf1, /*advertised=*/false);
  const auto r = Discover(s.f, s.host0, 1);
  ASSERT_TRUE(r.ok);
  const auto& fab = r.fabric;
  const auto* leaf0 = fab.FindNode(s.f.Guid(s.leaf0));
  EXPECT_EQ(topology::RateString(*leaf0->FindPort(5)), "4xXDR");  // leaf0 - spine
  EXPECT_EQ(topology::RateString(*leaf0->FindPort(1)), "4xXDR");  // leaf0 - host0
  EXPECT_EQ(topology::RateString(*leaf0->FindPort(2)), "4xQDR");  // host1 has no XDR
  EXPECT_EQ(topology::MaxSupportedSpeed(*leaf0->FindPort(2)), topology::Speed::kXdr);
  EXPECT_DOUBLE_EQ(topology::ActiveGbps(*leaf0->FindPort(6)), 800.0);
  EXPECT_EQ(topology::RateString(*fab.FindNode(s.f.Guid(s.host0))->FindPort(1)), "4xXDR");
  // leaf1's fields say XDR but its port 0 does not advertise them.
  const auto* leaf1 = fab.FindNode(s.f.Guid(s.leaf1));
  EXPECT_EQ(topology::RateString(*leaf1->FindPort(5)), "4xQDR");
  EXPECT_EQ(leaf1->FindPort(5)->speed_ext2_supported, 0);
  EXPECT_EQ(topology::RateString(*fab.FindNode(s.f.Guid(s.spine))->FindPort(3)), "4xQDR");
}

// FDR10 (Mellanox ExtendedPortInfo, SMP 0xFF90): asked only of ports at QDR
// on devices libibnetdisc lists (here a SwitchX and a ConnectX-3); a port
// whose ExtendedPortInfo says FDR10 active runs 4xFDR10 (40 Gb/s of data),
// the others stay QDR; a port that re-reads QDR keeps it between walks.
TEST(DiscoveryTest, Fdr10FromMellanoxExtendedPortInfoWhereADeviceHasIt) {
  Small s;
  s.f.SetMlnxFdr10(s.leaf0, 0xc738);
  s.f.SetMlnxFdr10(s.spine, 0xc738);
  s.f.SetMlnxFdr10(s.host0, 0x1003);
  const auto r = Discover(s.f, s.host0, 1);
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(r.problems.empty()) << r.problems.front() << ": nothing asked of a device without the attribute";
  // leaf0's four up ports, spine's three, host0's one; none of leaf1 or host1.
  EXPECT_EQ(s.f.mlnx_ext_port_info_smps(), 8);
  const auto* leaf0 = r.fabric.FindNode(s.f.Guid(s.leaf0));
  EXPECT_EQ(topology::RateString(*leaf0->FindPort(5)), "4xFDR10");  // leaf0 - spine
  EXPECT_EQ(topology::RateString(*leaf0->FindPort(1)), "4xFDR10");  // leaf0 - host0
  EXPECT_DOUBLE_EQ(topology::ActiveGbps(*leaf0->FindPort(5)), 40.0);
  EXPECT_DOUBLE_EQ(topology::ActiveSignalGbps(*leaf0->FindPort(5)), 41.25);
  EXPECT_EQ(topology::RateString(*leaf0->FindPort(2)), "4xQDR");  // host1 is no FDR10 device
  EXPECT_EQ(topology::MaxSupportedSpeed(*leaf0->FindPort(2)), topology::Speed::kFdr10);
  EXPECT_EQ(topology::RateString(*r.fabric.FindNode(s.f.Guid(s.spine))->FindPort(3)), "4xQDR");  // to leaf1
  EXPECT_EQ(topology::RateString(*r.fabric.FindNode(s.f.Guid(s.host0))->FindPort(1)), "4xFDR10");

  // The sweep's PortInfo re-read of leaf0[5] keeps the walk's FDR10 while
  // it reads QDR: no retrain seen; a re-read at another speed drops it.
  const PortRef l5{s.f.Guid(s.leaf0), 5};
  std::map<PortRef, topology::Port> read;
  for (const auto& t : collectors::LinkTargets(r.fabric)) {
    if (t.port != l5) continue;
    topology::Port now = *r.fabric.FindPort(l5);
    now.mlnx = {};  // as ApplyPortInfo leaves it
    topology::KeepMlnxSpeeds(t.mlnx, &now);
    read[l5] = now;
  }
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(topology::RateString(read[l5]), "4xFDR10");
  EXPECT_TRUE(collectors::CompareLinks(r.fabric, read).ports.empty());
  topology::Port edr = read[l5];
  edr.speed_ext_active = 2;  // EDR
  topology::KeepMlnxSpeeds(r.fabric.FindPort(l5)->mlnx, &edr);
  EXPECT_FALSE(edr.mlnx.read);
  EXPECT_EQ(topology::RateString(edr), "4xEDR");
}

// Both ends can run FDR10 and the link trained QDR: below what both ends
// allow, which only ExtendedPortInfo shows.
TEST(DiscoveryTest, AQdrLinkBetweenTwoFdr10DevicesIsBelowItsEnds) {
  Small s;
  s.f.SetMlnxFdr10(s.leaf0, 0xc738);
  s.f.SetMlnxFdr10(s.spine, 0xc738, /*fdr10_links=*/false);
  const auto r = Discover(s.f, s.host0, 1);
  ASSERT_TRUE(r.ok);
  const PortRef l5{s.f.Guid(s.leaf0), 5};
  EXPECT_EQ(topology::RateString(*r.fabric.FindPort(l5)), "4xQDR");
  const topology::Analysis a = topology::Analyze(r.fabric);
  int below = 0;
  for (const auto& f : a.findings) {
    if (f.kind != topology::FindingKind::kBelowEnabled) continue;
    ++below;
    EXPECT_NE(f.detail.find("runs 4xQDR where both ends allow 4xFDR10"), std::string::npos) << f.detail;
  }
  EXPECT_EQ(below, 2) << "leaf0's two cables to the spine";
}

TEST(DiscoveryTest, NothingAnswersLocally) {
  testing::FakeFabric f;
  const int ca = f.AddCa("lonely", 1);
  f.Silence(ca);
  const auto r = Discover(f, ca, 1);
  EXPECT_FALSE(r.ok);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems[0].find("local node"), std::string::npos);
}

// Directed routes only for what needs one: NodeInfo through each cable
// (once per cable), a switch's port 0 (its LID) and each CA port; the
// rest goes LID-routed to the node's target alone.
TEST(DiscoveryTest, DirectedRoutesOnlyWhereTheLidIsNotKnown) {
  Small s;
  const auto c = DiscoverCounting(s.f, s.host0, 1);
  ASSERT_TRUE(c.result.ok);
  EXPECT_TRUE(c.result.problems.empty());
  // NodeInfo: the local node, and the 6 cables once each (the far end of
  // a cable already seen from one side is not asked again).
  const int node_info = 1 + 6;
  // PortInfo: port 0 of 3 switches, host0 port 1, host1 ports 1 and 2.
  const int port_info = 3 + 3;
  EXPECT_EQ(c.directed, node_info + port_info);
  // NodeDescription of 5 nodes, PortInfo of 3 x 8 switch ports, and the
  // NodeInfo that checks each node's LID reaches it.
  EXPECT_EQ(c.lid_routed, 5 + 3 * 8 + 5);
  EXPECT_EQ(s.f.lid_routed_smps(), c.lid_routed);
  EXPECT_EQ(c.result.fabric.FindNode(s.f.Guid(s.spine))->description, "spine0");
  EXPECT_EQ(c.result.fabric.FindNode(s.f.Guid(s.leaf1))->FindPort(5)->remote, (PortRef{s.f.Guid(s.spine), 3}));
}

// The SM has assigned LIDs but LID routing does not reach the nodes yet:
// the same fabric, asked again directed, and no problem reported.
TEST(DiscoveryTest, LidRoutesThatDoNotAnswerAreAskedDirected) {
  Small routed;
  const auto expected = DiscoverCounting(routed.f, routed.host0, 1);
  Small s;
  s.f.SetLidRouting(false);
  const auto c = DiscoverCounting(s.f, s.host0, 1, milliseconds(5));
  ASSERT_TRUE(c.result.ok);
  EXPECT_TRUE(c.result.problems.empty()) << c.result.problems.front();
  EXPECT_GT(s.f.lid_routed_smps(), 0);
  EXPECT_EQ(c.result.fabric.nodes().size(), expected.result.fabric.nodes().size());
  for (const auto& n : expected.result.fabric.nodes()) {
    const auto* m = c.result.fabric.FindNode(n.guid);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->description, n.description);
    ASSERT_EQ(m->ports.size(), n.ports.size()) << n.description;
    for (std::size_t i = 0; i < n.ports.size(); ++i) {
      EXPECT_EQ(m->ports[i].state, n.ports[i].state) << n.description << " port " << i;
      EXPECT_EQ(m->ports[i].remote, n.ports[i].remote) << n.description << " port " << i;
    }
  }
}

// A LID-routed SMP is answered by whoever holds the LID when it arrives:
// here host1's LID and leaf0's reach leaf1's agent (the SM moved them, or a
// routing loop left the packets there). Nothing leaf1 says is taken for
// theirs: the two are asked over their directed routes, and the walk
// says so.
TEST(DiscoveryTest, AnswersFromAnotherNodeAtALidAreNotTaken) {
  Small routed;
  const auto expected = DiscoverCounting(routed.f, routed.host0, 1);
  Small s;
  s.f.MisrouteLid(2, s.leaf1);  // host1's ports
  s.f.MisrouteLid(3, s.leaf1);
  s.f.MisrouteLid(10, s.leaf1);  // leaf0
  const auto c = DiscoverCounting(s.f, s.host0, 1);
  ASSERT_TRUE(c.result.ok);
  ASSERT_EQ(c.result.problems.size(), 2u);
  std::set<std::string> problems(c.result.problems.begin(), c.result.problems.end());
  EXPECT_TRUE(
      problems.count("LID 10 of 0x0000000000001000 answered as 0x0000000000001001: its answers by LID not "
                     "taken, asked over its directed route"))
      << c.result.problems.front();
  for (const auto& n : expected.result.fabric.nodes()) {
    const auto* m = c.result.fabric.FindNode(n.guid);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->description, n.description);
    ASSERT_EQ(m->ports.size(), n.ports.size()) << n.description;
    for (std::size_t i = 0; i < n.ports.size(); ++i) {
      EXPECT_EQ(m->ports[i].state, n.ports[i].state) << n.description << " port " << i;
      EXPECT_EQ(m->ports[i].remote, n.ports[i].remote) << n.description << " port " << i;
    }
  }
  // leaf0's 8 ports and description, host1's description: directed.
  EXPECT_EQ(c.directed, expected.directed + 9 + 1);
}

topology::HostPort Port(const std::string& name, std::uint16_t lid, std::uint8_t port, std::uint64_t guid) {
  topology::HostPort h;
  h.name = name;
  h.lid = lid;
  h.port = port;
  h.port_guid = guid;
  return h;
}

// A host of two rails: its HCAs a (LID 21) and b (LID 22) on leaves 0 and
// 1 under one spine, another host on leaf 1. The SA answers at LID 100.
struct Rails {
  testing::FakeFabric f;
  int leaf0, leaf1, spine, a, b, other;
  Rails() {
    leaf0 = f.AddSwitch("leaf0", 8, 10);
    leaf1 = f.AddSwitch("leaf1", 8, 11);
    spine = f.AddSwitch("spine0", 8, 12);
    a = f.AddCa("gpu01 mlx5_0", 1);
    b = f.AddCa("gpu01 mlx5_1", 1);
    other = f.AddCa("gpu02 mlx5_1", 1);
    f.SetCaLid(a, 1, 21);
    f.SetCaLid(b, 1, 22);
    f.SetCaLid(other, 1, 23);
    f.Connect(a, 1, leaf0, 1);
    f.Connect(b, 1, leaf1, 3);
    f.Connect(other, 1, leaf1, 4);
    f.Connect(leaf0, 8, spine, 1);
    f.Connect(leaf1, 8, spine, 2);
    f.ServeSa(100);
  }
  topology::HostPort B() const { return Port("mlx5_1/1", 22, 1, f.Guid(b) << 8 | 1); }
};

Counted DiscoverLocal(testing::FakeFabric& f, int local, const std::vector<topology::HostPort>& host_ports,
                      std::uint16_t sa_lid) {
  transport::testing::FakeMadPort mad(f.Responder(local, 1));
  transport::MadEngine engine(mad, {16, milliseconds(5), 1});
  topology::DiscoverOptions o;
  o.max_hops = 1;
  o.host_ports = host_ports;
  o.sa_lid = sa_lid;
  Counted c{topology::Discover(engine, o)};
  const testing::SentSmps sent = testing::CountSent(mad);
  c.directed = sent.directed;
  c.lid_routed = sent.lid_routed;
  return c;
}

// Local scope on a host of several HCAs on one fabric reads every one's
// cable: its own by directed route, the other's by LID, the far end named
// by the SA's LinkRecord. Nothing more is directed than without it, and
// the scope holds both cables, both ends, and nothing of the other host.
TEST(DiscoveryTest, LocalScopeReadsTheHostsOtherPortsByLidTheirFarEndsFromTheSa) {
  Rails r;
  const auto alone = DiscoverLocal(r.f, r.a, {}, 100);
  const auto c = DiscoverLocal(r.f, r.a, {r.B()}, 100);
  ASSERT_TRUE(c.result.ok);
  EXPECT_TRUE(c.result.problems.empty()) << c.result.problems.front();
  EXPECT_TRUE(c.result.unanswered.empty());
  EXPECT_TRUE(c.result.host_ports_unread.empty());
  EXPECT_EQ(c.directed, alone.directed);
  EXPECT_EQ(r.f.sa_queries(), 2) << "b's LinkRecord, and the NodeRecord of its leaf's LID";
  // NodeInfo, NodeDescription, PortInfo of b; of leaf1 the same and port 0.
  EXPECT_EQ(c.lid_routed - alone.lid_routed, 3 + 4);
  const topology::Fabric& fabric = c.result.fabric;
  EXPECT_EQ(fabric.FindNode(r.f.Guid(r.b))->description, "gpu01 mlx5_1");
  EXPECT_EQ(fabric.FindNode(r.f.Guid(r.leaf1))->description, "leaf1");
  EXPECT_EQ(fabric.FindNode(r.f.Guid(r.leaf1))->lid, 11);
  EXPECT_EQ(fabric.FindPort({r.f.Guid(r.b), 1})->remote, (PortRef{r.f.Guid(r.leaf1), 3}));
  EXPECT_EQ(fabric.FindPort({r.f.Guid(r.leaf1), 3})->remote, (PortRef{r.f.Guid(r.b), 1}));
  EXPECT_EQ(fabric.FindPort({r.f.Guid(r.b), 1})->lid, 22);
  EXPECT_EQ(fabric.FindNode(r.f.Guid(r.other)), nullptr);
  EXPECT_EQ(fabric.FindPort({r.f.Guid(r.leaf1), 4}), nullptr) << "only the cable's port of b's leaf";
  const std::set<PortRef> scope =
      topology::PortsInScope(fabric, {topology::ScopeKind::kLocal}, r.f.Guid(r.a), c.result.host_port_guids);
  EXPECT_EQ(scope, (std::set<PortRef>{
                       {r.f.Guid(r.a), 1}, {r.f.Guid(r.leaf0), 1}, {r.f.Guid(r.b), 1}, {r.f.Guid(r.leaf1), 3}}));
}

// The other port of a dual-port HCA is the same node's.
TEST(DiscoveryTest, TheOtherPortOfTheLocalHcaIsReadToo) {
  Small s;
  s.f.ServeSa(100);
  const auto c = DiscoverLocal(s.f, s.host1, {Port("mlx5_0/2", 3, 2, s.f.Guid(s.host1) << 8 | 2)}, 100);
  ASSERT_TRUE(c.result.ok);
  EXPECT_TRUE(c.result.problems.empty()) << c.result.problems.front();
  const topology::Node* h = c.result.fabric.FindNode(s.f.Guid(s.host1));
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(h->ports.size(), 2u);
  EXPECT_EQ(h->FindPort(1)->remote, (PortRef{s.f.Guid(s.leaf1), 1}));
  EXPECT_EQ(h->FindPort(2)->remote, (PortRef{s.f.Guid(s.leaf0), 2}));
  EXPECT_EQ(c.result.fabric.FindPort({s.f.Guid(s.leaf0), 2})->remote, (PortRef{s.f.Guid(s.host1), 2}));
}

// What cannot be read is said, never guessed: no SA, a LID that answers
// as another port, an SA that does not answer. A walk that missed it for
// want of an answer keeps what the last one read there (lost MADs are no
// evidence); one without an SA is complete without it.
TEST(DiscoveryTest, AHostPortNotReadIsSaidAndKeptFromTheLastWalk) {
  Rails r;
  const auto none = DiscoverLocal(r.f, r.a, {r.B()}, 0);
  ASSERT_TRUE(none.result.ok);
  EXPECT_EQ(none.result.host_ports_unread, std::vector<std::string>{"mlx5_1/1"});
  EXPECT_EQ(none.result.problems.front(),
            "this host's port mlx5_1/1 (LID 22) not read: no SA known to name the far end of its cable");
  EXPECT_TRUE(none.result.unanswered.empty()) << "how it is set up, not a lost answer: the walk is complete";

  const auto wrong = DiscoverLocal(r.f, r.a, {Port("mlx5_1/1", 23, 1, r.B().port_guid)}, 100);  // the other host's LID
  EXPECT_EQ(wrong.result.host_ports_unread, std::vector<std::string>{"mlx5_1/1"});
  EXPECT_EQ(wrong.result.fabric.FindNode(r.f.Guid(r.other)), nullptr) << "nothing of what answered taken";
  EXPECT_EQ(wrong.result.unanswered.host_ports.count(r.B().port_guid), 1u) << "no evidence: kept from the last walk";
  EXPECT_NE(wrong.result.problems.front().find("its LID answered as port 0x0000000000100501, not its own"),
            std::string::npos)
      << wrong.result.problems.front();

  const auto full = DiscoverLocal(r.f, r.a, {r.B()}, 100);
  ASSERT_TRUE(full.result.host_ports_unread.empty());
  r.f.ServeSa(101);  // the SA moved: the record does not come
  const auto missed = DiscoverLocal(r.f, r.a, {r.B()}, 100);
  EXPECT_EQ(missed.result.host_ports_unread, std::vector<std::string>{"mlx5_1/1"});
  std::map<std::uint64_t, int> misses;
  const topology::MergeResult merged = topology::MergeWalk(full.result.fabric, missed.result, &misses);
  EXPECT_EQ(merged.fabric.FindPort({r.f.Guid(r.b), 1})->remote, (PortRef{r.f.Guid(r.leaf1), 3}))
      << "kept from the last walk";
  EXPECT_NE(merged.fabric.FindNode(r.f.Guid(r.leaf1)), nullptr);
}

// A rail that goes down is read down where its cable led (the tracker
// remembers where: HostPort::last_far), not dropped; a far switch that
// does not answer leaves the cable as the last walk had it.
TEST(DiscoveryTest, AHostPortDownIsReadDownAtItsLastFarEndAndAFarEndLostIsKept) {
  Rails r;
  const auto full = DiscoverLocal(r.f, r.a, {r.B()}, 100);
  ASSERT_TRUE(full.result.host_ports_unread.empty());
  EXPECT_EQ(full.result.host_far_ends, (std::set<PortRef>{{r.f.Guid(r.leaf1), 3}}));

  r.f.SetLinkDown(r.b, 1);
  topology::HostPort down = r.B();
  down.active = false;
  down.last_far = PortRef{r.f.Guid(r.leaf1), 3};
  down.last_far_lid = 11;
  const int sa_before = r.f.sa_queries();
  const auto c = DiscoverLocal(r.f, r.a, {down}, 100);
  EXPECT_EQ(r.f.sa_queries(), sa_before) << "where the cable led is known: nothing to ask the SA";
  EXPECT_TRUE(c.result.problems.empty()) << c.result.problems.front();
  EXPECT_TRUE(c.result.unanswered.empty());
  EXPECT_TRUE(c.result.host_ports_unread.empty());
  const topology::Port* far = c.result.fabric.FindPort({r.f.Guid(r.leaf1), 3});
  ASSERT_NE(far, nullptr);
  EXPECT_FALSE(far->link_up());
  EXPECT_EQ(c.result.host_far_ends, (std::set<PortRef>{{r.f.Guid(r.leaf1), 3}}));
  const std::set<PortRef> scope =
      topology::PortsInScope(c.result.fabric, {topology::ScopeKind::kLocal}, r.f.Guid(r.a), c.result.host_port_guids);
  EXPECT_EQ(scope.count({r.f.Guid(r.leaf1), 3}), 0u) << "the tracker adds the far ends read";

  // Back up, but leaf1 silent: the cable as the last walk read it.
  r.f.Connect(r.b, 1, r.leaf1, 3);
  r.f.Silence(r.leaf1);
  const auto lost = DiscoverLocal(r.f, r.a, {r.B()}, 100);
  EXPECT_EQ(lost.result.host_ports_unread, std::vector<std::string>{"mlx5_1/1"});
  EXPECT_EQ(lost.result.unanswered.behind.count({r.f.Guid(r.b), 1}), 1u);
  EXPECT_EQ(lost.result.fabric.FindNode(r.f.Guid(r.leaf1)), nullptr) << "nothing of it read, nothing of it made up";
  std::map<std::uint64_t, int> misses;
  const topology::MergeResult merged = topology::MergeWalk(full.result.fabric, lost.result, &misses);
  EXPECT_EQ(merged.fabric.FindPort({r.f.Guid(r.b), 1})->remote, (PortRef{r.f.Guid(r.leaf1), 3}));
  ASSERT_NE(merged.fabric.FindNode(r.f.Guid(r.leaf1)), nullptr);
  EXPECT_EQ(merged.fabric.FindPort({r.f.Guid(r.leaf1), 3})->remote, (PortRef{r.f.Guid(r.b), 1}));
}

// Before the SM has run there are no LIDs: everything goes directed.
TEST(DiscoveryTest, WithoutLidsEverythingIsDirected) {
  Small s;
  for (int sw : {s.leaf0, s.leaf1, s.spine}) s.f.SetLid(sw, 0);
  s.f.SetCaLid(s.host0, 1, 0);
  s.f.SetCaLid(s.host1, 1, 0);
  s.f.SetCaLid(s.host1, 2, 0);
  const auto c = DiscoverCounting(s.f, s.host0, 1);
  ASSERT_TRUE(c.result.ok);
  EXPECT_TRUE(c.result.problems.empty());
  EXPECT_EQ(c.lid_routed, 0);
  EXPECT_EQ(c.result.fabric.switch_count(), 3u);
  EXPECT_EQ(c.result.fabric.FindNode(s.f.Guid(s.leaf1))->description, "leaf1");
}

TEST(SweepTest, CountersLandOnTheirPorts) {
  Small s;
  transport::PortCounters c;
  c.rcv_errors = 77;
  s.f.SetCounters(s.spine, 2, c);
  transport::PortCountersExtended x;
  x.xmit_data = 1ULL << 40;
  s.f.SetExtended(s.host1, 2, x);
  s.f.DisableExtended(s.leaf1);

  transport::testing::FakeMadPort mad(s.f.Responder(s.host0, 1));
  transport::MadEngine engine(mad, {16, milliseconds(20), 1});
  const auto d = topology::Discover(engine);
  ASSERT_TRUE(d.ok);
  const auto targets = collectors::SweepTargets(d.fabric, {}, {});
  // Up switch ports: leaf0 1,2,5,6; leaf1 1,5; spine 1,2,3; CA ports: 3.
  EXPECT_EQ(targets.size(), 12u);
  const auto sweep = collectors::Sweep(targets, engine);
  EXPECT_EQ(sweep.failed_ports, 0u);
  for (const auto& r : sweep.readings) {
    const auto sample = sweep.SampleOf(r);
    ASSERT_TRUE(sample);
    const auto& v = sample->value;
    using collectors::Counter;
    using collectors::Index;
    const bool spine2 = r.target.port == PortRef{s.f.Guid(s.spine), 2};
    EXPECT_EQ(v[Index(Counter::kRcvErrors)], spine2 ? 77u : 0u);
    const bool host1p2 = r.target.port == PortRef{s.f.Guid(s.host1), 2};
    EXPECT_EQ(v[Index(Counter::kXmitData)], host1p2 ? (1ULL << 40) : 0u);
    const bool leaf1 = r.target.port.node_guid == s.f.Guid(s.leaf1);
    // Without PortCountersExtended the 32-bit fields feed the data counters
    // and the unicast/multicast counters are absent.
    EXPECT_EQ(sample->Bits(Index(Counter::kXmitData)), leaf1 ? 32 : 64);
    EXPECT_EQ(sample->present.test(Index(Counter::kUnicastXmitPkts)), !leaf1);
  }
}

TEST(SweepTest, RememberedDownPortsStayTargets) {
  Small s;
  s.f.SetLinkDown(s.leaf0, 6);
  transport::testing::FakeMadPort mad(s.f.Responder(s.host0, 1));
  transport::MadEngine engine(mad, {16, milliseconds(20), 1});
  const auto d = topology::Discover(engine);
  const PortRef down{s.f.Guid(s.leaf0), 6};
  const auto without = collectors::SweepTargets(d.fabric, {}, {});
  const auto with = collectors::SweepTargets(d.fabric, {down}, {});
  EXPECT_EQ(with.size(), without.size() + 1);
  const auto sweep = collectors::Sweep(with, engine);
  EXPECT_EQ(sweep.failed_ports, 0u) << "a switch answers for its down ports";
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

// A full walk from `local`'s port 1 that must succeed.
topology::Fabric Full(testing::FakeFabric& f, int local) {
  auto r = Discover(f, local, 1);
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
  // directed; its description LID-routed, behind the NodeInfo that checks
  // the LID reaches it.
  EXPECT_EQ(up.directed, 2);
  EXPECT_LE(up.total, 4);
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
  const Walked unknown =
      Rewalk(t.f, t.host0, base, t.f.Guid(t.host0), {{PortRef{0xdead, 1}, topology::Port{}, "trap 128"}});
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

// A directed route goes at most 63 hops (IBTA 14.2.2): a chain of 65
// switches behind the exporter's HCA is discovered up to the 63rd, what is
// behind is named as a problem, and no SMP goes further (libibmad would
// cut the route and reach the wrong node).
TEST(DiscoveryTest, NodesBeyondSixtyThreeHopsAreNamedNotReachedByACutRoute) {
  testing::FakeFabric f;
  const int host = f.AddCa("host", 1);
  std::vector<int> chain;
  for (int i = 0; i < 65; ++i) chain.push_back(f.AddSwitch("sw" + std::to_string(i + 1), 4, 0));
  f.Connect(host, 1, chain[0], 1);
  for (std::size_t i = 0; i + 1 < chain.size(); ++i) f.Connect(chain[i], 2, chain[i + 1], 1);
  transport::testing::FakeMadPort port(f.Responder(host, 1), {std::chrono::microseconds(0), 0});
  transport::MadEngine engine(port, testing::QuickEngine());
  const auto d = topology::Discover(engine);
  EXPECT_EQ(d.fabric.switch_count(), 63u);
  EXPECT_NE(d.fabric.FindNode(f.Guid(chain[62])), nullptr) << "the 63rd hop is reached";
  EXPECT_EQ(d.fabric.FindNode(f.Guid(chain[63])), nullptr);
  bool named = false;
  for (const auto& p : d.problems) named |= p.find("more than 63 hops") != std::string::npos;
  EXPECT_TRUE(named);
  for (const auto& mad : port.sent_mads()) {
    const auto h = transport::DecodeHeader(mad);
    if (h.mgmt_class == 0x81) {
      EXPECT_LE(mad[7], 63) << "HopCount";
    }
  }
}

// LinkSpeedExtEnabled 30 means "extended speeds disabled" (IBTA 14.2.5.6):
// no extended speed is enabled, so a QDR link on FDR-capable ports is not
// below what its ends are enabled for.
TEST(ApplyPortInfoTest, LinkSpeedExtEnabled30IsNoExtendedSpeedEnabled) {
  transport::PortInfo pi;
  pi.port_phys_state = 5;
  pi.link_speed_active = 4;         // QDR
  pi.link_speed_enabled = 7;        // SDR, DDR, QDR
  pi.link_speed_ext_supported = 3;  // FDR, EDR
  pi.link_speed_ext_enabled = 30;   // disabled
  topology::Port p;
  topology::ApplyPortInfo(pi, {.ext = true}, &p);
  EXPECT_EQ(p.speed_ext_enabled, 0);
  EXPECT_EQ(p.speed_ext_supported, 3);
  pi.link_speed_ext_enabled = 3;
  topology::ApplyPortInfo(pi, {.ext = true}, &p);
  EXPECT_EQ(p.speed_ext_enabled, 3) << "a set of speeds stays one";
}

// LinkSpeedExt* mean something only where CapabilityMask says
// IsExtendedSpeedsSupported (bit 14, 0x4000; libibnetdisc
// ibnd_get_agg_linkspeedext): without it the port runs its LinkSpeedActive.
TEST(ApplyPortInfoTest, ExtendedSpeedsOnlyWhereTheCapabilityMaskSaysSo) {
  transport::PortInfo pi;
  pi.capability_mask = 0x0848;  // bit 14 clear
  pi.port_phys_state = 5;
  pi.link_speed_active = 4;      // QDR
  pi.link_speed_ext_active = 8;  // NDR, in a field the port does not say is valid
  pi.link_speed_ext_supported = 8;
  EXPECT_FALSE(transport::HasExtendedSpeeds(pi));
  topology::Port p;
  topology::ApplyPortInfo(pi, {.ext = transport::HasExtendedSpeeds(pi)}, &p);
  EXPECT_EQ(p.speed_ext_active, 0);
  EXPECT_EQ(p.speed_ext_supported, 0);
  EXPECT_EQ(topology::ActiveSpeed(p), topology::Speed::kQdr);
  pi.capability_mask |= transport::kPortCapHasExtSpeeds;
  EXPECT_TRUE(transport::HasExtendedSpeeds(pi));
  topology::ApplyPortInfo(pi, {.ext = transport::HasExtendedSpeeds(pi)}, &p);
  EXPECT_EQ(topology::ActiveSpeed(p), topology::Speed::kNdr);
  // A node whose CapabilityMask was not read (a switch's port 0 that did
  // not answer) keeps its ports' extended speeds: only a mask read without
  // the bit gates them.
  EXPECT_TRUE(topology::ExtSpeedsOf(topology::Node{}).ext);
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
