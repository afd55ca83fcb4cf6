#include "collectors/framework/collector.h"

#include "collectors/framework/collector_info.h"
#include "topology/routing.h"

namespace ibfabric::collectors {

const std::map<std::uint64_t, transport::SwitchInfo>& SharedReads::SwitchInfo(const topology::Fabric& fabric,
                                                                              const std::set<std::uint64_t>* nodes,
                                                                              std::vector<std::string>* problems) {
  std::set<std::uint64_t> ask;
  for (const auto& n : fabric.nodes()) {
    if (n.kind != topology::NodeKind::kSwitch || n.lid == 0 || switch_info_.count(n.guid)) continue;
    if (!nodes || nodes->count(n.guid)) ask.insert(n.guid);
  }
  if (ask.empty()) return switch_info_;
  auto r = topology::ReadSwitchInfo(topology::Part(fabric, ask), engine_);
  for (auto& [g, info] : r.switch_info) switch_info_[g] = info;
  if (problems) problems->insert(problems->end(), r.problems.begin(), r.problems.end());
  return switch_info_;
}

void LogFindings(Logger& log, const std::vector<topology::Finding>& findings) {
  for (const auto& f : findings) {
    log.Info("topology finding", std::string("kind=") + topology::ToString(f.kind) + " detail=\"" + f.detail + "\"");
  }
}

void SharedReads::Forget(const std::set<std::uint64_t>& nodes) {
  for (std::uint64_t g : nodes) switch_info_.erase(g);
}

ApiReply Absent(const Snapshot& s, const std::string& pending, const std::string& not_here) {
  if (s.scope.reports_topology()) return {503, nullptr, pending, "", ""};
  return {404, nullptr,
          "this exporter " + not_here + " (scope " + std::string(topology::ToString(s.scope.kind)) +
              " or a shard other than 0)",
          "", ""};
}

}  // namespace ibfabric::collectors
