#pragma once
// adaptive_routing: which NVIDIA switches route adaptively
// (topology/adaptive_routing.h), read at discovery (a re-walk reads the new
// switches'; one that did not answer is asked again over the next sweeps).
// Only where this exporter reports topology; a switch of another vendor is
// never asked. With adaptive routing on, a switch's forwarding table is
// its fallback, not the path packets take: routing withholds that
// switch's balance, and congestion trees through it say they follow the
// static tables.
//
// Part: topology::AdaptiveSwitches under "adaptive_routing"
// (Snapshot::by_collector). Metric:
// infiniband_switch_adaptive_routing_enabled{guid,switch}, 1 or 0, for
// each switch that answered it supports adaptive routing.

#include <memory>
#include <string_view>

#include "collectors/framework/collector_info.h"
#include "collectors/parts/adaptive_routing.h"

namespace ibfabric::collectors {

// Its declaration (name, help, factory, render, reads, flags): the registry's line.
CollectorInfo AdaptiveRoutingCollectorInfo();
std::unique_ptr<Collector> MakeAdaptiveRoutingCollector(const CollectorOptions& options);
void RenderAdaptiveRouting(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
