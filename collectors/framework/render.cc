#include "collectors/framework/render.h"

#include "topology/scope.h"

namespace ibfabric::collectors {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using topology::FormatGuid;

MetricFamily Family(std::string name, std::string help, MetricType type) {
  MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

void Add(MetricFamily& f, std::vector<ClientMetric::Label> labels, double value) {
  ClientMetric m;
  m.label = std::move(labels);
  if (f.type == MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  f.metric.push_back(std::move(m));
}

void EmitOne(const Emit& out, std::string name, std::string help, MetricType type, double value) {
  auto f = Family(std::move(name), std::move(help), type);
  Add(f, {}, value);
  out(std::move(f));
}

void EmitNonEmpty(const Emit& out, MetricFamily& f) {
  if (!f.metric.empty()) out(std::move(f));
}

FamilyParts::FamilyParts(const Emit& out, std::string name, std::string help, MetricType type)
    : out_(out), f_(Family(std::move(name), std::move(help), type)) {
  f_.metric.reserve(kPartSeries);
}

void FamilyParts::Add(std::vector<ClientMetric::Label> labels, double value) {
  collectors::Add(f_, std::move(labels), value);
  if (f_.metric.size() < kPartSeries) return;
  MetricFamily part = Family(f_.name, f_.help, f_.type);
  part.metric.swap(f_.metric);
  out_(std::move(part));
  f_.metric.reserve(kPartSeries);
}

void FamilyParts::Finish() { EmitNonEmpty(out_, f_); }

double Seconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

const char* Role(topology::NodeKind k) { return k == topology::NodeKind::kSwitch ? "switch" : "hca"; }

const NodeLabel& LabelOf(const Snapshot& s, std::uint64_t guid) {
  static const NodeLabel kUnknown{};
  auto it = s.nodes->find(guid);
  return it == s.nodes->end() ? kUnknown : it->second;
}

std::uint64_t SeriesGuid(const topology::PortRef& ref, const NodeLabel& label) {
  if (label.kind == topology::NodeKind::kSwitch) return ref.node_guid;
  const auto it = label.port_guids.find(ref.port);
  return it == label.port_guids.end() ? ref.node_guid : it->second;
}

std::vector<ClientMetric::Label> PortLabels(const topology::PortRef& ref, const NodeLabel& label) {
  return {
      {"guid", FormatGuid(SeriesGuid(ref, label))}, {"port", std::to_string(ref.port)}, {Role(label.kind), label.name}};
}

bool OwnsSwitch(const Snapshot& s, std::uint64_t switch_guid) {
  return topology::OwnsSwitchFacts(s.scope, switch_guid);
}

bool OwnsPort(const Snapshot& s, const topology::Node& node, const topology::Port& port) {
  if (!s.read_ports || s.read_ports->count({node.guid, port.number})) return true;
  return node.kind == topology::NodeKind::kSwitch && !port.remote && OwnsSwitch(s, node.guid);
}

bool OwnsNode(const Snapshot& s, std::uint64_t guid) {
  if (!s.read_ports) return true;
  const topology::Node* node = s.fabric ? s.fabric->FindNode(guid) : nullptr;
  if (node == nullptr) return false;
  if (node->kind == topology::NodeKind::kSwitch) return OwnsSwitch(s, guid);
  for (const auto& port : node->ports) {
    if (s.read_ports->count({guid, port.number})) return true;
  }
  return false;
}

bool OwnsNodeHealth(const Snapshot& s, std::uint64_t guid) {
  if (!s.read_ports) return true;
  const topology::Node* node = s.fabric ? s.fabric->FindNode(guid) : nullptr;
  if (node == nullptr) return false;
  if (node->kind != topology::NodeKind::kSwitch) return OwnsNode(s, guid);
  const auto shard = topology::HealthShard(*s.fabric, s.scope, *node);
  return shard && *shard == s.scope.shard;
}

std::vector<ClientMetric::Label> EndLabels(const Snapshot& s, const topology::PortRef& p) {
  return {{"guid", FormatGuid(p.node_guid)}, {"node", LabelOf(s, p.node_guid).name}, {"port", std::to_string(p.port)}};
}

std::vector<ClientMetric::Label> CableLabels(const Snapshot& s, const topology::Link& l) {
  auto labels = EndLabels(s, l.a);
  for (auto& remote : EndLabels(s, l.b)) labels.push_back({"remote_" + remote.name, std::move(remote.value)});
  return labels;
}

std::string HostOf(const Snapshot& s, std::uint64_t ca_guid) {
  if (!s.hosts) return "";
  const auto h = s.hosts->of_ca.find(ca_guid);
  return h == s.hosts->of_ca.end() ? "" : s.hosts->hosts[h->second].name;
}

std::string CableId(const topology::Link& l) {
  return FormatGuid(l.a.node_guid) + "/" + std::to_string(l.a.port) + "/" + FormatGuid(l.b.node_guid) + "/" +
         std::to_string(l.b.port);
}

}  // namespace ibfabric::collectors
