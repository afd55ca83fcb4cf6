// Lost MADs are never evidence, on the fake transport: full walks that
// lose 30% of their answers (and a leaf that answers only every other
// walk), merged into the last graph (topology/merge.h), give the same
// fabric every time: the same names, LIDs and links; a real change (a new
// NodeDescription, a cable that went down) still shows.

#include "topology/merge.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "collectors/health/link_health.h"
#include "tests/model/hardware_model.h"
#include "tests/unit/fabric_builder.h"
#include "tests/unit/fake_fabric.h"
#include "topology/discovery.h"
#include "transport/mad_engine.h"

namespace ibfabric {
namespace {

using std::chrono::milliseconds;
using topology::PortRef;
// Two spines, four leaves, three hosts on each leaf.
struct Tree {
  testing::FakeFabric f;
  std::vector<int> spines, leaves, hosts;
  Tree() {
    std::uint16_t lid = 1;
    for (int s = 0; s < 2; ++s) spines.push_back(f.AddSwitch("spine" + std::to_string(s), 8, lid++));
    for (int l = 0; l < 4; ++l) {
      const int leaf = f.AddSwitch("leaf" + std::to_string(l), 8, lid++);
      leaves.push_back(leaf);
      for (int s = 0; s < 2; ++s) f.Connect(leaf, 5 + s, spines[s], 1 + l);
      for (int h = 0; h < 3; ++h) {
        const int host = f.AddCa("h" + std::to_string(l) + "-" + std::to_string(h), 1);
        f.SetCaLid(host, 1, lid++);
        f.Connect(host, 1, leaf, 1 + h);
        hosts.push_back(host);
      }
    }
  }
};

topology::DiscoveryResult Walk(testing::FakeFabric& f, int local, double loss, std::uint32_t seed) {
  transport::testing::FakeMadPort mad(f.Responder(local, 1), {std::chrono::microseconds(0), loss}, seed);
  transport::EngineOptions o;
  o.timeout = milliseconds(3);
  o.timeout_max = milliseconds(6);
  o.adaptive_timeout = false;
  transport::MadEngine engine(mad, o);
  return topology::Discover(engine);
}

// Nodes with their names and LIDs, links with both ends: what must not flicker.
std::string Shape(const topology::Fabric& fabric) {
  std::string out;
  for (const auto& n : fabric.nodes()) {
    out += topology::FormatGuid(n.guid) + " " + n.description + " lid " + std::to_string(n.lid) + ":";
    for (const auto& p : n.ports) {
      out += " " + std::to_string(p.number) + (p.link_up() ? "up" : "down");
      if (p.remote) out += ">" + topology::FormatGuid(p.remote->node_guid) + "[" + std::to_string(p.remote->port) + "]";
    }
    out += "\n";
  }
  return out;
}

TEST(LossyDiscoveryTest, WalksThatLoseAnswersMergeIntoTheSameFabric) {
  Tree t;
  const int local = t.hosts[0];
  const topology::DiscoveryResult clean = Walk(t.f, local, 0, 1);
  ASSERT_TRUE(clean.ok);
  ASSERT_TRUE(clean.unanswered.empty());
  const std::string want = Shape(clean.fabric);
  ASSERT_EQ(clean.fabric.ca_count(), 12u);

  topology::Fabric last = clean.fabric;
  std::map<std::uint64_t, int> misses;
  int incomplete = 0, walks = 0, silent_walks = 0;
  const int flaky_leaf = t.leaves[2];
  for (std::uint32_t i = 1; i <= 24; ++i) {
    // One leaf answers only every other walk; everything loses 30%.
    const bool silent = i % 2 == 1;
    t.f.SetSilent(flaky_leaf, silent);
    const topology::DiscoveryResult walk = Walk(t.f, local, 0.3, 100 + i);
    if (!walk.ok) continue;  // not even the local node: the poller keeps the fabric
    ++walks;
    if (!walk.unanswered.empty()) ++incomplete;
    if (silent) {
      ++silent_walks;
      EXPECT_LT(walk.fabric.ca_count(), 12u) << "the walk alone misses the hosts behind the silent leaf";
    }
    const topology::MergeResult merged = topology::MergeWalk(last, walk, &misses);
    EXPECT_EQ(Shape(merged.fabric), want) << "walk " << i << " lost: " << walk.unanswered.size();
    EXPECT_TRUE(merged.dropped.empty()) << "walk " << i;
    last = merged.fabric;
  }
  EXPECT_GE(walks, 20);
  EXPECT_GE(incomplete, walks / 2) << "the loss must bite for this test to mean anything";
  EXPECT_GE(silent_walks, 10);

  // A real change still shows: a new NodeDescription (rdma-ndd after boot)
  // within two walks.
  t.f.SetSilent(flaky_leaf, false);
  t.f.SetName(t.hosts[4], "gpu042 mlx5_3");
  for (std::uint32_t i = 0; i < 2; ++i) {
    const topology::DiscoveryResult walk = Walk(t.f, local, 0.3, 300 + i);
    if (!walk.ok) continue;
    last = topology::MergeWalk(last, walk, &misses).fabric;
  }
  EXPECT_EQ(last.FindNode(t.f.Guid(t.hosts[4]))->description, "gpu042 mlx5_3");

  // A cable that really went down (both ends' PortInfo say so) takes its
  // host out within two walks, however lossy.
  t.f.SetLinkDown(t.hosts[7], 1);
  for (std::uint32_t i = 0; i < 2; ++i) {
    const topology::DiscoveryResult walk = Walk(t.f, local, 0.3, 400 + i);
    if (!walk.ok) continue;
    last = topology::MergeWalk(last, walk, &misses).fabric;
  }
  EXPECT_EQ(last.FindNode(t.f.Guid(t.hosts[7])), nullptr);
  EXPECT_EQ(last.ca_count(), 11u);
}

TEST(LossyDiscoveryTest, OnTheHardwareModelDroppedSmpsNeverChangeTheFabric) {
  // Switch agents that serve one MAD at a time with one waiting, and an SM
  // sweeping heavily during every walk: VL15 drops what does not fit.
  const auto tree = testbed::FatTree::Generate(testbed::Spec(8, 4, 12, 1, 36));
  model::HardwareModel calm(tree, tree.Host(1), "", {});
  transport::EngineOptions o;
  o.clock = &calm;
  transport::MadEngine calm_engine(calm, o);
  const topology::DiscoveryResult clean = topology::Discover(calm_engine);
  ASSERT_TRUE(clean.ok);
  ASSERT_TRUE(clean.unanswered.empty());
  const std::string want = Shape(clean.fabric);

  model::ModelParams busy;
  busy.switch_queue = 1;
  busy.switch_service = std::chrono::microseconds(1500);
  model::HardwareModel m(tree, tree.Host(1), tree.Host(96), busy);
  o.clock = &m;
  o.retries = 1;
  transport::MadEngine engine(m, o);
  topology::Fabric last = clean.fabric;
  std::map<std::uint64_t, int> misses;
  int incomplete = 0;
  std::uint64_t dropped = 0;
  for (int i = 0; i < 8; ++i) {
    m.StartHeavySweep();
    const topology::DiscoveryResult walk = topology::Discover(engine);
    if (!walk.ok) continue;
    if (!walk.unanswered.empty()) ++incomplete;
    const topology::MergeResult merged = topology::MergeWalk(last, walk, &misses);
    EXPECT_EQ(Shape(merged.fabric), want) << "walk " << i << " lost: " << walk.unanswered.size();
    last = merged.fabric;
  }
  dropped = m.load().dropped;
  std::printf("hardware model: 8 walks during heavy SM sweeps, %d missed answers (%llu of our MADs dropped)\n",
              incomplete, static_cast<unsigned long long>(dropped));
  EXPECT_GE(incomplete, 1) << "the model must drop our SMPs for this test to mean anything (dropped " << dropped << ")";
}

TEST(LossyDiscoveryTest, ANodeOutOfReachForSeveralIncompleteWalksIsDropped) {
  Tree t;
  const int local = t.hosts[0];
  topology::DiscoveryResult walk = Walk(t.f, local, 0, 1);
  topology::Fabric last = walk.fabric;
  std::map<std::uint64_t, int> misses;
  // A host whose agent died: its switch port is up, nothing answers behind it.
  t.f.Silence(t.hosts[5]);
  const std::uint64_t guid = t.f.Guid(t.hosts[5]);
  for (int i = 1; i <= 3; ++i) {
    walk = Walk(t.f, local, 0, 1);
    ASSERT_FALSE(walk.unanswered.behind.empty());
    const auto merged = topology::MergeWalk(last, walk, &misses, 3);
    ASSERT_NE(merged.fabric.FindNode(guid), nullptr) << "walk " << i;
    EXPECT_EQ(merged.fabric.FindNode(guid)->description, "h1-2");
    last = merged.fabric;
  }
  const auto merged = topology::MergeWalk(last, Walk(t.f, local, 0, 1), &misses, 3);
  EXPECT_EQ(merged.fabric.FindNode(guid), nullptr);
  EXPECT_EQ(merged.dropped, std::vector<std::uint64_t>{guid});
}

}  // namespace
}  // namespace ibfabric
