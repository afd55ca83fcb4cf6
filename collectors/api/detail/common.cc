#include "collectors/api/detail/common.h"

#include <cerrno>
#include <cstdlib>

namespace ibfabric::collectors::api {

using nlohmann::json;
using topology::FormatGuid;

double Unix(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

std::string NameOf(const Snapshot& s, std::uint64_t guid) {
  auto it = s.nodes->find(guid);
  return it == s.nodes->end() ? "" : it->second.name;
}

json End(const Snapshot& s, const topology::PortRef& ref) {
  json e{{"node", NameOf(s, ref.node_guid)}, {"guid", FormatGuid(ref.node_guid)}, {"port", ref.port}};
  auto it = s.nodes->find(ref.node_guid);
  e["kind"] = it == s.nodes->end() ? "unknown" : it->second.kind == topology::NodeKind::kSwitch ? "switch" : "hca";
  const topology::Port* p = s.fabric ? s.fabric->FindPort(ref) : nullptr;
  e["lid"] = p ? json(p->lid) : json(nullptr);
  return e;
}

std::optional<std::uint64_t> ParseGuid(const std::string& v, std::string* error) {
  const auto g = topology::ParseGuid(v);
  if (!g) *error = "guid must be a hexadecimal node GUID such as 0x0002c90300a1b2c3";
  return g;
}

std::uint64_t NodeOf(const Snapshot& s, std::uint64_t guid) {
  if (!s.fabric || s.fabric->FindNode(guid)) return guid;
  for (const auto& [node, label] : *s.nodes) {
    for (const auto& [port, g] : label.port_guids) {
      if (g == guid) return node;
    }
  }
  return guid;
}

}  // namespace ibfabric::collectors::api
