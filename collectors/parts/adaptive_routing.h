#pragma once
// What the adaptive_routing collector publishes, for those that read it
// (routing, link_health, blast_radius; listed in their CollectorInfo::reads):
// topology::AdaptiveSwitches under this name in Snapshot::by_collector.

#include <memory>
#include <string_view>

#include "topology/adaptive_routing.h"

namespace ibfabric::collectors {

inline constexpr std::string_view kAdaptiveRoutingCollector = "adaptive_routing";

}  // namespace ibfabric::collectors
