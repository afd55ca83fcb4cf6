#include "topology/routing.h"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>

#include "transport/attributes.h"

namespace ibfabric::topology {

ReadSwitchInfoResult ReadSwitchInfo(const Fabric& fabric, transport::MadEngine& engine) {
  ReadSwitchInfoResult out;
  std::vector<const Node*> switches;
  std::vector<transport::MadRequest> info;
  for (const auto& n : fabric.nodes()) {
    if (n.kind != NodeKind::kSwitch || n.lid == 0) continue;
    switches.push_back(&n);
    info.push_back(transport::SwitchInfoQuery(transport::MadAddress::Lid(n.lid)));
  }
  out.smps = info.size();
  const auto infos = engine.Run(info);
  for (std::size_t i = 0; i < switches.size(); ++i) {
    if (infos[i].outcome != transport::MadOutcome::kOk) {
      out.problems.push_back("no SwitchInfo from " + switches[i]->description + " (" + FormatGuid(switches[i]->guid) +
                             "): " + transport::ToString(infos[i].outcome));
      continue;
    }
    out.switch_info[switches[i]->guid] = transport::DecodeSwitchInfo(infos[i].response);
  }
  return out;
}

namespace {

// The highest LID a switch's table holds: LinearFDBTop, the highest LID
// the SM programmed (IBTA 14.2.5.4); unicast LIDs stop at 0xBFFF.
std::uint32_t TopOf(const transport::SwitchInfo& si) { return std::min<std::uint32_t>(si.linear_fdb_top, 0xBFFF); }

// Blocks in a table of `size` entries.
std::size_t BlocksOf(std::size_t size) { return (size + transport::kLftBlockSize - 1) / transport::kLftBlockSize; }

// Block `block` of a table of `size` entries (64 LIDs from block * 64, as
// far as the table goes), held in `tables`: its index there.
std::uint32_t HoldBlock(std::size_t block, const transport::LftBlock& ports, std::size_t size,
                        ForwardingTables* tables) {
  const std::size_t first = block * transport::kLftBlockSize;
  return tables->Block(std::span<const std::uint8_t>(ports.data(), std::min(ports.size(), size - first)));
}

// The blocks of the table of `size` entries of the switch at `lid` from the
// SA's records, held in `tables`, when the records cover it whole; nullopt
// otherwise.
std::optional<std::vector<std::uint32_t>> FromRecords(const std::vector<transport::LftRecord>& records,
                                                      std::uint16_t lid, std::size_t size, ForwardingTables* tables) {
  std::vector<const transport::LftBlock*> found(BlocksOf(size), nullptr);
  for (const auto& r : records) {
    if (r.lid == lid && r.block < found.size()) found[r.block] = &r.ports;
  }
  if (std::find(found.begin(), found.end(), nullptr) != found.end()) return std::nullopt;
  std::vector<std::uint32_t> blocks(found.size());
  for (std::size_t b = 0; b < found.size(); ++b) blocks[b] = HoldBlock(b, *found[b], size, tables);
  return blocks;
}

}  // namespace

ReadTablesResult ReadForwardingTables(const Fabric& fabric,
                                      const std::map<std::uint64_t, transport::SwitchInfo>& switch_info,
                                      transport::MadEngine& engine, TableSource source) {
  ReadTablesResult out;
  std::vector<std::pair<const Node*, std::size_t>> switches;  // with their table's size: entries up to the top LID
  for (const auto& n : fabric.nodes()) {
    if (n.kind != NodeKind::kSwitch || n.lid == 0) continue;
    const auto si = switch_info.find(n.guid);
    if (si == switch_info.end()) continue;  // its SwitchInfo did not answer
    switches.push_back({&n, std::size_t{TopOf(si->second)} + 1});
  }
  // From the SA: one switch first, so that a fabric without one (or an SA
  // without these records) costs one query, not one per switch.
  if (source.sa_lid != 0 && !switches.empty()) {
    const auto take = [&](std::size_t i, const transport::MadResult& r) {
      const auto records = transport::DecodeLftRecords(r);
      if (!records) return;
      auto blocks = FromRecords(*records, switches[i].first->lid, switches[i].second, &out.tables);
      if (!blocks) return;
      out.tables.PutBlocks(switches[i].first->guid, switches[i].second, std::move(*blocks));
      out.from_sa.insert(switches[i].first->guid);
    };
    std::vector<transport::MadRequest> queries;
    for (const auto& [n, size] : switches) queries.push_back(transport::LftRecordTableQuery(source.sa_lid, n->lid));
    // An error status to the first query (no such attribute, an invalid
    // request): this SA keeps no such records for us.
    const auto probed = engine.RunProbed(queries, [&](std::size_t i, transport::MadResult&& r) { take(i, r); });
    out.sa_queries = probed.sent;
    out.sa_answered = probed.first == transport::MadOutcome::kOk;
  }
  // The others from the switches themselves, each block held once as it
  // comes (the switches answer in turn: all their tables are being read at
  // once) and each table put together from its blocks when all are in.
  std::vector<transport::MadRequest> blocks;
  std::vector<std::pair<std::size_t, std::uint32_t>> which;  // (switch index, block)
  for (std::size_t i = 0; i < switches.size(); ++i) {
    const auto [n, size] = switches[i];
    if (out.from_sa.count(n->guid)) continue;
    for (std::uint32_t b = 0; b < BlocksOf(size); ++b) {
      blocks.push_back(transport::LftBlockQuery(transport::MadAddress::Lid(n->lid), b));
      which.push_back({i, b});
    }
  }
  out.smps += blocks.size();
  struct Assembly {
    std::vector<std::uint32_t> blocks;  // each block's index in out.tables
    std::size_t missing = 0;            // blocks not in yet
    bool partial = false;               // a block did not answer
  };
  std::map<std::size_t, Assembly> assembling;
  for (const auto& [i, b] : which) ++assembling[i].missing;
  engine.Run(blocks, [&](std::size_t k, transport::MadResult&& r) {
    const auto [i, b] = which[k];
    const Node& sw = *switches[i].first;
    const std::size_t size = switches[i].second;
    Assembly& a = assembling[i];
    if (r.outcome != transport::MadOutcome::kOk) {
      out.problems.push_back("no LFT block " + std::to_string(b) + " from " + sw.description + ": " +
                             transport::ToString(r.outcome));
      a.partial = true;
    } else if (!a.partial) {
      if (a.blocks.empty()) a.blocks.resize(BlocksOf(size));
      a.blocks[b] = HoldBlock(b, transport::DecodeLftBlock(r.response), size, &out.tables);
    }
    if (--a.missing > 0) return;
    // A table with a block missing would show routes that are not there: a
    // lost MAD is no evidence, so the switch has no table this time.
    if (!a.partial) out.tables.PutBlocks(sw.guid, size, std::move(a.blocks));
    assembling.erase(i);
  });
  out.tables.Compact();
  return out;
}

namespace {

struct Destination {
  std::uint16_t lid;
  PortRef ca;
  std::uint64_t leaf = 0;  // the switch the CA port is cabled to
  // A host's or a router's: what carries jobs' traffic. An Aggregation
  // Node's LID is routed too (SHARP's trees need it: unrouted counts it)
  // but carries no job's data by itself: no balance, no up/down trace.
  bool host_traffic = true;
};

int TierOf(const Analysis& a, std::uint64_t guid) {
  auto it = a.switches.find(guid);
  return it == a.switches.end() ? -1 : it->second.tier;
}

// The CA ports with a LID and a cable: what forwarding tables must route,
// each with the leaf it hangs from (0 where its peer is no switch).
std::vector<Destination> Destinations(const Fabric& fabric) {
  std::vector<Destination> dests;
  for (const auto& n : fabric.nodes()) {
    if (n.kind == NodeKind::kSwitch) continue;
    for (const auto& p : n.ports) {
      if (p.lid == 0 || !p.remote) continue;
      const Node* peer = fabric.FindNode(p.remote->node_guid);
      dests.push_back(
          {p.lid, {n.guid, p.number}, peer && peer->kind == NodeKind::kSwitch ? peer->guid : 0, !IsAggregationNode(n)});
    }
  }
  return dests;
}

// The switches as dense indices, for the millions of lookups of tracing
// every leaf-to-CA route (8M at 16k hosts): each one's table and tier
// and, per port, where a usable cable (up, with a far end) leads.
struct Dense {
  struct Link {
    bool usable = false;
    std::uint64_t remote = 0;  // the far end's node GUID
    int next = -1;             // the far end's switch index; -1: not a switch
  };
  std::unordered_map<std::uint64_t, int> index;
  std::vector<std::optional<ForwardingTables::Table>> table;  // none: no table
  std::vector<int> tier;                                      // -1: unranked
  std::vector<std::vector<Link>> ports;                       // by port number

