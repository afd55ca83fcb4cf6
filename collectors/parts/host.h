#pragma once
// What the host collector publishes, for those that read it (jobs,
// blast_radius; listed in their CollectorInfo::reads) and the API:
// HostReadings under this name in Snapshot::by_collector.

#include <memory>
#include <string_view>

#include "collectors/framework/snapshot.h"
#include "host/sysfs.h"
#include "topology/analysis.h"

namespace ibfabric::collectors {

inline constexpr std::string_view kHostCollector = "host";

struct HostReadings {
  std::shared_ptr<const host::HostReading> reading;  // null outside local scope
};

// The host a device belongs to: the fabric's name for it (topology/
// hosts.h) where the device's GUID is in a host; else the first word of
// its node description (rdma-ndd's "%h %d"); else empty.
std::string HostOfDevice(const Snapshot& s, const host::HostDevice& d);

}  // namespace ibfabric::collectors
