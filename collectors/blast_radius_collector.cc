#include "collectors/blast_radius_collector.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "collectors/framework/render.h"
#include "collectors/parts/adaptive_routing.h"
#include "topology/adaptive_routing.h"

namespace ibfabric::collectors {
namespace {

using prometheus::MetricType;

bool Hurts(Cause c) { return c == Cause::kBadCable || c == Cause::kFlappingLink || c == Cause::kCongestion; }

// A fault as the cache knows it.
using Key = std::tuple<Cause, topology::Link, std::optional<topology::PortRef>>;

class BlastRadiusCollector final : public Collector {
 public:
  Schedule schedule() const override { return Schedule::kSweep; }

  Outcome Update(const Cycle& cycle) override {
    const Snapshot& s = *cycle.parts;
    if (!cycle.scope.reports_topology() || !s.health || !s.forwarding || s.forwarding->empty() || !cycle.fabric) {
      published_.reset();
      cache_.clear();
      return {};
    }
    std::set<std::uint64_t> adaptive;
    if (const auto* ar = s.by_collector.Get<topology::AdaptiveSwitches>(kAdaptiveRoutingCollector)) {
      adaptive = topology::AdaptiveOn(*ar);
    }
    // New tables, a new graph or adaptive routing turned on or off somewhere:
    // every route (or what it is called) may differ.
    if (s.forwarding != tables_ || cycle.fabric_generation != generation_ || adaptive != adaptive_) {
      cache_.clear();
      tables_ = s.forwarding;
      generation_ = cycle.fabric_generation;
      adaptive_ = adaptive;
    }
    auto next = std::make_shared<BlastReport>();
    std::map<Key, std::shared_ptr<const BlastEntry>> kept;
    for (const Alert& a : s.health->active) {
      if (!Hurts(a.cause)) continue;
      const Key key{a.cause, a.cable, a.root};
      auto it = cache_.find(key);
      if (it == cache_.end()) {
        auto e = std::make_shared<BlastEntry>();
        e->cause = a.cause;
        e->cable = a.cable;
        e->root = a.root;
        const std::set<topology::PortRef> egress =
            a.root ? std::set<topology::PortRef>{*a.root} : std::set<topology::PortRef>{a.cable.a, a.cable.b};
        e->radius = topology::RoutesThrough(*cycle.fabric, *s.forwarding, egress);
        // Static routes where the switches they leave by route adaptively
        // (the tables are then the fallback).
        for (const auto& p : egress) e->adaptive = e->adaptive || adaptive.count(p.node_guid) > 0;
        it = cache_.emplace(key, std::move(e)).first;
      }
      next->entries.push_back(it->second);
      kept.insert(*it);
    }
    cache_ = std::move(kept);
    published_ = std::move(next);
    return {};
  }

  void Publish(Snapshot* parts) const override { parts->by_collector.Set(kBlastRadiusCollector, published_); }

 private:
  std::shared_ptr<const topology::ForwardingTables> tables_;
  std::uint64_t generation_ = 0;
  std::set<std::uint64_t> adaptive_;
  std::map<Key, std::shared_ptr<const BlastEntry>> cache_;
  std::shared_ptr<const BlastReport> published_;
};

// "bad_cable ib-spine01[3] - ib-leaf02[1]"
std::string FaultName(const Snapshot& s, const BlastEntry& e) {
  const auto end = [&s](const topology::PortRef& p) {
    return LabelOf(s, p.node_guid).name + "[" + std::to_string(p.port) + "]";
  };
  return std::string(ToString(e.cause)) + " " + end(e.cable.a) + " - " + end(e.cable.b);
}

}  // namespace

std::vector<topology::PortRef> HurtPorts(const topology::Fabric& fabric, const BlastEntry& e) {
  // A fault at a host's own cable (or a root facing it): that host's port.
  std::vector<topology::PortRef> hosts;
  const auto ca = [&fabric](const topology::PortRef& p) {
    const topology::Node* n = fabric.FindNode(p.node_guid);
    return n && topology::IsHca(*n);
  };
  const std::vector<topology::PortRef> ends =
      e.root ? std::vector<topology::PortRef>{*e.root} : std::vector<topology::PortRef>{e.cable.a, e.cable.b};
  for (const topology::PortRef& end : ends) {
    if (ca(end)) hosts.push_back(end);
    const topology::Port* p = fabric.FindPort(end);
    if (p && p->remote && ca(*p->remote)) hosts.push_back(*p->remote);
  }
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  if (!hosts.empty()) return hosts;
  std::vector<topology::PortRef> all;
  for (const auto& [p, r] : e.radius.ports) all.push_back(p);
  return all;
}

const BlastEntry* BlastReport::Find(Cause cause, const topology::Link& cable) const {
  for (const auto& e : entries) {
    if (e->cause == cause && e->cable == cable) return e.get();
  }
  return nullptr;
}

std::unique_ptr<Collector> MakeBlastRadiusCollector(const CollectorOptions&) {
  return std::make_unique<BlastRadiusCollector>();
}

void RenderBlastRadius(const Snapshot& s, const Emit& out) {
  const auto* report = s.by_collector.Get<BlastReport>(kBlastRadiusCollector);
  if (!report || !s.fabric) return;
  auto routes = Family("infiniband_alert_blast_radius_routes",
                       "Routes between host ports (source and destination port pairs) that cross the alert's cable "
                       "or congestion root, traced through the switches' forwarding tables",
                       MetricType::Gauge);
  auto ports = Family("infiniband_alert_blast_radius_ports",
                      "Host ports that send or receive a route crossing the alert's cable or congestion root",
                      MetricType::Gauge);
  std::map<topology::PortRef, std::vector<std::string>> faults_of;
  for (const auto& entry : report->entries) {
    const BlastEntry& e = *entry;
    auto labels = CableLabels(s, e.cable);
    labels.insert(labels.begin(), {"cause", ToString(e.cause)});
    labels.push_back({"cable", CableId(e.cable)});
    labels.push_back({"routing", e.adaptive ? "adaptive" : "static"});
    Add(routes, labels, static_cast<double>(e.radius.routes));
    Add(ports, std::move(labels), static_cast<double>(e.radius.ports.size()));
    const std::string name = FaultName(s, e);
    for (const topology::PortRef& p : HurtPorts(*s.fabric, e)) faults_of[p].push_back(name);
  }
  EmitNonEmpty(out, routes);
  EmitNonEmpty(out, ports);
  auto per_port = Family("infiniband_blast_radius_port_faults",
                         "Faults (bad or flapping cables, congestion roots) whose routes this host port sends or "
                         "receives, named in `faults`: join infiniband_host_port_job_info on node_guid and port",
                         MetricType::Gauge);
  for (const auto& [p, names] : faults_of) {
    std::string joined;
    for (const std::string& n : names) joined += (joined.empty() ? "" : "; ") + n;
    Add(per_port,
        {{"node_guid", topology::FormatGuid(p.node_guid)},
         {"port", std::to_string(p.port)},
         {"host", HostOf(s, p.node_guid)},
         {"faults", joined}},
        static_cast<double>(names.size()));
  }
  EmitNonEmpty(out, per_port);
}

CollectorInfo BlastRadiusCollectorInfo() {
  return {
      .name = "blast_radius",
      .help =
          "For each bad or flapping cable and congestion root alerted on, the routes between host ports that cross it "
          "(from the forwarding tables) and the host ports they join.",
      .make = MakeBlastRadiusCollector,
      .render = RenderBlastRadius,
      .reads = {"adaptive_routing", "routing", "link_health"},
  };
}

}  // namespace ibfabric::collectors
