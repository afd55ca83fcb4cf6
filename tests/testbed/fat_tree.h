#pragma once
// Two-tier fat trees in ibsim's net format (the ibnetdiscover format), with
// planted wiring faults. Port layout, for reading tests:
//   leaf L (1-based): ports 1..H to hosts, then uplinks: link k (0-based)
//     to spine S (1-based) at port H + (S-1)*K + k + 1, K = links per pair;
//     spare ports after that.
//   spine S: link k to leaf L at port (L-1)*K + k + 1; with cores, link k
//     to core C at port L*K + (C-1)*KC + k + 1, KC = links per spine-core pair.
//   core C (ib-core01, ...): link k to spine S at port (S-1)*KC + k + 1.
//   host h (1-based, fabric wide) sits on leaf (h-1)/H + 1, port (h-1)%H + 1.
// Names read like a cluster: ib-leaf01, ib-spine01, cn0001.
// Rail-optimized (rails.units > 0): the leaves are `rails.units` scalable
// units of one leaf per rail (ib-su01-leaf01 is unit 1's first rail),
// numbered unit by unit; every server of a unit has one HCA per rail,
// named as rdma-ndd names it ("gpu0001 mlx5_0"), and HCA k of server s of
// unit u is cabled to port s of leaf (u, k); with dual-port HCAs each port
// is a rail of its own (HCA k's port p: rail 2k + p). `leaves` and
// `hosts_per_leaf` follow from the rails; hosts() lists the HCAs server by
// server, and RailHca/RailLeaf name them (HostPort and LeafHostPort do not
// apply). With pods too (a rail-optimized three-tier fabric): `units`
// counts every pod's, numbered pod by pod (units / pods a pod); the
// aggregation switches of a pod are its rail spines, `spines` / rails of
// them per rail (agg01.. for rail 1, then rail 2's, ...), and each leaf is
// cabled to its own rail's, `links_per_pair` cables to each: leaf port
// H + (j-1)*K + k + 1 to its rail's j-th spine, whose port (u-1)*K + k + 1
// goes to the leaf of the pod's u-th unit on that rail, and whose uplink k
// to the i-th core of its group is port U*K + (i-1)*KC + k + 1 (U units a
// pod). The cores form (rail spines a rail)
// groups, the j-th rail spine of every rail of every pod cabled to each
// core of group j (so every group joins every rail), core port
// ((pod-1)*rails + rail-1)*KC + k + 1. Names: ib-su001-leaf01 (units > 99),
// ib-p01-agg001 (more than 99 a pod).
// With pods (a three-tier fat tree): `leaves` and `spines` are per pod
// (spines are the pods' aggregation switches), numbered fabric-wide pod by
// pod (leaf l is in pod (l-1)/leaves + 1); the cores form `spines` groups
// of cores/spines, and aggregation switch a of every pod is cabled to each
// core of group a. Leaf and aggregation ports are laid out as above within
// the pod (leaf indices local to the pod); aggregation uplink k to the j-th
// core of its group at port leaves*K + (j-1)*KC + k + 1; core port
// (pod-1)*KC + k + 1. Names: ib-p01-leaf01, ib-p01-agg01, ib-core001,
// cn00001.

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace ibfabric::testbed {

struct Endpoint {
  std::string node;
  int port = 0;
  bool operator==(const Endpoint&) const = default;
  bool operator<(const Endpoint& o) const { return node != o.node ? node < o.node : port < o.port; }
};

struct Cable {
  Endpoint a, b;
  std::string rate;  // e.g. "4xQDR" (both ends get the same note), empty: ibsim's default
};

// The rails of a rail-optimized fat tree.
struct RailSpec {
  int units = 0;                     // scalable units; 0: not rail-optimized
  int servers = 16;                  // servers per unit
  std::vector<std::string> devices;  // the HCAs of a server, in rail order; empty: mlx5_0..mlx5_7
  int ports_per_hca = 1;             // 2: dual-port HCAs, each port on a rail of its own
};

struct FatTreeSpec {
  int leaves = 4;
  int spines = 2;
  int hosts_per_leaf = 4;
  int links_per_pair = 1;
  int radix = 36;
  int cores = 0;               // a third tier: every spine cabled to every core switch
  int core_links = 1;          // cables per spine-core pair
  int pods = 0;                // > 0: a three-tier fat tree of pods (see above)
  std::string rate = "4xQDR";  // every cable's width and speed unless degraded
  RailSpec rails;              // rail-optimized when rails.units > 0
  // > 0: hosts named as rdma-ndd names them, this many HCAs per server on
  // consecutive ports of one leaf ("cn0001 mlx5_0", "cn0001 mlx5_1", ...).
  int hcas_per_host = 0;
  // A SHARP Aggregation Node in every switch (NVIDIA Quantum and later), on
  // the switch's next spare port: a CA with the ID "H-<guid>" and the
  // NodeDescription "Mellanox Technologies Aggregation Node" (the net
  // file's ID-plus-description form), not a host.
  bool aggregation_nodes = false;

  // Planted faults, applied in this order.
  std::vector<std::pair<Endpoint, Endpoint>> swaps;  // exchange the far ends of the cables at these two ports
  std::vector<Endpoint> missing;                     // remove the cable at this port
  std::vector<std::pair<int, int>> leaf_links;       // cable leaf i to leaf j on spare ports (1-based)
  // Cable at port -> rate, e.g. "1xQDR", as the net file's note gives it:
  // both ends *enabled* for that only (an operator's limit, as ibsim
  // models it), so the link runs at its ends' best.
  std::map<Endpoint, std::string> degraded;
  // Cable at port -> what it trained at, e.g. "1x": below what both its
  // ends allow (a bad lane). Not in the net file: planted through the
  // hardware-personality preload (personality.h PlantTrained) into the
  // clients that read the fabric.
  std::map<Endpoint, std::string> trained;
  std::vector<int> spine_cas;                   // a CA ("storage01", ...) on a spare port of spine i (1-based)
  std::vector<std::pair<int, int>> skip_links;  // leaf i cabled straight to core j, spare ports
  std::vector<std::pair<Endpoint, std::string>>
      moves;  // the cable at this port recabled to a spare port of that switch
};

// A fault-free spec from its five numbers.
inline FatTreeSpec Spec(int leaves, int spines, int hosts_per_leaf, int links_per_pair, int radix) {
  FatTreeSpec s;
  s.leaves = leaves;
  s.spines = spines;
  s.hosts_per_leaf = hosts_per_leaf;
  s.links_per_pair = links_per_pair;
  s.radix = radix;
  return s;
}
// The 36-port, 324-host build: 18 leaves of 18 hosts, 9 spines, 2 links per pair.
inline FatTreeSpec Spec324() { return Spec(18, 9, 18, 2, 36); }
// The benchmarks' 1024-host fabric: 32 leaves of 32 hosts, 16 spines, 2 links
// per pair, 64-port switches (1072 nodes, 4096 ports).
inline FatTreeSpec Spec1k() { return Spec(32, 16, 32, 2, 64); }
// The 32k-GPU rail-optimized fabric: 4,096 servers of 8 HCAs (one per
// rail) in 128 scalable units of 32 servers, 8 pods of 16 units; each pod's
// 128 aggregation switches are 16 rail spines per rail, each leaf cabled
// twice to each of its rail's; 512 cores in 16 groups of 32, the j-th rail
// spine of every rail and pod cabled once to each core of group j. 2,560
// switches of 64 ports, 32,768 HCAs,
// 196,608 ports, 35,328 LIDs.
inline FatTreeSpec Spec32kRails() {
  FatTreeSpec s = Spec(0, 128, 32, 2, 64);
  s.rails.units = 128;
  s.rails.servers = 32;
  s.pods = 8;
  s.cores = 512;  // 16 groups of 32: each aggregation switch's 32 uplinks, one to each of its group
  return s;
}
// The benchmarks' 16k-host three-tier fabric: 16 pods x 32 leaves x 32
// aggregation switches, 512 cores, 16384 hosts.
inline FatTreeSpec Spec16k() {
  FatTreeSpec s = Spec(32, 32, 32, 1, 64);
  s.pods = 16;
  s.cores = 512;
  return s;
}

class FatTree {
 public:
  // Throws std::invalid_argument naming the problem (radix too small, a
  // fault on a port without a cable, ...).
  static FatTree Generate(const FatTreeSpec& spec);

  std::string NetFile() const;
  // The same cabling as a YAML plan for --topology.plan: every cable with
  // its rate, and the tier of every switch (leaf, spine, core). With
  // `by_host`, an HCA named "<host> <device>" is written as
  // {host: ..., hca: ..., port: ...}.
  std::string YamlPlan(bool by_host = false) const;

  const FatTreeSpec& spec() const { return spec_; }
  const std::vector<std::string>& leaves() const { return leaves_; }
  const std::vector<std::string>& spines() const { return spines_; }
  const std::vector<std::string>& hosts() const { return hosts_; }
  const std::vector<Cable>& cables() const { return cables_; }

  // Names and ports by position (all 1-based).
  std::string Leaf(int l) const { return leaves_.at(l - 1); }
  std::string Spine(int s) const { return spines_.at(s - 1); }
  std::string Host(int h) const { return hosts_.at(h - 1); }
  Endpoint HostPort(int h) const;      // the host's own port 1
  Endpoint LeafHostPort(int h) const;  // the leaf port cabled to host h
  // Rails with pods: `s` must be one of leaf l's rail spines.
  Endpoint LeafUplink(int l, int s, int k = 0) const;
  Endpoint SpineDownlink(int s, int l, int k = 0) const;
  // With pods, `l` and `s` are fabric-wide, `c` must be in spine s's group.
  Endpoint SpineUplink(int s, int c, int k = 0) const;
  Endpoint CoreDownlink(int c, int s, int k = 0) const;
  // Rail-optimized (all 1-based): server s of unit u, its HCA port on rail r
  // ({"gpu0005 mlx5_3", 1}), and the leaf of unit u and rail r.
  std::string Server(int u, int s) const;
  Endpoint RailHca(int u, int s, int r) const;
  std::string RailLeaf(int u, int r) const;
  const std::vector<std::string>& cores() const { return cores_; }
  int pods() const { return spec_.pods; }
  // The pod of a leaf or spine (1-based); 1 without pods.
  int PodOfLeaf(int l) const { return spec_.pods > 0 ? (l - 1) / spec_.leaves + 1 : 1; }
  int PodOfSpine(int s) const { return spec_.pods > 0 ? (s - 1) / spec_.spines + 1 : 1; }
  std::string Core(int c) const { return cores_.at(c - 1); }
  // Ports of `node` that have a cable, ascending.
  std::vector<int> CabledPorts(const std::string& node) const;
  // The far end of the cable at `e`, if any.
  const Endpoint* Peer(const Endpoint& e) const;

 private:
  // Rail-optimized with pods: each leaf reaches only its rail's spines.
  bool RailPods() const { return spec_.rails.units > 0 && spec_.pods > 0; }
  int Rails() const { return static_cast<int>(spec_.rails.devices.size()) * spec_.rails.ports_per_hca; }
  // Spines a leaf is cabled to, and leaves a spine is cabled to.
  int SpinesOfLeaf() const { return RailPods() ? spec_.spines / Rails() : spec_.spines; }
  int LeavesOfSpine() const { return RailPods() ? spec_.leaves / Rails() : spec_.leaves; }
  // With pods, the cores a spine is cabled to (its group), and which group
  // (0-based) a spine's is: its index in the pod; with rails, its index
  // among its rail's spines, so that every group joins every rail.
  int CoreGroup() const {
    const int groups = RailPods() ? SpinesOfLeaf() : spec_.pods > 0 ? spec_.spines : 1;
    return groups > 0 ? spec_.cores / groups : spec_.cores;
  }
  int GroupOfSpine(int s) const {
    const int local = (s - 1) % spec_.spines;
    return RailPods() ? local % SpinesOfLeaf() : local;
  }

  FatTreeSpec spec_;
  std::vector<std::string> leaves_, spines_, cores_, hosts_;
  std::vector<std::string> aggregation_nodes_;  // their IDs ("H-..."), switch by switch
  std::vector<Cable> cables_;
};

}  // namespace ibfabric::testbed
