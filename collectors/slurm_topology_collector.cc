#include "collectors/slurm_topology_collector.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "collectors/framework/render.h"
#include "config/config_file.h"
#include "config/slurm_names.h"

namespace ibfabric::collectors {
namespace {

using config::SlurmSafe;

// Each ranked switch's name: its name as operators say it
// (topology::ShortName: an NVIDIA system's, not "MF0;...:MQM8700/U1") made
// safe, with its GUID's last six hex digits where two would share one.
std::map<std::uint64_t, std::string> SwitchNames(const topology::Fabric& fabric, const topology::Analysis& analysis) {
  std::map<std::string, int> uses;
  std::map<std::uint64_t, std::string> names;
  for (const auto& [guid, summary] : analysis.switches) {
    if (summary.tier < 0) continue;
    const topology::Node* n = fabric.FindNode(guid);
    const std::string base = SlurmSafe(n && !n->description.empty() ? topology::ShortName(n->description) : "switch");
    names[guid] = base;
    ++uses[base];
  }
  for (auto& [guid, name] : names) {
    if (uses[name] > 1) name += "_" + topology::FormatGuid(guid).substr(topology::FormatGuid(guid).size() - 6);
  }
  return names;
}

// The name and the width of its trailing number ("cn0007": "cn", 7, 4);
// width 0 where it has none.
struct Numbered {
  std::string prefix;
  unsigned long long number = 0;
  std::size_t width = 0;
};
Numbered Split(const std::string& name) {
  std::size_t digits = 0;
  while (digits < name.size() && digits < 18 &&
         std::isdigit(static_cast<unsigned char>(name[name.size() - 1 - digits])))
    ++digits;
  if (digits == 0) return {name, 0, 0};
  return {name.substr(0, name.size() - digits), std::stoull(name.substr(name.size() - digits)), digits};
}

std::string Padded(unsigned long long n, std::size_t width) {
  std::string s = std::to_string(n);
  return std::string(width > s.size() ? width - s.size() : 0, '0') + s;
}

// The scalable units as blocks, and the base block size: the servers most
// units are built of (the larger where as many units have either), which
// a unit with servers left out still is.
void AddBlocks(const topology::HostAnalysis& hosts, const std::map<int, std::set<std::string>>& placed,
               const std::map<int, std::set<std::string>>& built, SlurmTree* tree) {
  std::map<std::size_t, int> sizes;  // servers -> units of that many
  for (const auto& [unit, nodes] : built) ++sizes[nodes.size()];
  int most = 0;
  for (const auto& [size, units] : sizes) {
    if (units >= most) {
      most = units;
      tree->block_size = size;
    }
  }
  std::map<std::string, int> uses;
  for (const auto& [unit, nodes] : placed) {
    if (unit < static_cast<int>(hosts.units.size())) ++uses[SlurmSafe(hosts.units[static_cast<std::size_t>(unit)])];
  }
  for (const auto& [unit, nodes] : placed) {
    if (unit >= static_cast<int>(hosts.units.size())) continue;
    std::string name = SlurmSafe(hosts.units[static_cast<std::size_t>(unit)]);
    if (uses[name] > 1) name += "_" + std::to_string(unit + 1);
    tree->blocks.push_back({name, {nodes.begin(), nodes.end()}});
  }
}

}  // namespace

std::string HostList(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  // By prefix and width, in order of first appearance; the numbers of each.
  std::vector<std::pair<std::string, std::size_t>> order;
  std::map<std::pair<std::string, std::size_t>, std::vector<unsigned long long>> numbers;
  std::vector<std::string> plain;
  for (const std::string& name : names) {
    const Numbered n = Split(name);
    if (n.width == 0) {
      plain.push_back(name);
      continue;
    }
    const auto key = std::make_pair(n.prefix, n.width);
    if (!numbers.count(key)) order.push_back(key);
    numbers[key].push_back(n.number);
  }
  std::vector<std::string> parts;
  for (const auto& key : order) {
    std::vector<unsigned long long>& v = numbers[key];
    std::sort(v.begin(), v.end());
    if (v.size() == 1) {
      parts.push_back(key.first + Padded(v[0], key.second));
      continue;
    }
    std::string ranges;
    for (std::size_t i = 0; i < v.size();) {
      std::size_t j = i;
      while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
      ranges += (ranges.empty() ? "" : ",") + Padded(v[i], key.second) +
                (j > i ? "-" + Padded(v[j], key.second) : std::string());
      i = j + 1;
    }
    parts.push_back(key.first + "[" + ranges + "]");
  }
  parts.insert(parts.end(), plain.begin(), plain.end());
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

namespace {

// The switches `tree` lists, by level then name: the leaves with their
// hosts, and a switch above the leaves with the switches one tier below it
// it is cabled to that the file lists.
void ListSwitches(const topology::Fabric& fabric, std::map<std::uint64_t, SlurmSwitch> switches, SlurmTree* out) {
  SlurmTree& tree = *out;
  // A switch above the leaves: the switches one tier below it it is cabled
  // to that the file lists. A switch with neither hosts nor such children
  // (a rail leaf whose servers are listed under their rail-0 leaf) is not
  // listed, nor named as a child: Slurm takes only switches it was told of.
  int top = 0;
  for (const auto& [guid, s] : switches) top = std::max(top, s.level);
  std::set<std::uint64_t> listed;
  for (int level = 0; level <= top; ++level) {
    for (auto& [guid, s] : switches) {
      if (s.level != level) continue;
      std::set<std::string> children;
      if (const topology::Node* n = level > 0 ? fabric.FindNode(guid) : nullptr) {
        for (const topology::Port& p : n->ports) {
          if (!p.remote || !listed.count(p.remote->node_guid)) continue;
          const auto child = switches.find(p.remote->node_guid);
          if (child->second.level == level - 1) children.insert(child->second.name);
        }
      }
      s.switches.assign(children.begin(), children.end());
      if (!s.nodes.empty() || !s.switches.empty()) listed.insert(guid);
    }
  }
  for (auto& [guid, s] : switches) {
    std::sort(s.nodes.begin(), s.nodes.end());
    if (listed.count(guid)) tree.switches.push_back(std::move(s));
  }
  std::sort(tree.switches.begin(), tree.switches.end(), [](const SlurmSwitch& a, const SlurmSwitch& b) {
    return a.level != b.level ? a.level < b.level : a.name < b.name;
  });
}

}  // namespace

SlurmTree BuildSlurmTree(const topology::Fabric& fabric, const topology::Analysis& analysis,
                         const topology::HostAnalysis& hosts, const std::map<std::string, std::string>& names) {
  const std::map<std::uint64_t, std::string> switch_names = SwitchNames(fabric, analysis);
  std::map<std::uint64_t, SlurmSwitch> switches;
  for (const auto& [guid, name] : switch_names) switches[guid] = {name, guid, analysis.switches.at(guid).tier, {}, {}};
  // Each host (or CA in no host, by the first word of its description, as
  // HostOfDevice names it): its first cabled port's leaf, and whether any
  // of its ports is up.
  struct Candidate {
    std::string name;
    std::uint64_t leaf = 0;
    bool up = false;
    int unit = -1;        // its scalable unit, on a rail-optimized fabric
    std::set<int> rails;  // rail-optimized: the rails of its ports up
  };
  std::vector<Candidate> candidates;
  const auto note_port = [&fabric](Candidate& c, std::uint64_t ca, std::uint8_t number) {
    const topology::Port* port = fabric.FindPort({ca, number});
    if (!port) return;
    if (c.leaf == 0 && port->remote) c.leaf = port->remote->node_guid;
    c.up = c.up || port->link_up();
  };
  for (const topology::Host& host : hosts.hosts) {
    Candidate c;
    c.name = host.name;
    const bool rail_optimized = hosts.layout == topology::HostLayout::kRailOptimized;
    if (rail_optimized) c.unit = host.unit;
    for (const topology::Hca& hca : host.hcas) {
      for (const topology::HcaPort& p : hca.ports) {
        note_port(c, hca.guid, p.port);
        const topology::Port* port = fabric.FindPort({hca.guid, p.port});
        if (rail_optimized && p.rail >= 0 && port && port->link_up()) c.rails.insert(p.rail);
      }
    }
    candidates.push_back(std::move(c));
  }
  for (const topology::Node& n : fabric.nodes()) {
    if (!topology::IsHca(n) || hosts.of_ca.count(n.guid)) continue;
    Candidate c;
    c.name = config::FirstWordName(n.description);
    if (c.name.empty()) continue;
    for (const topology::Port& p : n.ports) note_port(c, n.guid, p.number);
    candidates.push_back(std::move(c));
  }
  // Pods as /api/v1/structure groups the switches: a leaf's is its
  // hosts' spine group.
  const topology::Pods pods = topology::FindPods(fabric, analysis, &hosts.leaf_unit);
  SlurmTree tree;
  std::set<std::string> placed;
  std::map<int, std::set<std::string>> unit_nodes, unit_built;  // unit -> placed nodes, every node
  for (const Candidate& c : candidates) {
    const auto named = names.find(c.name);
    const std::string node = named == names.end() ? c.name : named->second;
    if (c.unit >= 0) unit_built[c.unit].insert(node);
    const auto leaf = switches.find(c.leaf);
    if (!c.up || leaf == switches.end()) {
      tree.left_out.push_back(node);
      continue;
    }
    if (!placed.insert(node).second) continue;  // a host's other CA
    leaf->second.nodes.push_back(node);
    if (c.unit >= 0) unit_nodes[c.unit].insert(node);
    ++tree.nodes;
    const auto pod = pods.of.find(c.leaf);
    tree.placement[node] = {c.name, leaf->second.name,
                            pod == pods.of.end() ? "" : SlurmSafe(pods.names[static_cast<std::size_t>(pod->second)]),
                            "", static_cast<int>(c.rails.size())};
  }
  AddBlocks(hosts, unit_nodes, unit_built, &tree);
  for (const SlurmBlock& b : tree.blocks) {
    for (const std::string& node : b.nodes) tree.placement[node].unit = b.name;
  }
  ListSwitches(fabric, std::move(switches), &tree);
  std::sort(tree.left_out.begin(), tree.left_out.end());
  tree.left_out.erase(std::unique(tree.left_out.begin(), tree.left_out.end()), tree.left_out.end());
  std::erase_if(tree.left_out, [&placed](const std::string& n) { return placed.count(n) > 0; });
  return tree;
}

std::string TopologyConf(const SlurmTree& tree) {
  std::string out =
      "# topology.conf for Slurm's topology/tree plugin, from the InfiniBand fabric as ibfabric_exporter last "
      "walked it\n";
  if (!tree.left_out.empty())
    out += "# left out (no port up, or cabled to no switch of the tree): " + HostList(tree.left_out) + "\n";
  for (const SlurmSwitch& s : tree.switches) {
    out += "SwitchName=" + s.name;
    if (!s.nodes.empty()) out += " Nodes=" + HostList(s.nodes);
    if (!s.switches.empty()) out += " Switches=" + HostList(s.switches);
    out += "\n";
  }
  return out;
}

std::string TopologyYaml(const SlurmTree& tree) {
  YAML::Emitter y;
  y << YAML::BeginSeq;
  y << YAML::BeginMap << YAML::Key << "topology" << YAML::Value << "infiniband_tree";
  y << YAML::Key << "cluster_default" << YAML::Value << true;
  y << YAML::Key << "tree" << YAML::Value << YAML::BeginMap << YAML::Key << "switches" << YAML::Value << YAML::BeginSeq;
  for (const SlurmSwitch& s : tree.switches) {
    y << YAML::BeginMap << YAML::Key << "switch" << YAML::Value << s.name;
    if (!s.switches.empty()) y << YAML::Key << "children" << YAML::Value << HostList(s.switches);
    if (!s.nodes.empty()) y << YAML::Key << "nodes" << YAML::Value << HostList(s.nodes);
    y << YAML::EndMap;
  }
  y << YAML::EndSeq << YAML::EndMap << YAML::EndMap;
  if (!tree.blocks.empty()) {
    y << YAML::BeginMap << YAML::Key << "topology" << YAML::Value << "infiniband_units";
    y << YAML::Key << "cluster_default" << YAML::Value << false;
    y << YAML::Key << "block" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "block_sizes" << YAML::Value << YAML::Flow << YAML::BeginSeq << tree.block_size << YAML::EndSeq;
    y << YAML::Key << "blocks" << YAML::Value << YAML::BeginSeq;
    for (const SlurmBlock& b : tree.blocks) {
      y << YAML::BeginMap << YAML::Key << "block" << YAML::Value << b.name << YAML::Key << "nodes" << YAML::Value
        << HostList(b.nodes) << YAML::EndMap;
    }
    y << YAML::EndSeq << YAML::EndMap << YAML::EndMap;
  }
  y << YAML::EndSeq;
  std::string out =
      "# topology.yaml for Slurm's topology plugins (25.05 and later), from the InfiniBand fabric as "
      "ibfabric_exporter last walked it\n";
  if (!tree.left_out.empty())
    out += "# left out (no port up, or cabled to no switch of the tree): " + HostList(tree.left_out) + "\n";
  return out + y.c_str() + "\n";
}

nlohmann::json SlurmTreeJson(const SlurmTree& tree) {
  nlohmann::json switches = nlohmann::json::array();
  for (const SlurmSwitch& s : tree.switches) {
    switches.push_back({{"name", s.name},
                        {"guid", topology::FormatGuid(s.guid)},
                        {"level", s.level},
                        {"nodes", s.nodes},
                        {"switches", s.switches}});
  }
  nlohmann::json blocks = nlohmann::json::array();
  for (const SlurmBlock& b : tree.blocks) blocks.push_back({{"name", b.name}, {"nodes", b.nodes}});
  return {{"switches", std::move(switches)},
          {"nodes", tree.nodes},
          {"blocks", std::move(blocks)},
          {"block_size", tree.block_size},
          {"left_out", tree.left_out}};
}

nlohmann::json PlacementJson(const std::string& node, const SlurmPlacement& p) {
  const auto or_null = [](const std::string& v) { return v.empty() ? nlohmann::json(nullptr) : nlohmann::json(v); };
  return {{"host", p.host},          {"node", node},
          {"leaf", p.leaf},          {"spine_group", or_null(p.spine_group)},
          {"unit", or_null(p.unit)}, {"rails", p.unit.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.rails)}};
}

namespace {

class SlurmTopologyCollector final : public Collector {
 public:
  explicit SlurmTopologyCollector(std::map<std::string, std::string> names) : names_(std::move(names)) {}

