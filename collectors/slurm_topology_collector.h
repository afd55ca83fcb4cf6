#pragma once
// slurm_topology: the fabric's tree as Slurm's topology/tree plugin reads
// it (topology.conf: one line a switch, "SwitchName=NAME Nodes=..." for a
// leaf, "SwitchName=NAME Switches=..." above), from the live fabric at each
// discovery, so that the scheduler places a job under as few switches as the
// fabric allows. Only where this exporter reports topology. No MAD: it reads
// fat_tree's part (the tiers, and the hosts grouped from the CAs'
// descriptions).
//
// - A switch lists the hosts cabled to it (the leaves theirs; a storage
//   node on a spine is the spine's); a host is listed under the switch of
//   its first HCA's first cabled port (rail 0 on a rail-optimized fabric:
//   each host once, as Slurm's tree wants), named as Slurm knows it:
//   --slurm.node-name-map (FABRIC_HOST SLURM_NODE per line), else the host's
//   name in the fabric (rdma-ndd's "%h"; a CA in no host by the first word
//   of its description).
// - A switch above lists the switches one tier below it that it is cabled
//   to. A switch without a tier (no tree) is left out.
// - A host none of whose HCA ports is up, or cabled to no switch of the tree,
//   is left out, and said so: a comment line of the file, the JSON's
//   `left_out`, a gauge. So is one placed before and gone from the fabric
//   since (its every cable down: nothing reaches it), for the exporter's
//   lifetime.
// - Switch names are their names as operators say them (topology::ShortName)
//   made Slurm-safe (letters,
//   digits, '.', '-', '_'; others '_'), with "_" and the GUID's last six hex
//   digits where two would share one; lists are Slurm hostlists
//   ("cn[0001-0004],login1").
//
// - On a rail-optimized fabric (topology/hosts.h: servers whose HCAs sit on
//   their scalable unit's rail leaves), each scalable unit is also a block
//   of Slurm's topology/block plugin: a unit's servers reach each other
//   through their own rail leaves, one hop, on every rail, so a job inside
//   one unit never crosses a spine. The base block size is the servers a
//   unit is built of (the most units have, left-out servers counted).
//   topology.yaml (Slurm 25.05 and later) holds the tree as the cluster's
//   default topology ("infiniband_tree") and, where there are units, the
//   blocks as a second one ("infiniband_units") a partition may name.
//
// Part: SlurmTree under "slurm_topology". Metrics:
// infiniband_slurm_topology_switches, infiniband_slurm_topology_nodes,
// infiniband_slurm_topology_nodes_left_out, infiniband_slurm_topology_blocks.
// Routes: GET /api/v1/slurm/topology.conf (text/plain, the file),
// GET /api/v1/slurm/topology.yaml (application/yaml),
// GET /api/v1/slurm/topology (JSON: switches, levels, nodes, children,
// blocks, block_size, left_out) and GET /api/v1/placement?host=NAME (one
// placed host: its leaf, its leaf's pod as its spine group, its unit and
// how many rails it is up on; what the DaemonSet's exporters label their
// Kubernetes nodes with, collectors/kubernetes_node_collector.h).

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/framework/collector_info.h"
#include "topology/analysis.h"
#include "topology/fabric.h"
#include "topology/hosts.h"

namespace ibfabric::collectors {

inline constexpr std::string_view kSlurmTopologyCollector = "slurm_topology";

struct SlurmSwitch {
  std::string name;  // Slurm-safe, unique
  std::uint64_t guid = 0;
  int level = 0;                      // the fabric's tier (0: leaf)
  std::vector<std::string> nodes;     // the hosts cabled to it: Slurm NodeNames, sorted
  std::vector<std::string> switches;  // above: the names of its children, sorted
};

// A scalable unit as a block: its placed servers' Slurm NodeNames, sorted.
struct SlurmBlock {
  std::string name;  // the unit's name (HostAnalysis::units), Slurm-safe, unique
  std::vector<std::string> nodes;
};

// Where a placed host sits, in the tree's names: what a scheduler groups
// hosts by (GET /api/v1/placement; the Kubernetes node labels).
struct SlurmPlacement {
  std::string host;         // as the fabric names it
  std::string leaf;         // the switch it is listed under
  std::string spine_group;  // its leaf's pod (/api/v1/structure's pods), Slurm-safe; empty: no pods
  std::string unit;         // its block; empty off rail-optimized fabrics
  int rails = 0;            // rail-optimized: the rails its HCA ports are up on; 0 elsewhere
};

struct SlurmTree {
  std::vector<SlurmSwitch> switches;                // by level, then name
  std::vector<std::string> left_out;                // Slurm NodeNames of hosts with no port up, sorted
  std::size_t nodes = 0;                            // listed under a leaf
  std::vector<SlurmBlock> blocks;                   // rail-optimized fabrics only, in unit order
  std::size_t block_size = 0;                       // the servers a unit is built of; 0 without blocks
  std::map<std::string, SlurmPlacement> placement;  // Slurm NodeName -> where it sits (placed hosts)
};

// Pure: the tree of `fabric` as its analysis ranks it, the hosts under
// their leaves, named by `names` where it names them.
SlurmTree BuildSlurmTree(const topology::Fabric& fabric, const topology::Analysis& analysis,
                         const topology::HostAnalysis& hosts, const std::map<std::string, std::string>& names);
// Pure: Slurm's hostlist of `names` ("cn[0001-0003,0007],login1"): names
// that differ only in a trailing number of the same width share brackets.
std::string HostList(std::vector<std::string> names);
// Pure: topology.conf's text, comment lines first.
std::string TopologyConf(const SlurmTree& tree);
// Pure: topology.yaml's text (Slurm 25.05's format, topology.yaml(5)): the
// tree as the cluster default, the blocks where there are any.
std::string TopologyYaml(const SlurmTree& tree);
nlohmann::json SlurmTreeJson(const SlurmTree& tree);
// Pure: GET /api/v1/placement's body for one host: host, node, leaf,
// spine_group, unit, rails (null where the fabric has none).
nlohmann::json PlacementJson(const std::string& node, const SlurmPlacement& p);

// Its declaration (name, help, factory, render, reads, routes): the registry's line.
CollectorInfo SlurmTopologyCollectorInfo();
std::unique_ptr<Collector> MakeSlurmTopologyCollector(const CollectorOptions& options);
void RenderSlurmTopology(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
