// Link health (collectors/health/link_health.h) fed with sweeps that miss 30% of
// their readings counts each planted flap once, and tells a host reset and
// a switch reboot from flaps.

#include "collectors/health/link_health.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "tests/model/hardware_model.h"
#include "tests/unit/fabric_builder.h"
#include "tests/unit/fake_fabric.h"
#include "topology/discovery.h"
#include "topology/merge.h"
#include "transport/mad_engine.h"

namespace ibfabric {
namespace {

using std::chrono::milliseconds;
using topology::PortRef;
// Link health under loss: leaf[1..3] to three hosts; sweeps read each end's
// counters and the switch end's PortInfo with 70% chance.
struct Sweeps {
  topology::Fabric fabric;
  collectors::PortTable ports;
  std::vector<PortRef> leaf, host;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  std::chrono::system_clock::time_point w0 = std::chrono::system_clock::now();
  int sweep = 0;
  std::mt19937 rng{7};
  std::uint64_t switch_guid = 0;

  explicit Sweeps(int hosts = 3, int uplinks = 0) {
    testing::FabricBuilder b;
    const int l = b.Switch("leaf0");
    for (int i = 0; i < hosts; ++i) b.Link(l, 1 + i, b.Ca("host" + std::to_string(i)), 1);
    for (int i = 0; i < uplinks; ++i) b.Link(l, 10 + i, b.Switch("spine" + std::to_string(i)), 1);
    fabric = b.Build();
    switch_guid = b.Guid(l);
    for (const auto& n : fabric.nodes()) {
      for (const auto& p : n.ports) {
        Totals(PortRef{n.guid, p.number});
        if (n.guid == switch_guid) {
          leaf.push_back({n.guid, p.number});
          host.push_back(*p.remote);
        }
      }
    }
  }
  collectors::PortTotals& Totals(const PortRef& p) {
    const bool fresh = !ports.count(p);
    collectors::PortTotals& t = ports[p];
    if (fresh) {
      for (std::size_t i = 0; i < collectors::kCounterCount; ++i) {
        t.present.set(i);
        t.last_wide.set(i);
      }
    }
    return t;
  }
  void Add(const PortRef& p, collectors::Counter c, std::uint64_t n) {
    Totals(p).SetTotal(collectors::Index(c), Totals(p).Total(collectors::Index(c)) + n);
  }
  // One sweep: each end read with probability `read` (else stale), the
  // switch ends' PortInfo likewise; `down` switch ports read Down.
  void Observe(collectors::LinkHealth& h, double read, const std::set<PortRef>& down = {},
               const std::set<PortRef>& unread = {}) {
    std::uniform_real_distribution<double> u(0, 1);
    std::map<PortRef, topology::Port> links;
    for (auto& [ref, t] : ports) t.stale = unread.count(ref) || u(rng) >= read;
    for (const auto& ref : leaf) {
      if (unread.count(ref) || u(rng) >= read) continue;
      topology::Port p = *fabric.FindPort(ref);
      if (down.count(ref)) {
        p.phys_state = 2;
        p.state = 1;
      }
      links[ref] = p;
    }
    h.Observe(fabric, nullptr, ports, links, t0 + std::chrono::seconds(sweep), w0 + std::chrono::seconds(sweep));
    ++sweep;
  }
};

const collectors::CableHealth& CableAt(const std::vector<collectors::CableHealth>& v, const PortRef& end) {
  for (const auto& c : v) {
    if (c.cable.a == end || c.cable.b == end) return c;
  }
  throw std::runtime_error("no such cable");
}

TEST(LossyFlapTest, EachPlantedFlapCountsOnceWhateverTheSweepsMissed) {
  for (std::uint32_t seed : {1u, 2u, 3u, 4u, 5u}) {
    Sweeps s;
    s.rng.seed(seed);
    collectors::LinkHealth h({milliseconds(3'600'000)});
    for (int i = 0; i < 3; ++i) s.Observe(h, 1.0);
    constexpr int kFlaps = 6;
    for (int f = 0; f < kFlaps; ++f) {
      // The flap: both ends count it; a sweep during it may see it Down
      // (and the host end, behind the cable, cannot be read then).
      s.Add(s.leaf[1], collectors::Counter::kLinkDowned, 1);
      s.Add(s.host[1], collectors::Counter::kLinkDowned, 1);
      if (f % 2 == 0) s.Observe(h, 0.7, {s.leaf[1]}, {s.host[1]});
      // The host end answers only every other sweep.
      for (int i = 0; i < 6; ++i) s.Observe(h, 0.7, {}, i % 2 ? std::set<PortRef>{s.host[1]} : std::set<PortRef>{});
    }
    for (int i = 0; i < 6; ++i) s.Observe(h, 1.0);
    const auto cables = h.Cables();
    EXPECT_EQ(CableAt(cables, s.leaf[1]).downs_total, static_cast<std::uint64_t>(kFlaps)) << "seed " << seed;
    EXPECT_EQ(CableAt(cables, s.leaf[1]).downs_in_window, kFlaps) << "seed " << seed;
    EXPECT_EQ(CableAt(cables, s.leaf[0]).downs_total, 0u) << "seed " << seed;
    EXPECT_EQ(CableAt(cables, s.leaf[2]).downs_total, 0u) << "seed " << seed;
    EXPECT_TRUE(h.Events().empty());
  }
}

TEST(LossyFlapTest, ACounterLateOrEarlyAgainstTheDownStateIsTheSameFlap) {
  Sweeps s;
  collectors::LinkHealth h({milliseconds(3'600'000)});
  s.Observe(h, 1.0);
  // Down read first; a sweep while it is down reads the counter unmoved
  // (ibsim counts it only when told, after the link is back); then it moves.
  s.Observe(h, 1.0, {s.leaf[0]}, {s.host[0]});
  s.Observe(h, 1.0, {s.leaf[0]}, {s.host[0]});
  s.Add(s.leaf[0], collectors::Counter::kLinkDowned, 1);
  s.Add(s.host[0], collectors::Counter::kLinkDowned, 1);
  s.Observe(h, 1.0);
  EXPECT_EQ(CableAt(h.Cables(), s.leaf[0]).downs_total, 1u);
  // The counter first (the state not read then), the Down state read after.
  s.Add(s.leaf[0], collectors::Counter::kLinkDowned, 1);
  s.Observe(h, 1.0, {}, {s.leaf[0], s.host[0]});
  s.Observe(h, 1.0, {s.leaf[0]}, {s.host[0]});
  s.Add(s.host[0], collectors::Counter::kLinkDowned, 1);
  s.Observe(h, 1.0);
  EXPECT_EQ(CableAt(h.Cables(), s.leaf[0]).downs_total, 2u);
  // Later flaps still count.
  s.Add(s.leaf[0], collectors::Counter::kLinkDowned, 1);
  s.Observe(h, 1.0);
  EXPECT_EQ(CableAt(h.Cables(), s.leaf[0]).downs_total, 3u);
}

TEST(LossyFlapTest, AHostResetIsOneEventAndNoFlap) {
  Sweeps s;
  collectors::LinkHealth h({milliseconds(3'600'000)});
  for (int i = 0; i < 3; ++i) {
    for (const auto& p : s.host) s.Add(p, collectors::Counter::kRcvData, 1000);
    s.Observe(h, 1.0);
  }
  // host1 reboots: its cable is read Down, the host cannot be read; it comes
  // back with its counters from zero; the switch end counted one LinkDowned.
  s.Observe(h, 1.0, {s.leaf[1]}, {s.host[1]});
  s.Add(s.leaf[1], collectors::Counter::kLinkDowned, 1);
  s.Observe(h, 1.0, {}, {s.host[1]});
  collectors::PortTotals& t = s.Totals(s.host[1]);
  ++t.resets;  // what CounterStore counts when the data counters went backwards
  s.Observe(h, 1.0);
  for (int i = 0; i < 3; ++i) s.Observe(h, 1.0);
  const auto& c = CableAt(h.Cables(), s.leaf[1]);
  EXPECT_EQ(c.downs_total, 1u);
  EXPECT_EQ(c.downs_in_window, 0) << "a reset is not a flap";
  ASSERT_EQ(h.Events().size(), 1u);
  EXPECT_EQ(h.Events()[0].kind, collectors::DownKind::kHostReset);
  EXPECT_EQ(h.Events()[0].node_guid, s.host[1].node_guid);
  EXPECT_EQ(h.Events()[0].links, 1);
  EXPECT_EQ(h.EventCounts().at(collectors::DownKind::kHostReset), 1u);
}

TEST(LossyFlapTest, ASwitchRebootIsOneEventNotOneFlapPerPort) {
  Sweeps s(4, 2);
  collectors::LinkHealth h({milliseconds(3'600'000)});
  for (int i = 0; i < 3; ++i) s.Observe(h, 1.0);
  // Every port of leaf0 goes down and up once: the far ends count it (the
  // leaf itself cannot be read meanwhile).
  const std::set<PortRef> leaf(s.leaf.begin(), s.leaf.end());
  s.Observe(h, 1.0, {}, leaf);
  for (const auto& p : s.host) s.Add(p, collectors::Counter::kLinkDowned, 1);
  s.Observe(h, 1.0, {}, leaf);
  for (const auto& p : s.leaf) s.Add(p, collectors::Counter::kLinkDowned, 1);
  for (int i = 0; i < 3; ++i) s.Observe(h, 1.0);
  std::uint64_t downs = 0;
  for (const auto& c : h.Cables()) {
    downs += c.downs_total;
    EXPECT_EQ(c.downs_in_window, 0) << "no cable flapped";
  }
  EXPECT_EQ(downs, 6u) << "each link went down once";
  ASSERT_EQ(h.Events().size(), 1u);
  EXPECT_EQ(h.Events()[0].kind, collectors::DownKind::kSwitchReboot);
  EXPECT_EQ(h.Events()[0].node_guid, s.switch_guid);
  EXPECT_EQ(h.Events()[0].links, 6);
}

TEST(LossyFlapTest, ADisabledPortIsIsolatedOnPurpose) {
  Sweeps s;
  collectors::LinkHealth h({milliseconds(3'600'000)});
  s.Observe(h, 1.0);
  std::map<PortRef, topology::Port> links;
  topology::Port p = *s.fabric.FindPort(s.leaf[2]);
  p.phys_state = 3;  // Disabled
  p.state = 1;
  links[s.leaf[2]] = p;
  h.Observe(s.fabric, nullptr, s.ports, links, s.t0 + std::chrono::seconds(1), s.w0 + std::chrono::seconds(1));
  const auto& c = CableAt(h.Cables(), s.leaf[2]);
  EXPECT_FALSE(c.up);
  EXPECT_TRUE(c.disabled);
  EXPECT_EQ(c.downs_in_window, 0);
  ASSERT_EQ(h.Events().size(), 1u);
  EXPECT_EQ(h.Events()[0].kind, collectors::DownKind::kPortDisabled);
}

TEST(LossyFlapTest, ACableNeitherEndOfWhichIsKnownIsUnreachableNotDown) {
  Sweeps s;
  collectors::LinkHealth h({milliseconds(3'600'000)});
  s.Observe(h, 1.0);
  // The fabric loses both nodes of a cable (out of reach), nothing read.
  const topology::Fabric empty;
  h.Observe(empty, nullptr, s.ports, {}, s.t0 + std::chrono::seconds(1), s.w0 + std::chrono::seconds(1));
  const auto& c = CableAt(h.Cables(), s.leaf[0]);
  EXPECT_FALSE(c.reachable);
  EXPECT_TRUE(c.up) << "last known";
  EXPECT_EQ(c.downs_total, 0u);
}

}  // namespace
}  // namespace ibfabric