  Schedule schedule() const override { return Schedule::kDiscovery; }

  // Again whenever fat_tree published another analysis (its parts are
  // immutable: another pointer is another analysis).
  Outcome Update(const Cycle& cycle) override {
    const Snapshot& s = *cycle.parts;
    if (!cycle.scope.reports_topology() || !s.topology || !s.hosts) {
      tree_.reset();
      return {};
    }
    if (s.topology == analysis_ && s.hosts == hosts_ && tree_) return {};
    analysis_ = s.topology;
    hosts_ = s.hosts;
    auto tree = std::make_shared<SlurmTree>(BuildSlurmTree(*cycle.fabric, *s.topology, *s.hosts, names_));
    // A host seen before and gone from the fabric (its every cable down:
    // nothing reaches it) is left out too, and said so.
    for (const std::string& node : tree->left_out) seen_.insert(node);
    std::set<std::string> placed;
    for (const SlurmSwitch& sw : tree->switches) placed.insert(sw.nodes.begin(), sw.nodes.end());
    std::set<std::string> left(tree->left_out.begin(), tree->left_out.end());
    for (const std::string& node : seen_) {
      if (!placed.count(node)) left.insert(node);
    }
    seen_.insert(placed.begin(), placed.end());
    tree->left_out.assign(left.begin(), left.end());
    tree_ = std::move(tree);
    return {};
  }

