#pragma once
// The fabric, its analysis and findings as JSON: the body of
// GET /api/v1/topology. The schema is documented in docs/api.md and
// versioned by "schema_version"; fields are only ever added.

#include <nlohmann/json.hpp>

#include "topology/analysis.h"
#include "topology/fabric.h"
#include "topology/findings.h"

namespace ibfabric::topology {

inline constexpr int kTopologySchemaVersion = 1;

// Pure. One port as in nodes[].ports[]: number, LID, state, rate, remote end.
nlohmann::json PortJson(const Fabric& fabric, const Port& port);

// Pure. "routing" and "partitions" are null where `routing` or
// `partitions` is (the tables were not read).
nlohmann::json TopologyJson(const Fabric& fabric, const Analysis& analysis, const RoutingAnalysis* routing = nullptr,
                            const PartitionAnalysis* partitions = nullptr);

}  // namespace ibfabric::topology
