#pragma once
// routing: every switch's LinearForwardingTable (IBTA 14.2.5.10), read at
// discovery (a re-walk reads the new switches'), and what it says
// (topology/routing.h): how evenly destinations spread, destinations a
// switch cannot reach, routes that go down and up again. Only where this
// exporter reports topology (topology/scope.h). Metrics: infiniband_routing_*.

#include <cstddef>
#include <memory>
#include <string_view>

#include "collectors/framework/collector_info.h"

namespace ibfabric::collectors {

inline constexpr std::string_view kRoutingCollector = "routing";

// Where the tables it holds were read (its part of the Snapshot under
// kRoutingCollector).
struct TableSources {
  std::size_t sa = 0;        // the SA's LinearForwardingTableRecords
  std::size_t switches = 0;  // the switch's own blocks
};

// Its flags' options (--routing.tables).
struct RoutingOptions {
  bool tables_from_sa = true;  // LFTs from the SA's records where it has them, else from each switch
};

// Its declaration (name, help, factory, render, reads, flags): the registry's line.
CollectorInfo RoutingCollectorInfo();
std::unique_ptr<Collector> MakeRoutingCollector(const CollectorOptions& options);
void RenderRouting(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
