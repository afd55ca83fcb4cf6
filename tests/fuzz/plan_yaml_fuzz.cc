// libFuzzer target: the YAML cabling-plan parser.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "topology/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ibfabric::topology::CablingPlan plan;
  std::string error;
  ibfabric::topology::ParseYamlPlan(std::string_view(reinterpret_cast<const char*>(data), size), &plan, &error);
  return 0;
}
