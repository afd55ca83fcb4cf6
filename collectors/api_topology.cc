#include <algorithm>
#include <map>

#include "collectors/api_json.h"
#include "topology/link_rate.h"
#include "topology/partitions.h"
#include "topology/routing.h"

namespace ibfabric::collectors {
namespace {

using nlohmann::json;
using topology::Analysis;
using topology::Fabric;
using topology::FormatGuid;
using topology::Link;
using topology::Node;
using topology::NodeKind;
using topology::PartitionAnalysis;
using topology::Port;
using topology::PortRef;
using topology::RoutingAnalysis;
using topology::RoutingTotals;
using topology::SwitchSummary;

const char* TypeName(NodeKind k) {
  switch (k) {
    case NodeKind::kSwitch: return "switch";
    case NodeKind::kCa: return "ca";
    case NodeKind::kRouter: return "router";
    case NodeKind::kUnknown: break;
  }
  return "unknown";
}

// IBTA PortState and PortPhysicalState names (table 155).
const char* StateName(std::uint8_t s) {
  switch (s) {
    case 1: return "down";
    case 2: return "init";
    case 3: return "armed";
    case 4: return "active";
  }
  return "unknown";
}
const char* PhysName(std::uint8_t s) {
  switch (s) {
    case 1: return "sleep";
    case 2: return "polling";
    case 3: return "disabled";
    case 4: return "port_configuration_training";
    case 5: return "link_up";
    case 6: return "link_error_recovery";
    case 7: return "phy_test";
  }
  return "unknown";
}

json End(const Fabric& f, const PortRef& r) {
  const Node* n = f.FindNode(r.node_guid);
  return {{"guid", FormatGuid(r.node_guid)}, {"name", n ? n->description : ""}, {"port", r.port}};
}

}  // namespace

json PortJson(const Fabric& f, const Port& p) {
  return {{"port", p.number},
          {"lid", p.lid},
          {"state", StateName(p.state)},
          {"phys_state", PhysName(p.phys_state)},
          {"rate", topology::RateString(p)},
          {"remote", p.remote ? End(f, *p.remote) : json(nullptr)}};
}

json TopologyJson(const Fabric& f, const Analysis& a, const RoutingAnalysis* routed, const PartitionAnalysis* parts) {
  json nodes = json::array();
  for (const auto& n : f.nodes()) {
    json ports = json::array();
    for (const auto& p : n.ports) {
      ports.push_back(PortJson(f, p));
    }
    json node{{"guid", FormatGuid(n.guid)},
              {"name", n.description},
              {"type", TypeName(n.kind)},
              {"lid", n.lid},
              {"ports", std::move(ports)}};
    if (auto it = a.switches.find(n.guid); it != a.switches.end()) {
      const SwitchSummary& s = it->second;
      const auto bf = topology::BlockingFactor(s);
      node["tier"] = s.tier;
      node["tier_name"] = topology::TierName(s.tier);
      node["summary"] = {{"ca_links", s.ca_links},       {"up_links", s.up_links},
                         {"down_links", s.down_links},   {"up_groups", s.up_groups},
                         {"down_groups", s.down_groups}, {"up_gbps", s.up_gbps},
                         {"down_gbps", s.down_gbps},     {"blocking_factor", bf ? json(*bf) : json(nullptr)}};
    }
    nodes.push_back(std::move(node));
  }
  json links = json::array();
  for (const Link& l : topology::Links(f)) {
    auto d = a.degraded.find(l);
    links.push_back({{"a", End(f, l.a)},
                     {"b", End(f, l.b)},
                     {"rate", topology::RateString(*f.FindPort(l.a))},
                     {"degraded", d == a.degraded.end() ? json(nullptr) : json(topology::ToString(d->second))}});
  }
  // Groups of parallel cables between the same two switches.
  std::map<std::pair<std::uint64_t, std::uint64_t>, int> group_size;
  for (const Link& l : topology::Links(f)) {
    const Node* na = f.FindNode(l.a.node_guid);
    const Node* nb = f.FindNode(l.b.node_guid);
    if (na && nb && na->kind == NodeKind::kSwitch && nb->kind == NodeKind::kSwitch) {
      ++group_size[{std::min(l.a.node_guid, l.b.node_guid), std::max(l.a.node_guid, l.b.node_guid)}];
    }
  }
  json groups = json::array();
  for (const auto& [pair, n] : group_size) {
    const Node* a_node = f.FindNode(pair.first);
    const Node* b_node = f.FindNode(pair.second);
    groups.push_back({{"a", {{"guid", FormatGuid(pair.first)}, {"name", a_node->description}}},
                      {"b", {{"guid", FormatGuid(pair.second)}, {"name", b_node->description}}},
                      {"links", n}});
  }
  json findings = json::array();
  for (const auto& x : topology::AllFindings(a, routed, parts)) {
    const Node* n = x.node ? f.FindNode(x.node) : nullptr;
    findings.push_back({{"kind", topology::ToString(x.kind)},
                        {"detail", x.detail},
                        {"node", n ? json{{"guid", FormatGuid(n->guid)}, {"name", n->description}} : json(nullptr)},
                        {"a", x.a ? End(f, *x.a) : json(nullptr)},
                        {"b", x.b ? End(f, *x.b) : json(nullptr)}});
  }
  json partitions = nullptr;
  if (parts) {
    partitions = json::array();
    for (const auto& [ref, keys] : parts->ports) {
      json list = json::array();
      for (std::uint16_t k : keys)
        list.push_back({{"pkey", topology::PartitionOf(k)}, {"membership", topology::MembershipOf(k)}});
      json port = End(f, ref);
      port["partitions"] = std::move(list);
      const Node* n = f.FindNode(ref.node_guid);
      const Port* p = f.FindPort(ref);
      if (n && p && n->kind == NodeKind::kSwitch) {
        port["enforcement"] = {{"inbound", p->partition_enforcement_inbound},
                               {"outbound", p->partition_enforcement_outbound}};
      }
      partitions.push_back(std::move(port));
    }
  }
  json routing = nullptr;
  if (routed) {
    json switches = json::array();
    for (const auto& [guid, r] : routed->switches) {
      json ports = json::object();
      for (const auto& [port, n] : r.destinations) ports[std::to_string(port)] = n;
      const Node* n = f.FindNode(guid);
      switches.push_back({{"guid", FormatGuid(guid)},
                          {"name", n ? n->description : ""},
                          {"direction", r.direction},
                          {"destinations_by_port", std::move(ports)},
                          {"spread", r.spread},
                          {"max_min_ratio", r.max_min_ratio ? json(*r.max_min_ratio) : json(nullptr)},
                          {"unrouted", r.unrouted}});
    }
    const RoutingTotals t = topology::SummarizeRouting(*routed);
    routing = {{"switches", std::move(switches)},
               {"fabric",
                {{"max_spread", t.max_spread},
                 {"worst_max_min_ratio", t.worst_max_min_ratio ? json(*t.worst_max_min_ratio) : json(nullptr)},
                 {"imbalanced_switches", t.imbalanced_switches},
                 {"switches_with_unrouted", t.switches_with_unrouted}}},
               {"routes_traced", routed->routes_traced},
               {"down_up_routes", routed->down_up_routes}};
  }
  return {{"schema_version", kTopologySchemaVersion},
          {"is_tree", a.is_tree},
          {"not_tree_reason", a.not_tree_reason},
          {"tiers", a.tiers},
          {"bisection",
           {{"bandwidth_bytes_per_second", a.bisection_gbps * 1e9 / 8},
            {"ratio", a.nonblocking_gbps > 0 ? a.bisection_gbps / a.nonblocking_gbps : 0.0}}},
          {"routing", std::move(routing)},
          {"partitions", std::move(partitions)},
          {"nodes", std::move(nodes)},
          {"links", std::move(links)},
          {"groups", std::move(groups)},
          {"findings", std::move(findings)}};
}

}  // namespace ibfabric::collectors
