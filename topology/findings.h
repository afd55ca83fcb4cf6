#pragma once
// The findings of every topology pass, concatenated in one order: the tree
// analysis with the plan diff (analysis.h, plan.h), then routing
// (routing.h), then partitions (partitions.h). Each pass returns its own
// result; this is the one place they meet.

#include <vector>

#include "topology/analysis.h"
#include "topology/hosts.h"
#include "topology/partitions.h"
#include "topology/plan.h"
#include "topology/routing.h"

namespace ibfabric::topology {

// Pure. `routing` and `partitions` may be null (not read).
inline std::vector<Finding> AllFindings(const Analysis& tree, const RoutingAnalysis* routing,
                                        const PartitionAnalysis* partitions) {
  std::vector<Finding> out = tree.findings;
  if (routing) out.insert(out.end(), routing->findings.begin(), routing->findings.end());
  if (partitions) out.insert(out.end(), partitions->findings.begin(), partitions->findings.end());
  return out;
}

// What the wiring says, as the exporter publishes it and the offline
// analysis prints it: the tree analysis, then the hosts' rail findings
// (`hosts` gets the host analysis), then the plan's diff where there is a
// plan (null: none), a planned cable at another rate degraded for that
// reason. With a plan, the plan is the design: a finding of the tree or
// rail passes (not information) whose nodes the plan all has and finds
// nothing amiss at is how the fabric was built, and moves to
// Analysis::accepted (an ibnetdiscover capture of today's fabric as the
// plan: only what changes from it is found). Pure.
Analysis AnalyzeWiring(const Fabric& fabric, const HostPattern& pattern, const CablingPlan* plan, HostAnalysis* hosts);

// What a finding of each kind asks of on-call, in one place (docs/api.md,
// "Finding kinds", says why for each):
enum class FindingLevel : std::uint8_t {
  kInformation,   // no fault: a design or a name to know about; nothing pages
  kWarning,       // a deviation worth a look (InfinibandTopologyFinding)
  kMiswiring,     // as a warning, and a cable alert on the cable it names (both ends set):
                  // the cable is where it should not be
  kMissingCable,  // as a warning, and a cable alert on the switch pair it names: a cable the
                  // pattern or the plan has is not there
};
FindingLevel LevelOf(FindingKind kind);
// "information", "warning", "miswiring", "missing_cable": the level label
// of infiniband_topology_findings.
const char* ToString(FindingLevel level);
// Whether `f` raises a cable alert (miswiring or missing cable): its level
// says so and both its ends are set.
bool RaisesCableAlert(const Finding& f);

}  // namespace ibfabric::topology
