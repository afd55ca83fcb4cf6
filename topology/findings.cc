#include "topology/findings.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <utility>

namespace ibfabric::topology {

Analysis AnalyzeWiring(const Fabric& fabric, const HostPattern& pattern, const CablingPlan* plan, HostAnalysis* hosts) {
  Analysis a = Analyze(fabric);
  *hosts = AnalyzeHosts(fabric, pattern);
  a.findings.insert(a.findings.end(), hosts->findings.begin(), hosts->findings.end());
  if (!plan) return a;
  PlanDiff diff = DiffAgainstPlan(fabric, *plan, a, hosts);
  // A cable the plan has and the fabric lacks is the plan's verdict: the
  // pattern's missing_cable on the same two switches would say it twice.
  std::set<std::pair<std::uint64_t, std::uint64_t>> planned_missing;
  for (const Finding& f : diff.findings) {
    if (f.kind != FindingKind::kPlanMissingLink || !f.a || !f.b) continue;
    planned_missing.insert(std::minmax(f.a->node_guid, f.b->node_guid));
  }
  std::erase_if(a.findings, [&](const Finding& f) {
    return f.kind == FindingKind::kMissingCable && f.a && f.b &&
           planned_missing.count(std::minmax(f.a->node_guid, f.b->node_guid));
  });
  a.findings.insert(a.findings.end(), std::make_move_iterator(diff.findings.begin()),
                    std::make_move_iterator(diff.findings.end()));
  for (const auto& [link, why] : diff.degraded) a.degraded[link] = why;
  return a;
}

FindingLevel LevelOf(FindingKind kind) {
  using K = FindingKind;
  using L = FindingLevel;
  switch (kind) {
    // The cable is where the tree or the plan does not put it.
    case K::kSameTierLink:
    case K::kSkipTierLink:
    case K::kCaToCa:
    case K::kPlanExtraLink:
    case K::kPlanWrongRemoteNode:
    case K::kPlanWrongRemotePort:
    case K::kPlanWrongRail:
    case K::kRailWrongLeaf:
    case K::kRailSwapped:
    case K::kRailSharedLeaf:
    case K::kRailCrossUnit: return L::kMiswiring;
    // A cable the pattern (analysis.h) or the plan has is not there.
    case K::kMissingCable:
    case K::kPlanMissingLink: return L::kMissingCable;
    // A link at both its ends' best (2x NDR200 HCAs, HDR devices in an NDR
    // fabric); names told apart by GUID; a host on each rail leaf once,
    // its devices named otherwise; a service or storage host on a spine,
    // a common design (a plan that says otherwise makes it plan_extra_link).
    case K::kBelowTierMajority:
    case K::kDuplicateName:
    case K::kRailDeviceOrder:
    case K::kCaOnNonLeaf: return L::kInformation;
    default: return L::kWarning;
  }
}

const char* ToString(FindingLevel level) {
  switch (level) {
    case FindingLevel::kInformation: return "information";
    case FindingLevel::kWarning: return "warning";
    case FindingLevel::kMiswiring: return "miswiring";
    case FindingLevel::kMissingCable: return "missing_cable";
  }
  return "warning";
}

bool RaisesCableAlert(const Finding& f) {
  const FindingLevel level = LevelOf(f.kind);
  return f.a && f.b && (level == FindingLevel::kMiswiring || level == FindingLevel::kMissingCable);
}

}  // namespace ibfabric::topology
