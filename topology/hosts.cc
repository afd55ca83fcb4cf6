#include "topology/hosts.h"

#include <algorithm>
#include <set>

namespace ibfabric::topology {
namespace {

// A (device, port) slot of a host: what a rail carries.
using Slot = std::pair<std::string, std::uint8_t>;

// Union-find over indices.
struct Sets {
  std::vector<std::size_t> parent;
  explicit Sets(std::size_t n) : parent(n) {
    for (std::size_t i = 0; i < n; ++i) parent[i] = i;
  }
  std::size_t Root(std::size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  }
  void Join(std::size_t a, std::size_t b) { parent[Root(a)] = Root(b); }
};

// CAs grouped into hosts by the pattern; a host with one device name
// twice is no host (every HCA of a model describes itself alike when
// rdma-ndd does not run).
void Group(const Fabric& f, const HostPattern& pattern, HostAnalysis* out) {
  std::map<std::string, Host> by_name;
  for (const Node& n : f.nodes()) {
    if (n.kind != NodeKind::kCa || IsAggregationNode(n)) continue;  // an AN is in a switch, no host
    std::smatch m;
    if (!std::regex_match(n.description, m, pattern.re) || m.size() != 3 || m[1].length() == 0 || m[2].length() == 0) {
      ++out->ungrouped_cas;
      continue;
    }
    Hca hca{n.guid, m[2].str(), {}};
    for (const Port& p : n.ports) {
      if (!p.remote) continue;
      const Node* far = f.FindNode(p.remote->node_guid);
      if (far && far->kind == NodeKind::kSwitch) hca.ports.push_back({p.number, *p.remote, -1});
    }
    Host& h = by_name[m[1].str()];
    h.name = m[1].str();
    h.hcas.push_back(std::move(hca));
  }
  for (auto& [name, h] : by_name) {
    std::set<std::string> devices;
    bool unique = true;
    for (const Hca& x : h.hcas) unique = devices.insert(x.device).second && unique;
    if (!unique) {
      out->ungrouped_cas += h.hcas.size();
      continue;
    }
    std::sort(h.hcas.begin(), h.hcas.end(), [](const Hca& x, const Hca& y) { return NaturalLess(x.device, y.device); });
    out->hosts.push_back(std::move(h));
  }
  std::sort(out->hosts.begin(), out->hosts.end(),
            [](const Host& x, const Host& y) { return NaturalLess(x.name, y.name); });
  for (std::size_t i = 0; i < out->hosts.size(); ++i) {
    for (const Hca& x : out->hosts[i].hcas) out->of_ca[x.guid] = i;
  }
}

HostLayout LayoutOf(const std::vector<Host>& hosts) {
  if (hosts.empty()) return HostLayout::kNoHosts;
  std::size_t cabled = 0, multi = 0, spread = 0, together = 0;
  for (const Host& h : hosts) {
    std::size_t ports = 0;
    std::set<std::uint64_t> leaves;
    for (const Hca& x : h.hcas) {
      ports += x.ports.size();
      for (const HcaPort& p : x.ports) leaves.insert(p.leaf.node_guid);
    }
    if (ports == 0) continue;
    ++cabled;
    if (ports < 2) continue;
    ++multi;
    spread += leaves.size() == ports;
    together += leaves.size() == 1;
  }
  if (multi < 2 || multi * 2 <= cabled) return HostLayout::kSingleHca;
  if (spread * 2 > multi) return HostLayout::kRailOptimized;
  if (together * 2 > multi) return HostLayout::kHostPerLeaf;
  return HostLayout::kMixed;
}

}  // namespace

const char* ToString(HostLayout l) {
  switch (l) {
    case HostLayout::kNoHosts: return "no_hosts";
    case HostLayout::kSingleHca: return "single_hca";
    case HostLayout::kHostPerLeaf: return "host_per_leaf";
    case HostLayout::kRailOptimized: return "rail_optimized";
    case HostLayout::kMixed: return "mixed";
  }
  return "unknown";
}

bool ParseHostPattern(const std::string& text, HostPattern* pattern, std::string* error) {
  HostPattern p;
  p.text = text;
  try {
    p.re = std::regex(text);
  } catch (const std::regex_error& e) {
    *error = "not a regular expression (" + std::string(e.what()) + "): '" + text.substr(0, 80) + "'";
    return false;
  }
  if (p.re.mark_count() != 2) {
    *error = "needs exactly two groups, the host's and the device's, has " + std::to_string(p.re.mark_count()) + ": '" +
             text.substr(0, 80) + "'";
    return false;
  }
  *pattern = std::move(p);
  return true;
}

namespace {

// How the host ports spread over the leaves: per leaf, the ports of each
// (device, port) slot and the hosts it has ports of.
struct LeafCounts {
  std::map<std::uint64_t, std::map<Slot, int>> slots_on;
  std::map<std::uint64_t, std::set<std::size_t>> hosts_on;
  bool multiport = false;  // some HCA has more than one port cabled
};

// The ports of the hosts `judged` (by index).
LeafCounts CountLeaves(const HostAnalysis& a, const std::vector<bool>& judged) {
  LeafCounts c;
  for (std::size_t i = 0; i < a.hosts.size(); ++i) {
    if (!judged[i]) continue;
    for (const Hca& x : a.hosts[i].hcas) {
      c.multiport = c.multiport || x.ports.size() > 1;
      for (const HcaPort& p : x.ports) {
        ++c.slots_on[p.leaf.node_guid][{x.device, p.port}];
        c.hosts_on[p.leaf.node_guid].insert(i);
      }
    }
  }
  return c;
}

// Each leaf's rail: the slot more than half of its host ports carry; the
// rails named in natural order; each HCA port's rail.
void LearnRails(const LeafCounts& c, HostAnalysis* out) {
  std::map<std::uint64_t, Slot> majority;
  std::set<Slot> rail_slots;
  for (const auto& [leaf, counts] : c.slots_on) {
    int total = 0;
    for (const auto& [slot, n] : counts) total += n;
    for (const auto& [slot, n] : counts) {
      if (n * 2 > total) {
        majority[leaf] = slot;
        rail_slots.insert(slot);
      }
    }
  }
  std::vector<Slot> rails(rail_slots.begin(), rail_slots.end());
  std::sort(rails.begin(), rails.end(), [](const Slot& x, const Slot& y) {
    return x.first != y.first ? NaturalLess(x.first, y.first) : x.second < y.second;
  });
  std::map<Slot, int> rail_of;
  for (std::size_t r = 0; r < rails.size(); ++r) {
    rail_of[rails[r]] = static_cast<int>(r);
    out->rails.push_back(rails[r].first + (c.multiport ? " port " + std::to_string(rails[r].second) : ""));
  }
  for (const auto& [leaf, counts] : c.slots_on) {
    const auto m = majority.find(leaf);
    out->leaf_rail[leaf] = m == majority.end() ? -1 : rail_of[m->second];
  }
  for (Host& h : out->hosts) {
    for (Hca& x : h.hcas) {
      for (HcaPort& p : x.ports) {
        const auto r = rail_of.find({x.device, p.port});
        p.rail = r == rail_of.end() ? -1 : r->second;
      }
    }
  }
}

// Scalable units: leaves that share more than half the hosts of the
// smaller of the two (a cable to another unit's leaf shares one host),
// named by NameGroups.
void FindUnits(const Fabric& f, const LeafCounts& c, const std::vector<bool>& judged, HostAnalysis* out) {
  std::vector<std::uint64_t> leaves;
  std::map<std::uint64_t, std::size_t> index;
  for (const auto& [leaf, hs] : c.hosts_on) {
    index[leaf] = leaves.size();
    leaves.push_back(leaf);
  }
  std::map<std::pair<std::size_t, std::size_t>, std::size_t> shared;
  for (std::size_t i = 0; i < out->hosts.size(); ++i) {
    if (!judged[i]) continue;
    std::set<std::size_t> mine;
    for (const Hca& x : out->hosts[i].hcas) {
      for (const HcaPort& p : x.ports) mine.insert(index.at(p.leaf.node_guid));
    }
    for (auto a = mine.begin(); a != mine.end(); ++a) {
      for (auto b = std::next(a); b != mine.end(); ++b) ++shared[{*a, *b}];
    }
  }
  Sets units(leaves.size());
  for (const auto& [pair, n] : shared) {
    const std::size_t smaller =
        std::min(c.hosts_on.at(leaves[pair.first]).size(), c.hosts_on.at(leaves[pair.second]).size());
    if (n * 2 > smaller) units.Join(pair.first, pair.second);
  }
  std::map<std::size_t, std::vector<std::string>> members;  // root -> leaf names
  for (std::size_t i = 0; i < leaves.size(); ++i) members[units.Root(i)].push_back(NodeName(f, leaves[i]));
  std::vector<std::vector<std::string>> groups;
  std::map<std::size_t, std::size_t> group_of_root;
  for (auto& [r, names] : members) {
    group_of_root[r] = groups.size();
    groups.push_back(std::move(names));
  }
  NamedGroups named = NameGroups(std::move(groups), "unit");
  out->units = std::move(named.names);
  std::map<std::size_t, int> unit_of_root;
  for (const auto& [r, g] : group_of_root) unit_of_root[r] = named.position[g];
  for (std::size_t i = 0; i < leaves.size(); ++i) out->leaf_unit[leaves[i]] = unit_of_root[units.Root(i)];
}

// How findings name units, rails and where a cable belongs.
class RailNames {
 public:
  RailNames(const Fabric& f, const HostAnalysis& a) : f_(f), a_(a) {
    for (const auto& [leaf, r] : a.leaf_rail) {
      if (r >= 0) leaf_at_[{a.leaf_unit.at(leaf), r}].push_back(leaf);
    }
  }
  std::string Unit(int u) const { return u < 0 ? std::string("none") : a_.units[static_cast<std::size_t>(u)]; }
  std::string Rail(int r) const { return r < 0 ? std::string("none") : a_.rails[static_cast<std::size_t>(r)]; }
  // The leaves of a unit and rail (the first is where its cables belong).
  const std::vector<std::uint64_t>& LeavesAt(int unit, int rail) const {
    static const std::vector<std::uint64_t> kNone;
    const auto it = leaf_at_.find({unit, rail});
    return it == leaf_at_.end() ? kNone : it->second;
  }
  std::string Belongs(int unit, int rail) const {
    const auto& at = LeavesAt(unit, rail);
    if (at.empty()) return "no rail " + Rail(rail) + " leaf in " + Unit(unit);
    return "rail " + Rail(rail) + " of " + Unit(unit) + " is " + NodeName(f_, at[0]);
  }

