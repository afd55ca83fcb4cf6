#include "topology/congestion.h"

#include <algorithm>
#include <deque>
#include <optional>

#include "transport/attributes.h"

namespace ibfabric::topology {
namespace {

// Every CA port's LID: the destinations data traffic goes to.
std::vector<std::uint16_t> CaLids(const Fabric& f) {
  std::vector<std::uint16_t> lids;
  for (const Node& n : f.nodes()) {
    if (n.kind != NodeKind::kCa) continue;
    for (const Port& p : n.ports) {
      if (p.lid != 0) lids.push_back(p.lid);
    }
  }
  return lids;
}

std::optional<ForwardingTables::Table> TableOf(const Fabric& f, const ForwardingTables& tables, std::uint64_t guid) {
  const Node* n = f.FindNode(guid);
  if (!n || n->kind != NodeKind::kSwitch) return std::nullopt;
  return tables.Find(guid);
}

std::set<PortRef> NextHopsOf(const Fabric& f, const ForwardingTables& tables, const std::vector<std::uint16_t>& lids,
                             const PortRef& from) {
  std::set<PortRef> out;
  const Port* p = f.FindPort(from);
  if (!p || !p->remote) return out;
  const auto far = TableOf(f, tables, p->remote->node_guid);
  if (!far) return out;
  const auto near = TableOf(f, tables, from.node_guid);
  for (std::uint16_t lid : lids) {
    if (near && near->At(lid) != from.port) continue;  // not carried by this port
    const std::uint8_t egress = far->At(lid);
    // 0 is the switch's own management port: traffic ends there.
    if (egress == transport::kLftNoPort || egress == 0 || egress == p->remote->port) continue;
    out.insert({p->remote->node_guid, egress});
  }
  return out;
}

// From `start` backwards over `waits_on` (port -> the congested ports
// waiting on it): every port reached, with its shortest hops.
std::map<PortRef, int> Behind(const PortRef& start, const std::map<PortRef, std::vector<PortRef>>& waits_on) {
  std::map<PortRef, int> hops{{start, 0}};
  std::deque<PortRef> queue{start};
  while (!queue.empty()) {
    const PortRef at = queue.front();
    queue.pop_front();
    auto it = waits_on.find(at);
    if (it == waits_on.end()) continue;
    for (const PortRef& w : it->second) {
      if (hops.emplace(w, hops[at] + 1).second) queue.push_back(w);
    }
  }
  return hops;
}

CongestionTree TreeOf(const PortRef& root, std::map<PortRef, int> hops, bool loop) {
  CongestionTree t;
  t.root = root;
  t.loop = loop;
  hops.erase(root);
  for (const auto& [port, h] : hops) {
    t.victims.push_back(port);
    t.depth = std::max(t.depth, h);
  }
  t.hops = std::move(hops);
  return t;
}

}  // namespace

std::set<PortRef> NextHops(const Fabric& fabric, const ForwardingTables& tables, const PortRef& port) {
  return NextHopsOf(fabric, tables, CaLids(fabric), port);
}

std::vector<CongestionTree> FindCongestionTrees(const Fabric& fabric, const ForwardingTables& tables,
                                                const std::set<PortRef>& congested) {
  if (congested.empty()) return {};  // every sweep of a quiet fabric
  const std::vector<std::uint16_t> lids = CaLids(fabric);
  std::map<PortRef, std::vector<PortRef>> next;      // congested port -> its congested next hops
  std::map<PortRef, std::vector<PortRef>> waits_on;  // the reverse
  for (const PortRef& p : congested) {
    auto& n = next[p];
    for (const PortRef& h : NextHopsOf(fabric, tables, lids, p)) {
      if (!congested.count(h)) continue;
      n.push_back(h);
      waits_on[h].push_back(p);
    }
  }
  std::vector<CongestionTree> trees;
  std::set<PortRef> placed;
  for (const auto& [p, n] : next) {
    if (!n.empty()) continue;
    auto hops = Behind(p, waits_on);
    for (const auto& [q, h] : hops) placed.insert(q);
    trees.push_back(TreeOf(p, std::move(hops), false));
  }
  // What reaches no root waits in a loop: each port has a congested next
  // hop, so following the first ones from the lowest unplaced port comes
  // round; the loop's lowest port stands as its root.
  for (const PortRef& p : congested) {
    if (placed.count(p)) continue;
    std::vector<PortRef> path{p};
    std::set<PortRef> on_path{p};
    while (true) {
      const PortRef step = next.at(path.back()).front();
      if (on_path.count(step)) {
        const auto start = std::find(path.begin(), path.end(), step);
        const PortRef root = *std::min_element(start, path.end());
        auto hops = Behind(root, waits_on);
        for (const auto& [q, h] : hops) placed.insert(q);
        trees.push_back(TreeOf(root, std::move(hops), true));
        break;
      }
      path.push_back(step);
      on_path.insert(step);
    }
  }
  std::sort(trees.begin(), trees.end(),
            [](const CongestionTree& x, const CongestionTree& y) { return x.root < y.root; });
  return trees;
}

}  // namespace ibfabric::topology
