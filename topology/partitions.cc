#include "topology/partitions.h"

#include <algorithm>
#include <iterator>
#include <set>

#include "transport/attributes.h"

namespace ibfabric::topology {

ReadPartitionsResult ReadPartitions(const Fabric& fabric,
                                    const std::map<std::uint64_t, transport::SwitchInfo>& switch_info,
                                    transport::MadEngine& engine, PartitionSource source) {
  ReadPartitionsResult out;
  // The ports to read, with the LID to ask and the entries their table holds.
  struct Wanted {
    PortRef port;
    std::uint16_t lid = 0;
    std::size_t entries = 0;
  };
  std::vector<Wanted> wanted;
  for (const auto& n : fabric.nodes()) {
    if (n.kind == NodeKind::kSwitch) {
      const auto info = switch_info.find(n.guid);
      if (n.lid == 0 || info == switch_info.end() || info->second.partition_enforcement_cap == 0) continue;
      for (const auto& p : n.ports) {
        const Node* peer = p.remote ? fabric.FindNode(p.remote->node_guid) : nullptr;
        if (peer && peer->kind != NodeKind::kSwitch) {
          wanted.push_back({{n.guid, p.number}, n.lid, info->second.partition_enforcement_cap});
        }
      }
      continue;
    }
    for (const auto& p : n.ports) {
      if (p.lid != 0) wanted.push_back({{n.guid, p.number}, p.lid, n.partition_cap});
    }
  }
  std::map<PortRef, std::map<std::uint16_t, std::uint16_t>> keys;  // partition -> P_Key with the best membership
  const auto fold = [&](const PortRef& port, const transport::PKeyBlock& block) {
    for (std::uint16_t k : block) {
      if ((k & 0x7fff) == 0) continue;  // 0x0000 and 0x8000 are empty entries
      std::uint16_t& best = keys[port][k & 0x7fff];
      best = std::max(best, k);  // full (bit 15) over limited
    }
  };
  for (const Wanted& w : wanted) out.tables[w.port];
  if (source.sa_lid != 0 && !wanted.empty()) {
    // One query a LID: a CA port's, or a switch's for all its ports. The
    // records name their port by LID and number.
    std::vector<std::uint16_t> lids;
    std::map<std::pair<std::uint16_t, std::uint8_t>, PortRef> by_lid;
    for (const Wanted& w : wanted) {
      if (lids.empty() || lids.back() != w.lid) lids.push_back(w.lid);  // a switch's ports come together
      by_lid[{w.lid, w.port.port}] = w.port;
    }
    const auto take = [&](const transport::MadResult& r) {
      const auto records = transport::DecodePKeyRecords(r);
      if (!records) return;
      for (const auto& rec : *records) {
        const auto it = by_lid.find({rec.lid, rec.port});
        if (it == by_lid.end()) continue;  // a port not asked for (a switch's uplinks)
        fold(it->second, rec.keys);
        out.from_sa.insert(it->second);
      }
    };
    std::vector<transport::MadRequest> queries;
    for (std::uint16_t lid : lids) queries.push_back(transport::PKeyRecordTableQuery(source.sa_lid, lid));
    // An error status to the first query (an untrusted request, no such
    // attribute): this SA gives no such records to us.
    const auto probed = engine.RunProbed(queries, [&](std::size_t, transport::MadResult&& r) { take(r); });
    out.sa_queries = probed.sent;
    out.sa_answered = probed.first == transport::MadOutcome::kOk;
    out.sa_refused = probed.first == transport::MadOutcome::kRemoteError;
  }
  // The others from their ports: every block of a table of `entries`
  // P_Keys (at least one block, at most 32).
  std::vector<transport::MadRequest> reqs;
  std::vector<PortRef> whose;
  for (const Wanted& w : wanted) {
    if (out.from_sa.count(w.port)) continue;
    const auto count = static_cast<std::uint16_t>(std::clamp<std::size_t>((w.entries + 31) / 32, 1, 32));
    for (std::uint16_t b = 0; b < count; ++b) {
      reqs.push_back(transport::PKeyBlockQuery(transport::MadAddress::Lid(w.lid), w.port.port, b));
      whose.push_back(w.port);
    }
  }
  out.smps = reqs.size();
  const auto got = engine.Run(reqs);
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i].outcome != transport::MadOutcome::kOk) {
      out.problems.push_back("no P_KeyTable from " + NodeName(fabric, whose[i].node_guid) + "[" +
                             std::to_string(whose[i].port) + "]: " + transport::ToString(got[i].outcome));
      out.tables.erase(whose[i]);
      continue;
    }
    fold(whose[i], transport::DecodePKeyBlock(got[i].response));
  }
  for (auto& [port, list] : out.tables) {
    for (const auto& [partition, k] : keys[port]) list.push_back(k);
  }
  return out;
}

