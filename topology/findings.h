#pragma once
// The findings of every topology pass, concatenated in one order: the tree
// analysis with the plan diff (analysis.h, plan.h), then routing
// (routing.h), then partitions (partitions.h). Each pass returns its own
// result; this is the one place they meet.

#include <vector>

#include "topology/analysis.h"
#include "topology/partitions.h"
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

}  // namespace ibfabric::topology
