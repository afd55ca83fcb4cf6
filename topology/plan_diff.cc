// The diff of a fabric against its cabling plan (plan.h DiffAgainstPlan):
// pure, no MADs.
#include <optional>
#include <set>

#include "topology/link_rate.h"
#include "topology/plan.h"

namespace ibfabric::topology {

PlanDiff DiffAgainstPlan(const Fabric& fabric, const CablingPlan& plan, const Analysis& analysis,
                         const HostAnalysis* hosts) {
  PlanDiff diff;
  std::vector<Finding>& out = diff.findings;
  // Plan nodes to fabric nodes.
  std::map<std::string, std::uint64_t> by_name;
  for (const auto& n : fabric.nodes()) by_name.emplace(n.description, n.guid);
  std::map<std::pair<std::string, std::string>, std::uint64_t> by_host;  // (host, device) -> CA
  std::map<std::uint64_t, std::string> device_of;                        // CA -> device
  if (hosts) {
    for (const Host& h : hosts->hosts) {
      for (const Hca& x : h.hcas) {
        by_host[{h.name, x.device}] = x.guid;
        device_of[x.guid] = x.device;
      }
    }
  }
  std::vector<std::optional<std::uint64_t>> resolved(plan.nodes.size());
  for (std::size_t i = 0; i < plan.nodes.size(); ++i) {
    const PlanNode& p = plan.nodes[i];
    if (p.guid && fabric.FindNode(*p.guid)) {
      resolved[i] = *p.guid;
    } else if (!p.guid && !p.host.empty()) {
      if (auto it = by_host.find({p.host, p.hca}); it != by_host.end()) resolved[i] = it->second;
    } else if (!p.guid) {
      if (auto it = by_name.find(p.name); it != by_name.end()) resolved[i] = it->second;
    }
    if (!resolved[i]) {
      out.push_back({FindingKind::kPlanUnknownNode,
                     "planned node " + (p.name.empty() ? FormatGuid(p.guid.value_or(0)) : p.name) +
                         (p.guid ? " (" + FormatGuid(*p.guid) + ")" : "") + " is not in the fabric",
                     p.guid.value_or(0),
                     {},
                     {}});
    }
  }
  auto name = [&](std::uint64_t g) { return NodeName(fabric, g); };
  auto port_name = [&](const PortRef& r) { return name(r.node_guid) + "[" + std::to_string(r.port) + "]"; };
  auto far_of = [&](const PortRef& r) -> std::optional<PortRef> {
    const Port* p = fabric.FindPort(r);
    if (!p || !p->remote || !p->link_up()) return std::nullopt;
    return *p->remote;
  };

  // The plan's rails: each planned leaf's most common HCA device.
  std::map<std::uint64_t, std::string> planned_rail;  // leaf -> device
  {
    std::map<std::uint64_t, std::map<std::string, int>> devices_on;
    for (const PlanLink& l : plan.links) {
      if (!resolved[l.a.node] || !resolved[l.b.node]) continue;
      for (const auto& [ca, sw] :
           {std::pair{*resolved[l.a.node], *resolved[l.b.node]}, std::pair{*resolved[l.b.node], *resolved[l.a.node]}}) {
        if (auto d = device_of.find(ca); d != device_of.end()) ++devices_on[sw][d->second];
      }
    }
    for (const auto& [leaf, counts] : devices_on) {
      int total = 0;
      for (const auto& [device, n] : counts) total += n;
      for (const auto& [device, n] : counts) {
        if (n * 2 > total) planned_rail[leaf] = device;
      }
    }
  }
  std::set<PortRef> planned_ports;
  for (const PlanLink& l : plan.links) {
    if (!resolved[l.a.node] || !resolved[l.b.node]) continue;  // reported as unknown nodes
    const PortRef a{*resolved[l.a.node], static_cast<std::uint8_t>(l.a.port)};
    const PortRef b{*resolved[l.b.node], static_cast<std::uint8_t>(l.b.port)};
    planned_ports.insert(a);
    planned_ports.insert(b);
    const std::string planned = port_name(a) + " - " + port_name(b);
    const auto fa = far_of(a), fb = far_of(b);
    if (fa && *fa == b) {
      const Port& pa = *fabric.FindPort(a);
      if (!l.rate.empty() && RateString(pa) != l.rate) {
        out.push_back({FindingKind::kPlanRateMismatch,
                       planned + " runs " + RateString(pa) + ", planned " + l.rate + " (plan line " +
                           std::to_string(l.line) + ")",
                       a.node_guid, a, b});
        diff.degraded[CableBetween(a, b)] = FindingKind::kPlanRateMismatch;
      }
      continue;
    }
    auto where = [&](const std::optional<PortRef>& f) { return f ? port_name(*f) : std::string("nothing"); };
    const std::string found = port_name(a) + " goes to " + where(fa) + ", " + port_name(b) + " to " + where(fb);
    // Wrong port: every connected end reaches the planned node, on another
    // port (two cables swapped on the same neighbour). Wrong node: an end
    // reaches another node.
    const bool a_right_node = !fa || fa->node_guid == b.node_guid;
    const bool b_right_node = !fb || fb->node_guid == a.node_guid;
    FindingKind kind = FindingKind::kPlanWrongRemoteNode;
    if (!fa && !fb) {
      kind = FindingKind::kPlanMissingLink;
    } else if (a_right_node && b_right_node) {
      kind = FindingKind::kPlanWrongRemotePort;
    }
    // An HCA end on a leaf the plan gives another rail: a wrong rail.
    for (const auto& [hca, far] : {std::pair{a, fa}, std::pair{b, fb}}) {
      const auto device = device_of.find(hca.node_guid);
      if (kind != FindingKind::kPlanWrongRemoteNode || device == device_of.end() || !far) continue;
      const auto rail = planned_rail.find(far->node_guid);
      if (rail == planned_rail.end() || rail->second == device->second) continue;
      const PortRef& planned_far = hca == a ? b : a;
      out.push_back({FindingKind::kPlanWrongRail,
                     port_name(hca) + " is cabled to " + port_name(*far) + ", a rail " + rail->second +
                         " leaf in the plan; planned " + port_name(planned_far) + " (plan line " +
                         std::to_string(l.line) + ")",
                     hca.node_guid, hca, *far});
      kind = FindingKind::kPlanWrongRail;
    }
    if (kind == FindingKind::kPlanWrongRail) continue;
    out.push_back({kind,
                   "planned " + planned + " (plan line " + std::to_string(l.line) +
                       "): " + (kind == FindingKind::kPlanMissingLink ? std::string("no cable at either end") : found),
                   a.node_guid, a, b});
  }
  // Cables nobody planned: neither end appears in the plan.
  for (const Link& l : Links(fabric)) {
    if (!fabric.FindPort(l.a)->link_up()) continue;
    if (planned_ports.count(l.a) || planned_ports.count(l.b)) continue;
    out.push_back({FindingKind::kPlanExtraLink, "cable not in the plan: " + port_name(l.a) + " - " + port_name(l.b),
                   l.a.node_guid, l.a, l.b});
  }
  for (const auto& [node_name, tier] : plan.tiers) {
    auto it = by_name.find(node_name);
    if (it == by_name.end() || !analysis.switches.count(it->second)) continue;
    const std::string actual = TierName(analysis.switches.at(it->second).tier);
    if (actual != tier) {
      out.push_back({FindingKind::kPlanTierMismatch,
                     node_name + " ranks as " + actual + ", planned " + tier,
                     it->second,
                     {},
                     {}});
    }
  }
  return diff;
}

}  // namespace ibfabric::topology
