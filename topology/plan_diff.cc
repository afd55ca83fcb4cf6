// The diff of a fabric against its cabling plan (plan.h DiffAgainstPlan):
// pure, no MADs.
#include <optional>
#include <set>

#include "topology/link_rate.h"
#include "topology/plan.h"

namespace ibfabric::topology {

namespace {

// The plan's nodes found in the fabric, and what the steps below share.
struct PlanView {
  const Fabric& fabric;
  std::map<std::string, std::uint64_t> by_name;
  std::map<std::uint64_t, std::string> device_of;      // CA -> device (hosts grouped)
  std::vector<std::optional<std::uint64_t>> resolved;  // plan node -> fabric node
  std::map<std::uint64_t, std::string> planned_rail;   // leaf -> device

  std::string PortName(const PortRef& r) const { return topology::PortName(fabric, r); }
  std::optional<PortRef> FarOf(const PortRef& r) const {
    const Port* p = fabric.FindPort(r);
    if (!p || !p->remote || !p->link_up()) return std::nullopt;
    return *p->remote;
  }
};

// Plan nodes to fabric nodes: by GUID, by host and HCA device, or by
// name; a finding for each the fabric lacks.
void Resolve(const CablingPlan& plan, const HostAnalysis* hosts, PlanView* v, std::vector<Finding>* out) {
  for (const auto& n : v->fabric.nodes()) v->by_name.emplace(n.description, n.guid);
  std::map<std::pair<std::string, std::string>, std::uint64_t> by_host;  // (host, device) -> CA
  if (hosts) {
    for (const Host& h : hosts->hosts) {
      for (const Hca& x : h.hcas) {
        by_host[{h.name, x.device}] = x.guid;
        v->device_of[x.guid] = x.device;
      }
    }
  }
  v->resolved.assign(plan.nodes.size(), std::nullopt);
  for (std::size_t i = 0; i < plan.nodes.size(); ++i) {
    const PlanNode& p = plan.nodes[i];
    if (p.guid && v->fabric.FindNode(*p.guid)) {
      v->resolved[i] = *p.guid;
    } else if (!p.guid && !p.host.empty()) {
      if (auto it = by_host.find({p.host, p.hca}); it != by_host.end()) v->resolved[i] = it->second;
    } else if (!p.guid) {
      if (auto it = v->by_name.find(p.name); it != v->by_name.end()) v->resolved[i] = it->second;
    }
    if (!v->resolved[i]) {
      out->push_back({FindingKind::kPlanUnknownNode,
                      "planned node " + (p.name.empty() ? FormatGuid(p.guid.value_or(0)) : p.name) +
                          (p.guid ? " (" + FormatGuid(*p.guid) + ")" : "") + " is not in the fabric",
                      p.guid.value_or(0),
                      {},
                      {}});
    }
  }
}

// The plan's rails: each planned leaf's most common HCA device.
void PlanRails(const CablingPlan& plan, PlanView* v) {
  std::map<std::uint64_t, std::map<std::string, int>> devices_on;
  for (const PlanLink& l : plan.links) {
    if (!v->resolved[l.a.node] || !v->resolved[l.b.node]) continue;
    const std::uint64_t a = *v->resolved[l.a.node], b = *v->resolved[l.b.node];
    for (const auto& [ca, sw] : {std::pair{a, b}, std::pair{b, a}}) {
      if (auto d = v->device_of.find(ca); d != v->device_of.end()) ++devices_on[sw][d->second];
    }
  }
  for (const auto& [leaf, counts] : devices_on) {
    int total = 0;
    for (const auto& [device, n] : counts) total += n;
    for (const auto& [device, n] : counts) {
      if (n * 2 > total) v->planned_rail[leaf] = device;
    }
  }
}

// An HCA end of planned cable a - b on a leaf the plan gives another rail:
// a wrong rail finding; true when there is one.
bool FindWrongRail(const PlanView& v, const PlanLink& l, const PortRef& a, const PortRef& b,
                   const std::optional<PortRef>& fa, const std::optional<PortRef>& fb, std::vector<Finding>* out) {
  bool found = false;
  for (const auto& [hca, far] : {std::pair{a, fa}, std::pair{b, fb}}) {
    const auto device = v.device_of.find(hca.node_guid);
    if (found || device == v.device_of.end() || !far) continue;
    const auto rail = v.planned_rail.find(far->node_guid);
    if (rail == v.planned_rail.end() || rail->second == device->second) continue;
    const PortRef& planned_far = hca == a ? b : a;
    out->push_back({FindingKind::kPlanWrongRail,
                    v.PortName(hca) + " is cabled to " + v.PortName(*far) + ", a rail " + rail->second +
                        " leaf in the plan; planned " + v.PortName(planned_far) + " (plan line " +
                        std::to_string(l.line) + ")",
                    hca.node_guid, hca, *far});
    found = true;
  }
  return found;
}

// One planned cable against the fabric: as planned (its rate checked), or
// missing, to the wrong port, the wrong node or the wrong rail.
void CheckPlannedLink(const PlanView& v, const PlanLink& l, const PortRef& a, const PortRef& b, PlanDiff* diff) {
  std::vector<Finding>& out = diff->findings;
  const std::string planned = v.PortName(a) + " - " + v.PortName(b);
  const auto fa = v.FarOf(a), fb = v.FarOf(b);
  if (fa && *fa == b) {
    const Port& pa = *v.fabric.FindPort(a);
    if (!l.rate.empty() && RateString(pa) != l.rate) {
      out.push_back(
          {FindingKind::kPlanRateMismatch,
           planned + " runs " + RateString(pa) + ", planned " + l.rate + " (plan line " + std::to_string(l.line) + ")",
           a.node_guid, a, b});
      diff->degraded[CableBetween(a, b)] = FindingKind::kPlanRateMismatch;
    }
    return;
  }
  auto where = [&](const std::optional<PortRef>& f) { return f ? v.PortName(*f) : std::string("nothing"); };
  const std::string found = v.PortName(a) + " goes to " + where(fa) + ", " + v.PortName(b) + " to " + where(fb);
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
  if (kind == FindingKind::kPlanWrongRemoteNode && FindWrongRail(v, l, a, b, fa, fb, &out)) return;
  out.push_back({kind,
                 "planned " + planned + " (plan line " + std::to_string(l.line) +
                     "): " + (kind == FindingKind::kPlanMissingLink ? std::string("no cable at either end") : found),
                 a.node_guid, a, b});
}

}  // namespace

PlanDiff DiffAgainstPlan(const Fabric& fabric, const CablingPlan& plan, const Analysis& analysis,
                         const HostAnalysis* hosts) {
  PlanDiff diff;
  std::vector<Finding>& out = diff.findings;
  PlanView v{fabric, {}, {}, {}, {}};
  Resolve(plan, hosts, &v, &out);
  for (const auto& node : v.resolved) {
    if (node) diff.planned.insert(*node);
  }
  PlanRails(plan, &v);
  std::set<PortRef> planned_ports;
  for (const PlanLink& l : plan.links) {
    if (!v.resolved[l.a.node] || !v.resolved[l.b.node]) continue;  // reported as unknown nodes
    const PortRef a{*v.resolved[l.a.node], static_cast<std::uint8_t>(l.a.port)};
    const PortRef b{*v.resolved[l.b.node], static_cast<std::uint8_t>(l.b.port)};
    planned_ports.insert(a);
    planned_ports.insert(b);
    CheckPlannedLink(v, l, a, b, &diff);
  }
  // Cables nobody planned: neither end appears in the plan.
  for (const Link& l : Links(fabric)) {
    if (!fabric.FindPort(l.a)->link_up()) continue;
    if (planned_ports.count(l.a) || planned_ports.count(l.b)) continue;
    out.push_back({FindingKind::kPlanExtraLink, "cable not in the plan: " + v.PortName(l.a) + " - " + v.PortName(l.b),
                   l.a.node_guid, l.a, l.b});
  }
  for (const auto& [node_name, tier] : plan.tiers) {
    auto it = v.by_name.find(node_name);
    if (it == v.by_name.end() || !analysis.switches.count(it->second)) continue;
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
