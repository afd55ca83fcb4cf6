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
// reason. Pure.
Analysis AnalyzeWiring(const Fabric& fabric, const HostPattern& pattern, const CablingPlan* plan, HostAnalysis* hosts);

// Whether a finding of this kind about a cable (both ends set) raises a
// miswiring alert on it: the cable is not where it should be. The others
// are information on /api/v1/topology and the findings metric.
bool RaisesMiswiringAlert(FindingKind kind);

}  // namespace ibfabric::topology
