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
#include <set>
#include <string>
#include <vector>

#include "topology/analysis.h"
#include "topology/fabric.h"
#include "topology/forwarding_tables.h"
#include "transport/attributes.h"
#include "transport/mad_engine.h"

namespace ibfabric::topology {

struct ReadSwitchInfoResult {
  std::map<std::uint64_t, transport::SwitchInfo> switch_info;  // switch GUID -> its SwitchInfo, when it answered
  std::vector<std::string> problems;                           // one line per switch that did not answer
  std::size_t smps = 0;
};
// SwitchInfo of every switch with a LID, LID routed and pipelined: its
// LinearFDBTop (routing) and PartitionEnforcementCap (partitions).
// Thread-safety: uses the engine exclusively for its duration.
ReadSwitchInfoResult ReadSwitchInfo(const Fabric& fabric, transport::MadEngine& engine);

struct ReadTablesResult {
  ForwardingTables tables;            // switches whose tables did not answer, whole, are absent
  std::vector<std::string> problems;  // one line per block that did not answer
  std::size_t smps = 0;
  // From the SA: the GetTable queries sent, the switches whose table came
  // whole from their records, and whether the SA answered at all (false:
  // it stayed silent, or said it keeps no such records).
  std::size_t sa_queries = 0;
  std::set<std::uint64_t> from_sa;
  bool sa_answered = false;
};
// Where the tables come from.
struct TableSource {
  // The SA's LID (0: none). Each switch's table is asked of it first, as
  // its LinearForwardingTableRecords (one SubnAdmGetTable, the SM's copy of
  // what it programmed); a switch whose records do not cover its table
  // (none, a block missing, an error, no answer) is read from the switch.
  std::uint16_t sa_lid = 0;
};
// Every LFT block up to LinearFDBTop of every switch with a LID and a
// SwitchInfo in `switch_info`, from the SA where `source` names one and
// it answers, else LID routed from the switch, pipelined. One query goes
// to the SA first: where it is not answered, or answered with an error
// status, no other is sent and every switch is read itself. A
// switch with a block missing has no table (it would show routes that are
// not there). Thread-safety: uses the engine exclusively for its duration.
ReadTablesResult ReadForwardingTables(const Fabric& fabric,
                                      const std::map<std::uint64_t, transport::SwitchInfo>& switch_info,
                                      transport::MadEngine& engine, TableSource source = {});

// How one switch's LinearForwardingTable spreads the CA destinations.
struct SwitchRouting {
  std::string direction;                     // "up" for a leaf (its uplinks), "down" above (its downlinks)
  std::map<std::uint8_t, int> destinations;  // port -> CA LIDs routed out of it (every port of `direction`)
  int spread = 0;  // max - min over those ports (above the leaves: within each group of parallel links to one switch)
  std::optional<double> max_min_ratio;  // max / min, when min > 0
  int unrouted = 0;                     // CA LIDs with no usable egress port here
  // Adaptive routing is on (topology/adaptive_routing.h): the table is its
  // fallback, not the path, so its balance is no finding and not reported.
  bool adaptive = false;
};

// What the forwarding tables say, one pass of its own: findings are
// appended to the tree analysis' by whoever publishes them.
struct RoutingAnalysis {
  std::map<std::uint64_t, SwitchRouting> switches;  // every switch whose table was read
  int down_up_routes = 0;                           // leaf-to-CA routes that go down and up again (or never arrive)
  int routes_traced = 0;
  // kRoutingImbalance (a leaf whose uplinks to the tier above, or an upper
  // switch whose parallel links to one switch of the tier below, carry
  // host destinations 2 or more and a tenth or more apart, the two ports
  // 2 or more apart over every CA LID and over every LID too: opensm
  // balances over those, switches' and Aggregation Nodes' included, which
  // alone may leave the hosts' counts uneven), kUnroutedDestination (every
  // CA LID, Aggregation Nodes' too) and kDownUpRoute (routes to hosts and
  // routers; an Aggregation Node's LID carries no job's traffic).
  std::vector<Finding> findings;
};
// Pure. Needs the tree analysis' tiers; does nothing of the tier-based
// kind when the fabric is not a tree. `adaptive`: the switches with
// adaptive routing on: no kRoutingImbalance for them (their traffic is not
// spread by the table), and their other findings say the table is static.
RoutingAnalysis AnalyzeRouting(const Fabric& fabric, const ForwardingTables& tables, const Analysis& tree,
                               const std::set<std::uint64_t>& adaptive = {});
// The fabric-wide picture of an analysis' routing. Pure.
// Switches with adaptive routing on are left out of the spreads and ratios.
struct RoutingTotals {
  int max_spread = 0;                         // the largest spread of any switch
  int imbalanced_switches = 0;                // switches with a kRoutingImbalance finding
  int switches_with_unrouted = 0;             // switches that cannot forward some CA LIDs
  std::optional<double> worst_max_min_ratio;  // the largest defined max/min ratio
};
RoutingTotals SummarizeRouting(const RoutingAnalysis& routing);

}  // namespace ibfabric::topology
