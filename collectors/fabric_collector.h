#pragma once
// fabric: what discovery found (the scheduler's walks), as the info metrics
// of treydock/infiniband_exporter: infiniband_{switch,hca}_info and each
// cable's far end in infiniband_{switch,hca}_uplink_info. No MADs of its
// own: NodeInfo, NodeDescription and PortInfo are discovery's.

#include <memory>

#include "collectors/framework/collector_info.h"

namespace ibfabric::collectors {

// Its declaration (name, help, factory, render, reads, flags): the registry's line.
CollectorInfo FabricCollectorInfo();
std::unique_ptr<Collector> MakeFabricCollector(const CollectorOptions& options);
void RenderFabric(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
