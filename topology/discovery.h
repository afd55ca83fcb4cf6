#pragma once
// Fabric discovery with directed-route SMPs (IBTA 14.2.2), breadth first
// from the local port: NodeInfo tells what answers at the end of a route and
// through which of its ports the SMP came in; NodeDescription and PortInfo
// fill in names, LIDs, link states, widths and speeds. Each BFS level is one
// pipelined batch on the MAD engine.

#include <cstdint>
#include <string>
#include <vector>

#include "topology/fabric.h"
#include "transport/attributes.h"
#include "transport/mad_engine.h"

namespace ibfabric::topology {

struct DiscoveryResult {
  bool ok = false;                    // false when not even the local node answered
  Fabric fabric;
  std::uint64_t local_node_guid = 0;
  std::uint8_t local_port = 0;
  std::vector<std::string> problems;  // one line each: what did not answer, where
  std::size_t smps = 0;               // requests issued
  // PortInfo.SubnetTimeOut of the local port (IBTA 14.2.5.6), as the SM set
  // it; 0 when the local port did not answer.
  std::uint8_t subnet_timeout = 0;
};

struct DiscoverOptions {
  // How far from the local node to go: -1 the whole fabric; 1 the local
  // node and the nodes at the other end of its cables (local scope), whose
  // other links are then up but lead nowhere known.
  int max_hops = -1;
};

// Thread-safety: uses the engine exclusively for its duration.
DiscoveryResult Discover(transport::MadEngine& engine, DiscoverOptions options = {});

// Copies a port's state, width and speed fields from its PortInfo; the XDR
// fields only when `ext_speeds2` (the node's capability masks allow them).
void ApplyPortInfo(const transport::PortInfo& pi, bool ext_speeds2, Port* port);

}  // namespace ibfabric::topology
