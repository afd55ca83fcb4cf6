#pragma once
// Routing health from the switches' LinearForwardingTables (IBTA 14.2.5.10):
// how evenly each leaf spreads the CA destinations over its uplinks and each
// upper switch over its downlinks, destinations a switch cannot forward to
// (LFT holes, 0xFF, ports that are down), and routes from a leaf that go
// down a tier and up again (or never arrive). Reading the tables sends
// SMPs; the analysis is pure.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "topology/analysis.h"
#include "topology/fabric.h"
#include "transport/attributes.h"
#include "transport/mad_engine.h"

namespace ibfabric::topology {

// switch GUID -> egress port by LID (index = LID; 0xFF: none). Switches
// whose tables did not answer, whole, are absent.
using ForwardingTables = std::map<std::uint64_t, std::vector<std::uint8_t>>;

struct ReadTablesResult {
  ForwardingTables tables;
  std::map<std::uint64_t, transport::SwitchInfo> switch_info;  // switch GUID -> its SwitchInfo, when it answered
  std::vector<std::string> problems;  // one line per switch that did not answer
  std::size_t smps = 0;
};
// SwitchInfo (LinearFDBTop) and then every LFT block up to it, from every
// switch with a LID, LID routed and pipelined. Thread-safety: uses the
// engine exclusively for its duration.
ReadTablesResult ReadForwardingTables(const Fabric& fabric, transport::MadEngine& engine);

// Pure. Fills analysis->routing, routing_read, down_up_routes,
// routes_traced and appends kRoutingImbalance (a leaf whose uplinks to the tier above, or an
// upper switch whose parallel links to one switch of the tier below, differ by 2 or
// more destinations: 1 is what an uneven count leaves),
// kUnroutedDestination and kDownUpRoute findings. Needs the
// analysis' tiers; does nothing of the tier-based kind when the fabric is
// not a tree.
void AnalyzeRouting(const Fabric& fabric, const ForwardingTables& tables, Analysis* analysis);

// The fabric-wide picture of an analysis' routing. Pure.
struct RoutingTotals {
  int max_spread = 0;                  // the largest spread of any switch
  int imbalanced_switches = 0;         // switches with a kRoutingImbalance finding
  int switches_with_unrouted = 0;      // switches that cannot forward some CA LIDs
  std::optional<double> worst_max_min_ratio;  // the largest defined max/min ratio
};
RoutingTotals SummarizeRouting(const Analysis& analysis);

}  // namespace ibfabric::topology
