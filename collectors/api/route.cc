#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "collectors/api/detail/common.h"
#include "collectors/api/json.h"
#include "collectors/common/iso8601.h"
#include "collectors/framework/render.h"
#include "config/text.h"
#include "topology/blast_radius.h"

namespace ibfabric::collectors {
namespace {

using api::End;
using api::NodeOf;
using api::ParseGuid;
using nlohmann::json;

}  // namespace

bool ParseRouteQuery(const std::multimap<std::string, std::string>& params, RouteQuery* query, std::string* error) {
  // "GUID:PORT"
  const auto end = [error](const std::string& name, const std::string& v, topology::PortRef* out) {
    const auto colon = v.rfind(':');
    if (colon == std::string::npos) {
      *error = name + " must be GUID:PORT";
      return false;
    }
    const auto guid = ParseGuid(v.substr(0, colon), error);
    if (!guid) return false;
    const auto number = topology::ParsePortNumber(v.substr(colon + 1));
    if (!number) {
      *error = name + "'s port must be a port number from 1 to 254";
      return false;
    }
    *out = {*guid, *number};
    return true;
  };
  bool from = false, to = false;
  for (const auto& [k, v] : params) {
    if (k == "from" && !from) {
      if (!end("from", v, &query->from)) return false;
      from = true;
    } else if (k == "to" && !to) {
      if (!end("to", v, &query->to)) return false;
      to = true;
    } else {
      *error = "unexpected parameter '" + config::Excerpt(k, 40) + "' (use from and to, once each)";
      return false;
    }
  }
  if (!from || !to) {
    *error = "from and to are both required (GUID:PORT of two host ports)";
    return false;
  }
  return true;
}

nlohmann::json RouteJson(const Snapshot& s, const RouteQuery& q) {
  if (!s.fabric || !s.forwarding || s.forwarding->empty()) return nullptr;
  const topology::PortRef from{NodeOf(s, q.from.node_guid), q.from.port};
  const topology::PortRef to{NodeOf(s, q.to.node_guid), q.to.port};
  const topology::Port* src = s.fabric->FindPort(from);
  const topology::Port* dst = s.fabric->FindPort(to);
  const topology::Node* src_node = s.fabric->FindNode(from.node_guid);
  if (!src || !dst || !src_node || src_node->kind == topology::NodeKind::kSwitch || dst->lid == 0) return nullptr;
  const topology::Route r = topology::TraceRoute(*s.fabric, *s.forwarding, from, dst->lid);
  json hops = json::array();
  std::set<topology::PortRef> left_by;
  for (const topology::PortRef& e : r.egress) {
    json hop = End(s, e);
    const topology::Port* p = s.fabric->FindPort(e);
    hop["to"] = p && p->remote ? End(s, *p->remote) : json(nullptr);
    hops.push_back(std::move(hop));
    left_by.insert(e);
  }
  // The active alerts the route leaves by: a cable's either end, a root.
  json crossed = json::array();
  if (s.health) {
    for (const Alert& a : s.health->active) {
      const bool crosses =
          a.root ? left_by.count(*a.root) > 0 : left_by.count(a.cable.a) > 0 || left_by.count(a.cable.b) > 0;
      if (crosses) crossed.push_back(IdOf(a));
    }
  }
  return {{"from", End(s, from)},
          {"to", End(s, to)},
          {"arrives", r.arrives},
          {"hops", std::move(hops)},
          {"alerts", std::move(crossed)}};
}

}  // namespace ibfabric::collectors
