#pragma once
// Turns a Snapshot into Prometheus metric families. This is where every
// metric this exporter serves is named.
//
// Port counters keep the names and labels of treydock/infiniband_exporter:
//   infiniband_switch_port_<counter>_total{guid,port,switch}
//   infiniband_hca_port_<counter>_total{guid,port,hca}
// with node metadata in infiniband_{switch,hca}_info and each cable's far
// end in infiniband_{switch,hca}_uplink_info.

#include <string_view>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/snapshot.h"

namespace ibfabric::collectors {

// Pure: the same snapshot gives the same families, sorted by name.
std::vector<prometheus::MetricFamily> RenderMetrics(const Snapshot& snapshot,
                                                    std::string_view version);

}  // namespace ibfabric::collectors