 private:
  const Fabric& f_;
  const HostAnalysis& a_;
  std::map<std::pair<int, int>, std::vector<std::uint64_t>> leaf_at_;  // (unit, rail) -> leaves
};

// A leaf unlike the pattern: no rail of its own, or a rail its unit
// already has on another leaf.
void FindDepartingLeaves(const Fabric& f, const LeafCounts& c, const RailNames& names, HostAnalysis* out) {
  for (const auto& [leaf, r] : out->leaf_rail) {
    const int u = out->leaf_unit.at(leaf);
    if (r < 0) {
      const auto& counts = c.slots_on.at(leaf);
      int total = 0;
      for (const auto& [slot, n] : counts) total += n;
      out->findings.push_back({FindingKind::kRailLeafDeparts,
                               NodeName(f, leaf) + " has no rail: its " + std::to_string(total) + " host ports carry " +
                                   std::to_string(counts.size()) + " different devices, none on more than half",
                               leaf, std::nullopt, std::nullopt});
      continue;
    }
    const auto& same = names.LeavesAt(u, r);
    if (same.size() > 1 && same[0] != leaf) {
      out->findings.push_back({FindingKind::kRailLeafDeparts,
                               NodeName(f, leaf) + " carries rail " + names.Rail(r) + " of " + names.Unit(u) + " as " +
                                   NodeName(f, same[0]) + " does",
                               leaf, std::nullopt, std::nullopt});
    }
  }
}

// One cabled port of a host, where its leaf's rail says it is, and whether
// a finding already explains it.
struct Where {
  const Hca* hca;
  const HcaPort* port;
  int leaf_rail;
  bool flagged = false;
};

// The checks of one host's ports, in order: each explains what it can,
// and a port explained once is not blamed again.
class HostChecks {
 public:
  HostChecks(const Fabric& f, const RailNames& names, const HostAnalysis& a, const Host& h, HostAnalysis* out)
      : f_(f), names_(names), a_(a), h_(h), out_(out) {
    for (const Hca& x : h.hcas) {
      for (const HcaPort& p : x.ports) at_.push_back({&x, &p, a.leaf_rail.at(p.leaf.node_guid)});
    }
  }

