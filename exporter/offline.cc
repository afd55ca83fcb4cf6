#include "exporter/offline.h"

#include <map>
#include <vector>

#include "collectors/api/json.h"
#include "topology/findings.h"
#include "topology/ibnetdiscover.h"

namespace ibfabric::exporter {
namespace {

// "FILE:N: why" from a note's "line N: why".
std::string InFile(const std::string& path, const std::string& note) {
  constexpr std::string_view kLine = "line ";
  if (note.rfind(kLine, 0) != 0) return path + ": " + note;
  const std::size_t colon = note.find(':');
  return path + ":" + note.substr(kLine.size(), colon - kLine.size()) + note.substr(colon);
}

void PrintText(const topology::Fabric& fabric, const topology::Analysis& a, const topology::HostAnalysis& hosts,
               std::ostream& out) {
  std::size_t hcas = 0, hca_ports = 0, others = 0;
  for (const topology::Node& n : fabric.nodes()) {
    if (topology::IsHca(n)) {
      ++hcas;
      hca_ports += n.ports.size();
    } else if (n.kind != topology::NodeKind::kSwitch) {
      ++others;
    }
  }
  out << "fabric: " << fabric.switch_count() << " switches, " << hcas << " HCAs (" << hca_ports << " cabled ports), "
      << others << " Aggregation Nodes and routers\n";
  if (a.is_tree) {
    std::map<int, int> per_tier;
    for (const auto& [guid, s] : a.switches) ++per_tier[s.tier];
    out << "tiers: " << a.tiers;
    const char* sep = " (";
    for (const auto& [tier, n] : per_tier) {
      out << sep << topology::TierName(tier) << " " << n;
      sep = ", ";
    }
    out << (per_tier.empty() ? "" : ")") << "\n";
  } else {
    out << "tiers: none: not a fat tree: " << a.not_tree_reason << "\n";
  }
  out << "hosts: " << hosts.hosts.size() << ", layout " << topology::ToString(hosts.layout);
  if (!hosts.rails.empty()) out << ", " << hosts.rails.size() << " rails in " << hosts.units.size() << " units";
  out << "\n";
  std::size_t alerting = 0;
  for (const topology::Finding& f : a.findings) alerting += topology::RaisesCableAlert(f);
  out << "findings: " << a.findings.size() << " (" << alerting << " would alert)\n";
  for (const topology::Finding& f : a.findings) {
    const char* level = topology::RaisesCableAlert(f)                                       ? "  alert "
                        : topology::LevelOf(f.kind) == topology::FindingLevel::kInformation ? "  info  "
                                                                                            : "  warn  ";
    out << level << topology::ToString(f.kind) << ": " << f.detail << "\n";
  }
  if (a.accepted.empty()) return;
  out << "accepted by the plan: " << a.accepted.size() << "\n";
  for (const topology::Finding& f : a.accepted)
    out << "  plan  " << topology::ToString(f.kind) << ": " << f.detail << "\n";
}

}  // namespace

int AnalyzeOffline(const OfflineOptions& options, std::ostream& out, std::ostream& err) {
  topology::Fabric fabric;
  std::vector<std::string> notes;
  std::string error;
  if (!topology::LoadNetFile(options.path, &fabric, &notes, &error)) {
    err << "ibfabric_exporter: invalid --analyze: " << error << "\n";
    return 2;
  }
  for (const std::string& note : notes) err << InFile(options.path, note) << "\n";
  if (options.names) fabric = topology::WithNames(fabric, *options.names);
  topology::HostAnalysis hosts;
  const topology::Analysis a = topology::AnalyzeWiring(
      fabric, options.pattern ? *options.pattern : topology::HostPattern{}, options.plan, &hosts);
  if (options.json) {
    collectors::TopologyParts parts;
    parts.fabric = &fabric;
    parts.analysis = &a;
    parts.hosts = &hosts;
    collectors::TopologyQuery query;
    query.view = collectors::TopologyQuery::View::kFindings;
    out << collectors::TopologyJson(parts, query).dump(2) << "\n";
  } else {
    PrintText(fabric, a, hosts, out);
  }
  for (const topology::Finding& f : a.findings) {
    if (topology::RaisesCableAlert(f)) return 1;
  }
  return 0;
}

}  // namespace ibfabric::exporter
