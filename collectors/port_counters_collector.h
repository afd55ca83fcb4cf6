#pragma once
// port_counters: PortCounters and PortCountersExtended of every port in
// scope, each sweep (in the sweep's one batch), folded into monotonic
// totals (counter_store.h); each node's freshness and what its MADs went
// through; the opt-in clearing of sticky counters near their maximum.
// A reading no link can produce (counter_store.h) is not folded in: it is
// counted by reason and logged once per port.
// Metrics: infiniband_{switch,hca}_port_<counter>_total and the pinned
// counters (treydock/infiniband_exporter's names and labels);
// infiniband_exporter_readings_rejected_total{reason}.

#include <memory>

#include "collectors/framework/collector_info.h"

namespace ibfabric::collectors {

// Its declaration (name, help, factory, render, reads, flags): the registry's line.
CollectorInfo PortCountersCollectorInfo();
std::unique_ptr<Collector> MakePortCountersCollector(const CollectorOptions& options);
void RenderPortCounters(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
