#pragma once
// Node-name maps in infiniband-diags' format (ibnetdiscover --node-name-map):
// one node a line, `<GUID> <name>` or `<GUID> "<name>"`, the GUID in any
// base strtoull accepts (0x... as usual); blank lines and text after '#'
// are ignored. Unlike infiniband-diags, which warns and goes on without the
// map, every malformed line is an error naming the line.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "topology/fabric.h"

namespace ibfabric::topology {

using NodeNameMap = std::map<std::uint64_t, std::string>;

// Pure. False with "line N: reason" at the first bad line.
bool ParseNodeNameMap(std::string_view text, NodeNameMap* map, std::string* error);
// False with "FILE:N: reason" or "FILE: cannot read: ...".
bool LoadNodeNameMap(const std::string& path, NodeNameMap* map, std::string* error);
// The fabric with each mapped node's description replaced by its name.
Fabric WithNames(const Fabric& fabric, const NodeNameMap& map);

}  // namespace ibfabric::topology
