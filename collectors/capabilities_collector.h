#pragma once
// capabilities: the PMA ClassPortInfo of every node read (IBTA 16.1.2), at
// discovery: which counters each PMA supports decides what port_counters
// asks and exports (CapabilityMask bit 9 PortCountersExtended, 12
// PortXmitWait, ...), and its RespTimeValue how long its answers may take.
// Metric: infiniband_node_pma_capabilities_info. Disabled, every port is
// read as if its capabilities were unknown.

#include <memory>

#include "collectors/collector.h"

namespace ibfabric::collectors {

std::unique_ptr<Collector> MakeCapabilitiesCollector(const CollectorOptions& options);
void RenderCapabilities(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
