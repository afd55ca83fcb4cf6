#include "topology/findings.h"

#include <iterator>

namespace ibfabric::topology {

Analysis AnalyzeWiring(const Fabric& fabric, const HostPattern& pattern, const CablingPlan* plan, HostAnalysis* hosts) {
  Analysis a = Analyze(fabric);
  *hosts = AnalyzeHosts(fabric, pattern);
  a.findings.insert(a.findings.end(), hosts->findings.begin(), hosts->findings.end());
  if (!plan) return a;
  PlanDiff diff = DiffAgainstPlan(fabric, *plan, a, hosts);
  a.findings.insert(a.findings.end(), std::make_move_iterator(diff.findings.begin()),
                    std::make_move_iterator(diff.findings.end()));
  for (const auto& [link, why] : diff.degraded) a.degraded[link] = why;
  return a;
}

bool RaisesMiswiringAlert(FindingKind kind) {
  using K = FindingKind;
  switch (kind) {
    case K::kSameTierLink:
    case K::kSkipTierLink:
    case K::kCaOnNonLeaf:
    case K::kCaToCa:
    case K::kPlanMissingLink:
    case K::kPlanExtraLink:
    case K::kPlanWrongRemoteNode:
    case K::kPlanWrongRemotePort:
    case K::kPlanWrongRail:
    case K::kRailWrongLeaf:
    case K::kRailSwapped:
    case K::kRailSharedLeaf:
    case K::kRailCrossUnit: return true;
    default: return false;
  }
}

}  // namespace ibfabric::topology
