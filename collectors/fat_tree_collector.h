#pragma once
// fat_tree: what the wiring says (topology/analysis.h: tiers, tree
// structure, asymmetry, degraded links, bisection) and, with a cabling
// plan, how it differs from the plan (topology/plan.h), after every
// discovery; no MADs of its own. Fabric-wide findings come from one
// exporter of a sharded set and never from a local one (topology/scope.h).
// Metrics: infiniband_topology_*, infiniband_link_degraded,
// infiniband_switch_{tier,uplinks,downlinks}, infiniband_leaf_blocking_factor.

#include <memory>

#include "collectors/collector.h"
#include "collectors/registry.h"

namespace ibfabric::collectors {

std::unique_ptr<Collector> MakeFatTreeCollector(const CollectorOptions& options);
void RenderFatTree(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