  void Publish(Snapshot* parts) const override { parts->by_collector.Set(kSlurmTopologyCollector, tree_); }

 private:
  std::map<std::string, std::string> names_;
  std::shared_ptr<const topology::Analysis> analysis_;
  std::shared_ptr<const topology::HostAnalysis> hosts_;
  std::set<std::string> seen_;  // every Slurm node ever placed
  std::shared_ptr<const SlurmTree> tree_;
};

// An endpoint of the tree: no parameters; 404 where this exporter reports
// no topology, 503 before the first walk's analysis; else `write`'s body.
ApiRoute TreeRoute(std::string_view path, std::string_view title, ApiReply (*write)(const SlurmTree&)) {
  return {path, title, [path, write](const Snapshot& s, const ApiParams& params) -> ApiReply {
            if (!params.empty()) return {400, nullptr, std::string(path) + " takes no parameters", "", ""};
            const auto* tree = s.by_collector.Get<SlurmTree>(kSlurmTopologyCollector);
            if (!tree) return Absent(s, "no discovery has completed yet", "reports no topology");
            return write(*tree);
          }};
}
ApiReply ConfBody(const SlurmTree& t) { return {200, nullptr, "", TopologyConf(t), "text/plain; charset=utf-8"}; }
ApiReply YamlBody(const SlurmTree& t) { return {200, nullptr, "", TopologyYaml(t), "application/yaml; charset=utf-8"}; }
ApiReply JsonBody(const SlurmTree& t) { return {200, SlurmTreeJson(t), "", "", ""}; }

// GET /api/v1/placement[?host=NAME] (the fabric's name or the Slurm one):
// every placed host, or that one.
ApiReply PlacementReply(const Snapshot& s, const ApiParams& params) {
  std::string host;
  for (const auto& [key, value] : params) {
    if (key != "host" || !host.empty() || value.empty() || value.size() > 200) {
      return {400, nullptr, "/api/v1/placement takes host=NAME (once, 1 to 200 characters) and nothing else", "", ""};
    }
    host = value;
  }
  const auto* tree = s.by_collector.Get<SlurmTree>(kSlurmTopologyCollector);
  if (!tree) return Absent(s, "no discovery has completed yet", "reports no topology");
  if (host.empty()) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& [node, p] : tree->placement) all.push_back(PlacementJson(node, p));
    return {200, {{"hosts", std::move(all)}, {"left_out", tree->left_out}}, "", "", ""};
  }
  for (const auto& [node, p] : tree->placement) {
    if (node == host || p.host == host) return {200, PlacementJson(node, p), "", "", ""};
  }
  const bool left_out = std::find(tree->left_out.begin(), tree->left_out.end(), host) != tree->left_out.end();
  return {404, nullptr,
          left_out ? "host " + host + " is left out of the tree (no port up, or cabled to no switch of it)"
                   : "no host " + host + " in the fabric",
          "", ""};
}

}  // namespace

