#pragma once
// Fabric discovery, breadth first from the local port. Directed-route SMPs
// (IBTA 14.2.2) go only where the route is the only way in: NodeInfo
// through each cable (what answers at its far end, and through which of its
// ports; a cable already seen from its far end is not asked again), and
// PortInfo of a switch's port 0 and of each CA port (their LIDs). The rest,
// NodeDescription and the PortInfo of every other switch port, goes
// LID-routed where the node's LID is usable (unicast, on an Active port,
// seen from an Active local port), loading only the node's own agent, and
// directed where it is not or where the LID-routed SMP went unanswered.
// Each node's LID-routed SMPs go behind a NodeInfo to the same LID, and
// are taken only if it answers with the node's GUID (else asked directed):
// a LID read a moment ago may already reach another node (Mellanox
// ExtendedPortInfo of FDR10-era devices, asked once the walk is done, is
// the one LID-routed read left unchecked). A
// node reached through several cables at once keeps one of those routes,
// taken in turn, so routes spread over the switches of a tier. Each step of
// a BFS level is one pipelined batch on the MAD engine.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "topology/fabric.h"
#include "transport/attributes.h"
#include "transport/mad_engine.h"

namespace ibfabric::topology {

// What a walk asked and got no answer to, after every retry and both
// routings. A lost MAD is no evidence: what these stand for is unknown, not
// absent (topology/merge.h takes it from the last walk).
struct Unanswered {
  std::set<std::uint64_t> descriptions;  // nodes whose NodeDescription did not answer
  std::set<PortRef> ports;               // ports whose PortInfo did not answer (a switch's port 0: its LID)
  std::set<PortRef> behind;              // up ports with no NodeInfo answer from their far end
  std::set<PortRef> mlnx;                // ports at QDR whose Mellanox ExtendedPortInfo did not answer
  std::set<std::uint64_t> host_ports;    // the host's other ports (by port GUID) not read (DiscoverOptions::host_ports)
  bool empty() const {
    return descriptions.empty() && ports.empty() && behind.empty() && mlnx.empty() && host_ports.empty();
  }
  std::size_t size() const {
    return descriptions.size() + ports.size() + behind.size() + mlnx.size() + host_ports.size();
  }
};

struct DiscoveryResult {
  bool ok = false;  // false when not even the local node answered
  Fabric fabric;
  std::uint64_t local_node_guid = 0;
  std::uint8_t local_port = 0;
  std::vector<std::string> problems;  // one line each: what did not answer, where
  std::size_t smps = 0;               // requests issued, both routings
  // PortInfo.SubnetTimeOut of the local port (IBTA 14.2.5.6), as the SM set
  // it; 0 when the local port did not answer.
  std::uint8_t subnet_timeout = 0;
  Unanswered unanswered;  // complete when empty
  // The port GUIDs of DiscoverOptions::host_ports, the switch ports at the
  // far ends of their cables read by this walk (up, or down where the host
  // port is), and the names of the host ports not read (each with a line
  // in `problems`; in unanswered.host_ports where for want of an answer).
  std::set<std::uint64_t> host_port_guids;
  std::set<PortRef> host_far_ends;
  std::vector<std::string> host_ports_unread;
};

// One of this host's ports other than the one walked from, on the same
// fabric (another HCA of the host, the other port of a dual-port one), as
// the kernel lists it.
struct HostPort {
  std::string name;  // "mlx5_1/1": for the log and the metrics
  std::uint16_t lid = 0;
  std::uint8_t port = 0;
  std::uint64_t port_guid = 0;
  bool active = true;  // PortState Active, as the kernel says
  // Not Active: where its cable led when last read (the switch port, its
  // LID), read there so that the cable shows down instead of vanishing.
  std::optional<PortRef> last_far;
  std::uint16_t last_far_lid = 0;
};

struct DiscoverOptions {
  // How far from the local node to go: -1 the whole fabric; 1 the local
  // node and the nodes at the other end of its cables (local scope), whose
  // other links are then up but lead nowhere known.
  int max_hops = -1;
  // With max_hops 1: the host's other ports on this fabric. No directed
  // route from the local port leads to them, so each is read by LID (its
  // NodeInfo, taken only with its own port GUID; its NodeDescription and
  // PortInfo), and so is the switch port at the other end of its cable,
  // which the SA at `sa_lid` names (SubnAdmGet LinkRecord, FromLID) and
  // vouches for (SubnAdmGet NodeRecord of that LID: the GUID its NodeInfo
  // must answer with): 3 SMPs and a GMP a port, 4 SMPs and a GMP a switch,
  // none directed. Without an SA (0, or it does not answer) the port is not
  // read, and said so. A port no longer Active is not read; its last far
  // end is (HostPort::last_far).
  std::vector<HostPort> host_ports;
  std::uint16_t sa_lid = 0;
};

// Thread-safety: uses the engine exclusively for its duration.
DiscoveryResult Discover(transport::MadEngine& engine, DiscoverOptions options = {});

// A port whose PortInfo (state, width, speed) was read again and differs
// from the fabric, or that is worth re-walking anyway (its link flapped).
struct PortChange {
  PortRef port;     // a switch port of the fabric
  Port now;         // what PortInfo says now (the fields ApplyPortInfo sets)
  std::string why;  // for the log: "trap 128", "LinkDownedCounter moved", ...
};

struct IncrementalResult {
  DiscoveryResult discovery;  // the whole fabric after the changes
  // False when what was re-read cannot be trusted to match a full walk (a
  // changed port names a node the fabric lacks): run a full walk. What did
  // not answer leaves the fabric as it was there (discovery.unanswered) and
  // is in `retry`.
  bool trusted = true;
  std::vector<PortChange> retry;          // changes whose far end did not answer: ask again later
  std::vector<std::string> reread;        // one line per port re-walked: where, why, what was found
  std::vector<std::uint64_t> new_nodes;   // nodes admitted behind the changes (their tables are unread)
  std::vector<std::uint64_t> gone_nodes;  // nodes no longer reachable, dropped
};

// Incremental discovery: applies `changes` to `base` (discovered from the
// node `local_node_guid`, port `local_port`) and re-walks only what is behind
// them. Behind a port that is up: NodeInfo through it (directed), and the
// far port's PortInfo (directed for a CA port, LID-routed for a switch's);
// a node seen for the first time is walked like a full discovery does,
// stopping at nodes already known. Behind a port that went down (its
// PortInfo said so): the link is dropped at both ends, and nodes no longer
// reachable from the local node leave the fabric. Behind an up port that
// did not answer, the link it had stays. A change of a switch's port 0 (its
// agent stopped answering by LID) re-reads its LID, directed. Costs a few
// SMPs per change, not a walk of the fabric. Not for a local-scope fabric
// with host ports read by LID (DiscoverOptions::host_ports): unreachable
// from the local node over links, they would be dropped as gone (local
// scope walks instead).
// Thread-safety: uses the engine exclusively for its duration.
IncrementalResult Rediscover(transport::MadEngine& engine, const Fabric& base, std::uint64_t local_node_guid,
                             std::uint8_t local_port, const std::vector<PortChange>& changes);

// Copies a port's state, width and speed fields from its PortInfo; the
// extended speed fields only where `speeds` says they are valid (0
// otherwise: a port that does not say so runs its LinkSpeedActive).
void ApplyPortInfo(const transport::PortInfo& pi, ExtSpeeds speeds, Port* port);

// Mellanox ExtendedPortInfo (FDR10) is read by walks only, of ports that
// run QDR on devices that have it (libibnetdisc's device list). A PortInfo
// re-read between walks (`now`, from ApplyPortInfo) keeps what the walk
// read (`walked`) while the port still runs QDR, and drops it otherwise.
void KeepMlnxSpeeds(const MlnxSpeeds& walked, Port* now);

}  // namespace ibfabric::topology
