#include "topology/analysis.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <deque>
#include <set>
#include <tuple>

#include "topology/detail/group_names.h"
#include "topology/link_rate.h"

namespace ibfabric::topology {
namespace {

bool IsSwitch(const Fabric& f, std::uint64_t guid) {
  const Node* n = f.FindNode(guid);
  return n != nullptr && n->kind == NodeKind::kSwitch;
}

// The most common value; of equally common ones the largest, because a
// missing cable is a likelier fault than an extra one (with two spines, the
// one that lost a link is the odd one out).
template <typename T>
T Mode(const std::vector<T>& v) {
  std::map<T, int> count;
  for (const T& x : v) ++count[x];
  T best{};
  int n = -1;
  for (const auto& [x, c] : count) {
    if (c >= n) {
      best = x;
      n = c;
    }
  }
  return best;
}

int MinNonZero(int a, int b) { return a == 0 ? b : b == 0 ? a : std::min(a, b); }

}  // namespace

const char* ToString(FindingKind k) {
  switch (k) {
    case FindingKind::kNotATree: return "not_a_tree";
    case FindingKind::kSameTierLink: return "same_tier_link";
    case FindingKind::kSkipTierLink: return "skip_tier_link";
    case FindingKind::kCaOnNonLeaf: return "ca_on_non_leaf";
    case FindingKind::kCaToCa: return "ca_to_ca";
    case FindingKind::kMissingCable: return "missing_cable";
    case FindingKind::kFewerUplinks: return "fewer_uplinks";
    case FindingKind::kAsymmetricSwitch: return "asymmetric_switch";
    case FindingKind::kUnevenParallelLinks: return "uneven_parallel_links";
    case FindingKind::kBelowEnabled: return "below_enabled";
    case FindingKind::kBelowTierMajority: return "below_tier_majority";
    case FindingKind::kPlanUnknownNode: return "plan_unknown_node";
    case FindingKind::kPlanMissingLink: return "plan_missing_link";
    case FindingKind::kPlanWrongRemoteNode: return "plan_wrong_remote_node";
    case FindingKind::kPlanWrongRemotePort: return "plan_wrong_remote_port";
    case FindingKind::kPlanRateMismatch: return "plan_rate_mismatch";
    case FindingKind::kPlanExtraLink: return "plan_extra_link";
    case FindingKind::kPlanTierMismatch: return "plan_tier_mismatch";
    case FindingKind::kDuplicateName: return "duplicate_name";
    case FindingKind::kRoutingImbalance: return "routing_imbalance";
    case FindingKind::kUnroutedDestination: return "unrouted_destination";
    case FindingKind::kDownUpRoute: return "down_up_route";
    case FindingKind::kPartitionMismatch: return "partition_mismatch";
    case FindingKind::kPartitionPlanMismatch: return "partition_plan_mismatch";
    case FindingKind::kPartitionEnforcementMismatch: return "partition_enforcement_mismatch";
    case FindingKind::kRailWrongLeaf: return "rail_wrong_leaf";
    case FindingKind::kRailSwapped: return "rail_swapped";
    case FindingKind::kRailSharedLeaf: return "rail_shared_leaf";
    case FindingKind::kRailCrossUnit: return "rail_cross_unit";
    case FindingKind::kRailLeafDeparts: return "rail_leaf_departs";
    case FindingKind::kRailDeviceOrder: return "rail_device_order";
    case FindingKind::kPlanWrongRail: return "plan_wrong_rail";
    case FindingKind::kServiceIsland: return "service_island";
  }
  return "unknown";
}

std::string TierName(int tier) {
  switch (tier) {
    case -1: return "unranked";
    case 0: return "leaf";
    case 1: return "spine";
    case 2: return "core";
  }
  return "tier" + std::to_string(tier);
}

std::optional<double> BlockingFactor(const SwitchSummary& s) {
  if (s.tier != 0 || s.up_gbps <= 0) return std::nullopt;
  return s.down_gbps / s.up_gbps;
}

std::vector<Link> Links(const Fabric& fabric) {
  std::set<Link> out;
  for (const auto& node : fabric.nodes()) {
    if (IsAggregationNode(node)) continue;
    for (const auto& port : node.ports) {
      if (!port.remote || fabric.FindPort(*port.remote) == nullptr || FacesAggregationNode(fabric, port)) continue;
      out.insert(CableBetween({node.guid, port.number}, *port.remote));
    }
  }
  return {out.begin(), out.end()};
}

namespace {

// A cable to a router (NodeType 3), which leads to another subnet: no
// host, and no part of this fabric's tiers wherever it is cabled; the
// tier passes leave it out (its link is still a cable: degraded links and
// link health judge it).
bool ToRouter(const Fabric& f, const Link& l) {
  for (std::uint64_t g : {l.a.node_guid, l.b.node_guid}) {
    const Node* n = f.FindNode(g);
    if (n && n->kind == NodeKind::kRouter) return true;
  }
  return false;
}

// What the passes share: the cables, each switch's neighbours, the leaves.
struct Wiring {
  std::vector<Link> links;
  std::map<std::uint64_t, int> ca_links;  // switch -> CA links
  std::map<std::uint64_t, std::vector<std::uint64_t>>
      neighbours;  // switch -> switch neighbours (repeats: parallel links)
  std::map<std::uint64_t, std::map<std::uint64_t, int>> groups;  // switch -> neighbour switch -> links
  std::set<std::uint64_t> leaves;
  std::set<std::uint64_t> stray;  // switches above the leaves that carry a CA anyway
  bool settled = true;            // the tiers settled
};

// Neighbours of every switch: CA links and switch neighbours. CAs cabled
// to each other are findings.
Wiring Neighbours(const Fabric& f, Analysis* out) {
  Wiring w;
  w.links = Links(f);
  for (const auto& node : f.nodes()) {
    if (node.kind == NodeKind::kSwitch) {
      w.ca_links[node.guid];
      w.neighbours[node.guid];
    }
  }
  for (const Link& l : w.links) {
    if (ToRouter(f, l)) continue;
    const bool sa = IsSwitch(f, l.a.node_guid), sb = IsSwitch(f, l.b.node_guid);
    if (sa && sb) {
      w.neighbours[l.a.node_guid].push_back(l.b.node_guid);
      w.neighbours[l.b.node_guid].push_back(l.a.node_guid);
      w.groups[l.a.node_guid][l.b.node_guid]++;
      w.groups[l.b.node_guid][l.a.node_guid]++;
    } else if (sa) {
      ++w.ca_links[l.a.node_guid];
    } else if (sb) {
      ++w.ca_links[l.b.node_guid];
    } else {
      out->findings.push_back({FindingKind::kCaToCa,
                               "CAs cabled to each other: " + PortName(f, l.a) + " - " + PortName(f, l.b),
                               l.a.node_guid, l.a, l.b});
    }
  }
  return w;
}

// A switch's distinct switch neighbours.
std::set<std::uint64_t> Distinct(const Wiring& w, std::uint64_t g) {
  const auto it = w.neighbours.find(g);
  return it == w.neighbours.end() ? std::set<std::uint64_t>{}
                                  : std::set<std::uint64_t>(it->second.begin(), it->second.end());
}

// Cabled alike: more than half of both switches' neighbours together are
// shared, two at least.
bool Alike(const std::set<std::uint64_t>& x, const std::set<std::uint64_t>& y) {
  std::size_t shared = 0;
  for (std::uint64_t v : x) shared += y.count(v);
  return shared >= 2 && shared * 2 > x.size() + y.size() - shared;
}

int CaLinks(const Wiring& w, std::uint64_t g) {
  const auto it = w.ca_links.find(g);
  return it == w.ca_links.end() ? 0 : it->second;
}

// The leaves: switches with CAs, but for strays above them (every switch
// neighbour carries CAs, more switch links than CAs, and far fewer CAs
// than a typical leaf).
void FindLeaves(Wiring* w) {
  std::set<std::uint64_t> candidates;
  for (const auto& [guid, n] : w->ca_links) {
    if (n > 0) candidates.insert(guid);
  }
  std::vector<int> leaf_cas;
  for (std::uint64_t g : candidates) leaf_cas.push_back(w->ca_links[g]);
  std::sort(leaf_cas.begin(), leaf_cas.end());
  const int typical_cas = leaf_cas.empty() ? 0 : leaf_cas[leaf_cas.size() / 2];
  for (std::uint64_t g : candidates) {
    const auto& nb = w->neighbours[g];
    const bool above = !nb.empty() && static_cast<int>(nb.size()) > w->ca_links[g] &&
                       w->ca_links[g] * 2 < typical_cas &&
                       std::all_of(nb.begin(), nb.end(), [&](std::uint64_t x) { return candidates.count(x) > 0; });
    (above ? w->stray : w->leaves).insert(g);
  }
}

// Leaves whose hosts are not cabled (or not up). A switch with no CA cabled
// like the leaves is one: the leaves of a group cable to the same switches
// above them, while a switch above cables to those of several groups,
// which no leaf reaches (by distance alone it would rank above its spines,
// and they would look asymmetric). "Like": Alike, with the exception:
// fewer than half as many as the leaves with hosts it is like; so many
// switches cabled alike with no host at all are a tier of their own (a
// single group's core). A switch whose neighbours are some of a leaf's
// (two at least) is like it too: a leaf cabled to part of its group's
// spines, as one being built or spared is (ranked by distance it would be
// a core over half the spines, the other half with nothing above them).
// And a switch with no CA cabled to one switch only, which has none either
// and joins others: a switch above the leaves joins several switches (the
// leaves of its group and the tier above); one hanging off a single spine,
// as a management island's leaf under its own spine, would otherwise rank
// above its spine and its spine above the cores.
void AddHostlessLeaves(Wiring* w) {
  std::vector<std::set<std::uint64_t>> leaf_sets;
  for (std::uint64_t g : w->leaves) leaf_sets.push_back(Distinct(*w, g));
  struct Bare {
    std::set<std::uint64_t> neighbours;
    std::ptrdiff_t leaves_alike = 0;
  };
  std::map<std::uint64_t, Bare> bare;  // no CA, cabled like some leaf
  for (const auto& [g, nb] : w->neighbours) {
    if (CaLinks(*w, g) > 0 || w->stray.count(g)) continue;
    Bare b{Distinct(*w, g), 0};
    b.leaves_alike = std::count_if(leaf_sets.begin(), leaf_sets.end(), [&](const auto& l) {
      return Alike(b.neighbours, l) ||
             (b.neighbours.size() >= 2 && std::includes(l.begin(), l.end(), b.neighbours.begin(), b.neighbours.end()));
    });
    if (b.leaves_alike > 0) bare.emplace(g, std::move(b));
  }
  std::vector<std::uint64_t> hostless;
  for (const auto& [g, b] : bare) {
    std::ptrdiff_t bare_alike = 0;
    for (const auto& other : bare) bare_alike += Alike(b.neighbours, other.second.neighbours);
    if (bare_alike * 2 < b.leaves_alike) hostless.push_back(g);
  }
  for (const auto& [g, nb] : w->neighbours) {
    if (CaLinks(*w, g) > 0 || w->stray.count(g) || w->leaves.count(g)) continue;
    const std::set<std::uint64_t> only = Distinct(*w, g);
    if (only.size() == 1 && CaLinks(*w, *only.begin()) == 0 && Distinct(*w, *only.begin()).size() >= 2) {
      hostless.push_back(g);
    }
  }
  w->leaves.insert(hostless.begin(), hostless.end());
}

// Each switch's distance in switch hops from the nearest leaf.
std::map<std::uint64_t, int> LeafDistances(const Wiring& w) {
  std::map<std::uint64_t, int> tier;
  std::deque<std::uint64_t> queue;
  for (std::uint64_t g : w.leaves) {
    tier[g] = 0;
    queue.push_back(g);
  }
  while (!queue.empty()) {
    const std::uint64_t g = queue.front();
    queue.pop_front();
    const auto nb = w.neighbours.find(g);
    if (nb == w.neighbours.end()) continue;
    for (std::uint64_t n : nb->second) {
      if (!tier.count(n)) {
        tier[n] = tier[g] + 1;
        queue.push_back(n);
      }
    }
  }
  return tier;
}

// A link that skips a tier pulls a switch down in plain distance (a core
// switch cabled to one leaf would look like a spine). Settle instead on
// one tier above where most of a switch's switch neighbours are, each
// neighbour one vote (parallel cables are no more votes) and only those
// not above it: a switch with more cables up than down (parallel core
// cables, a taper the other way) is not lifted by the tier above it.
// Whether it settled (within 32 rounds).
bool SettleTiers(const Wiring& w, std::map<std::uint64_t, int>* tiers) {
  std::map<std::uint64_t, int>& tier = *tiers;
  bool settled = false;
  for (int round = 0; round < 32 && !settled; ++round) {
    settled = true;
    for (const auto& [g, peers] : w.groups) {
      if (w.leaves.count(g) || !tier.count(g)) continue;
      // Ties go to the lower tier here, so that settling only ever lifts.
      std::map<int, int> count;
      for (const auto& [n, links] : peers) {
        if (tier.count(n) && tier[n] <= tier[g]) ++count[tier[n]];
      }
      if (count.empty()) continue;
      int usual = count.begin()->first, n_usual = -1;
      for (const auto& [t, c] : count) {
        if (c > n_usual) {
          usual = t;
          n_usual = c;
        }
      }
      if (usual + 1 > tier[g]) {
        tier[g] = usual + 1;
        settled = false;
      }
    }
  }
  return settled;
}

// Switches cabled alike sit in one tier: a switch with no CA whose switch
// neighbours are all below it, and that is cabled like switches of a lower
// tier above the leaves (Alike), is in their tier. A director's line ASIC
// with nothing cabled outside its chassis joins every fabric ASIC as the
// other line ASICs do; by distance it would rank a tier above the fabric
// ASICs. (Whether a switch is a leaf without hosts is AddHostlessLeaves':
// a small tree's cores are cabled as its leaves are.)
void LowerAlikeSwitches(const Wiring& w, std::map<std::uint64_t, int>* tiers) {
  std::map<std::uint64_t, int>& tier = *tiers;
  std::map<std::uint64_t, int> lowered;
  for (const auto& [g, nb] : w.neighbours) {
    if (CaLinks(w, g) > 0 || w.leaves.count(g) || !tier.count(g) || nb.empty()) continue;
    const std::set<std::uint64_t> mine = Distinct(w, g);
    const int own = tier[g];
    if (!std::all_of(mine.begin(), mine.end(), [&](std::uint64_t n) { return tier.count(n) && tier[n] < own; })) {
      continue;
    }
    std::set<std::uint64_t> seen;
    for (std::uint64_t n : mine) {
      for (std::uint64_t h : w.neighbours.at(n)) {
        if (h == g || !seen.insert(h).second || !tier.count(h) || tier[h] < 1 || tier[h] >= tier[g]) continue;
        if (Alike(mine, Distinct(w, h)) && (!lowered.count(g) || tier[h] < lowered[g])) lowered[g] = tier[h];
      }
    }
  }
  for (const auto& [g, t] : lowered) tier[g] = t;
}

// Leaves, then every switch's tier: its distance from the nearest leaf,
// settled one above where most of its switch neighbours not above it are,
// switches cabled alike in one tier.
void RankTiers(Wiring* w, Analysis* out) {
  FindLeaves(w);
  AddHostlessLeaves(w);
  std::map<std::uint64_t, int> tier = LeafDistances(*w);
  w->settled = SettleTiers(*w, &tier);
  LowerAlikeSwitches(*w, &tier);
  for (const auto& [g, nb] : w->neighbours) {
    SwitchSummary& s = out->switches[g];
    s.tier = tier.count(g) ? tier[g] : -1;
    s.ca_links = w->ca_links[g];
    out->tiers = std::max(out->tiers, s.tier + 1);
  }
}

// Whether the ranking is a tree at all; the reason when it is not.
void CheckTree(const Fabric& f, const Wiring& w, Analysis* out) {
  std::size_t sw_links = 0, same_tier = 0, unranked = 0;
  for (const Link& l : w.links) {
    if (IsSwitch(f, l.a.node_guid) && IsSwitch(f, l.b.node_guid)) {
      ++sw_links;
      if (out->switches[l.a.node_guid].tier == out->switches[l.b.node_guid].tier) ++same_tier;
    }
  }
  for (const auto& [g, s] : out->switches) unranked += s.tier < 0 ? 1 : 0;
  if (out->switches.empty()) {
    out->not_tree_reason = "no switches";
  } else if (w.leaves.empty()) {
    out->not_tree_reason = "no switch has a CA, so there are no leaves to rank from";
  } else if (unranked > 0) {
    out->not_tree_reason = std::to_string(unranked) + " switches are not connected to any leaf";
  } else if (!w.settled) {
    out->not_tree_reason = "switch tiers do not settle (the switches form loops across tiers)";
  } else if (same_tier * 4 > sw_links) {
    out->not_tree_reason = std::to_string(same_tier) + " of " + std::to_string(sw_links) +
                           " switch-to-switch links join switches of the same tier (a fat tree has none)";
  }
  out->is_tree = out->not_tree_reason.empty();
  if (!out->is_tree) {
    out->findings.push_back({FindingKind::kNotATree, "not a fat tree: " + out->not_tree_reason, 0, {}, {}});
  }
}

// Per switch: links and groups up and down, and their bandwidth.
void SummarizeSwitches(const Fabric& f, const Wiring& w, Analysis* out) {
  for (const Link& l : w.links) {
    if (ToRouter(f, l)) continue;
    const bool sa = IsSwitch(f, l.a.node_guid), sb = IsSwitch(f, l.b.node_guid);
    if (sa && sb) {
      for (const auto& [me, other] : {std::pair{l.a, l.b}, std::pair{l.b, l.a}}) {
        SwitchSummary& s = out->switches[me.node_guid];
        const int t = s.tier, o = out->switches[other.node_guid].tier;
        if (t >= 0 && o == t + 1) {
          ++s.up_links;
          s.up_gbps += ActiveGbps(*f.FindPort(me));
        } else if (t >= 0 && o == t - 1) {
          ++s.down_links;
          if (t > 0) s.down_gbps += ActiveGbps(*f.FindPort(me));
        }
      }
    } else if (sa || sb) {
      out->switches[sa ? l.a.node_guid : l.b.node_guid].down_gbps += ActiveGbps(*f.FindPort(sa ? l.a : l.b));
    }
  }
  for (const auto& [g, nb] : w.groups) {
    SwitchSummary& s = out->switches[g];
    for (const auto& [n, count] : nb) {
      const int o = out->switches[n].tier;
      if (s.tier >= 0 && o == s.tier + 1) ++s.up_groups;
      if (s.tier >= 0 && o == s.tier - 1) ++s.down_groups;
    }
  }
}

// Cables that break the tree's up/down structure: same tier, skipped
// tier (only for a tree: otherwise the tiers are no yardstick), a CA
// above the leaves.
void FindMiswiredCables(const Fabric& f, const Wiring& w, Analysis* out) {
  for (const Link& l : w.links) {
    if (ToRouter(f, l)) continue;
    const bool sa = IsSwitch(f, l.a.node_guid), sb = IsSwitch(f, l.b.node_guid);
    if (sa && sb) {
      if (!out->is_tree) continue;
      const int ta = out->switches[l.a.node_guid].tier, tb = out->switches[l.b.node_guid].tier;
      if (ta == tb) {
        out->findings.push_back({FindingKind::kSameTierLink,
                                 "switches of one tier (" + TierName(ta) + ") cabled together: " + PortName(f, l.a) +
                                     " - " + PortName(f, l.b),
                                 l.a.node_guid, l.a, l.b});
      } else if (std::abs(ta - tb) > 1) {
        out->findings.push_back({FindingKind::kSkipTierLink,
                                 "link skips a tier (" + TierName(ta) + " to " + TierName(tb) +
                                     "): " + PortName(f, l.a) + " - " + PortName(f, l.b),
                                 l.a.node_guid, l.a, l.b});
      }
    } else if (sa || sb) {
      const PortRef sw = sa ? l.a : l.b;
      const PortRef ca = sa ? l.b : l.a;
      if (w.stray.count(sw.node_guid)) {
        out->findings.push_back({FindingKind::kCaOnNonLeaf,
                                 "CA on a switch above the leaves: " + PortName(f, ca) + " - " + PortName(f, sw),
                                 sw.node_guid, sw, ca});
      }
    }
  }
}

// Each switch's groups of parallel links to each neighbour in the tiers
// above ([1]) and below ([0]), and what is usual for each tier: a tier may
// take more cables per switch up than down (two to each core, one from
// each leaf), so each direction is apart; links within a tier are findings
// of their own (kSameTierLink) and not counted here.
using Groups = std::map<std::uint64_t, int>;  // neighbour -> links
struct TierShape {
  std::map<std::uint64_t, std::array<Groups, 2>> updown;             // switch -> [dir] -> groups
  std::map<int, std::vector<int>> up_groups, down_groups, up_links;  // tier -> each switch's
  std::map<std::pair<int, int>, std::vector<int>> group_sizes;       // (tier, direction) -> sizes
};

std::map<std::uint64_t, std::array<Groups, 2>> UpDown(const Wiring& w, const Analysis& a) {
  std::map<std::uint64_t, std::array<Groups, 2>> out;
  for (const auto& [g, nb] : w.groups) {
    for (const auto& [n, c] : nb) {
      const int d = a.switches.at(n).tier - a.switches.at(g).tier;
      if (std::abs(d) == 1) out[g][d > 0 ? 1 : 0][n] = c;
    }
  }
  return out;
}

TierShape ShapeOfTiers(std::map<std::uint64_t, std::array<Groups, 2>> updown,
                       const std::map<std::uint64_t, SwitchSummary>& switches) {
  TierShape t;
  t.updown = std::move(updown);
  for (const auto& [g, s] : switches) {
    t.up_groups[s.tier].push_back(s.up_groups);
    t.down_groups[s.tier].push_back(s.down_groups);
    t.up_links[s.tier].push_back(s.up_links);
    for (int dir = 0; dir < 2; ++dir) {
      for (const auto& [n, c] : t.updown[g][dir]) t.group_sizes[{s.tier, dir}].push_back(c);
    }
  }
  return t;
}

int UsualSize(const Groups& groups) {
  std::vector<int> sizes;
  for (const auto& [n, c] : groups) sizes.push_back(c);
  return sizes.empty() ? 0 : Mode(sizes);
}

// A switch pair one tier apart short of cables: `lower` has `have` to
// `upper` where the pattern gives `want`.
struct Shortfall {
  std::uint64_t lower = 0, upper = 0;
  int have = 0, want = 0;
  std::size_t peers = 0,
              peers_with = 0;  // whole group missing: the switches cabled like it, and how many reach `upper`
  std::string chassis;         // `upper` is an ASIC of this director chassis: the cables to it counted together
  int need = 0;                // cables missing: want - have, or fewer where the switch lacks fewer in all
};

// Director chassis (IS5600, CS7500, CS8500, CS9500): their ASICs share one
// SystemImageGUID (NodeInfo; `ibnetdiscover -g` groups them by it), and to
// a switch cabled to one the chassis is one switch: which line ASIC a cable
// lands on is which front-panel port the installer chose (CU Boulder's
// Janus: edge switches with 6 cables to each of three IS5600s, spread
// 3, 2 and 1 over their line ASICs). So a switch's cables to a chassis it
// is not part of are one group, judged by their total; the cables inside
// a chassis are judged as cables. Three switch ASICs sharing an image at
// least (a single switch system has one; its Aggregation Node, a CA, is
// not counted).
struct Chassis {
  std::map<std::uint64_t, std::uint64_t> of;  // ASIC -> chassis key (a number no node has)
  std::map<std::uint64_t, std::string> name;  // chassis key -> what its ASICs' names share before '/'
  bool Outside(std::uint64_t lower, std::uint64_t upper) const {
    const auto u = of.find(upper);
    if (u == of.end()) return false;
    const auto l = of.find(lower);
    return l == of.end() || l->second != u->second;
  }
};

Chassis FindChassis(const Fabric& f) {
  std::map<std::uint64_t, std::vector<std::uint64_t>> by_image;
  for (const Node& n : f.nodes()) {
    if (n.kind == NodeKind::kSwitch && n.system_image_guid != 0) by_image[n.system_image_guid].push_back(n.guid);
  }
  Chassis c;
  for (const auto& [image, asics] : by_image) {
    if (asics.size() < 3) continue;
    std::uint64_t key = image;
    while (f.FindNode(key) || c.name.count(key)) ++key;
    std::string shared = NodeName(f, asics.front());
    shared = shared.substr(0, shared.find('/'));
    for (std::uint64_t a : asics) {
      const std::string n = NodeName(f, a);
      if (n.size() <= shared.size() || n.compare(0, shared.size(), shared) != 0 || n[shared.size()] != '/') {
        shared.clear();
      }
      c.of[a] = key;
    }
    c.name[key] = shared.empty() ? "chassis " + FormatGuid(image) : shared;
  }
  return c;
}

// The missing cables (analysis.h): of a switch with fewer cables up than
// its tier mostly has, groups smaller than both ends mostly have (a
// switch with one group that way is judged by its tier), and groups that
// most of its peers have and it lacks.
// What FindShortfalls judges by: each tier's group sizes and cables up,
// in all and to each chassis, and one switch's short groups three ways.
class ShortfallFinder {
 public:
  ShortfallFinder(const Analysis& a, const std::map<std::uint64_t, std::array<Groups, 2>>& updown,
                  const Chassis& chassis)
      : a_(a), updown_(updown), chassis_(chassis) {
    for (const auto& [g, s] : a.switches) {
      by_tier_[s.tier].push_back(g);
      const auto it = updown.find(g);
      if (it == updown.end()) continue;
      for (int dir = 0; dir < 2; ++dir) {
        for (const auto& [n, c] : it->second[static_cast<std::size_t>(dir)]) sizes_[{s.tier, dir}].push_back(c);
      }
    }
    for (const auto& [tier, members] : by_tier_) {
      for (std::uint64_t g : members) {
        totals_[tier].push_back(Total(g));
        for (const auto& [key, c] : ToChassis(g)) chassis_totals_[{tier, key}].push_back(c);
      }
    }
  }

