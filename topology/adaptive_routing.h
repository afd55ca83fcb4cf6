#pragma once
// Which switches route adaptively (NVIDIA adaptive routing: a switch picks
// among the ports of an AR group per packet, so its LinearForwardingTable
// is only the fallback path; MLNX OFED manual). Nothing in IBTA says so;
// NVIDIA switches answer the vendor SMP AdaptiveRoutingInfo (0xFF20,
// transport/attributes.h), which an NVIDIA (VendorID 0x02c9) switch is
// asked at discovery. Reading sends SMPs; the rest is plain data.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "topology/fabric.h"
#include "transport/mad_engine.h"

namespace ibfabric::topology {

enum class AdaptiveRouting : std::uint8_t {
  kUnsupported,  // "unsupported attribute" (0x000C), or AdaptiveRoutingGroupCap 0
  kOff,          // supported, not enabled
  kOn,           // enabled: the forwarding table is not the only path
};
const char* ToString(AdaptiveRouting a);  // "unsupported", "off", "on"

// switch GUID -> what it answered; switches not asked, or that did not
// answer, are absent.
using AdaptiveSwitches = std::map<std::uint64_t, AdaptiveRouting>;

// The switches of `switches` with adaptive routing on.
std::set<std::uint64_t> AdaptiveOn(const AdaptiveSwitches& switches);

// A switch that may answer AdaptiveRoutingInfo: an NVIDIA/Mellanox one
// (NodeInfo.VendorID 0x02c9) with a LID. Others are never asked.
bool AsksAdaptiveRouting(const Node& node);

struct ReadAdaptiveResult {
  AdaptiveSwitches switches;
  std::vector<std::string> problems;  // one line per switch that did not answer
};
// AdaptiveRoutingInfo of every switch of `fabric` AsksAdaptiveRouting
// allows, LID routed and pipelined.
// Thread-safety: uses the engine exclusively for its duration.
ReadAdaptiveResult ReadAdaptiveRouting(const Fabric& fabric, transport::MadEngine& engine);

}  // namespace ibfabric::topology
