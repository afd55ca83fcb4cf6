#pragma once
// Lost MADs are never evidence. A full walk that did not get every answer
// (DiscoveryResult::unanswered) is merged into the last graph instead of
// replacing it:
//  - a node keeps the NodeDescription it was last seen with when its
//    NodeDescription went unanswered (an answer, even a new name, wins);
//  - a port whose PortInfo went unanswered keeps its last state, width,
//    speed and LID; an up port with no answer from behind it keeps its last
//    far end;
//  - a node the walk did not reach stays, with its links, while every walk
//    that missed it also missed answers, for at most `keep_walks` walks in
//    a row; a complete walk that does not reach it drops it.
// A link stands only where both ends name each other, so a kept link whose
// far end answered with something else (a port read Down, another cable)
// is gone, and a kept node no longer reachable over standing links from the
// local node is dropped at once. Pure: no MADs.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "topology/discovery.h"
#include "topology/fabric.h"

namespace ibfabric::topology {

struct MergeResult {
  Fabric fabric;
  std::vector<std::uint64_t> kept_nodes;  // not reached by the walk, kept from the last graph
  std::vector<std::uint64_t> dropped;     // in the last graph, not in this one
  std::vector<std::string> kept;          // one line per fact taken from the last graph, for the log
};

// `misses` holds, per node, the incomplete walks in a row that did not
// reach it; updated. A walk with nothing unanswered replaces `last`
// outright (and clears `misses`).
MergeResult MergeWalk(const Fabric& last, const DiscoveryResult& walk, std::map<std::uint64_t, int>* misses,
                      int keep_walks = 3);

}  // namespace ibfabric::topology
