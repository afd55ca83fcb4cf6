#pragma once
// Which routes a fault lies on: routes between CA ports (host ports),
// traced hop by hop through the switches' LinearForwardingTables (IBTA
// 14.2.5.10), as ibtracert traces them. A bad or flapping cable hurts the
// routes that leave a switch or CA through either of its ends; a
// congestion root the routes that leave through the root port. The blast
// radius of a fault is those routes: how many (source port, destination
// port) pairs, and for each CA port how many it sends and receives. Where
// adaptive routing is on, the tables are the static fallback and so are
// these routes. Pure: no MADs.
//
// Only HCAs (fabric.h IsHca) are sources and destinations: no switch port,
// SHARP Aggregation Node or router; routes between hosts only.

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "topology/analysis.h"
#include "topology/fabric.h"
#include "topology/routing.h"

namespace ibfabric::topology {

// A route from a CA port to a LID: the port each hop leaves by, from the
// source CA port itself to the last switch's port toward the destination.
struct Route {
  std::vector<PortRef> egress;
  // The destination answered at the end of it; false where a table is not
  // read, has no entry (0xFF) or names a port with nothing behind it, or
  // the route loops (more than 64 hops).
  bool arrives = false;
};
Route TraceRoute(const Fabric& fabric, const ForwardingTables& tables, const PortRef& from, std::uint16_t to_lid);

struct PortRoutes {
  std::size_t sends = 0;     // routes from this port that cross
  std::size_t receives = 0;  // routes to this port that cross
};
struct BlastRadius {
  std::size_t routes = 0;               // (source, destination) CA port pairs whose route crosses
  std::map<PortRef, PortRoutes> ports;  // every CA port that sends or receives one of them
  // The first of those pairs (by destination, then source, in HostPorts'
  // order), as many as asked.
  std::vector<std::pair<PortRef, PortRef>> listed;
};
// The routes between CA ports that leave through any of `egress` (switch
// or CA ports). Cost: for each destination some switch of `egress` routes
// out of it, one pass over the host ports (each switch's way onward
// followed once); for the others, only the CA ports in `egress`.
// `list`: how many of the pairs to keep in `listed`.
BlastRadius RoutesThrough(const Fabric& fabric, const ForwardingTables& tables, const std::set<PortRef>& egress,
                          std::size_t list = 0);

// The cables between the leaves (tier 0) and the switches one tier above
// that routes between hosts go up by: for each leaf, the port its table
// sends each host port's LID out of, for host ports not cabled to it,
// where that port is cabled to a tier-1 switch. With their data rates
// summed (ActiveGbps), the fabric's bisection as its tables route it: a
// cable no route goes up by carries no host's traffic across the leaves.
std::set<Link> UplinksUsed(const Fabric& fabric, const ForwardingTables& tables, const Analysis& analysis);
double UplinksGbps(const Fabric& fabric, const std::set<Link>& uplinks);

// The ports of the HCAs (fabric.h IsHca) with a LID, ascending.
std::vector<PortRef> HostPorts(const Fabric& fabric);

}  // namespace ibfabric::topology
