#pragma once
// Fabric discovery, breadth first from the local port. Directed-route SMPs
// (IBTA 14.2.2) go only where the route is the only way in: NodeInfo
// through each cable (what answers at its far end, and through which of its
// ports; a cable already seen from its far end is not asked again), and
// PortInfo of a switch's port 0 and of each CA port (their LIDs). The rest,
// NodeDescription and the PortInfo of every other switch port, goes
// LID-routed where the node's LID is usable (unicast, on an Active port,
// seen from an Active local port), loading only the node's own agent, and
// directed where it is not or where the LID-routed SMP went unanswered. A
// node reached through several cables at once keeps one of those routes,
// taken in turn, so routes spread over the switches of a tier. Each step of
// a BFS level is one pipelined batch on the MAD engine.

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
  std::size_t smps = 0;               // requests issued, both routings
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