  // A switch with as many cables up as its tier mostly has is missing
  // none: a group short of the pattern is made up elsewhere (a cable on
  // another neighbour than the pattern's: uneven groups, a warning).
  std::vector<Shortfall> Find() {
    std::vector<Shortfall> out;
    for (const auto& [tier, members] : by_tier_) {
      if (tier < 0) continue;
      const int usual_total = Mode(totals_[tier]);
      for (std::uint64_t g : members) {
        if (GroupsOf(g, 1).empty() || Total(g) >= usual_total) continue;
        // A leaf with no host carries no traffic of its own: what it lacks
        // costs no host any bandwidth (a leaf being built, or spared), so it
        // is its fewer uplinks, a warning, not a missing cable that pages.
        if (tier == 0 && a_.switches.at(g).ca_links == 0) continue;
        ShortGroups(g, &out);
        ShortToChassis(g, tier, usual_total, &out);
        GroupsPeersHave(g, members, &out);
      }
    }
    return out;
  }

 private:
  const Groups& GroupsOf(std::uint64_t g, int dir) const {
    static const std::array<Groups, 2> kNone;
    const auto it = updown_.find(g);
    return (it == updown_.end() ? kNone : it->second)[static_cast<std::size_t>(dir)];
  }
  int Usual(std::uint64_t g, int dir) {
    const Groups& own = GroupsOf(g, dir);
    if (own.size() >= 2) return UsualSize(own);
    const auto& tier = sizes_[{a_.switches.at(g).tier, dir}];
    return tier.empty() ? 0 : Mode(tier);
  }
  int Total(std::uint64_t g) const {
    int n = 0;
    for (const auto& [x, c] : GroupsOf(g, 1)) n += c;
    return n;
  }
  // A switch's cables up to each chassis it is outside of, together.
  std::map<std::uint64_t, int> ToChassis(std::uint64_t g) const {
    std::map<std::uint64_t, int> cables;  // chassis key -> cables
    for (const auto& [n, c] : GroupsOf(g, 1)) {
      if (chassis_.Outside(g, n)) cables[chassis_.of.at(n)] += c;
    }
    return cables;
  }