std::unique_ptr<Collector> MakeSlurmTopologyCollector(const CollectorOptions& options) {
  return std::make_unique<SlurmTopologyCollector>(options.slurm_node_names);
}

void RenderSlurmTopology(const Snapshot& s, const Emit& out) {
  const auto* tree = s.by_collector.Get<SlurmTree>(kSlurmTopologyCollector);
  if (!tree) return;
  EmitOne(out, "infiniband_slurm_topology_switches",
          "Switches in the Slurm topology.conf the exporter writes (/api/v1/slurm/topology.conf)",
          prometheus::MetricType::Gauge, static_cast<double>(tree->switches.size()));
  EmitOne(out, "infiniband_slurm_topology_nodes", "Slurm nodes placed under a leaf switch in that topology.conf",
          prometheus::MetricType::Gauge, static_cast<double>(tree->nodes));
  EmitOne(out, "infiniband_slurm_topology_nodes_left_out",
          "Slurm nodes left out of that topology.conf: no port of theirs up (now, or gone since seen)",
          prometheus::MetricType::Gauge, static_cast<double>(tree->left_out.size()));
  EmitOne(out, "infiniband_slurm_topology_blocks",
          "Blocks (scalable units of a rail-optimized fabric) in the Slurm topology.yaml the exporter writes "
          "(/api/v1/slurm/topology.yaml); 0 where the fabric has none",
          prometheus::MetricType::Gauge, static_cast<double>(tree->blocks.size()));
}

CollectorInfo SlurmTopologyCollectorInfo() {
  return {
      .name = kSlurmTopologyCollector,
      .help =
          "The fabric's tree (and its scalable units as blocks) as Slurm's topology plugins read it "
          "(/api/v1/slurm/topology.conf, /api/v1/slurm/topology.yaml), hosts named as Slurm knows them "
          "(--slurm.node-name-map).",
      .make = MakeSlurmTopologyCollector,
      .render = RenderSlurmTopology,
      .reads = {"fat_tree"},
      .routes = {TreeRoute("/api/v1/slurm/topology.conf", "Slurm topology.conf", ConfBody),
                 TreeRoute("/api/v1/slurm/topology.yaml", "Slurm topology.yaml", YamlBody),
                 TreeRoute("/api/v1/slurm/topology", "Slurm topology JSON", JsonBody),
                 {"/api/v1/placement", "Host placement JSON", PlacementReply}},
  };
}

}  // namespace ibfabric::collectors
