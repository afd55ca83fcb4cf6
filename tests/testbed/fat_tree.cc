#include "tests/testbed/fat_tree.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

namespace ibfabric::testbed {
namespace {

std::string Name(const char* fmt, int n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, n);
  return buf;
}

std::string Str(const Endpoint& e) { return "\"" + e.node + "\"[" + std::to_string(e.port) + "]"; }

}  // namespace

FatTree FatTree::Generate(const FatTreeSpec& spec) {
  FatTreeSpec s = spec;
  if (s.rails.units > 0) {
    if (s.rails.devices.empty()) {
      for (int k = 0; k < 8; ++k) s.rails.devices.push_back(Name("mlx5_%d", k));
    }
    if (s.rails.servers < 1 || s.hcas_per_host > 0) {
      throw std::invalid_argument("rails need servers, and no hcas_per_host");
    }
    if (s.rails.ports_per_hca < 1 || s.rails.ports_per_hca > 2) throw std::invalid_argument("HCAs have 1 or 2 ports");
    const int rails = static_cast<int>(s.rails.devices.size()) * s.rails.ports_per_hca;
    if (s.pods > 0 && (s.rails.units % s.pods != 0 || s.spines % rails != 0)) {
      throw std::invalid_argument("rails in pods need units divisible by pods and spines by rails");
    }
    s.leaves = s.rails.units / std::max(s.pods, 1) * rails;  // a pod's
    s.hosts_per_leaf = s.rails.servers;
  }
  FatTree t;
  t.spec_ = s;
  const int leaf_up = t.SpinesOfLeaf(), spine_down = t.LeavesOfSpine();
  if (s.leaves < 1 || s.spines < 0 || s.hosts_per_leaf < 0 || s.links_per_pair < 1) {
    throw std::invalid_argument("fat tree needs at least one leaf and one link per pair");
  }
  if (s.pods < 0 || (s.pods > 0 && (s.spines < 1 || s.cores % (t.RailPods() ? leaf_up : s.spines) != 0))) {
    throw std::invalid_argument(
        "pods need aggregation switches and a number of cores divisible by them (with rails: by a rail's)");
  }
  // Cores each aggregation switch is cabled to, and core ports used.
  const int core_group = t.CoreGroup();
  const int core_down = (t.RailPods() ? s.pods * t.Rails() : s.pods > 0 ? s.pods : s.spines) * s.core_links;
  if (s.hosts_per_leaf + leaf_up * s.links_per_pair > s.radix) {
    throw std::invalid_argument("leaf needs " + std::to_string(s.hosts_per_leaf + leaf_up * s.links_per_pair) +
                                " ports, radix is " + std::to_string(s.radix));
  }
  if (spine_down * s.links_per_pair + core_group * s.core_links > s.radix) {
    throw std::invalid_argument("spine needs " +
                                std::to_string(spine_down * s.links_per_pair + core_group * s.core_links) +
                                " ports, radix is " + std::to_string(s.radix));
  }
  if (core_down > s.radix) {
    throw std::invalid_argument("core needs " + std::to_string(core_down) + " ports, radix is " +
                                std::to_string(s.radix));
  }
  const int pods = std::max(s.pods, 1);
  for (int p = 1; p <= pods; ++p) {
    const std::string pod = s.pods > 0 ? Name("ib-p%02d-", p) : "ib-";
    const int rails = t.Rails();
    const int units_before = (p - 1) * (s.leaves / std::max(rails, 1));  // rails: the units of earlier pods
    for (int l = 1; l <= s.leaves; ++l) {
      t.leaves_.push_back(s.rails.units > 0 ? Name(s.rails.units > 99 ? "ib-su%03d-" : "ib-su%02d-",
                                                   units_before + (l - 1) / rails + 1) +
                                                  Name("leaf%02d", (l - 1) % rails + 1)
                                            : pod + Name("leaf%02d", l));
    }
    for (int sp = 1; sp <= s.spines; ++sp) {
      t.spines_.push_back(pod + Name(s.pods > 0 ? (s.spines > 99 ? "agg%03d" : "agg%02d") : "spine%02d", sp));
    }
  }
  for (int c = 1; c <= s.cores; ++c) t.cores_.push_back(Name(s.pods > 0 ? "ib-core%03d" : "ib-core%02d", c));
  const int hosts = pods * s.leaves * s.hosts_per_leaf;
  if (s.rails.units > 0) {
    // Server by server, an HCA per device; port s of leaf (u, r) to rail r of server s of unit u.
    const int rails = static_cast<int>(s.rails.devices.size()) * s.rails.ports_per_hca;
    for (int u = 1; u <= s.rails.units; ++u) {
      for (int sv = 1; sv <= s.rails.servers; ++sv) {
        for (const auto& d : s.rails.devices) t.hosts_.push_back(t.Server(u, sv) + " " + d);
      }
    }
    for (int u = 1; u <= s.rails.units; ++u) {
      for (int r = 1; r <= rails; ++r) {
        for (int sv = 1; sv <= s.rails.servers; ++sv)
          t.cables_.push_back({{t.RailLeaf(u, r), sv}, t.RailHca(u, sv, r), s.rate});
      }
    }
  } else {
    for (int h = 1; h <= hosts; ++h) {
      if (s.hcas_per_host > 0) {
        t.hosts_.push_back(Name("cn%04d ", (h - 1) / s.hcas_per_host + 1) + Name("mlx5_%d", (h - 1) % s.hcas_per_host));
      } else {
        t.hosts_.push_back(Name(hosts > 9999 ? "cn%05d" : "cn%04d", h));
      }
    }
    for (int h = 1; h <= static_cast<int>(t.hosts_.size()); ++h) {
      t.cables_.push_back({t.LeafHostPort(h), t.HostPort(h), s.rate});
    }
  }
  for (int p = 0; p < pods; ++p) {
    for (int l = p * s.leaves + 1; l <= (p + 1) * s.leaves; ++l) {
      for (int sp = 1; sp <= s.spines; ++sp) {
        // Rails in pods: only the leaf's own rail spines.
        if (t.RailPods() && (sp - 1) / leaf_up != (l - 1) % t.Rails()) continue;
        for (int k = 0; k < s.links_per_pair; ++k) {
          t.cables_.push_back({t.LeafUplink(l, sp, k), t.SpineDownlink(p * s.spines + sp, l, k), s.rate});
        }
      }
    }
  }

  for (int sp = 1; sp <= static_cast<int>(t.spines_.size()); ++sp) {
    // Without pods every spine reaches every core; with pods, its group.
    const int first = s.pods > 0 ? t.GroupOfSpine(sp) * core_group + 1 : 1;
    for (int c = first; c < first + core_group; ++c) {
      for (int k = 0; k < s.core_links; ++k)
        t.cables_.push_back({t.SpineUplink(sp, c, k), t.CoreDownlink(c, sp, k), s.rate});
    }
  }

  auto find = [&t](const Endpoint& e) -> Cable* {
    for (auto& c : t.cables_) {
      if (c.a == e || c.b == e) return &c;
    }
    return nullptr;
  };
  auto far_of = [](Cable& c, const Endpoint& e) -> Endpoint& { return c.a == e ? c.b : c.a; };

  for (const auto& [x, y] : s.swaps) {
    Cable* cx = find(x);
    Cable* cy = find(y);
    if (!cx || !cy || cx == cy)
      throw std::invalid_argument("swap: no two distinct cables at " + Str(x) + " and " + Str(y));
    std::swap(far_of(*cx, x), far_of(*cy, y));
  }
  for (const auto& e : s.missing) {
    auto it = std::find_if(t.cables_.begin(), t.cables_.end(), [&e](const Cable& c) { return c.a == e || c.b == e; });
    if (it == t.cables_.end()) throw std::invalid_argument("missing: no cable at " + Str(e));
    t.cables_.erase(it);
  }
  // The next free port of a switch, after the ports the layout uses.
  std::map<std::string, int> next_spare;
  auto spare = [&](const std::string& n, int first, const char* what) {
    int& p = next_spare.try_emplace(n, first).first->second;
    if (p > s.radix) throw std::invalid_argument(std::string(what) + ": " + n + " has no spare port");
    return Endpoint{n, p++};
  };
  const int leaf_spare = s.hosts_per_leaf + leaf_up * s.links_per_pair + 1;
  const int spine_spare = spine_down * s.links_per_pair + core_group * s.core_links + 1;
  const int core_spare = core_down + 1;
  for (const auto& [i, j] : s.leaf_links) {
    if (i < 1 || j < 1 || i > static_cast<int>(t.leaves_.size()) || j > static_cast<int>(t.leaves_.size()) || i == j) {
      throw std::invalid_argument("leaf link: bad leaves " + std::to_string(i) + "," + std::to_string(j));
    }
    const Endpoint a = spare(t.Leaf(i), leaf_spare, "leaf link");
    const Endpoint b = spare(t.Leaf(j), leaf_spare, "leaf link");
    t.cables_.push_back({a, b, s.rate});
  }
  for (const auto& [l, c] : s.skip_links) {
    if (l < 1 || l > static_cast<int>(t.leaves_.size()) || c < 1 || c > s.cores) {
      throw std::invalid_argument("skip link: bad leaf " + std::to_string(l) + " or core " + std::to_string(c));
    }
    const Endpoint a = spare(t.Leaf(l), leaf_spare, "skip link");
    const Endpoint b = spare(t.Core(c), core_spare, "skip link");
    t.cables_.push_back({a, b, s.rate});
  }
  for (std::size_t i = 0; i < s.spine_cas.size(); ++i) {
    const int sp = s.spine_cas[i];
    if (sp < 1 || sp > static_cast<int>(t.spines_.size()))
      throw std::invalid_argument("spine CA: bad spine " + std::to_string(sp));
    const Endpoint port = spare(t.Spine(sp), spine_spare, "spine CA");
    const std::string ca = Name("storage%02d", static_cast<int>(i) + 1);
    t.hosts_.push_back(ca);
    t.cables_.push_back({port, {ca, 1}, s.rate});
  }
  if (s.aggregation_nodes) {
    std::vector<std::pair<const std::vector<std::string>*, int>> tiers{
        {&t.leaves_, leaf_spare}, {&t.spines_, spine_spare}, {&t.cores_, core_spare}};
    for (const auto& [switches, first] : tiers) {
      for (const std::string& sw : *switches) {
        const Endpoint port = spare(sw, first, "aggregation node");
        char id[32];
        std::snprintf(id, sizeof id, "H-%016llx",
                      0xa9900000000000ULL + static_cast<unsigned long long>(t.aggregation_nodes_.size()));
        t.aggregation_nodes_.push_back(id);
        t.cables_.push_back({port, {id, 1}, s.rate});
      }
    }
  }
  for (const auto& [e, to] : s.moves) {
    Cable* c = find(e);
    if (!c) throw std::invalid_argument("move: no cable at " + Str(e));
    if (std::find(t.leaves_.begin(), t.leaves_.end(), to) == t.leaves_.end()) {
      throw std::invalid_argument("move: no leaf " + to);
    }
    far_of(*c, e) = spare(to, leaf_spare, "move");
  }
  for (const auto& [e, rate] : s.degraded) {
    Cable* c = find(e);
    if (!c) throw std::invalid_argument("degraded: no cable at " + Str(e));
    c->rate = rate;
  }
  return t;
}

