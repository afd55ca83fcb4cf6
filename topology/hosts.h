#pragma once
// Hosts and rails. A server with several HCAs is several CA nodes in the
// fabric; rdma-ndd names each "<host> <device>" (NodeDescription "%h %d",
// e.g. "gpu042 mlx5_3"). CAs are grouped into hosts by a pattern over
// their description (after any node-name map). In a rail-optimized fabric
// HCA k of every server of a scalable unit is cabled to that unit's rail-k
// leaf; which device is on which rail follows the cabling, not the device
// index (storage HCAs interleave with the compute ones), so rails are
// learnt from the fabric: a leaf's rail is the device (and port) most of
// its host ports carry. Pure functions over a Fabric; no MAD is sent.
//
// Layouts: hosts with two or more cabled HCA ports mostly spread over
// distinct leaves make a rail-optimized fabric; mostly on one leaf, a
// host-per-leaf one; hosts with one cabled port, single-HCA. Rail findings
// come from rail-optimized fabrics only, and there only for the hosts of a
// rail class: hosts of one design (one name stem, digits aside, and as
// many cabled ports) are cabled alike, so a class whose hosts mostly
// spread their ports over distinct leaves is on the rails, and one whose
// hosts put them on one leaf (storage appliances, HPC nodes with two
// HCAs) or have one port is not: its hosts are not judged and teach no
// rail.

#include <cstdint>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "topology/analysis.h"
#include "topology/detail/group_names.h"
#include "topology/fabric.h"

namespace ibfabric::topology {

// How a description names host and device: a regular expression (ECMAScript)
// with two capture groups, the host's and the device's, matched against the
// whole description.
struct HostPattern {
  std::string text = R"(^(\S+)\s+(\S+)$)";  // rdma-ndd's default, "gpu042 mlx5_3"
  std::regex re{text};
};
// False with a one-line reason when `text` is not a valid expression or
// does not have exactly two capture groups.
bool ParseHostPattern(const std::string& text, HostPattern* pattern, std::string* error);

struct HcaPort {
  std::uint8_t port = 0;
  PortRef leaf;   // the switch port it is cabled to
  int rail = -1;  // HostAnalysis::rails index of its slot; -1: no leaf carries it
};
struct Hca {
  std::uint64_t guid = 0;
  std::string device;
  std::vector<HcaPort> ports;  // cabled to a switch, ascending
};
struct Host {
  std::string name;
  std::vector<Hca> hcas;  // natural order of devices
  int unit = -1;          // HostAnalysis::units index where most of its ports are; -1: none
};

enum class HostLayout : std::uint8_t {
  kNoHosts,        // no CA description matches the pattern as a host's
  kSingleHca,      // most hosts have one cabled HCA port
  kHostPerLeaf,    // most hosts with several have them all on one leaf
  kRailOptimized,  // most hosts with several have them on distinct leaves
  kMixed,          // neither
};
const char* ToString(HostLayout l);  // "no_hosts", "single_hca", "host_per_leaf", "rail_optimized", "mixed"

struct HostAnalysis {
  HostLayout layout = HostLayout::kNoHosts;
  std::vector<Host> hosts;                     // natural order of names
  std::map<std::uint64_t, std::size_t> of_ca;  // CA node GUID -> index in hosts
  std::size_t ungrouped_cas = 0;               // CAs in no host: no match, or a device name twice in one host
  // Rail-optimized fabrics only (else empty):
  std::vector<std::string> rails;          // "mlx5_3", or "mlx5_3 port 2" where HCAs have several ports cabled
  std::vector<std::string> units;          // scalable units, named by their leaves' shared name or "unit N"
  std::map<std::uint64_t, int> leaf_rail;  // leaf GUID -> rail (-1: none has a majority)
  std::map<std::uint64_t, int> leaf_unit;  // leaf GUID -> unit
  std::vector<Finding> findings;           // kRail* findings
};

HostAnalysis AnalyzeHosts(const Fabric& fabric, const HostPattern& pattern);

}  // namespace ibfabric::topology
