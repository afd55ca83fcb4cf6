#include "topology/blast_radius.h"

#include <algorithm>
#include <unordered_map>

#include "topology/link_rate.h"
#include "transport/attributes.h"

namespace ibfabric::topology {
namespace {

constexpr int kMaxHops = 64;

// A host port (HostPorts' order): its LID and the switch it is cabled to
// (0: none).
struct HostEnd {
  std::uint16_t lid = 0;
  std::uint64_t leaf = 0;
};
std::vector<HostEnd> HostEnds(const Fabric& fabric, const std::vector<PortRef>& hosts) {
  std::vector<HostEnd> out(hosts.size());
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const Port* p = fabric.FindPort(hosts[i]);
    out[i].lid = p->lid;
    if (p->remote) {
      const Node* n = fabric.FindNode(p->remote->node_guid);
      if (n && n->kind == NodeKind::kSwitch) out[i].leaf = n->guid;
    }
  }
  return out;
}

// Per destination LID: whether the route from each switch crosses the
// egress set, memoized over the switches a walk passes.
class Crossing {
 public:
  Crossing(const Fabric& f, const ForwardingTables& t, const std::set<PortRef>& e, std::uint16_t lid)
      : fabric_(f), tables_(t), egress_(e), lid_(lid) {}

  bool From(std::uint64_t sw) {
    std::vector<std::uint64_t> walk;
    bool result = false;
    std::uint64_t at = sw;
    for (int hop = 0;; ++hop) {
      const auto m = memo_.find(at);
      if (m != memo_.end()) {
        result = m->second == 1;
        break;
      }
      if (hop >= kMaxHops) break;
      memo_[at] = 0;  // a loop back here ends the route: no crossing beyond it
      walk.push_back(at);
      const std::uint8_t out = tables_.Egress(at, lid_);
      if (out == transport::kLftNoPort) break;
      if (egress_.count({at, out})) {
        result = true;
        break;
      }
      const Port* p = fabric_.FindPort({at, out});
      if (!p || !p->remote) break;
      const Node* next = fabric_.FindNode(p->remote->node_guid);
      if (!next || next->kind != NodeKind::kSwitch) break;  // arrived (or left the switches)
      at = next->guid;
    }
    for (std::uint64_t g : walk) memo_[g] = result ? 1 : 0;
    return result;
  }

 private:
  const Fabric& fabric_;
  const ForwardingTables& tables_;
  const std::set<PortRef>& egress_;
  std::uint16_t lid_;
  std::unordered_map<std::uint64_t, int> memo_;
};

}  // namespace

std::vector<PortRef> HostPorts(const Fabric& fabric) {
  std::vector<PortRef> out;
  for (const Node& n : fabric.nodes()) {
    if (!IsHca(n)) continue;
    for (const Port& p : n.ports) {
      if (p.lid != 0) out.push_back({n.guid, p.number});
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Route TraceRoute(const Fabric& fabric, const ForwardingTables& tables, const PortRef& from, std::uint16_t to_lid) {
  Route r;
  r.egress.push_back(from);
  const Port* p = fabric.FindPort(from);
  for (int hop = 0; hop < kMaxHops; ++hop) {
    if (!p || !p->remote) return r;
    const Node* n = fabric.FindNode(p->remote->node_guid);
    if (!n) return r;
    if (n->kind != NodeKind::kSwitch) {
      const Port* end = n->FindPort(p->remote->port);
      r.arrives = end && end->lid == to_lid;
      return r;
    }
    if (n->lid == to_lid) {  // the switch itself
      r.arrives = true;
      return r;
    }
    const std::uint8_t out = tables.Egress(n->guid, to_lid);
    if (out == transport::kLftNoPort) return r;
    r.egress.push_back({n->guid, out});
    p = n->FindPort(out);
  }
  return r;  // a loop
}

BlastRadius RoutesThrough(const Fabric& fabric, const ForwardingTables& tables, const std::set<PortRef>& egress,
                          std::size_t list) {
  BlastRadius out;
  const std::vector<PortRef> hosts = HostPorts(fabric);
  const std::vector<HostEnd> ends = HostEnds(fabric, hosts);
  std::vector<std::size_t> ca_egress;  // host ports in the set: every route from them crosses
  std::vector<bool> is_egress(hosts.size(), false);
  std::vector<PortRef> switch_egress;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    if (egress.count(hosts[i])) {
      ca_egress.push_back(i);
      is_egress[i] = true;
    }
  }
  for (const PortRef& e : egress) {
    const Node* n = fabric.FindNode(e.node_guid);
    if (n && n->kind == NodeKind::kSwitch) switch_egress.push_back(e);
  }
  const auto count = [&](std::size_t s, std::size_t d) {
    if (out.listed.size() < list) out.listed.emplace_back(hosts[s], hosts[d]);
    ++out.routes;
    ++out.ports[hosts[s]].sends;
    ++out.ports[hosts[d]].receives;
  };
  for (std::size_t d = 0; d < hosts.size(); ++d) {
    // A route to d crosses a switch's egress only where that switch sends d
    // out of it.
    bool candidate = false;
    for (const PortRef& e : switch_egress) candidate = candidate || tables.Egress(e.node_guid, ends[d].lid) == e.port;
    if (!candidate) {
      for (std::size_t s : ca_egress) {
        if (s != d) count(s, d);
      }
      continue;
    }
    Crossing crossing(fabric, tables, egress, ends[d].lid);
    for (std::size_t s = 0; s < hosts.size(); ++s) {
      if (s == d) continue;
      if (is_egress[s] || (ends[s].leaf && crossing.From(ends[s].leaf))) count(s, d);
    }
  }
  return out;
}

std::set<Link> UplinksUsed(const Fabric& fabric, const ForwardingTables& tables, const Analysis& analysis) {
  const auto tier = [&analysis](std::uint64_t guid) {
    const auto it = analysis.switches.find(guid);
    return it == analysis.switches.end() ? -1 : it->second.tier;
  };
  const std::vector<HostEnd> hosts = HostEnds(fabric, HostPorts(fabric));
  std::set<Link> used;
  for (const Node& leaf : fabric.nodes()) {
    if (leaf.kind != NodeKind::kSwitch || tier(leaf.guid) != 0) continue;
    for (const auto& [lid, on] : hosts) {
      if (on == leaf.guid) continue;
      const int out = tables.Egress(leaf.guid, lid);
      const Port* p = out > 0 ? fabric.FindPort({leaf.guid, static_cast<std::uint8_t>(out)}) : nullptr;
      if (p && p->remote && p->link_up() && tier(p->remote->node_guid) == 1) {
        used.insert(CableBetween({leaf.guid, p->number}, *p->remote));
      }
    }
  }
  return used;
}

double UplinksGbps(const Fabric& fabric, const std::set<Link>& uplinks) {
  double gbps = 0;
  for (const Link& l : uplinks) {
    if (const Port* p = fabric.FindPort(l.a)) gbps += ActiveGbps(*p);
  }
  return gbps;
}

}  // namespace ibfabric::topology