Endpoint FatTree::HostPort(int h) const { return {Host(h), 1}; }

Endpoint FatTree::LeafHostPort(int h) const {
  const int H = spec_.hosts_per_leaf;
  return {Leaf((h - 1) / H + 1), (h - 1) % H + 1};
}

Endpoint FatTree::LeafUplink(int l, int s, int k) const {
  // Rails in pods: the j-th of its rail's spines.
  const int local = spec_.pods > 0 ? (s - 1) % spec_.spines + 1 : s;
  const int j = RailPods() ? (local - 1) % SpinesOfLeaf() + 1 : local;
  return {Leaf(l), spec_.hosts_per_leaf + (j - 1) * spec_.links_per_pair + k + 1};
}

Endpoint FatTree::SpineDownlink(int s, int l, int k) const {
  const int local = spec_.pods > 0 ? (l - 1) % spec_.leaves + 1 : l;
  // Rails in pods: the leaf of the pod's u-th unit on the spine's rail.
  const int slot = RailPods() ? (local - 1) / Rails() + 1 : local;
  return {Spine(s), (slot - 1) * spec_.links_per_pair + k + 1};
}

Endpoint FatTree::SpineUplink(int s, int c, int k) const {
  // With pods, the j-th core of the spine's group.
  const int j = spec_.pods > 0 ? (c - 1) % CoreGroup() + 1 : c;
  return {Spine(s), LeavesOfSpine() * spec_.links_per_pair + (j - 1) * spec_.core_links + k + 1};
}

