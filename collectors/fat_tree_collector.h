#pragma once
// fat_tree: what the wiring says (topology/analysis.h: tiers, tree
// structure, asymmetry, degraded links, bisection) and, with a cabling
// plan, how it differs from the plan (topology/plan.h), after every
// discovery; no MADs of its own. Fabric-wide findings come from one
// exporter of a sharded set and never from a local one (topology/scope.h).
// It also groups the CAs into hosts and learns the rails of a
// rail-optimized fabric (topology/hosts.h); their findings join the tree's.
// Metrics: infiniband_topology_*, infiniband_link_degraded,
// infiniband_switch_{tier,uplinks,downlinks}, infiniband_leaf_blocking_factor,
// infiniband_host_layout_info, infiniband_host_info, infiniband_hca_rail_info.

#include <memory>

#include "collectors/framework/collector_info.h"

namespace ibfabric::collectors {

// Its declaration (name, help, factory, render, reads, flags): the registry's line.
CollectorInfo FatTreeCollectorInfo();
std::unique_ptr<Collector> MakeFatTreeCollector(const CollectorOptions& options);
void RenderFatTree(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