  // Groups short of what both ends mostly have.
  void ShortGroups(std::uint64_t g, std::vector<Shortfall>* out) {
    for (const auto& [n, c] : GroupsOf(g, 1)) {
      const int want = std::min(Usual(g, 1), Usual(n, 0));
      if (c < want && !chassis_.Outside(g, n)) out->push_back({g, n, c, want, 0, 0, "", want - c});
    }
  }

  // Its cables to each chassis: short of the fewer of its largest such
  // group and what its tier mostly has to that chassis, and in all of them
  // at most as many as it has fewer cables up than its tier.
  void ShortToChassis(std::uint64_t g, int tier, int usual_total, std::vector<Shortfall>* out) {
    const Groups& up = GroupsOf(g, 1);
    const std::map<std::uint64_t, int> mine = ToChassis(g);
    int largest = 0;
    for (const auto& [key, c] : mine) largest = std::max(largest, c);
    std::vector<std::tuple<int, std::uint64_t, int, int>> short_of;  // (-lacking, chassis, have, want)
    for (const auto& [key, c] : mine) {
      const int want = std::min(largest, Mode(chassis_totals_[{tier, key}]));
      if (c < want) short_of.emplace_back(c - want, key, c, want);
    }
    std::sort(short_of.begin(), short_of.end());
    int spare = usual_total - Total(g);
    for (const auto& [lacking, key, have, want] : short_of) {
      const int need = std::min(want - have, spare);
      if (need <= 0) break;
      spare -= need;
      // Named at the ASIC of the chassis it has the fewest cables to.
      std::uint64_t asic = 0;
      int fewest = 0;
      for (const auto& [n, c] : up) {
        if (chassis_.Outside(g, n) && chassis_.of.at(n) == key && (asic == 0 || c < fewest)) {
          asic = n;
          fewest = c;
        }
      }
      out->push_back({g, asic, have, want, 0, 0, chassis_.name.at(key), need});
    }
  }