Endpoint FatTree::CoreDownlink(int c, int s, int k) const {
  // Rails in pods: a slot per pod and rail.
  int slot = spec_.pods > 0 ? PodOfSpine(s) : s;
  if (RailPods()) slot = (PodOfSpine(s) - 1) * Rails() + ((s - 1) % spec_.spines) / SpinesOfLeaf() + 1;
  return {Core(c), (slot - 1) * spec_.core_links + k + 1};
}

std::string FatTree::Server(int u, int s) const { return Name("gpu%04d", (u - 1) * spec_.rails.servers + s); }

Endpoint FatTree::RailHca(int u, int s, int r) const {
  const int ports = spec_.rails.ports_per_hca;
  return {Server(u, s) + " " + spec_.rails.devices.at(static_cast<std::size_t>((r - 1) / ports)), (r - 1) % ports + 1};
}

std::string FatTree::RailLeaf(int u, int r) const {
  return Leaf((u - 1) * static_cast<int>(spec_.rails.devices.size()) * spec_.rails.ports_per_hca + r);
}

std::vector<int> FatTree::CabledPorts(const std::string& node) const {
  std::vector<int> out;
  for (const auto& c : cables_) {
    if (c.a.node == node) out.push_back(c.a.port);
    if (c.b.node == node) out.push_back(c.b.port);
  }
  std::sort(out.begin(), out.end());
  return out;
}

