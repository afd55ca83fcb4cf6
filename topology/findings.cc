#include "topology/findings.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <utility>

namespace ibfabric::topology {
namespace {

// The plan is the design: what a site drew, or the fabric as it stood
// when an operator saved it and accepted it. The pattern's verdicts (a fat
// tree's groups are alike, its tiers are cabled one to the next, hosts sit
// on their rails) are a guess at a design that is not written down; where
// it is written down, a deviation from the pattern at nodes the plan has,
// where the plan finds nothing amiss, is how it was built, on purpose. It
// moves to `accepted`: it raises nothing, and what changes from the plan
// is the plan's own finding. Information (names, designs) stays as it is,
// and so does a finding about a node the plan does not have (a switch
// added since), a switch the plan finds amiss in any way, or a pair of
// switches the plan finds amiss between them. A finding about the whole
// fabric (not a fat tree) is accepted where the plan finds nothing amiss.
void AcceptTheDesign(const PlanDiff& diff, Analysis* a) {
  std::set<std::uint64_t> differs;                                 // nodes the plan finds amiss
  std::set<std::pair<std::uint64_t, std::uint64_t>> pairs_differ;  // and pairs of nodes
  for (const Finding& f : diff.findings) {
    for (std::uint64_t n : {f.node, f.a ? f.a->node_guid : 0, f.b ? f.b->node_guid : 0}) {
      if (n) differs.insert(n);
    }
    if (f.a && f.b) pairs_differ.insert(std::minmax(f.a->node_guid, f.b->node_guid));
  }
  const auto accepted = [&](const Finding& f) {
    if (LevelOf(f.kind) == FindingLevel::kInformation) return false;
    // About a pair (a cable, a missing cable): as the plan has that pair,
    // whatever changed at either end with other nodes.
    if (f.a && f.b) {
      return diff.planned.count(f.a->node_guid) && diff.planned.count(f.b->node_guid) &&
             !pairs_differ.count(std::minmax(f.a->node_guid, f.b->node_guid));
    }
    // About a switch: as the plan has it, nothing amiss there.
    if (f.node) return diff.planned.count(f.node) && !differs.count(f.node);
    // About the whole fabric (not a fat tree): its shape is the design
    // where the fabric is as the plan says.
    return diff.findings.empty();
  };
  std::vector<Finding> kept;
  for (Finding& f : a->findings) (accepted(f) ? a->accepted : kept).push_back(std::move(f));
  a->findings = std::move(kept);
}

}  // namespace

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
  AcceptTheDesign(diff, &a);
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
    // its devices named otherwise; a service island hung off the tree; a
    // service or storage host on a spine, a common design (a plan that
    // says otherwise makes it plan_extra_link).
    case K::kBelowTierMajority:
    case K::kDuplicateName:
    case K::kRailDeviceOrder:
    case K::kServiceIsland:
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
