#pragma once
// partitions: the P_Key tables (IBTA 14.2.5.7) of the CA ports and of the
// switch ports facing them, read at discovery (a re-walk reads the new
// nodes'), and what they say (topology/partitions.h): membership unlike the
// leaf's majority or the partition plan, enforcement tables unlike the CA
// port they face. Only where this exporter reports topology. Metrics:
// infiniband_port_partition_info, infiniband_switch_port_partition_*.

#include <memory>

#include "collectors/collector.h"

namespace ibfabric::collectors {

std::unique_ptr<Collector> MakePartitionsCollector(const CollectorOptions& options);
void RenderPartitions(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