  // Groups its peers mostly have: the switches of its tier that share at
  // least half of their neighbours above with it.
  void GroupsPeersHave(std::uint64_t g, const std::vector<std::uint64_t>& members, std::vector<Shortfall>* out) const {
    const Groups& up = GroupsOf(g, 1);
    std::map<std::uint64_t, std::vector<int>> reached;  // neighbour above -> the peers' group sizes
    std::size_t peers = 0;
    for (std::uint64_t h : members) {
      if (h == g) continue;
      const Groups& other = GroupsOf(h, 1);
      std::size_t shared = 0;
      for (const auto& [n, c] : other) shared += up.count(n);
      if (shared == 0 || shared * 2 < up.size() + other.size() - shared) continue;
      ++peers;
      for (const auto& [n, c] : other) reached[n].push_back(c);
    }
    for (const auto& [n, their] : reached) {
      if (up.count(n) || their.size() * 2 <= peers || chassis_.Outside(g, n)) continue;
      out->push_back({g, n, 0, Mode(their), peers, their.size(), "", Mode(their)});
    }
  }

  const Analysis& a_;
  const std::map<std::uint64_t, std::array<Groups, 2>>& updown_;
  const Chassis& chassis_;
  std::map<std::pair<int, int>, std::vector<int>> sizes_;  // (tier, dir) -> group sizes
  std::map<int, std::vector<std::uint64_t>> by_tier_;
  std::map<int, std::vector<int>> totals_;                                    // tier -> each switch's cables up
  std::map<std::pair<int, std::uint64_t>, std::vector<int>> chassis_totals_;  // (tier, chassis) -> cables
};

std::vector<Shortfall> FindShortfalls(const Analysis& a, const std::map<std::uint64_t, std::array<Groups, 2>>& updown,
                                      const Chassis& chassis) {
  return ShortfallFinder(a, updown, chassis).Find();
}

// x's ports cabled to y.
std::vector<std::uint8_t> PortsTo(const Fabric& f, std::uint64_t x, std::uint64_t y) {
  std::vector<std::uint8_t> out;
  if (const Node* n = f.FindNode(x)) {
    for (const Port& p : n->ports) {
      if (p.remote && p.remote->node_guid == y) out.push_back(p.number);
    }
  }
  return out;
}

// The ports of `x` where `need` cables to `y` likely belong: free ports
// (nothing cabled) that `voters` (switches in x's place) use for y, most
// used first, then free ports among those x already uses for y.
std::vector<std::uint8_t> LikelyPorts(const Fabric& f, std::uint64_t x, std::uint64_t y,
                                      const std::vector<std::pair<std::uint64_t, std::uint64_t>>& voters, int need) {
  const Node* node = f.FindNode(x);
  if (!node || need <= 0) return {};
  std::set<std::uint8_t> free;
  for (int p = 1; p <= node->num_ports; ++p) {
    const Port* port = node->FindPort(static_cast<std::uint8_t>(p));
    if (!port || !port->remote) free.insert(static_cast<std::uint8_t>(p));
  }
  std::map<std::uint8_t, int> votes;
  for (const auto& [voter, to] : voters) {
    for (std::uint8_t p : PortsTo(f, voter, to)) {
      if (free.count(p)) ++votes[p];
    }
  }
  std::vector<std::pair<int, std::uint8_t>> ranked;
  for (const auto& [p, v] : votes) ranked.emplace_back(-v, p);
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::uint8_t> out;
  for (const auto& [v, p] : ranked) {
    if (static_cast<int>(out.size()) < need) out.push_back(p);
  }
  const auto own = PortsTo(f, x, y);
  if (!own.empty()) {
    for (std::uint8_t p : free) {
      if (static_cast<int>(out.size()) >= need) break;
      if (p > own.front() && p < own.back() && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    }
  }
  return out;
}

// Each shortfall as one finding: the pair, the ports the pattern says, the
// bandwidth lost.
void ReportShortfalls(const Fabric& f, const std::vector<Shortfall>& shortfalls,
                      const std::map<std::uint64_t, std::array<Groups, 2>>& updown, const Chassis& chassis,
                      Analysis* out) {
  static const std::array<Groups, 2> kNone;
  const auto groups = [&](std::uint64_t g, int dir) -> const Groups& {
    const auto it = updown.find(g);
    return (it == updown.end() ? kNone : it->second)[static_cast<std::size_t>(dir)];
  };
  for (const Shortfall& m : shortfalls) {
    const int need = m.need;
    // Voters for the lower end: the other switches below `upper` (below
    // any ASIC of its chassis, for the cables to it); for the upper end:
    // the other switches above `lower`, each for the cables to it.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> below, above;
    if (m.chassis.empty()) {
      for (const auto& [n, c] : groups(m.upper, 0)) {
        if (n != m.lower) below.emplace_back(n, m.upper);
      }
    } else {
      const std::uint64_t key = chassis.of.at(m.upper);
      for (const auto& [asic, k] : chassis.of) {
        if (k != key) continue;
        for (const auto& [n, c] : groups(asic, 0)) {
          if (n != m.lower && chassis.Outside(n, asic)) below.emplace_back(n, asic);
        }
      }
    }
    for (const auto& [n, c] : groups(m.lower, 1)) {
      if (n != m.upper) above.emplace_back(n, m.lower);
    }
    const auto lo = LikelyPorts(f, m.lower, m.upper, below, need);
    const auto hi = m.chassis.empty() ? LikelyPorts(f, m.upper, m.lower, above, need) : std::vector<std::uint8_t>{};
    std::vector<double> rates;
    for (const auto& [n, c] : groups(m.lower, 1)) {
      for (std::uint8_t p : PortsTo(f, m.lower, n)) rates.push_back(ActiveGbps(*f.FindPort({m.lower, p})));
    }
    const double gbps = rates.empty() ? 0 : Mode(rates);
    const auto names = [&](std::uint64_t g, const std::vector<std::uint8_t>& ports) {
      std::string s;
      for (std::uint8_t p : ports) s += (s.empty() ? "" : ", ") + PortName(f, {g, p});
      return s.empty() ? NodeName(f, g) + " (no free port the pattern names)" : s;
    };
    const std::string upper = m.chassis.empty() ? NodeName(f, m.upper) : m.chassis;
    std::string detail = NodeName(f, m.lower) + " - " + upper + ": " + std::to_string(need) + " of " +
                         std::to_string(m.want) + (m.want == 1 ? " cable" : " cables") + " missing (";
    if (!m.chassis.empty()) {
      detail += std::to_string(m.have) + " cabled to the director's ASICs where the switches of its tier mostly have " +
                std::to_string(m.want) +
                (need < m.want - m.have
                     ? ", and it lacks " + std::to_string(need) + (need == 1 ? " cable" : " cables") + " up in all"
                     : "");
    } else if (m.have > 0) {
      detail += std::to_string(m.have) + " cabled where both switches mostly have " + std::to_string(m.want);
    } else {
      detail += "none cabled where " + std::to_string(m.peers_with) + " of the " + std::to_string(m.peers) +
                " switches cabled like " + NodeName(f, m.lower) + " have " + std::to_string(m.want);
    }
    detail += "); likely ports " + names(m.lower, lo) + " - " +
              (m.chassis.empty() ? names(m.upper, hi) : "a free port of " + m.chassis);
    if (gbps > 0) {
      const auto gb = [](double x) {
        std::string s = std::to_string(static_cast<long long>(x + 0.5));
        return s + " Gb/s";
      };
      detail += "; " + gb(gbps * need) + " lost of " + gb(gbps * m.want);
    }
    out->findings.push_back({FindingKind::kMissingCable, detail, m.lower,
                             PortRef{m.lower, lo.empty() ? std::uint8_t{0} : lo.front()},
                             PortRef{m.upper, hi.empty() ? std::uint8_t{0} : hi.front()}});
  }
}

// Each switch's peers: the other switches of its tier that share at least
// half of their neighbours on the side that defines them (above for a
// leaf: the spines of its group; below for the others: the leaves or
// spines they serve).
std::map<std::uint64_t, std::vector<std::uint64_t>> PeersOf(const TierShape& shape,
                                                            const std::map<std::uint64_t, SwitchSummary>& switches) {
  std::map<int, std::vector<std::pair<std::uint64_t, std::set<std::uint64_t>>>> by_tier;
  for (const auto& [g, s] : switches) {
    std::set<std::uint64_t> side;
    if (const auto it = shape.updown.find(g); it != shape.updown.end()) {
      for (const auto& [n, c] : it->second[s.tier == 0 ? 1U : 0U]) side.insert(n);
    }
    by_tier[s.tier].emplace_back(g, std::move(side));
  }
  std::map<std::uint64_t, std::vector<std::uint64_t>> out;
  for (const auto& [tier, members] : by_tier) {
    for (const auto& [g, mine] : members) {
      std::vector<std::uint64_t>& peers = out[g];
      for (const auto& [h, theirs] : members) {
        if (h == g) continue;
        std::size_t shared = 0;
        for (std::uint64_t n : theirs) shared += mine.count(n);
        if (shared > 0 && shared * 2 >= mine.size() + theirs.size() - shared) peers.push_back(h);
      }
    }
  }
  return out;
}

// Switch `g`'s groups of links in direction `dir`: of unequal sizes, or
// all of a size its tier does not mostly have.
void CheckParallelLinks(const Fabric& f, std::uint64_t g, int tier, int dir, const TierShape& shape,
                        const Chassis& chassis, Analysis* out) {
  const auto at = shape.updown.find(g);
  if (at == shape.updown.end()) return;
  const Groups& groups = at->second[static_cast<std::size_t>(dir)];
  const std::string name = NodeName(f, g);
  const char* where = dir == 1 ? "above" : "below";
  std::set<int> sizes;
  for (const auto& [n, c] : groups) sizes.insert(c);
  if (sizes.size() > 1) {
    // Name the groups that differ from this switch's most common size.
    const int usual = UsualSize(groups);
    std::string odd;
    for (const auto& [n, c] : groups) {
      const auto director = chassis.name.find(n);
      if (c != usual) {
        odd += (odd.empty() ? "" : ", ") + std::to_string(c) + " to " +
               (director == chassis.name.end() ? NodeName(f, n) : director->second);
      }
    }
    out->findings.push_back(
        {FindingKind::kUnevenParallelLinks,
         name + " has " + std::to_string(usual) + " links to most neighbours " + where + " but " + odd,
         g,
         {},
         {}});
    return;
  }
  const auto tier_sizes = shape.group_sizes.find({tier, dir});
  const int usual = tier_sizes == shape.group_sizes.end() ? 0 : Mode(tier_sizes->second);
  if (!sizes.empty() && *sizes.begin() != usual) {
    out->findings.push_back({FindingKind::kAsymmetricSwitch,
                             name + " has " + std::to_string(*sizes.begin()) + " links per neighbour " + where +
                                 ", its tier (" + TierName(tier) + ") mostly " + std::to_string(usual),
                             g,
                             {},
                             {}});
  }
}

// Service islands. A group's leaves reach every spine of their group, so
// where most leaves reach two switches or more, a leaf that reaches one
// switch only, with fewer than half the hosts of a typical leaf (a
// group's leaf cut off from all but one spine keeps its hosts, and is
// judged), is no group's leaf: it is hung off the fabric for management,
// storage gateways or UFM (Selene's MLG01 leaves, with up to five
// management hosts, each under its own spine or a compute spine); and so
// is a switch above with no host whose only switches below are such (the
// island's own spine). Nothing of an island is judged against the tiers,
// and it is not counted in its neighbours' groups: one information
// finding names each, and where it joins the tree. Returns the islands'
// switches.
std::set<std::uint64_t> FindIslands(const Fabric& f, const Wiring& w, const Analysis& a,
                                    const std::map<std::uint64_t, std::array<Groups, 2>>& updown, Analysis* out) {
  std::set<std::uint64_t> island;
  std::vector<int> reach, hosts;  // each hosted leaf's switch neighbours and CA links
  for (const auto& [g, s] : a.switches) {
    if (s.tier == 0 && s.ca_links > 0) {
      const auto& nb = w.neighbours.at(g);
      reach.push_back(static_cast<int>(std::set<std::uint64_t>(nb.begin(), nb.end()).size()));
      hosts.push_back(s.ca_links);
    }
  }
  if (reach.empty() || Mode(reach) < 2) return {};
  std::sort(hosts.begin(), hosts.end());
  const int typical = hosts[hosts.size() / 2];
  for (const auto& [g, s] : a.switches) {
    const auto it = w.neighbours.find(g);
    if (s.tier != 0 || it == w.neighbours.end() || s.ca_links * 2 >= typical) continue;
    if (std::set<std::uint64_t>(it->second.begin(), it->second.end()).size() == 1) island.insert(g);
  }
  if (island.empty()) return {};
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [g, s] : a.switches) {
      const auto it = updown.find(g);
      if (s.tier < 1 || s.ca_links > 0 || island.count(g) || it == updown.end() || it->second[0].empty()) continue;
      const Groups& below = it->second[0];
      if (std::all_of(below.begin(), below.end(), [&](const auto& x) { return island.count(x.first) > 0; })) {
        island.insert(g);
        grew = true;
      }
    }
  }
  // Each island (its switches joined by cables) and where it joins.
  std::set<std::uint64_t> seen;
  for (std::uint64_t start : island) {
    if (!seen.insert(start).second) continue;
    std::vector<std::uint64_t> members{start};
    std::set<std::uint64_t> joins;
    for (std::size_t i = 0; i < members.size(); ++i) {
      for (std::uint64_t n : w.neighbours.at(members[i])) {
        if (!island.count(n)) {
          joins.insert(n);
        } else if (seen.insert(n).second) {
          members.push_back(n);
        }
      }
    }
    const auto names = [&f](const auto& guids) {
      std::vector<std::string> v;
      for (std::uint64_t g : guids) v.push_back(NodeName(f, g));
      std::sort(v.begin(), v.end(), NaturalLess);
      std::string text;
      for (std::size_t i = 0; i < v.size() && i < 8; ++i) text += (i ? ", " : "") + v[i];
      return v.size() > 8 ? text + " and " + std::to_string(v.size() - 8) + " more" : text;
    };
    out->findings.push_back({FindingKind::kServiceIsland,
                             names(members) + ": hung off the tree through " + names(joins) +
                                 " (a service island, not a group of the tree: not judged against its tiers)",
                             *std::min_element(members.begin(), members.end()),
                             {},
                             {}});
  }
  return island;
}

// Missing cables, then switches unlike their tier's majority once those
// cables are counted as there: parallel links, uplinks of a leaf,
// neighbours up and down. Only for a tree; service islands apart.
void FindAsymmetry(const Fabric& f, const Wiring& w, Analysis* out) {
  auto updown = UpDown(w, *out);
  const std::set<std::uint64_t> island = FindIslands(f, w, *out, updown, out);
  Analysis judged;  // the tree without its islands, their cables uncounted
  for (const auto& [g, s] : out->switches) {
    if (!island.count(g)) judged.switches[g] = s;
  }
  for (auto it = updown.begin(); it != updown.end();) {
    if (island.count(it->first)) {
      it = updown.erase(it);
      continue;
    }
    SwitchSummary& j = judged.switches[it->first];
    for (int dir = 0; dir < 2; ++dir) {
      std::erase_if(it->second[static_cast<std::size_t>(dir)], [&](const auto& x) {
        if (!island.count(x.first)) return false;
        (dir == 1 ? j.up_links : j.down_links) -= x.second;
        --(dir == 1 ? j.up_groups : j.down_groups);
        return true;
      });
    }
    ++it;
  }
  const Chassis chassis = FindChassis(f);
  const std::vector<Shortfall> shortfalls = FindShortfalls(judged, updown, chassis);
  ReportShortfalls(f, shortfalls, updown, chassis, out);
  std::map<std::uint64_t, SwitchSummary> repaired = judged.switches;
  for (const Shortfall& m : shortfalls) {
    repaired[m.lower].up_links += m.need;
    repaired[m.upper].down_links += m.need;
    if (!updown[m.lower][1].count(m.upper)) {
      ++repaired[m.lower].up_groups;
      ++repaired[m.upper].down_groups;
    }
    updown[m.lower][1][m.upper] += m.need;
    updown[m.upper][0][m.lower] += m.need;
  }
  // A switch's cables to a chassis are one group (FindChassis); the
  // chassis' ASICs are judged by their cables inside it.
  for (auto& [g, dirs] : updown) {
    Groups merged;
    for (const auto& [n, c] : dirs[1]) merged[chassis.Outside(g, n) ? chassis.of.at(n) : n] += c;
    if (repaired.count(g)) repaired[g].up_groups -= static_cast<int>(dirs[1].size() - merged.size());
    dirs[1] = std::move(merged);
    const std::uint64_t asic = g;
    std::erase_if(dirs[0], [&](const auto& x) {
      if (!chassis.Outside(x.first, asic)) return false;
      if (repaired.count(asic)) {
        repaired[asic].down_links -= x.second;
        --repaired[asic].down_groups;
      }
      return true;
    });
  }
  const TierShape shape = ShapeOfTiers(std::move(updown), repaired);
  const std::map<std::uint64_t, std::vector<std::uint64_t>> peers = PeersOf(shape, repaired);
  for (const auto& [g, s] : repaired) {
    const std::string name = NodeName(f, g);
    const int t = s.tier;
    // Neighbours up and down are judged against the switches cabled like
    // it (a smaller scalable unit's spines serve fewer leaves than a
    // bigger one's); one cabled like no other, against its tier.
    int usual_up = Mode(shape.up_groups.at(t)), usual_down = Mode(shape.down_groups.at(t));
    if (const auto& mine = peers.at(g); !mine.empty()) {
      std::vector<int> up{s.up_groups}, down{s.down_groups};
      for (std::uint64_t p : mine) {
        up.push_back(repaired.at(p).up_groups);
        down.push_back(repaired.at(p).down_groups);
      }
      usual_up = Mode(up);
      usual_down = Mode(down);
    }
    for (int dir = 0; dir < 2; ++dir) CheckParallelLinks(f, g, t, dir, shape, chassis, out);
    if (t == 0 && s.up_links < Mode(shape.up_links.at(t))) {
      out->findings.push_back({FindingKind::kFewerUplinks,
                               name + " has " + std::to_string(s.up_links) + " uplinks, most leaves have " +
                                   std::to_string(Mode(shape.up_links.at(t))),
                               g,
                               {},
                               {}});
    }
    if (s.up_groups != usual_up || s.down_groups != usual_down) {
      const std::string whose = peers.at(g).empty()
                                    ? "its tier (" + TierName(t) + ")"
                                    : "the " + std::to_string(peers.at(g).size()) + " switches cabled like it";
      out->findings.push_back({FindingKind::kAsymmetricSwitch,
                               name + " connects to " + std::to_string(s.up_groups) + " switches up and " +
                                   std::to_string(s.down_groups) + " down, " + whose + " mostly " +
                                   std::to_string(usual_up) + " and " + std::to_string(usual_down),
                               g,
                               {},
                               {}});
    }
  }
}

// Cables that break the tree's up/down structure, then switches unlike
// their tier's majority.
void FindWiringFaults(const Fabric& f, const Wiring& w, Analysis* out) {
  FindMiswiredCables(f, w, out);
  if (out->is_tree) FindAsymmetry(f, w, out);
}

// Links below what both ends allow (degraded), and below most links
// between the same two tiers (CAs count as tier -1): a finding only, never
// degraded on its own, since a port at both its ends' best is not broken
// (a 2x NDR200 HCA, an HDR device in an NDR fabric).
void FindDegradedLinks(const Fabric& f, const Wiring& w, Analysis* out) {
  std::map<std::pair<int, int>, std::vector<std::pair<int, Speed>>> by_tiers;
  auto tier_of = [&](std::uint64_t g) { return IsSwitch(f, g) ? out->switches[g].tier : -1; };
  auto tiers_of = [&](const Link& l) {
    const int x = tier_of(l.a.node_guid), y = tier_of(l.b.node_guid);
    return std::pair{std::min(x, y), std::max(x, y)};
  };
  for (const Link& l : w.links) {
    const Port& a = *f.FindPort(l.a);
    if (a.link_up()) by_tiers[tiers_of(l)].emplace_back(Lanes(a.width_active), ActiveSpeed(a));
  }
  // Each pair of tiers' usual rate, once (per link it was a count over
  // every link of its tiers: 10^10 steps at 32k GPUs).
  std::map<std::pair<int, int>, std::pair<int, Speed>> usual;
  for (const auto& [tiers, rates] : by_tiers) usual[tiers] = Mode(rates);
  for (const Link& l : w.links) {
    const Port& a = *f.FindPort(l.a);
    const Port& b = *f.FindPort(l.b);
    if (!a.link_up() || !b.link_up()) continue;
    const int lanes = Lanes(a.width_active);
    const Speed speed = ActiveSpeed(a);
    const int lane_cap = MinNonZero(MinNonZero(MaxLanes(a.width_enabled), MaxLanes(a.width_supported)),
                                    MinNonZero(MaxLanes(b.width_enabled), MaxLanes(b.width_supported)));
    const Speed speed_cap = std::min(std::min(MaxEnabledSpeed(a), MaxSupportedSpeed(a)),
                                     std::min(MaxEnabledSpeed(b), MaxSupportedSpeed(b)));
    const std::string ends = PortName(f, l.a) + " - " + PortName(f, l.b);
    if ((lane_cap > 0 && lanes < lane_cap) || (speed_cap != Speed::kUnknown && speed < speed_cap)) {
      const std::string why = RateString(a) + " where both ends allow " +
                              std::to_string(lane_cap > 0 ? lane_cap : lanes) + "x" + ToString(speed_cap);
      out->findings.push_back({FindingKind::kBelowEnabled, "link below its ends' capability: " + ends + " runs " + why,
                               l.a.node_guid, l.a, l.b});
      out->degraded[l] = FindingKind::kBelowEnabled;
      continue;
    }
    const auto [usual_lanes, usual_speed] = usual[tiers_of(l)];
    if (lanes < usual_lanes || speed < usual_speed) {
      const std::string why = RateString(a) + " where most links of its tiers run " + std::to_string(usual_lanes) +
                              "x" + ToString(usual_speed);
      out->findings.push_back({FindingKind::kBelowTierMajority, "link slower than its peers: " + ends + " runs " + why,
                               l.a.node_guid, l.a, l.b});
    }
  }
}

// Σ over leaves of min(up, down) bandwidth, against Σ of their down bandwidth.
void EstimateBisection(Analysis* out) {
  for (const auto& [g, s] : out->switches) {
    if (s.tier != 0) continue;
    out->bisection_gbps += std::min(s.up_gbps, s.down_gbps);
    out->nonblocking_gbps += s.down_gbps;
  }
}

}  // namespace

