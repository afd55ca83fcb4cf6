// libFuzzer target: the node-name map parser.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "topology/node_name_map.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ibfabric::topology::NodeNameMap map;
  std::string error;
  ibfabric::topology::ParseNodeNameMap(std::string_view(reinterpret_cast<const char*>(data), size), &map, &error);
  return 0;
}
