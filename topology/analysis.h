#pragma once
// What the wiring of a fabric says, without a cabling plan: switch tiers,
// links that break a fat tree's up/down structure, asymmetry against each
// tier's majority, degraded links, blocking factors and a bisection
// estimate. Pure functions over a Fabric; nothing here sends a MAD.
//
// Missing cables: in a tree, a switch with fewer cables up than its tier
// mostly has (else its cables are there, on other neighbours: uneven
// groups), and one of its groups short of the
// parallel cables both switches mostly have to their neighbours that way
// (a leaf with 3 cables to one spine and 4 to the others, the spine 3 to
// that leaf and 4 to the others), or with none where most of the switches
// cabled like it (sharing at least half their neighbours above) have a
// group to that neighbour. Each pair is one finding naming the ports the
// pattern says (those its peers use for that neighbour and that are free
// here) and the bandwidth lost; the asymmetry it explains (fewer uplinks,
// uneven groups, fewer neighbours) is not reported again.
//
// Ranking: leaves are switches with CAs, except a switch whose switch
// neighbours are all leaves and that has more switch links than CAs (an
// upper switch with a stray CA, reported as kCaOnNonLeaf), and switches
// with no CA cabled to the same switches as a leaf (hosts not cabled yet;
// fewer than half as many as the leaves they are like) are leaves too. Every other switch's tier is its distance in
// switch hops from the nearest leaf. A fabric is called a tree when every switch is ranked and at most a quarter of the
// switch-to-switch links join switches of one tier; when it is not, the reason is given and the tier-based findings are
// not guessed.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "topology/fabric.h"

