#include "topology/merge.h"

#include <algorithm>
#include <set>

namespace ibfabric::topology {
namespace {

std::string Where(const Node& n, std::uint8_t port) {
  return (n.description.empty() ? FormatGuid(n.guid) : n.description) + "[" + std::to_string(port) + "]";
}

Port* PortOf(std::map<std::uint64_t, Node>& nodes, const PortRef& ref) {
  auto it = nodes.find(ref.node_guid);
  if (it == nodes.end()) return nullptr;
  for (Port& p : it->second.ports) {
    if (p.number == ref.port) return &p;
  }
  return nullptr;
}

// The fields PortInfo gives, from `was`, on a port whose PortInfo did not
// answer; its far end stays what the walk found when it found one.
void RestorePort(const Port& was, Port* p) {
  const auto remote = p->remote ? p->remote : was.remote;
  *p = was;
  p->remote = remote;
}

// Nodes reachable over links both ends of which name each other from the
// local port and from the host's other ports the walk was given (out of a
// CA only through one of those).
std::set<std::uint64_t> Reachable(std::map<std::uint64_t, Node>& nodes, const DiscoveryResult& walk) {
  const auto own = [&](const Node& n, const Port& p) {
    return (n.guid == walk.local_node_guid && p.number == walk.local_port) || walk.host_port_guids.count(p.guid) > 0;
  };
  std::set<std::uint64_t> seen;
  std::vector<std::uint64_t> order;
  std::size_t roots = 0;
  for (const auto& [guid, n] : nodes) {
    const bool root = guid == walk.local_node_guid ||
                      std::any_of(n.ports.begin(), n.ports.end(), [&](const Port& p) { return own(n, p); });
    if (root && n.kind != NodeKind::kSwitch && seen.insert(guid).second) order.push_back(guid);
  }
  if (nodes.count(walk.local_node_guid) && seen.insert(walk.local_node_guid).second) {
    order.push_back(walk.local_node_guid);  // the exporter runs on a switch
  }
  roots = order.size();
  for (std::size_t i = 0; i < order.size(); ++i) {
    const Node& n = nodes[order[i]];
    if (n.kind != NodeKind::kSwitch && i >= roots) continue;
    for (const Port& p : n.ports) {
      if (!p.link_up() || !p.remote) continue;
      if (n.kind != NodeKind::kSwitch && !own(n, p)) continue;
      if (seen.insert(p.remote->node_guid).second) order.push_back(p.remote->node_guid);
    }
  }
  return seen;
}

// What a node the walk reached did not answer, taken from `was`, its
// last state: its description, a switch's LID, a port's PortInfo or its
// far end, and CA ports the walk did not reach (added to `added`).
void KeepWhatDidNotAnswer(const Node& was, const Unanswered& u, Node* node, std::set<PortRef>* added,
                          std::vector<std::string>* kept) {
  Node& n = *node;
  const std::uint64_t guid = n.guid;
  if (u.descriptions.count(guid) && n.description.empty() && !was.description.empty()) {
    n.description = was.description;
    kept->push_back(n.description + ": NodeDescription did not answer, kept");
  }
  if (n.kind == NodeKind::kSwitch && u.ports.count({guid, 0}) && n.lid == 0) {
    n.lid = was.lid;
    n.ext_speeds = was.ext_speeds;
    n.ext_speeds2 = was.ext_speeds2;
    n.port_info_extended = was.port_info_extended;
    for (Port& p : n.ports) p.lid = was.lid;
    kept->push_back(Where(n, 0) + ": PortInfo did not answer, kept LID " + std::to_string(was.lid));
  }
  for (Port& p : n.ports) {
    const Port* wp = was.FindPort(p.number);
    if (!wp) continue;
    const PortRef ref{guid, p.number};
    if (u.ports.count(ref)) {
      RestorePort(*wp, &p);
      kept->push_back(Where(n, p.number) + ": PortInfo did not answer, kept its last state");
    } else if (u.behind.count(ref) && !p.remote && p.link_up() && wp->remote) {
      p.remote = wp->remote;
      kept->push_back(Where(n, p.number) + ": nothing answered behind it, kept its far end");
    }
    if (u.mlnx.count(ref) && wp->mlnx.read) {
      KeepMlnxSpeeds(wp->mlnx, &p);  // while it still runs QDR
      if (p.mlnx.read) kept->push_back(Where(n, p.number) + ": ExtendedPortInfo did not answer, kept its FDR10");
    }
  }
  // A CA's LID is its ports'; one whose PortInfo did not answer kept its own.
  if (n.kind != NodeKind::kSwitch && n.lid == 0) n.lid = was.lid;
  // CA ports the walk did not reach (through a cable whose far end did
  // not answer) stay while they can.
  for (const Port& wp : was.ports) {
    if (n.FindPort(wp.number)) continue;
    n.ports.push_back(wp);
    added->insert({guid, wp.number});
  }
  std::sort(n.ports.begin(), n.ports.end(), [](const Port& a, const Port& b) { return a.number < b.number; });
}

// Nodes of `last` the walk did not reach, kept in `nodes` for up to
// `keep_walks` such walks in a row (counted in `misses`); returns them.
std::set<std::uint64_t> KeepUnreached(const Fabric& last, std::map<std::uint64_t, Node>* nodes,
                                      std::map<std::uint64_t, int>* misses, int keep_walks) {
  std::set<std::uint64_t> kept_nodes;
  for (const Node& n : last.nodes()) {
    if (nodes->count(n.guid)) continue;
    int& m = (*misses)[n.guid];
    if (++m > keep_walks) {
      misses->erase(n.guid);
      continue;
    }
    (*nodes)[n.guid] = n;
    kept_nodes.insert(n.guid);
  }
  return kept_nodes;
}

// A link stands where both ends name each other; a CA port taken from the
// last graph (`added`) goes when it has no link left.
void KeepStandingLinks(const std::set<PortRef>& added, std::map<std::uint64_t, Node>* nodes) {
  for (auto& [guid, n] : *nodes) {
    for (Port& p : n.ports) {
      if (!p.remote) continue;
      const Port* far = PortOf(*nodes, *p.remote);
      if (!far || far->remote != PortRef{guid, p.number}) p.remote.reset();
    }
  }
  for (const PortRef& ref : added) {
    Node& n = (*nodes)[ref.node_guid];
    std::erase_if(n.ports, [&](const Port& p) { return p.number == ref.port && !p.remote; });
  }
}

// Kept nodes no longer reachable from the local port go, and links to
// nodes that went.
void DropUnreachable(const DiscoveryResult& walk, std::map<std::uint64_t, Node>* nodes,
                     std::set<std::uint64_t>* kept_nodes, std::map<std::uint64_t, int>* misses) {
  const std::set<std::uint64_t> reach = Reachable(*nodes, walk);
  for (auto it = nodes->begin(); it != nodes->end();) {
    if (reach.count(it->first) || walk.fabric.FindNode(it->first)) {
      ++it;
      continue;
    }
    kept_nodes->erase(it->first);
    misses->erase(it->first);
    it = nodes->erase(it);
  }
  for (auto& [guid, n] : *nodes) {
    for (Port& p : n.ports) {
      if (p.remote && !nodes->count(p.remote->node_guid)) p.remote.reset();
    }
  }
}

}  // namespace

MergeResult MergeWalk(const Fabric& last, const DiscoveryResult& walk, std::map<std::uint64_t, int>* misses,
                      int keep_walks) {
  MergeResult out;
  const Unanswered& u = walk.unanswered;
  if (u.empty()) {
    misses->clear();
    for (const Node& n : last.nodes()) {
      if (!walk.fabric.FindNode(n.guid)) out.dropped.push_back(n.guid);
    }
    out.fabric = walk.fabric;
    return out;
  }
  std::map<std::uint64_t, Node> nodes;
  for (const Node& n : walk.fabric.nodes()) nodes[n.guid] = n;
  std::set<PortRef> added;  // ports of reached nodes taken from the last graph
  for (auto& [guid, n] : nodes) {
    misses->erase(guid);
    if (const Node* was = last.FindNode(guid)) KeepWhatDidNotAnswer(*was, u, &n, &added, &out.kept);
  }
  std::set<std::uint64_t> kept_nodes = KeepUnreached(last, &nodes, misses, keep_walks);
  KeepStandingLinks(added, &nodes);
  DropUnreachable(walk, &nodes, &kept_nodes, misses);
  for (std::uint64_t g : kept_nodes) {
    const Node& n = nodes[g];
    out.kept_nodes.push_back(g);
    out.kept.push_back((n.description.empty() ? FormatGuid(g) : n.description) +
                       ": not reached by a walk that missed answers, kept (" + std::to_string((*misses)[g]) + " of " +
                       std::to_string(keep_walks) + ")");
  }
  for (const Node& n : last.nodes()) {
    if (!nodes.count(n.guid)) out.dropped.push_back(n.guid);
  }
  std::vector<Node> list;
  list.reserve(nodes.size());
  for (auto& [guid, n] : nodes) list.push_back(std::move(n));
  out.fabric = Fabric(std::move(list));
  return out;
}

}  // namespace ibfabric::topology
