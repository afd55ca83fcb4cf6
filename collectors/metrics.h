#pragma once
// Turns a Snapshot into the Prometheus exposition: each collector on
// renders its own families (collectors/registry.h; the metric names live
// in each collector's file), then the exporter's own health
// (infiniband_exporter_*), which is named here.
//
// Port counters keep the names and labels of treydock/infiniband_exporter:
//   infiniband_switch_port_<counter>_total{guid,port,switch}
//   infiniband_hca_port_<counter>_total{guid,port,hca}
// with node metadata in infiniband_{switch,hca}_info and each cable's far
// end in infiniband_{switch,hca}_uplink_info.

#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collectors/framework/snapshot.h"

namespace ibfabric::collectors {

// The Prometheus text exposition (format 0.0.4) of a snapshot. Pure: the
// same snapshot gives the same text. Families are built and serialized one
// at a time (prometheus-cpp's MetricFamily and TextSerializer), so memory
// holds one family and the text, never the whole exposition as objects.
// Written to `out` family by family (the exporter's is a gzip stream, so the
// whole text is never held either); the string form is for tests.
// `fabric_labels` go first on every series: which fabric the snapshot is
// of, where one exporter reads several (exporter/fabric_set.h); none
// where it reads one.
using FabricLabels = std::vector<std::pair<std::string, std::string>>;
void RenderExposition(const Snapshot& snapshot, std::string_view version, std::ostream& out,
                      const FabricLabels& fabric_labels = {});
std::string RenderExposition(const Snapshot& snapshot, std::string_view version);

}  // namespace ibfabric::collectors
