// libFuzzer target: the partition plan parser (--partitions.plan).
#include <cstddef>
#include <cstdint>
#include <string>

#include "topology/partitions.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ibfabric::topology::PartitionPlan plan;
  std::string error;
  ibfabric::topology::ParsePartitionPlan(std::string(reinterpret_cast<const char*>(data), size), &plan, &error);
  return 0;
}
