#pragma once
// link_health: every cable's state, flaps and error rates over the window
// (link_health.h), from the sweep's PortInfo and port_counters' totals,
// and the alerts they raise (alerts.h), after every sweep and every trap's
// re-read; no MADs of its own. Metrics: infiniband_link_up,
// infiniband_link_down_*, infiniband_port_{transmit_wait,bit_error}_ratio,
// infiniband_alert*.

#include <memory>

#include "collectors/framework/collector_info.h"

namespace ibfabric::collectors {

// Its declaration (name, help, factory, render, reads, flags): the registry's line.
CollectorInfo LinkHealthCollectorInfo();
std::unique_ptr<Collector> MakeLinkHealthCollector(const CollectorOptions& options);
void RenderLinkHealth(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