namespace ibfabric::topology {

// A cable with both ends known, `a` < `b`.
struct Link {
  PortRef a;
  PortRef b;
  auto operator<=>(const Link&) const = default;
};
// The cable between two ports, ends in canonical order.
inline Link CableBetween(const PortRef& x, const PortRef& y) { return x < y ? Link{x, y} : Link{y, x}; }
// Every cable once. The link of a SHARP Aggregation Node to its switch is
// inside the switch, not a cable (fabric.h IsAggregationNode): not listed.
std::vector<Link> Links(const Fabric& fabric);

enum class FindingKind : std::uint8_t {
  kNotATree,             // the fabric is not a fat tree; `detail` says why
  kSameTierLink,         // two switches of one tier cabled together
  kSkipTierLink,         // switches more than one tier apart cabled together
  kCaOnNonLeaf,          // a CA on a switch above the leaves
  kCaToCa,               // two CAs cabled to each other
  kMissingCable,         // a switch pair short of the cables the pattern gives it (the ends: the likely ports)
  kFewerUplinks,         // a leaf with fewer uplinks than most leaves, no missing cable explaining it
  kAsymmetricSwitch,     // neighbour groups or links per group unlike its tier's majority
  kUnevenParallelLinks,  // a switch's groups of parallel links differ in size
  kBelowEnabled,         // a link narrower or slower than both ends are enabled and support
  kBelowTierMajority,    // a link narrower or slower than most links of its tier (informational)
  kDuplicateName,        // several nodes share one name: their series and findings cannot be told apart
  // Against a cabling plan (plan.h):
  kPlanUnknownNode,      // a planned node is not in the fabric
  kPlanMissingLink,      // a planned cable is not there, neither end connected
  kPlanWrongRemoteNode,  // a planned port is cabled to another node
  kPlanWrongRemotePort,  // a planned port reaches the right node on the wrong port
  kPlanRateMismatch,     // a planned cable runs at another width or speed
  kPlanExtraLink,        // a cable the plan does not have
  kPlanTierMismatch,     // a switch in another tier than the plan says
  // From the switches' forwarding tables (routing.h):
  kRoutingImbalance,     // a switch's up (leaf) or down (spine) ports carry uneven numbers of destinations
  kUnroutedDestination,  // a switch has no usable egress port for some CA LIDs (LFT holes, down ports)
  kDownUpRoute,          // a route from a leaf goes down a tier and up again (or loops)
  // From the CA ports' P_Key tables (partitions.h):
  kPartitionMismatch,             // a CA port's partitions differ from most CA ports on its leaf
  kPartitionPlanMismatch,         // a CA port's partitions differ from the partition plan
  kPartitionEnforcementMismatch,  // a switch port's P_Key table differs from the CA port it faces
  // From the hosts and rails of a rail-optimized fabric (hosts.h):
  kRailWrongLeaf,    // an HCA port on a leaf of another rail
  kRailSwapped,      // two HCA ports of one host each on the other's rail leaf
  kRailSharedLeaf,   // two HCA ports of one host on one leaf, no rail telling which is wrong
  kRailCrossUnit,    // an HCA port on a leaf of another scalable unit than its host's
  kRailLeafDeparts,  // a leaf unlike the pattern: no rail of its own, or a rail its unit has twice
  kRailDeviceOrder,  // a host on each rail leaf once, its devices in another order than the rails (information)
  kPlanWrongRail,    // against the plan: an HCA port on a leaf the plan gives another rail
  kServiceIsland,    // hostless switches hung off the tree by one switch, not a group of it (information)
};
inline constexpr FindingKind kAllFindingKinds[] = {FindingKind::kNotATree,
                                                   FindingKind::kSameTierLink,
                                                   FindingKind::kSkipTierLink,
                                                   FindingKind::kCaOnNonLeaf,
                                                   FindingKind::kCaToCa,
                                                   FindingKind::kMissingCable,
                                                   FindingKind::kFewerUplinks,
                                                   FindingKind::kAsymmetricSwitch,
                                                   FindingKind::kUnevenParallelLinks,
                                                   FindingKind::kBelowEnabled,
                                                   FindingKind::kBelowTierMajority,
                                                   FindingKind::kDuplicateName,
                                                   FindingKind::kPlanUnknownNode,
                                                   FindingKind::kPlanMissingLink,
                                                   FindingKind::kPlanWrongRemoteNode,
                                                   FindingKind::kPlanWrongRemotePort,
                                                   FindingKind::kPlanRateMismatch,
                                                   FindingKind::kPlanExtraLink,
                                                   FindingKind::kPlanTierMismatch,
                                                   FindingKind::kRoutingImbalance,
                                                   FindingKind::kUnroutedDestination,
                                                   FindingKind::kDownUpRoute,
                                                   FindingKind::kPartitionMismatch,
                                                   FindingKind::kPartitionPlanMismatch,
                                                   FindingKind::kPartitionEnforcementMismatch,
                                                   FindingKind::kRailWrongLeaf,
                                                   FindingKind::kRailSwapped,
                                                   FindingKind::kRailSharedLeaf,
                                                   FindingKind::kRailCrossUnit,
                                                   FindingKind::kRailLeafDeparts,
                                                   FindingKind::kRailDeviceOrder,
                                                   FindingKind::kPlanWrongRail,
                                                   FindingKind::kServiceIsland};
// snake_case name, stable: used as a metric label and in JSON.
const char* ToString(FindingKind k);

struct Finding {
  FindingKind kind;
  std::string detail;        // one line, names the nodes involved
  std::uint64_t node = 0;    // the node the finding is about (0: the fabric)
  std::optional<PortRef> a;  // the link's ends, where it is about a link
  std::optional<PortRef> b;
};

struct SwitchSummary {
  int tier = -1;  // -1: not ranked
  int ca_links = 0;
  int up_links = 0;
  int down_links = 0;  // to switches one tier down (CAs not counted)
  int up_groups = 0;   // distinct neighbour switches one tier up
  int down_groups = 0;
  double up_gbps = 0;    // active data rate of the up links
  double down_gbps = 0;  // of the CA links (leaves) or down links
};

// The tree analysis. Routing (routing.h), partitions (partitions.h) and the
// plan diff (plan.h) are passes of their own with their own results; who
// publishes them concatenates their findings.
struct Analysis {
  bool is_tree = false;
  std::string not_tree_reason;
  int tiers = 0;  // number of switch tiers found
  std::map<std::uint64_t, SwitchSummary> switches;
  std::vector<Finding> findings;
  // With a cabling plan: the pattern's findings that the plan has as its
  // design, kept apart and raising nothing (findings.h AnalyzeWiring).
  std::vector<Finding> accepted;
  // Degraded links and why (kBelowEnabled: below what both ends allow). A
  // link below its tier's majority is a finding, not degraded.
  std::map<Link, FindingKind> degraded;
  // Σ over leaves of min(up, down) bandwidth, against Σ of down bandwidth:
  // a non-blocking build of the same tiers has a ratio of 1.
  double bisection_gbps = 0;
  double nonblocking_gbps = 0;
};

// "leaf", "spine", "core", then "tier3", ...; "unranked" for -1.
std::string TierName(int tier);
// Down bandwidth over up bandwidth of a leaf (2 means 2:1 oversubscribed);
// nullopt for a switch that is not a leaf or has no uplink.
std::optional<double> BlockingFactor(const SwitchSummary& s);

Analysis Analyze(const Fabric& fabric);

// The pods of a fat tree of three tiers or more: the switches below the
// top tier that cables between neighbouring tiers join (cables within a
// tier or skipping one are miswiring and join nothing). Pods are numbered
// from 0 in natural order of their first switch's name (NaturalLess), and
// named by what their switches' names share ("ib-p01" for ib-p01-leaf01
// and ib-p01-agg01) or else "pod N" (1-based). Top-tier and unranked
// switches are in no pod; with fewer than three tiers there are none.
// `leaf_unit` (topology/hosts.h HostAnalysis::leaf_unit; may be null):
// on a rail-optimized fabric each rail's leaves go to that rail's spines of
// the pod and only the cores join the rails, so the leaves of one scalable
// unit (one a rail, the same servers) are joined into one pod too.
struct Pods {
  std::map<std::uint64_t, int> of;  // switch GUID -> pod
  std::vector<std::string> names;   // by pod
};
Pods FindPods(const Fabric& fabric, const Analysis& analysis, const std::map<std::uint64_t, int>* leaf_unit = nullptr);

}  // namespace ibfabric::topology
