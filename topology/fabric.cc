#include "topology/fabric.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace ibfabric::topology {

const char* ToString(NodeKind k) {
  switch (k) {
    case NodeKind::kCa: return "CA";
    case NodeKind::kSwitch: return "SW";
    case NodeKind::kRouter: return "RT";
    case NodeKind::kUnknown: break;
  }
  return "unknown";
}

bool IsAggregationNode(const Node& n) {
  return n.kind == NodeKind::kCa && n.description == kAggregationNodeDescription;
}

bool FacesAggregationNode(const Fabric& fabric, const Port& p) {
  const Node* far = p.remote ? fabric.FindNode(p.remote->node_guid) : nullptr;
  return far && IsAggregationNode(*far);
}

bool IsHca(const Node& n) { return n.kind == NodeKind::kCa && !IsAggregationNode(n); }

bool IsNvidiaSwitch(const Node& n) {
  return n.kind == NodeKind::kSwitch && n.vendor_id == kNvidiaVendorId && n.lid != 0;
}

std::uint16_t NvidiaAgentLid(const Node& n) {
  if (n.vendor_id != kNvidiaVendorId) return 0;
  if (n.kind == NodeKind::kSwitch) return n.lid;
  for (const Port& p : n.ports) {
    if (p.lid != 0) return p.lid;
  }
  return 0;
}

const Port* Node::FindPort(std::uint8_t number) const {
  auto it =
      std::lower_bound(ports.begin(), ports.end(), number, [](const Port& p, std::uint8_t n) { return p.number < n; });
  return it != ports.end() && it->number == number ? &*it : nullptr;
}

Fabric::Fabric(std::vector<Node> nodes) : nodes_(std::move(nodes)) {
  for (auto& n : nodes_) {
    std::sort(n.ports.begin(), n.ports.end(), [](const Port& a, const Port& b) { return a.number < b.number; });
  }
  std::sort(nodes_.begin(), nodes_.end(), [](const Node& a, const Node& b) {
    const bool as = a.kind == NodeKind::kSwitch, bs = b.kind == NodeKind::kSwitch;
    return as != bs ? as : a.guid < b.guid;
  });
  for (std::size_t i = 0; i < nodes_.size(); ++i) index_[nodes_[i].guid] = i;
  std::set<std::string, std::less<>> seen;
  for (const Node& n : nodes_) {
    if (n.description.empty() || IsAggregationNode(n)) continue;
    std::string name = ShortName(n.description);
    if (!seen.insert(name).second) shared_names_.insert(std::move(name));
  }
}

const Node* Fabric::FindNode(std::uint64_t guid) const {
  auto it = index_.find(guid);
  return it == index_.end() ? nullptr : &nodes_[it->second];
}

const Port* Fabric::FindPort(const PortRef& ref) const {
  const Node* n = FindNode(ref.node_guid);
  return n ? n->FindPort(ref.port) : nullptr;
}

std::size_t Fabric::switch_count() const {
  return static_cast<std::size_t>(
      std::count_if(nodes_.begin(), nodes_.end(), [](const Node& n) { return n.kind == NodeKind::kSwitch; }));
}

std::size_t Fabric::ca_count() const {
  return static_cast<std::size_t>(
      std::count_if(nodes_.begin(), nodes_.end(), [](const Node& n) { return n.kind == NodeKind::kCa; }));
}

std::string FormatGuid(std::uint64_t guid) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(guid));
  return buf;
}

std::optional<std::uint64_t> ParseGuid(const std::string& text) {
  char* stop = nullptr;
  errno = 0;
  const unsigned long long g = std::strtoull(text.c_str(), &stop, 16);
  if (text.empty() || text.size() > 18 || errno != 0 || *stop != '\0' || text[0] == '-' || text[0] == ' ' ||
      text[0] == '+')
    return std::nullopt;
  return g;
}

std::optional<std::uint8_t> ParsePortNumber(const std::string& text, int lowest) {
  char* stop = nullptr;
  const long n = std::strtol(text.c_str(), &stop, 10);
  if (text.empty() || *stop != '\0' || n < lowest || n > 254) return std::nullopt;
  return static_cast<std::uint8_t>(n);
}

std::string ShortName(std::string_view description) {
  constexpr std::string_view kSystem = "MF0;";
  if (description.substr(0, kSystem.size()) != kSystem) return std::string(description);
  const std::string_view rest = description.substr(kSystem.size());
  const std::size_t colon = rest.find(':');
  if (colon == 0 || colon == std::string_view::npos) return std::string(description);
  const std::string_view system = rest.substr(0, colon);
  const std::string_view model_and_location = rest.substr(colon + 1);
  const std::size_t slash = model_and_location.find('/');
  if (slash == std::string_view::npos) return std::string(system);
  const std::string_view location = model_and_location.substr(slash + 1);
  if (location.empty() || location == "U1") return std::string(system);
  return std::string(system) + "/" + std::string(location);
}

std::string NodeName(const Fabric& fabric, std::uint64_t guid) {
  const Node* n = fabric.FindNode(guid);
  if (n == nullptr || n->description.empty()) return FormatGuid(guid);
  std::string name = ShortName(n->description);
  if (fabric.NameShared(name) && !IsAggregationNode(*n)) name += " (" + FormatGuid(guid) + ")";
  return name;
}

std::string PortName(const Fabric& fabric, const PortRef& port) {
  return NodeName(fabric, port.node_guid) + "[" + std::to_string(port.port) + "]";
}

bool NaturalLess(std::string_view x, std::string_view y) {
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  std::size_t i = 0, j = 0;
  while (i < x.size() && j < y.size()) {
    if (digit(x[i]) && digit(y[j])) {
      // Compare the two numbers by value: leading zeros skipped, then the
      // longer run is the larger, then digit by digit.
      std::size_t ie = i, je = j;
      while (ie < x.size() && digit(x[ie])) ++ie;
      while (je < y.size() && digit(y[je])) ++je;
      std::size_t is = i, js = j;
      while (is + 1 < ie && x[is] == '0') ++is;
      while (js + 1 < je && y[js] == '0') ++js;
      if (ie - is != je - js) return ie - is < je - js;
      const int c = x.substr(is, ie - is).compare(y.substr(js, je - js));
      if (c != 0) return c < 0;
      i = ie;
      j = je;
      continue;
    }
    if (x[i] != y[j]) return static_cast<unsigned char>(x[i]) < static_cast<unsigned char>(y[j]);
    ++i;
    ++j;
  }
  if (i < x.size() || j < y.size()) return i >= x.size();  // one is a prefix of the other
  if (x.size() != y.size()) return x.size() < y.size();
  return x < y;
}

Fabric Part(const Fabric& fabric, const std::set<std::uint64_t>& guids,
            const std::function<bool(const Node&, const Port&)>& keep) {
  std::vector<Node> nodes;
  for (const auto& n : fabric.nodes()) {
    if (!guids.count(n.guid)) continue;
    Node copy = n;
    if (keep) std::erase_if(copy.ports, [&](const Port& p) { return !keep(n, p); });
    nodes.push_back(std::move(copy));
  }
  return Fabric(std::move(nodes));
}

}  // namespace ibfabric::topology
