#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>

#include "collectors/api/json.h"
#include "config/text.h"
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

json NodeRef(const Fabric& f, std::uint64_t guid) {
  const Node* n = f.FindNode(guid);
  return {{"guid", FormatGuid(guid)}, {"name", n ? n->description : ""}};
}

// "leaf", "spine", "core", "unranked", "tierN" or a number.
bool ParseTier(const std::string& text, int* tier) {
  for (int t = -1; t < 16; ++t) {
    if (text == topology::TierName(t)) {
      *tier = t;
      return true;
    }
  }
  const std::string digits = text.rfind("tier", 0) == 0 ? text.substr(4) : text;
  if (digits.empty() || digits.size() > 2 || digits.find_first_not_of("0123456789") != std::string::npos) return false;
  *tier = std::stoi(digits);
  return true;
}

json LinkJson(const Fabric& f, const Analysis& a, const Link& l) {
  const auto d = a.degraded.find(l);
  const Port* p = f.FindPort(l.a);
  return {{"a", End(f, l.a)},
          {"b", End(f, l.b)},
          {"rate", p ? topology::RateString(*p) : ""},
          {"degraded", d == a.degraded.end() ? json(nullptr) : json(topology::ToString(d->second))}};
}

json FindingJson(const Fabric& f, const topology::Finding& x) {
  return {{"kind", topology::ToString(x.kind)},
          {"detail", x.detail},
          {"node", x.node && f.FindNode(x.node) ? NodeRef(f, x.node) : json(nullptr)},
          {"a", x.a ? End(f, *x.a) : json(nullptr)},
          {"b", x.b ? End(f, *x.b) : json(nullptr)}};
}

json PartitionPortJson(const Fabric& f, const PortRef& ref, const std::vector<std::uint16_t>& keys) {
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
  return port;
}

const char* PartName(int part) {
  static const char* const kNames[] = {"", "nodes", "links", "groups", "findings", "partitions"};
  return kNames[part];
}

}  // namespace

const char* NodeTypeName(const topology::Node& node) {
  if (topology::IsAggregationNode(node)) return "aggregation_node";
  switch (node.kind) {
    case NodeKind::kSwitch: return "switch";
    case NodeKind::kCa: return "ca";
    case NodeKind::kRouter: return "router";
    case NodeKind::kUnknown: break;
  }
  return "unknown";
}

bool NamesNode(const std::string& query, std::uint64_t guid, const std::string& name) {
  if (query == name) return true;
  if (query.size() <= 2) return false;
  char* stop = nullptr;
  errno = 0;
  const unsigned long long g = std::strtoull(query.c_str(), &stop, 16);
  return errno == 0 && stop && *stop == '\0' && g == guid;
}