  Dense(const Fabric& fabric, const ForwardingTables& tables, const Analysis& a) {
    for (const auto& n : fabric.nodes()) {
      if (n.kind != NodeKind::kSwitch) continue;
      index[n.guid] = static_cast<int>(table.size());
      table.push_back(tables.Find(n.guid));
      tier.push_back(TierOf(a, n.guid));
    }
    ports.resize(table.size());
    for (const auto& n : fabric.nodes()) {
      if (n.kind != NodeKind::kSwitch) continue;
      auto& links = ports[static_cast<std::size_t>(index.at(n.guid))];
      for (const auto& p : n.ports) {
        if (p.number >= links.size()) links.resize(p.number + 1u);
        Link& l = links[p.number];
        l.usable = p.link_up() && p.remote.has_value();
        if (!l.usable) continue;
        l.remote = p.remote->node_guid;
        auto it = index.find(l.remote);
        l.next = it == index.end() ? -1 : it->second;
      }
    }
  }
  // The port switch `i`'s table sends `lid` out of (kLftNoPort: none, or no table).
  std::uint8_t Egress(int i, std::uint16_t lid) const {
    const auto& t = table[static_cast<std::size_t>(i)];
    return t ? t->At(lid) : transport::kLftNoPort;
  }
  // Where port `port` of switch `i` leads; nullptr where it is not usable.
  const Link* Usable(int i, std::uint8_t port) const {
    const auto& links = ports[static_cast<std::size_t>(i)];
    return port < links.size() && links[port].usable ? &links[port] : nullptr;
  }
};

// The ports of the switch's direction (up from a leaf, down above it),
// each counted even when it carries nothing. Only the neighbouring tier: a
// link that skips one is its own finding (kSkipTierLink) and carries what
// the SM chooses, not a share.
void DirectionPorts(const Fabric& fabric, const Analysis& a, std::uint64_t guid, int tier, SwitchRouting* r) {
  if (!a.is_tree || tier < 0) return;
  for (const auto& p : fabric.FindNode(guid)->ports) {
    if (!p.link_up() || !p.remote) continue;
    const int far = TierOf(a, p.remote->node_guid);
    if (far < 0) continue;  // a CA or an unranked switch
    if ((tier == 0 && far == tier + 1) || (tier > 0 && far == tier - 1)) r->destinations[p.number] = 0;
  }
}

// A tenth: a port carrying that much more than its peers is a tenth
// slower for the jobs whose traffic it takes. Below that an uneven count
// costs less than the noise of the jobs themselves.
constexpr double kImbalanceRatio = 1.1;

// The spread between the switch's most and least used ports that should
// carry alike, and a finding where it means something. A leaf may send any
// destination up any uplink: all of them should carry alike. Above, a
// destination can only go down the links to its own leaf: the parallel
// links to one neighbour should carry alike. A finding needs three things:
// 2 or more host destinations apart (1 is what an uneven count leaves); a
// tenth or more apart (kImbalanceRatio); and the two ports 2 or more apart
// both counting every CA LID (`cas`: Aggregation Nodes' too) and every LID
// (`all`: switches' too). opensm's updn and minhop engines choose each
// LID's port as the one with the fewest paths so far (osm_switch.c
// osm_switch_recommend_path, least_paths) and count a path for every LID
// routed (osm_ucast_mgr.c add_path; switches' unless
// port_profile_switch_nodes): a table they balanced is at most 1 apart on
// one of those counts, however uneven the hosts' share alone looks.
void JudgeBalance(const Fabric& fabric, std::uint64_t guid, int tier, const std::array<int, 256>& cas,
                  const std::array<int, 256>& all, SwitchRouting* r, RoutingAnalysis* out) {
  std::map<std::uint64_t, std::map<std::uint8_t, int>> groups;
  for (const auto& [port, n] : r->destinations) {
    const std::uint64_t group = tier == 0 ? 0 : fabric.FindPort({guid, port})->remote->node_guid;
    groups[group][port] = n;
  }
  for (const auto& [group, ports] : groups) {
    auto [lo, hi] = std::minmax_element(ports.begin(), ports.end(),
                                        [](const auto& x, const auto& y) { return x.second < y.second; });
    if (hi->second - lo->second < r->spread) continue;
    r->spread = hi->second - lo->second;
    r->max_min_ratio.reset();
    if (lo->second > 0) r->max_min_ratio = static_cast<double>(hi->second) / lo->second;
    const int all_apart = all[hi->first] - all[lo->first];
    const bool relative = !r->max_min_ratio || *r->max_min_ratio >= kImbalanceRatio;
    const bool unbalanced = cas[hi->first] - cas[lo->first] >= 2 && all_apart >= 2;
    if (ports.size() > 1 && r->spread >= 2 && relative && unbalanced) {
      const int percent = lo->second > 0 ? static_cast<int>((*r->max_min_ratio - 1) * 100 + 0.5) : 100;
      std::string finding = NodeName(fabric, guid) + " routes " + std::to_string(hi->second) +
                            " destinations through port " + std::to_string(hi->first) + " and " +
                            std::to_string(lo->second) + " through port " + std::to_string(lo->first) + " (" +
                            r->direction + "links" +
                            (tier == 0 ? std::string(")") : " to " + NodeName(fabric, group) + ")") + ": " +
                            std::to_string(percent) + "% more, and " + std::to_string(all_apart) +
                            " more LIDs of every kind, where balanced routing leaves 1 at most";
      std::erase_if(out->findings,
                    [&](const Finding& f) { return f.kind == FindingKind::kRoutingImbalance && f.node == guid; });
      out->findings.push_back({FindingKind::kRoutingImbalance, finding, guid, std::nullopt, std::nullopt});
    }
  }
}

// One switch's table: what each port of its direction carries, the
// destinations it cannot reach, its balance.
SwitchRouting RouteSwitch(const Fabric& fabric, const Dense& dense, const Analysis& a,
                          const std::vector<Destination>& dests, const std::vector<std::uint16_t>& switch_lids,
                          std::uint64_t guid, RoutingAnalysis* out) {
  const int tier = TierOf(a, guid);
  const int i = dense.index.at(guid);
  SwitchRouting r;
  r.direction = tier == 0 ? "up" : "down";
  DirectionPorts(fabric, a, guid, tier, &r);
  std::array<int, 256> carried{};  // host traffic
  std::array<int, 256> cas{};      // every CA LID
  std::array<int, 256> all{};      // every LID
  std::vector<std::string> unrouted_examples;
  for (const std::uint16_t lid : switch_lids) {
    const std::uint8_t port = dense.Egress(i, lid);
    if (port != transport::kLftNoPort) ++all[port];
  }
  for (const Destination& d : dests) {
    const std::uint8_t port = dense.Egress(i, d.lid);
    if (port != transport::kLftNoPort) ++all[port];
    if (port == transport::kLftNoPort || port == 0 || !dense.Usable(i, port)) {
      ++r.unrouted;
      if (unrouted_examples.size() < 3) {
        unrouted_examples.push_back(NodeName(fabric, d.ca.node_guid) + " (LID " + std::to_string(d.lid) + ")");
      }
      continue;
    }
    if (tier == 0 && d.leaf == guid) continue;  // local to the leaf
    ++cas[port];
    if (d.host_traffic) ++carried[port];
  }
  for (auto& [port, n] : r.destinations) n = carried[port];
  JudgeBalance(fabric, guid, tier, cas, all, &r, out);
  if (r.unrouted > 0) {
    std::string examples;
    for (const auto& e : unrouted_examples) examples += (examples.empty() ? "" : ", ") + e;
    out->findings.push_back({FindingKind::kUnroutedDestination,
                             NodeName(fabric, guid) + " has no usable route to " + std::to_string(r.unrouted) +
                                 " CA LIDs, e.g. " + examples,
                             guid, std::nullopt, std::nullopt});
  }
  return r;
}

// Follows the route from `leaf` to `d` hop by hop: whether it goes down
// and up again, or never arrives (a loop or a dead end that still routes).
// A fat tree's routes go up, then down, never down and up again.
std::optional<std::string> BrokenRoute(const Dense& dense, int leaf, const Destination& d, int max_hops) {
  int at = leaf;
  bool went_down = false;
  bool arrived = false;
  bool down_up = false;
  for (int hop = 0; hop < max_hops; ++hop) {
    const std::uint8_t port = dense.Egress(at, d.lid);
    const Dense::Link* p = port == transport::kLftNoPort ? nullptr : dense.Usable(at, port);
    if (!p) break;  // counted as unrouted at `at`
    if (p->remote == d.ca.node_guid) {
      arrived = true;
      break;
    }
    const int from_tier = dense.tier[static_cast<std::size_t>(at)];
    const int to_tier = p->next < 0 ? -1 : dense.tier[static_cast<std::size_t>(p->next)];
    if (to_tier < 0) break;  // into a CA that is not the destination, or an unranked switch
    if (to_tier < from_tier) went_down = true;
    if (to_tier > from_tier && went_down) down_up = true;
    at = p->next;
  }
  const bool looped =
      !arrived && dense.table[static_cast<std::size_t>(at)] && dense.Egress(at, d.lid) != transport::kLftNoPort;
  if (!down_up && !looped) return std::nullopt;
  return looped ? "never arrives" : "goes down and up again";
}

// Traces every leaf-to-CA route; a finding per leaf whose routes break
// up/down order.
void TraceLeafRoutes(const Fabric& fabric, const Dense& dense, const Analysis& a, const std::vector<Destination>& dests,
                     RoutingAnalysis* out) {
  const int max_hops = 2 * std::max(a.tiers, 1) + 2;
  for (const auto& [leaf, summary] : a.switches) {
    const auto found = dense.index.find(leaf);
    if (summary.tier != 0 || found == dense.index.end() || !dense.table[static_cast<std::size_t>(found->second)]) {
      continue;
    }
    const int at = found->second;
    int bad = 0;
    std::string example;
    for (const Destination& d : dests) {
      if (d.leaf == leaf || !d.host_traffic) continue;
      ++out->routes_traced;
      const auto broken = BrokenRoute(dense, at, d, max_hops);
      if (!broken) continue;
      ++bad;
      if (example.empty()) {
        example = NodeName(fabric, d.ca.node_guid) + " (LID " + std::to_string(d.lid) + ") " + *broken;
      }
    }
    if (bad > 0) {
      out->down_up_routes += bad;
      out->findings.push_back(
          {FindingKind::kDownUpRoute,
           NodeName(fabric, leaf) + ": " + std::to_string(bad) + " routes to CAs break up/down order, e.g. " + example,
           leaf, std::nullopt, std::nullopt});
    }
  }
}

}  // namespace

RoutingAnalysis AnalyzeRouting(const Fabric& fabric, const ForwardingTables& tables, const Analysis& tree,
                               const std::set<std::uint64_t>& adaptive) {
  RoutingAnalysis out;
  const std::vector<Destination> dests = Destinations(fabric);
  // The LIDs a table routes besides the CA ports': each switch's (port 0).
  std::vector<std::uint16_t> switch_lids;
  for (const Node& n : fabric.nodes()) {
    if (n.kind == NodeKind::kSwitch && n.lid != 0) switch_lids.push_back(n.lid);
  }
  const Dense dense(fabric, tables, tree);
  // A table of a switch the fabric no longer has (held from an older walk)
  // says nothing about it.
  for (std::uint64_t guid : tables.Switches()) {
    if (dense.index.count(guid)) out.switches[guid] = RouteSwitch(fabric, dense, tree, dests, switch_lids, guid, &out);
  }
  if (tree.is_tree) TraceLeafRoutes(fabric, dense, tree, dests, &out);
  for (std::uint64_t guid : adaptive) {
    auto it = out.switches.find(guid);
    if (it != out.switches.end()) it->second.adaptive = true;
  }
  std::erase_if(out.findings, [&](const Finding& f) {
    return f.kind == FindingKind::kRoutingImbalance && adaptive.count(f.node) > 0;
  });
  for (Finding& f : out.findings) {
    if (adaptive.count(f.node)) f.detail += " (in its static table; adaptive routing is on there)";
  }
  return out;
}

RoutingTotals SummarizeRouting(const RoutingAnalysis& a) {
  RoutingTotals t;
  for (const auto& [guid, r] : a.switches) {
    if (r.unrouted > 0) ++t.switches_with_unrouted;
    if (r.adaptive) continue;
    t.max_spread = std::max(t.max_spread, r.spread);
    if (r.max_min_ratio) t.worst_max_min_ratio = std::max(t.worst_max_min_ratio.value_or(0), *r.max_min_ratio);
  }
  t.imbalanced_switches = static_cast<int>(std::count_if(
      a.findings.begin(), a.findings.end(), [](const Finding& f) { return f.kind == FindingKind::kRoutingImbalance; }));
  return t;
}

}  // namespace ibfabric::topology
