#pragma once
// Congestion trees: which congested ports are the cause and which only its
// victims. In a lossless fabric a receiver that stops returning credits
// makes the port that feeds it wait (PortXmitWait), then every port whose
// traffic goes on through that one, hop by hop backwards. A congested
// port's traffic goes on, at the next switch, out of the ports that
// switch's LinearForwardingTable (IBTA 14.2.5.10) gives for the
// destinations this port carries; when one of those is congested too, this
// port is waiting behind it: a victim. A congested port none of whose next
// hops is congested (or whose next hop is a CA: the host is not draining)
// is a root. Pure: no MADs, no thresholds (which ports count as congested is
// the alert engine's call).

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "topology/fabric.h"
#include "topology/routing.h"

namespace ibfabric::topology {

// One tree: a root and the congested ports that wait behind it.
struct CongestionTree {
  PortRef root;
  // Every congested port whose traffic reaches the root through congested
  // ports, ascending. A port waiting behind two roots is a victim of both.
  std::vector<PortRef> victims;
  // The most hops from a victim to the root (0: the root alone); each
  // victim's hops are its shortest way there.
  int depth = 0;
  std::map<PortRef, int> hops;  // victim -> its hops to the root
  // No congested port drains this tree: its ports wait on each other in a
  // loop (a credit loop; `root` is then its lowest port).
  bool loop = false;
};

// Where traffic leaving `port` goes next: the egress ports, at the switch
// its cable reaches, of the CA destinations `port` carries. Those are the
// CA LIDs whose entry in the table of `port`'s switch is `port`; from a CA
// port (or a switch whose table was not read), every CA LID. Empty when the
// far end is a CA, is unknown, or its switch's table was not read. Never
// the port the traffic came in by.
std::set<PortRef> NextHops(const Fabric& fabric, const ForwardingTables& tables, const PortRef& port);

// The trees of `congested` (egress ports whose transmit waited or
// discarded), roots ascending. Every congested port is in at least one
// tree, as its root or a victim.
std::vector<CongestionTree> FindCongestionTrees(const Fabric& fabric, const ForwardingTables& tables,
                                                const std::set<PortRef>& congested);

}  // namespace ibfabric::topology
