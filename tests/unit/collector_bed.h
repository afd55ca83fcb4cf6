#pragma once
// A collector's test bed over the fake transport (tests/unit/fake_fabric.h):
// the small tree, discovered once, labelled as the tracker labels it, and
// each collector run as the scheduler runs it (Run, SweepWith), with what
// it sent counted and what it renders parsed.

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/framework/collector.h"
#include "collectors/metrics.h"
#include "collectors/registry.h"
#include "tests/testbed/prom_text.h"
#include "tests/unit/fake_fabric.h"
#include "topology/discovery.h"
#include "transport/codec.h"
#include "transport/testing/fake_mad_port.h"

namespace ibfabric::collectors {

using testbed::Scrape;

// The PerfMgt class, as the fake fabric counts what was sent by class.
inline constexpr int kPmaClass = static_cast<int>(transport::MgmtClass::kPerformance);

// Two spines, two leaves, two hosts on each leaf ("cn0001 mlx5_0", ...),
// the exporter on the first host; discovered once.
struct Bed {
  testing::FakeFabric f;
  std::vector<int> spines, leaves, hosts;
  transport::testing::FakeMadPort port;
  transport::MadEngine engine;
  Logger log{LogLevel::kError};
  SharedReads reads{engine};
  topology::Fabric fabric;
  Snapshot parts;

  explicit Bed(const std::function<void(Bed&)>& shape = nullptr)
      : port(Build(shape), {std::chrono::microseconds(0), 0}), engine(port, testing::QuickEngine()) {
    fabric = topology::Discover(engine).fabric;
    parts.fabric = std::make_shared<topology::Fabric>(fabric);
    // How the tracker labels each node (the series' names and kinds).
    auto nodes = std::make_shared<NodeLabels>();
    for (const auto& n : fabric.nodes()) {
      NodeLabel& label = (*nodes)[n.guid];
      label.kind = n.kind;
      label.name = n.description;
      for (const auto& p : n.ports) {
        if (n.kind != topology::NodeKind::kSwitch && p.guid != 0) label.port_guids[p.number] = p.guid;
      }
    }
    parts.nodes = std::move(nodes);
  }
  transport::testing::FakeMadPort::Responder Build(const std::function<void(Bed&)>& shape) {
    const testing::SmallTree t =
        testing::BuildSmallTree(f, [](int i) { return "cn000" + std::to_string(i + 1) + " mlx5_0"; });
    spines = t.spines;
    leaves = t.leaves;
    hosts = t.hosts;
    if (shape) shape(*this);
    return f.Responder(hosts[0], 1);
  }
  Cycle MakeCycle(Trigger trigger) {
    Cycle c;
    c.trigger = trigger;
    c.engine = &engine;
    c.fabric = &fabric;
    c.now = std::chrono::steady_clock::now();
    c.wall = std::chrono::system_clock::now();
    c.parts = &parts;
    c.scope = parts.scope;
    c.reads = &reads;
    c.log = &log;
    c.in_scope = [](const topology::Node&) { return true; };
    c.read_port = [](const topology::PortRef&) { return true; };
    static const std::set<topology::PortRef> none;
    c.remembered = &none;
    c.name_of = [this](std::uint64_t g) { return topology::NodeName(fabric, g); };
    c.describe = [this](const topology::PortRef& p) { return topology::NodeName(fabric, p.node_guid); };
    if (trigger == Trigger::kFullWalk) {
      for (const auto& n : fabric.nodes()) c.fresh.insert(n.guid);
    }
    return c;
  }
  std::unique_ptr<Collector> Make(std::string_view name, const CollectorOptions& options = {}) {
    parts.collectors.emplace_back(name);
    return FindCollector(name)->make(options);
  }
  // One run as the scheduler makes it: after a walk (kDiscovery), or with
  // the sweep's batch (kSweep, its plan read with the counters'
  // targets every port of the fabric).
  Outcome Run(Collector& c) {
    Outcome out;
    if (c.schedule() == Schedule::kDiscovery) {
      out = c.Update(MakeCycle(Trigger::kFullWalk));
    } else {
      Cycle cycle = MakeCycle(Trigger::kSweep);
      SweepPlan plan;
      c.Plan(cycle, &plan);
      const SweepResult sweep = collectors::Sweep(plan.counters, {}, LidChecks(plan.counters, {}), engine, plan.parts);
      cycle.sweep = &sweep;
      out = c.Update(cycle);
    }
    c.Publish(&parts);
    return out;
  }
  // One sweep as the scheduler runs it: every kSweep collector's plan in
  // one batch, then each Update in order, each publishing before the next.
  // `at`: the cycle's time where the test sets the scheduler's clock.
  std::vector<Outcome> SweepWith(const std::vector<Collector*>& in_order,
                                 std::optional<std::chrono::steady_clock::time_point> at = std::nullopt) {
    Cycle cycle = MakeCycle(Trigger::kSweep);
    if (at) cycle.now = *at;
    SweepPlan plan;
    for (Collector* c : in_order) c->Plan(cycle, &plan);
    const SweepResult sweep = collectors::Sweep(plan.counters, {}, LidChecks(plan.counters, {}), engine, plan.parts);
    cycle.sweep = &sweep;
    std::vector<Outcome> out;
    for (Collector* c : in_order) {
      out.push_back(c->Update(cycle));
      c->Publish(&parts);
    }
    return out;
  }
  Scrape Render() {
    ++parts.sweeps;
    return Scrape::Parse(RenderExposition(parts, "test"));
  }
  // MADs sent since the last call, by (management class, attribute).
  std::map<std::pair<int, int>, int> Sent() {
    std::map<std::pair<int, int>, int> out;
    const auto& all = port.sent_mads();
    for (std::size_t i = seen_; i < all.size(); ++i) {
      const auto h = transport::DecodeHeader(all[i]);
      ++out[{h.mgmt_class, h.attr_id}];
    }
    seen_ = all.size();
    return out;
  }
  // Requests of attribute `attr` sent since `from` (an index into the
  // port's record), by the GUID of the node they went to.
  std::map<std::uint64_t, int> SentTo(std::uint16_t attr, std::size_t from) const {
    std::map<std::uint64_t, int> out;
    const auto& all = port.sent_mads();
    const auto& to = port.sent_addresses();
    for (std::size_t i = from; i < all.size(); ++i) {
      if (transport::DecodeHeader(all[i]).attr_id != attr) continue;
      for (const auto& n : fabric.nodes()) {
        bool mine = n.kind == topology::NodeKind::kSwitch && n.lid == to[i].lid;
        for (const auto& p : n.ports) mine = mine || (n.kind != topology::NodeKind::kSwitch && p.lid == to[i].lid);
        if (mine) ++out[n.guid];
      }
    }
    return out;
  }
  // The node's ports other than 0 whose link is up.
  int UpPorts(int node) const {
    int up = 0;
    for (const auto& p : fabric.FindNode(f.Guid(node))->ports) up += p.number != 0 && p.link_up() ? 1 : 0;
    return up;
  }
  std::size_t seen_ = 0;
};

}  // namespace ibfabric::collectors
