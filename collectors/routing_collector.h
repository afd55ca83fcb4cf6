#pragma once
// routing: every switch's LinearForwardingTable (IBTA 14.2.5.10), read at
// discovery (a re-walk reads the new switches'), and what it says
// (topology/routing.h): how evenly destinations spread, destinations a
// switch cannot reach, routes that go down and up again. Only where this
// exporter reports topology (topology/scope.h). Metrics: infiniband_routing_*.

#include <memory>

#include "collectors/collector.h"

namespace ibfabric::collectors {

std::unique_ptr<Collector> MakeRoutingCollector(const CollectorOptions& options);
void RenderRouting(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
