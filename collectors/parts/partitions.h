#pragma once
// What the partitions collector publishes, for those that read it
// (fat_tree's findings, at render) and the API: topology::PartitionAnalysis
// under this name in Snapshot::by_collector.

#include <string_view>

#include "topology/partitions.h"

namespace ibfabric::collectors {

inline constexpr std::string_view kPartitionsCollector = "partitions";

}  // namespace ibfabric::collectors