  // Ports in another unit than most of the host's.
  void CrossUnit() {
    for (Where& w : at_) {
      const int u = a_.leaf_unit.at(w.port->leaf.node_guid);
      if (u == h_.unit) continue;
      w.flagged = true;
      Add(FindingKind::kRailCrossUnit, w,
          Label(w) + " is cabled to " + PortName(f_, w.port->leaf) + " in " + names_.Unit(u) + "; " + h_.name +
              "'s other HCAs are in " + names_.Unit(h_.unit) + ", where " + names_.Belongs(h_.unit, w.port->rail));
    }
  }
  // A host whose ports sit one on each of its unit's rail leaves is
  // cabled as the design has it, whatever its devices are called: device
  // names follow the host's PCIe enumeration (and its BIOS), not the
  // cables, so a host may name its HCAs otherwise than the hosts that made
  // the rails (HCA-7 where they have HCA-11), or in another order. One
  // finding for the host, information: nothing is cabled outside the
  // rails. Two ports each on the other's rail on a host whose other names
  // agree is a crossed pair of cables, left to Swapped.
  void DeviceOrder() {
    std::set<std::uint64_t> leaves;
    std::set<int> rails;
    std::vector<Where*> off;  // ports not on their own rail's leaf
    for (Where& w : at_) {
      if (w.flagged || w.leaf_rail < 0 || a_.leaf_unit.at(w.port->leaf.node_guid) != h_.unit) return;
      if (!leaves.insert(w.port->leaf.node_guid).second || !rails.insert(w.leaf_rail).second) return;
      if (w.port->rail != w.leaf_rail) off.push_back(&w);
    }
    if (off.empty() || at_.size() < 2) return;
    if (off.size() == 2 && off[0]->port->rail == off[1]->leaf_rail && off[1]->port->rail == off[0]->leaf_rail) return;
    std::string which;
    for (const Where* w : off) {
      which += (which.empty() ? "" : ", ") + w->hca->device + "[" + std::to_string(w->port->port) + "] on " +
               PortName(f_, w->port->leaf) + " (rail " + names_.Rail(w->leaf_rail) + ")";
    }
    for (Where& w : at_) w.flagged = true;
    out_->findings.push_back({FindingKind::kRailDeviceOrder,
                              h_.name + " has one port on each of " + std::to_string(at_.size()) + " rail leaves of " +
                                  names_.Unit(h_.unit) + ", but " + std::to_string(off.size()) +
                                  " of its devices are not on their rails' leaves: " + which +
                                  "; it names its HCAs otherwise than the other hosts (or its cables are in "
                                  "another order)",
                              off.front()->hca->guid, std::nullopt, std::nullopt});
  }
  // Two ports each on the other's rail: a swapped pair, said of both cables.
  void Swapped() {
    for (Where& w : at_) {
      if (w.flagged || w.leaf_rail < 0 || w.leaf_rail == w.port->rail) continue;
      for (Where& v : at_) {
        if (&v == &w || v.flagged || v.port->rail != w.leaf_rail || v.leaf_rail != w.port->rail) continue;
        const std::string detail = Label(w) + " and " + Label(v) + " are swapped: " + Label(w) + " is on " +
                                   PortName(f_, w.port->leaf) + " (rail " + names_.Rail(w.leaf_rail) + "), " +
                                   Label(v) + " on " + PortName(f_, v.port->leaf) + " (rail " +
                                   names_.Rail(v.leaf_rail) + ")";
        Add(FindingKind::kRailSwapped, w, detail);
        Add(FindingKind::kRailSwapped, v, detail);
        w.flagged = v.flagged = true;
        break;
      }
    }
  }
  // A port on a leaf of another rail than its own.
  void WrongLeaf() {
    for (Where& w : at_) {
      if (w.flagged || w.leaf_rail < 0 || w.leaf_rail == w.port->rail) continue;
      w.flagged = true;
      Add(FindingKind::kRailWrongLeaf, w,
          Label(w) + " is cabled to " + PortName(f_, w.port->leaf) + ", a rail " + names_.Rail(w.leaf_rail) +
              " leaf; " +
              (w.port->rail < 0
                   ? "no leaf carries " + w.hca->device + " port " + std::to_string(w.port->port) + " as its rail"
                   : names_.Belongs(h_.unit, w.port->rail)));
    }
  }
  // Two ports on one leaf that nothing above explains.
  void SharedLeaf() {
    for (std::size_t i = 0; i < at_.size(); ++i) {
      for (std::size_t j = i + 1; j < at_.size(); ++j) {
        const Where &w = at_[i], &v = at_[j];
        if (w.flagged || v.flagged || w.port->leaf.node_guid != v.port->leaf.node_guid) continue;
        Add(FindingKind::kRailSharedLeaf, v,
            Label(w) + " and " + Label(v) + " are both cabled to " + NodeName(f_, w.port->leaf.node_guid) + " (ports " +
                std::to_string(w.port->leaf.port) + " and " + std::to_string(v.port->leaf.port) + ")");
      }
    }
  }

