#pragma once
// capabilities: the PMA ClassPortInfo of every node read (IBTA 16.1.2), at
// discovery: which counters each PMA supports decides what port_counters
// asks and exports (CapabilityMask bit 9 PortCountersExtended, 12
// PortXmitWait, ...), and its RespTimeValue how long its answers may take.
// With the vendor MAD agent, NVIDIA nodes (VendorID 0x02c9) it reads
// ports of, and NVIDIA switches whose facts it states, are asked NVIDIA's
// vendor GeneralInfo once (class 0x0A): whether AccessRegister answers in
// band, which the fec and switch_environment collectors read by.
// Metrics: infiniband_node_pma_capabilities_info,
// infiniband_node_access_register_supported. Disabled, every port is read
// as if its capabilities were unknown, and no register is read.

#include <memory>

#include "collectors/framework/collector_info.h"

namespace ibfabric::collectors {

// Its declaration (name, help, factory, render, reads, flags): the registry's line.
CollectorInfo CapabilitiesCollectorInfo();
std::unique_ptr<Collector> MakeCapabilitiesCollector(const CollectorOptions& options);
void RenderCapabilities(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