namespace {

// Nodes that share a name (Aggregation Nodes aside: each is named by its
// switch), one finding per name, as UFM's fabric validation reports
// duplicate node descriptions. Information: nothing is miswired, but an
// operator cannot tell their series, findings and alerts apart by name
// (NodeName adds the GUID to each).
void FindDuplicateNames(const Fabric& f, Analysis* out) {
  std::map<std::string, std::vector<std::uint64_t>> by_name;
  for (const Node& n : f.nodes()) {
    if (n.description.empty() || IsAggregationNode(n)) continue;
    const std::string name = ShortName(n.description);
    if (f.NameShared(name)) by_name[name].push_back(n.guid);
  }
  for (const auto& [name, guids] : by_name) {
    std::string which;
    for (std::size_t i = 0; i < guids.size() && i < 8; ++i) which += (i ? ", " : "") + FormatGuid(guids[i]);
    if (guids.size() > 8) which += ", ...";
    out->findings.push_back({FindingKind::kDuplicateName,
                             std::to_string(guids.size()) + " nodes are named \"" + name + "\" (" + which +
                                 "): give each its own (the switch's node description, or --ib.node-name-map)",
                             guids.front(), std::nullopt, std::nullopt});
  }
}

}  // namespace

Analysis Analyze(const Fabric& f) {
  Analysis out;
  FindDuplicateNames(f, &out);
  Wiring w = Neighbours(f, &out);
  RankTiers(&w, &out);
  CheckTree(f, w, &out);
  SummarizeSwitches(f, w, &out);
  FindWiringFaults(f, w, &out);
  FindDegradedLinks(f, w, &out);
  EstimateBisection(&out);
  return out;
}