namespace {

std::string Describe(const std::vector<std::uint16_t>& keys) {
  std::string out;
  for (std::uint16_t k : keys) out += (out.empty() ? "" : ", ") + DescribePKey(k);
  return "{" + out + "}";
}

// The partitions (low 15 bits) of a table, without membership.
std::set<std::uint16_t> Partitions(const std::vector<std::uint16_t>& keys) {
  std::set<std::uint16_t> out;
  for (std::uint16_t k : keys) out.insert(k & 0x7fff);
  return out;
}

// "partition 0x0001" / "partitions 0x0001, 0x0002".
std::string List(const std::vector<std::uint16_t>& partitions) {
  std::string out = partitions.size() == 1 ? "partition " : "partitions ";
  for (std::size_t i = 0; i < partitions.size(); ++i) out += (i ? ", " : "") + PartitionOf(partitions[i]);
  return out;
}

}  // namespace

PartitionAnalysis AnalyzePartitions(const Fabric& fabric, const PartitionTables& tables, const PartitionPlan* plan) {
  PartitionAnalysis result;
  result.ports = tables;
  const auto name = [&](std::uint64_t guid) { return NodeName(fabric, guid); };
  // Leaf groups: CA ports by the switch they are cabled to.
  std::map<std::uint64_t, std::vector<PortRef>> by_leaf;
  for (const auto& [ref, keys] : tables) {
    const Port* p = fabric.FindPort(ref);
    if (!p || !p->remote) continue;
    const Node* peer = fabric.FindNode(p->remote->node_guid);
    if (peer && peer->kind == NodeKind::kSwitch) by_leaf[peer->guid].push_back(ref);
  }
  for (const auto& [leaf, ports] : by_leaf) {
    if (ports.size() < 3) continue;
    std::map<std::vector<std::uint16_t>, int> votes;
    for (const auto& ref : ports) ++votes[tables.at(ref)];
    const auto top =
        std::max_element(votes.begin(), votes.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
    if (top->second * 2 <= static_cast<int>(ports.size())) continue;  // no strict majority: nothing to compare with
    for (const auto& ref : ports) {
      const auto& keys = tables.at(ref);
      if (keys == top->first) continue;
      result.findings.push_back({FindingKind::kPartitionMismatch,
                                 name(ref.node_guid) + "[" + std::to_string(ref.port) + "] holds " + Describe(keys) +
                                     " where " + std::to_string(top->second) + " of " + std::to_string(ports.size()) +
                                     " HCA ports on " + name(leaf) + " hold " + Describe(top->first),
                                 ref.node_guid, ref, std::nullopt});
    }
  }
  // Switch ports against the CA port at the other end of their cable.
  for (const auto& [ref, keys] : tables) {
    const Node* n = fabric.FindNode(ref.node_guid);
    const Port* p = fabric.FindPort(ref);
    if (!n || n->kind != NodeKind::kSwitch || !p || !p->remote) continue;
    const auto ca = tables.find(*p->remote);
    if (ca == tables.end()) continue;
    const std::set<std::uint16_t> here = Partitions(keys), there = Partitions(ca->second);
    if (here == there) continue;
    std::vector<std::uint16_t> missing, extra;
    std::set_difference(there.begin(), there.end(), here.begin(), here.end(), std::back_inserter(missing));
    std::set_difference(here.begin(), here.end(), there.begin(), there.end(), std::back_inserter(extra));
    std::string why;
    if (!missing.empty()) why += "its traffic in " + List(missing) + " is dropped at the switch port";
    if (!extra.empty()) why += std::string(why.empty() ? "" : ", and ") + "the switch port admits " + List(extra);
    const bool in = p->partition_enforcement_inbound, out = p->partition_enforcement_outbound;
    why += in || out ? std::string(" (partition enforcement inbound ") + (in ? "on" : "off") + ", outbound " +
                           (out ? "on" : "off") + ")"
                     : " once partition enforcement is switched on (it is off)";
    result.findings.push_back({FindingKind::kPartitionEnforcementMismatch,
                               name(ref.node_guid) + "[" + std::to_string(ref.port) + "] holds " + Describe(keys) +
                                   " facing " + name(p->remote->node_guid) + "[" + std::to_string(p->remote->port) +
                                   "] which holds " + Describe(ca->second) + ": " + why,
                               ref.node_guid, ref, *p->remote});
  }
  if (!plan) return result;
  for (const auto& [ref, keys] : tables) {
    const Node* n = fabric.FindNode(ref.node_guid);
    if (!n || n->kind == NodeKind::kSwitch) continue;  // the plan is about CA ports
    const std::string node = name(ref.node_guid);
    const std::string guid = FormatGuid(ref.node_guid);
    std::vector<std::uint16_t> want;
    for (const auto& part : plan->partitions) {
      const auto member = [&](const std::set<std::string>& s) { return s.count(node) || s.count(guid); };
      if (part.all_full || member(part.full)) {
        want.push_back(static_cast<std::uint16_t>(part.pkey | 0x8000));
      } else if (member(part.limited)) {
        want.push_back(part.pkey);
      }
    }
    std::sort(want.begin(), want.end(), [](std::uint16_t x, std::uint16_t y) { return (x & 0x7fff) < (y & 0x7fff); });
    if (want == keys) continue;
    result.findings.push_back({FindingKind::kPartitionPlanMismatch,
                               node + "[" + std::to_string(ref.port) + "] holds " + Describe(keys) +
                                   ", the partition plan says " + Describe(want),
                               ref.node_guid, ref, std::nullopt});
  }
  return result;
}

}  // namespace ibfabric::topology
