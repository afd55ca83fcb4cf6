#pragma once
// partitions: the P_Key tables (IBTA 14.2.5.7) of the CA ports and of the
// switch ports facing them, read at discovery (a re-walk reads the new
// nodes'), and what they say (topology/partitions.h): membership unlike the
// leaf's majority or the partition plan, enforcement tables unlike the CA
// port they face. Only where this exporter reports topology. Metrics:
// infiniband_port_partition_info, infiniband_switch_port_partition_*.

#include <memory>
#include <optional>

#include "collectors/framework/collector_info.h"
#include "collectors/parts/partitions.h"
#include "topology/partitions.h"

namespace ibfabric::collectors {

// Its flags' options (--partitions.tables, --partitions.plan).
struct PartitionsOptions {
  bool pkeys_from_sa = true;                    // P_Key tables from the SA's records where it has them
  std::optional<topology::PartitionPlan> plan;  // the expected membership; none: no plan
};

// Its declaration (name, help, factory, render, reads, flags): the registry's line.
CollectorInfo PartitionsCollectorInfo();
std::unique_ptr<Collector> MakePartitionsCollector(const CollectorOptions& options);
void RenderPartitions(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