Pods FindPods(const Fabric& f, const Analysis& a, const std::map<std::uint64_t, int>* leaf_unit) {
  Pods out;
  if (a.tiers < 3) return out;
  const int top = a.tiers - 1;
  const auto tier = [&](std::uint64_t guid) {
    const auto it = a.switches.find(guid);
    return it == a.switches.end() ? -1 : it->second.tier;
  };
  // Union-find over the switches below the top tier.
  std::map<std::uint64_t, std::uint64_t> parent;
  for (const auto& [guid, s] : a.switches) {
    if (s.tier >= 0 && s.tier < top) parent[guid] = guid;
  }
  const auto root = [&](std::uint64_t g) {
    while (parent[g] != g) g = parent[g] = parent[parent[g]];
    return g;
  };
  for (const Link& l : Links(f)) {
    const int ta = tier(l.a.node_guid), tb = tier(l.b.node_guid);
    if (ta < 0 || tb < 0 || ta >= top || tb >= top || std::abs(ta - tb) != 1) continue;
    parent[root(l.a.node_guid)] = root(l.b.node_guid);
  }
  if (leaf_unit) {
    std::map<int, std::uint64_t> first;  // unit -> its first leaf
    for (const auto& [leaf, unit] : *leaf_unit) {
      if (!parent.count(leaf)) continue;
      const auto [it, fresh] = first.emplace(unit, leaf);
      if (!fresh) parent[root(leaf)] = root(it->second);
    }
  }
  std::map<std::uint64_t, std::vector<std::string>> members;  // root -> names
  for (const auto& [guid, p] : parent) members[root(guid)].push_back(NodeName(f, guid));
  std::vector<std::vector<std::string>> groups;
  std::map<std::uint64_t, std::size_t> group_of_root;
  for (auto& [r, names] : members) {
    group_of_root[r] = groups.size();
    groups.push_back(std::move(names));
  }
  NamedGroups named = NameGroups(std::move(groups), "pod");
  out.names = std::move(named.names);
  std::map<std::uint64_t, int> index;  // root -> pod
  for (const auto& [r, g] : group_of_root) index[r] = named.position[g];
  for (const auto& [guid, p] : parent) out.of[guid] = index[root(guid)];
  return out;
}

}  // namespace ibfabric::topology