const Endpoint* FatTree::Peer(const Endpoint& e) const {
  for (const auto& c : cables_) {
    if (c.a == e) return &c.b;
    if (c.b == e) return &c.a;
  }
  return nullptr;
}

std::string FatTree::NetFile() const {
  // Every cable is written from both ends; ibsim needs both ends' notes to agree.
  std::map<std::string, std::vector<std::pair<int, std::string>>> lines;
  std::set<std::string> is_host(hosts_.begin(), hosts_.end());
  is_host.insert(aggregation_nodes_.begin(), aggregation_nodes_.end());
  for (const auto& c : cables_) {
    for (int side = 0; side < 2; ++side) {
      const Endpoint& me = side ? c.b : c.a;
      const Endpoint& peer = side ? c.a : c.b;
      std::string line = "[" + std::to_string(me.port) + "] " + Str(peer);
      if (!c.rate.empty()) {
        line += is_host.count(me.node) ? "  # lid 0 lmc 0 \"" + peer.node + "\" lid 0 " + c.rate
                                       : "  # \"" + peer.node + "\" lid 0 " + c.rate;
      }
      lines[me.node].emplace_back(me.port, line);
    }
  }
  std::ostringstream out;
  out << "# generated fat tree: " << spec_.leaves << " leaves, " << spec_.spines << " spines, " << spec_.hosts_per_leaf
      << " hosts per leaf, " << spec_.links_per_pair << " links per leaf-spine pair, radix " << spec_.radix << "\n\n";
  auto emit = [&](const std::string& header, const std::string& node) {
    out << header << " \"" << node << "\"\n";
    auto& v = lines[node];
    std::sort(v.begin(), v.end());
    for (const auto& [port, line] : v) out << line << "\n";
    out << "\n";
  };
  for (const auto& n : leaves_) emit("Switch " + std::to_string(spec_.radix), n);
  for (const auto& n : spines_) emit("Switch " + std::to_string(spec_.radix), n);
  for (const auto& n : cores_) emit("Switch " + std::to_string(spec_.radix), n);
  for (const auto& n : hosts_) emit("Hca " + std::to_string(spec_.rails.units > 0 ? spec_.rails.ports_per_hca : 1), n);
  for (const auto& n : aggregation_nodes_) {
    out << "Hca 1 \"" << n << "\"  # \"Mellanox Technologies Aggregation Node\"\n";
    for (const auto& [port, line] : lines[n]) out << line << "\n";
    out << "\n";
  }
  return out.str();
}

std::string FatTree::YamlPlan(bool by_host) const {
  std::ostringstream out;
  out << "# generated fat tree cabling plan\nlinks:\n";
  const auto end = [by_host](const Endpoint& e) {
    const auto space = e.node.find(' ');
    if (by_host && space != std::string::npos) {
      return "{host: \"" + e.node.substr(0, space) + "\", hca: \"" + e.node.substr(space + 1) +
             "\", port: " + std::to_string(e.port) + "}";
    }
    return "{node: \"" + e.node + "\", port: " + std::to_string(e.port) + "}";
  };
  for (const auto& c : cables_) {
    out << "  - a: " << end(c.a) << "\n"
        << "    b: " << end(c.b) << "\n";
    if (!c.rate.empty()) out << "    rate: " << c.rate << "\n";
  }
  out << "tiers:\n";
  for (const auto& [names, tier] : {std::pair{&leaves_, "leaf"}, {&spines_, "spine"}, {&cores_, "core"}}) {
    for (const auto& n : *names) out << "  \"" << n << "\": " << tier << "\n";
  }
  return out.str();
}

}  // namespace ibfabric::testbed