json NodeJson(const Fabric& f, const Analysis& a, const Node& n) {
  json ports = json::array();
  for (const auto& p : n.ports) ports.push_back(PortJson(f, p));
  json node{{"guid", FormatGuid(n.guid)},
            {"name", n.description},
            {"type", NodeTypeName(n)},
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
  return node;
}

json PortJson(const Fabric& f, const Port& p) {
  return {{"port", p.number},
          {"lid", p.lid},
          {"state", StateName(p.state)},
          {"phys_state", PhysName(p.phys_state)},
          {"rate", topology::RateString(p)},
          {"remote", p.remote ? End(f, *p.remote) : json(nullptr)}};
}

bool EachParameterOnce(const std::multimap<std::string, std::string>& params, std::string* error) {
  for (const auto& [key, value] : params) {
    if (params.count(key) > 1) {
      *error = "parameter '" + config::Excerpt(key, 40) + "' given more than once";
      return false;
    }
  }
  return true;
}

bool ParseNodeParameter(const std::string& value, std::string* node, std::string* error) {
  if (value.empty()) {
    *error = "node must name a node or a GUID";
    return false;
  }
  *node = value;
  return true;
}

bool ParseTopologyQuery(const std::multimap<std::string, std::string>& params, TopologyQuery* query,
                        std::string* error) {
  TopologyQuery q;
  if (!EachParameterOnce(params, error)) return false;
  for (const auto& [key, value] : params) {
    if (key == "view") {
      if (value == "full") {
        q.view = TopologyQuery::View::kFull;
      } else if (value == "summary") {
        q.view = TopologyQuery::View::kSummary;
      } else if (value == "findings") {
        q.view = TopologyQuery::View::kFindings;
      } else {
        *error = "view must be full, summary or findings, not '" + config::Excerpt(value, 40) + "'";
        return false;
      }
    } else if (key == "node") {
      if (!ParseNodeParameter(value, &q.node, error)) return false;
    } else if (key == "tier") {
      int tier = 0;
      if (!ParseTier(value, &tier)) {
        *error =
            "tier must be leaf, spine, core, unranked, tierN or a number, not '" + config::Excerpt(value, 40) + "'";
        return false;
      }
      q.tier = tier;
    } else {
      *error = "unknown parameter '" + config::Excerpt(key, 40) + "' (view, node, tier)";
      return false;
    }
  }
  *query = q;
  return true;
}

TopologyWriter::TopologyWriter(const TopologyParts& parts, TopologyQuery query)
    : parts_(parts), query_(std::move(query)) {
  const Fabric& f = *parts_.fabric;
  const Analysis& a = *parts_.analysis;
  all_ = query_.node.empty() && !query_.tier;
  if (!all_) {
    bool named = query_.node.empty();
    for (const Node& n : f.nodes()) {
      const bool by_name = query_.node.empty() || NamesNode(query_.node, n.guid, n.description);
      named = named || by_name;
      const auto sw = a.switches.find(n.guid);
      const bool by_tier = !query_.tier || (sw != a.switches.end() && sw->second.tier == *query_.tier);
      if (by_name && by_tier) selected_.insert(n.guid);
    }
    if (!named) {
      error_ = "no node named '" + config::Excerpt(query_.node, 80) + "' in the fabric";
      return;
    }
  }
  std::map<std::pair<std::uint64_t, std::uint64_t>, int> groups;
  for (const Link& l : topology::Links(f)) {
    ++link_count_;
    degraded_links_ += a.degraded.count(l);
    const bool selected = Selected(l.a.node_guid) || Selected(l.b.node_guid);
    if (selected && query_.view == TopologyQuery::View::kFull) links_.push_back(l);
    const Node* na = f.FindNode(l.a.node_guid);
    const Node* nb = f.FindNode(l.b.node_guid);
    if (na && nb && na->kind == NodeKind::kSwitch && nb->kind == NodeKind::kSwitch) {
      ++groups[{std::min(l.a.node_guid, l.b.node_guid), std::max(l.a.node_guid, l.b.node_guid)}];
    }
  }
  group_count_ = groups.size();
  for (const auto& [pair, n] : groups) {
    if (query_.view != TopologyQuery::View::kFull || !(Selected(pair.first) || Selected(pair.second))) continue;
    groups_.push_back({pair.first, pair.second, n});
  }
  for (auto& x : topology::AllFindings(a, parts_.routing, parts_.partitions)) {
    ++findings_by_kind_[topology::ToString(x.kind)];
    const bool about = (x.node && Selected(x.node)) || (x.a && Selected(x.a->node_guid)) ||
                       (x.b && Selected(x.b->node_guid)) || (all_ && !x.node && !x.a && !x.b);
    if (about && query_.view != TopologyQuery::View::kSummary) findings_.push_back(std::move(x));
  }
  if (parts_.partitions) partition_ = parts_.partitions->ports.begin();
}

json TopologyWriter::Head() const {
  const Fabric& f = *parts_.fabric;
  const Analysis& a = *parts_.analysis;
  std::map<std::string, int> by_type{{"switch", 0}, {"ca", 0}, {"router", 0}};
  std::map<std::string, int> by_tier;
  std::map<std::string, int> accepted_by_kind;
  for (const topology::Finding& x : a.accepted) ++accepted_by_kind[topology::ToString(x.kind)];
  std::size_t ports = 0;
  for (const Node& n : f.nodes()) {
    ++by_type[NodeTypeName(n)];
    ports += n.ports.size();
  }
  for (const auto& [guid, s] : a.switches) ++by_tier[topology::TierName(s.tier)];
  json head{{"schema_version", kTopologySchemaVersion},
            {"is_tree", a.is_tree},
            {"not_tree_reason", a.not_tree_reason},
            {"tiers", a.tiers},
            {"bisection",
             {{"bandwidth_bytes_per_second", a.bisection_gbps * 1e9 / 8},
              {"ratio", a.nonblocking_gbps > 0 ? a.bisection_gbps / a.nonblocking_gbps : 0.0}}},
            {"counts",
             {{"nodes", by_type},
              {"switches_by_tier", by_tier},
              {"ports", ports},
              {"links", link_count_},
              {"degraded_links", degraded_links_},
              {"groups", group_count_},
              {"findings", findings_by_kind_},
              {"accepted_by_plan", accepted_by_kind}}}};
  if (parts_.scope) {
    head["scope"] = {{"kind", topology::ToString(parts_.scope->kind)},
                     {"shard", parts_.scope->shard},
                     {"shards", parts_.scope->shards},
                     {"reports_topology", parts_.scope->reports_topology()}};
  }
  json routing = nullptr;
  if (const RoutingAnalysis* routed = parts_.routing) {
    const RoutingTotals t = topology::SummarizeRouting(*routed);
    routing = {{"fabric",
                {{"max_spread", t.max_spread},
                 {"worst_max_min_ratio", t.worst_max_min_ratio ? json(*t.worst_max_min_ratio) : json(nullptr)},
                 {"imbalanced_switches", t.imbalanced_switches},
                 {"switches_with_unrouted", t.switches_with_unrouted}}},
               {"routes_traced", routed->routes_traced},
               {"down_up_routes", routed->down_up_routes}};
    if (query_.view == TopologyQuery::View::kFull) {
      json switches = json::array();
      for (const auto& [guid, r] : routed->switches) {
        if (!Selected(guid)) continue;
        json by_port = json::object();
        for (const auto& [port, n] : r.destinations) by_port[std::to_string(port)] = n;
        // Adaptive routing on: the balance is withheld (its table is a
        // fallback, not where its traffic goes).
        switches.push_back({{"guid", FormatGuid(guid)},
                            {"name", NodeRef(f, guid)["name"]},
                            {"direction", r.direction},
                            {"destinations_by_port", r.adaptive ? json(nullptr) : std::move(by_port)},
                            {"spread", r.adaptive ? json(nullptr) : json(r.spread)},
                            {"max_min_ratio", r.max_min_ratio && !r.adaptive ? json(*r.max_min_ratio) : json(nullptr)},
                            {"unrouted", r.unrouted},
                            {"adaptive_routing", r.adaptive}});
      }
      routing["switches"] = std::move(switches);
    }
  }
  head["routing"] = std::move(routing);
  // How hosts are cabled: the layout recognised, and a rail-optimized
  // fabric's rails and units (the findings are in "findings").
  json hosts = nullptr;
  if (const topology::HostAnalysis* h = parts_.hosts) {
    std::size_t grouped = 0;
    for (const auto& x : h->hosts) grouped += x.hcas.size();
    hosts = {{"layout", topology::ToString(h->layout)}, {"hosts", h->hosts.size()}, {"grouped_cas", grouped},
             {"ungrouped_cas", h->ungrouped_cas},       {"rails", h->rails},        {"units", h->units}};
  }
  head["hosts"] = std::move(hosts);
  return head;
}

bool TopologyWriter::WriteNext(std::string* out) {
  const Fabric& f = *parts_.fabric;
  const Analysis& a = *parts_.analysis;
  if (part_ == Part::kPartitions && !parts_.partitions) {
    out->append(",\"partitions\":null");
    return false;
  }
  if (!opened_) {
    out->append(",\"").append(PartName(static_cast<int>(part_))).append("\":[");
    opened_ = true;
    return true;
  }
  json next;
  switch (part_) {
    case Part::kNodes:
      // Walked in place: only the selected are written.
      while (index_ < f.nodes().size() && !Selected(f.nodes()[index_].guid)) ++index_;
      if (index_ < f.nodes().size()) {
        const Node& n = f.nodes()[index_];
        next = NodeJson(f, a, n);
        // An HCA of a host: which, and as which device.
        if (const topology::HostAnalysis* h = parts_.hosts; h && h->of_ca.count(n.guid)) {
          const topology::Host& host = h->hosts[h->of_ca.at(n.guid)];
          next["host"] = host.name;
          for (const auto& x : host.hcas) {
            if (x.guid == n.guid) next["device"] = x.device;
          }
        }
      }
      break;
    case Part::kLinks:
      if (index_ < links_.size()) next = LinkJson(f, a, links_[index_]);
      break;
    case Part::kGroups:
      if (index_ < groups_.size()) {
        const Group& g = groups_[index_];
        next = {{"a", NodeRef(f, g.a)}, {"b", NodeRef(f, g.b)}, {"links", g.links}};
      }
      break;
    case Part::kFindings:
      if (index_ < findings_.size()) next = FindingJson(f, findings_[index_]);
      break;
    case Part::kPartitions:
      while (partition_ != parts_.partitions->ports.end() && !Selected(partition_->first.node_guid)) ++partition_;
      if (partition_ != parts_.partitions->ports.end()) {
        next = PartitionPortJson(f, partition_->first, partition_->second);
        ++partition_;
      }
      break;
    default: break;
  }
  if (next.is_null()) {
    out->push_back(']');
    return false;
  }
  if (written_++ > 0) out->push_back(',');
  out->append(Dump(next));
  ++index_;
  return true;
}

bool TopologyWriter::Next(std::string* out, std::size_t max) {
  out->clear();
  if (!error_.empty()) return false;
  while (part_ != Part::kDone && out->size() < max) {
    switch (part_) {
      case Part::kHead: {
        std::string head = Dump(Head());
        head.pop_back();  // the arrays follow before the object's "}"
        out->append(head);
        part_ = query_.view == TopologyQuery::View::kFull       ? Part::kNodes
                : query_.view == TopologyQuery::View::kFindings ? Part::kFindings
                                                                : Part::kEnd;
        break;
      }
      case Part::kEnd:
        out->append("}\n");
        part_ = Part::kDone;
        break;
      default:
        if (!WriteNext(out)) {
          index_ = written_ = 0;
          opened_ = false;
          part_ = query_.view == TopologyQuery::View::kFindings ? Part::kEnd
                                                                : static_cast<Part>(static_cast<int>(part_) + 1);
        }
        break;
    }
  }
  return !out->empty();
}

json TopologyJson(const TopologyParts& parts, const TopologyQuery& query) {
  TopologyWriter w(parts, query);
  std::string text, piece;
  while (w.Next(&piece, 1 << 16)) text += piece;
  return json::parse(text);
}

}  // namespace ibfabric::collectors