 private:
  std::string Label(const Where& w) const {
    return h_.name + " " + w.hca->device + "[" + std::to_string(w.port->port) + "]";
  }
  void Add(FindingKind kind, const Where& w, std::string detail) {
    out_->findings.push_back({kind, std::move(detail), w.hca->guid, PortRef{w.hca->guid, w.port->port}, w.port->leaf});
  }

  const Fabric& f_;
  const RailNames& names_;
  const HostAnalysis& a_;
  const Host& h_;
  HostAnalysis* out_;
  std::vector<Where> at_;
};

// A host's unit: the one most of its ports are in (leaves of a unit only).
int UnitOf(const Host& h, const HostAnalysis& a) {
  std::map<int, int> ports_in;  // unit -> ports
  for (const Hca& x : h.hcas) {
    for (const HcaPort& p : x.ports) {
      if (const auto u = a.leaf_unit.find(p.leaf.node_guid); u != a.leaf_unit.end()) ++ports_in[u->second];
    }
  }
  int best = 0, unit = -1;
  for (const auto& [u, n] : ports_in) {
    if (n > best) {
      best = n;
      unit = u;
    }
  }
  return unit;
}

// Which hosts are on rails: those of a class (the same name stem and as
// many cabled ports) whose hosts mostly spread their ports over distinct
// leaves. Hosts of one design are cabled alike, and a class that puts its
// ports on one leaf is built so (a storage appliance's two HCAs, an HPC
// node's): its hosts are no rail hosts, and their ports teach no rail.
std::vector<bool> OnRails(const HostAnalysis& a) {
  std::map<std::pair<std::string, std::size_t>, std::vector<std::size_t>> classes;
  for (std::size_t i = 0; i < a.hosts.size(); ++i) {
    std::string stem;
    for (char c : a.hosts[i].name) {
      if (c < '0' || c > '9') {
        stem += c;
      } else if (stem.empty() || stem.back() != '#') {
        stem += '#';
      }
    }
    std::size_t ports = 0;
    for (const Hca& x : a.hosts[i].hcas) ports += x.ports.size();
    classes[{stem, ports}].push_back(i);
  }
  std::vector<bool> out(a.hosts.size(), false);
  for (const auto& [key, members] : classes) {
    std::vector<Host> hosts;
    for (std::size_t i : members) hosts.push_back(a.hosts[i]);
    if (LayoutOf(hosts) != HostLayout::kRailOptimized) continue;
    for (std::size_t i : members) out[i] = true;
  }
  return out;
}

}  // namespace

HostAnalysis AnalyzeHosts(const Fabric& f, const HostPattern& pattern) {
  HostAnalysis out;
  Group(f, pattern, &out);
  out.layout = LayoutOf(out.hosts);
  if (out.layout != HostLayout::kRailOptimized) return out;
  const std::vector<bool> judged = OnRails(out);
  const LeafCounts counts = CountLeaves(out, judged);
  LearnRails(counts, &out);
  FindUnits(f, counts, judged, &out);
  const RailNames names(f, out);
  FindDepartingLeaves(f, counts, names, &out);
  // Per host: its unit, then each port that is not where its rail and unit put it.
  for (Host& h : out.hosts) h.unit = UnitOf(h, out);
  for (std::size_t i = 0; i < out.hosts.size(); ++i) {
    if (!judged[i]) continue;
    const Host& h = out.hosts[i];
    HostChecks checks(f, names, out, h, &out);
    checks.CrossUnit();
    checks.DeviceOrder();
    checks.Swapped();
    checks.WrongLeaf();
    checks.SharedLeaf();
  }
  return out;
}

}  // namespace ibfabric::topology
