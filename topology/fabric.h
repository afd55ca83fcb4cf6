#pragma once
// The fabric as a plain graph: nodes, their ports, and which port each port
// is cabled to. No libibumad type appears here. A Fabric is built once by
// discovery (or by hand in tests) and then only read.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ibfabric::topology {

enum class NodeKind : std::uint8_t { kUnknown, kCa, kSwitch, kRouter };
const char* ToString(NodeKind k);

// The far end of a cable.
struct PortRef {
  std::uint64_t node_guid = 0;
  std::uint8_t port = 0;
  auto operator<=>(const PortRef&) const = default;
};

// Mellanox ExtendedPortInfo's link speed masks (vendor SMP 0xFF90; bit 0
// FDR10, which PortInfo shows as QDR). A walk asks them of a port that
// runs QDR on a device known to have the attribute (discovery.h); `read`
// says it answered. Zero otherwise.
struct MlnxSpeeds {
  bool read = false;
  std::uint8_t supported = 0;
  std::uint8_t enabled = 0;
  std::uint8_t active = 0;
  bool operator==(const MlnxSpeeds&) const = default;
};

struct Port {
  std::uint8_t number = 0;
  std::uint64_t guid = 0;       // port GUID (CA ports; a switch's ports share port 0's)
  std::uint16_t lid = 0;        // LID that answers for this port (switch: port 0's LID)
  std::uint8_t state = 0;       // IBTA PortState: 1 Down, 2 Init, 3 Armed, 4 Active
  std::uint8_t phys_state = 0;  // IBTA PortPhysicalState: 5 LinkUp
  // Link width and speed as PortInfo reports them (IBTA 14.2.5.6): bit
  // masks; see link_rate.h for what they mean.
  std::uint8_t width_active = 0;
  std::uint8_t width_enabled = 0;
  std::uint8_t width_supported = 0;
  std::uint8_t speed_active = 0;
  std::uint8_t speed_enabled = 0;
  std::uint8_t speed_supported = 0;
  std::uint8_t speed_ext_active = 0;  // FDR and faster; 0: none
  std::uint8_t speed_ext_enabled = 0;
  std::uint8_t speed_ext_supported = 0;
  std::uint8_t speed_ext2_active = 0;  // XDR (IBTA 1.7); 0 when the port lacks ExtendedSpeeds2
  std::uint8_t speed_ext2_enabled = 0;
  std::uint8_t speed_ext2_supported = 0;
  MlnxSpeeds mlnx;                // FDR10, where a walk asked (see MlnxSpeeds)
  std::optional<PortRef> remote;  // set when the link is up and the far end answered
  bool is_sm = false;             // CapabilityMask.IsSM: a subnet manager runs behind this port
  std::uint16_t sm_lid = 0;       // the master SM's LID as this port knows it (PortInfo.MasterSMLID)
  // PortInfo.PartitionEnforcementInbound/Outbound: a switch port drops
  // packets whose P_Key its own P_KeyTable lacks (IBTA 10.9.3).
  bool partition_enforcement_inbound = false;
  bool partition_enforcement_outbound = false;

  bool link_up() const { return phys_state == 5; }
};

struct Node {
  std::uint64_t guid = 0;
  NodeKind kind = NodeKind::kUnknown;
  std::string description;  // NodeDescription as the node reports it
  std::uint8_t num_ports = 0;
  std::uint16_t lid = 0;    // switch: port 0 LID; CA: LID of its first port with one
  std::vector<Port> ports;  // the ports discovery learnt, ascending by number
  // PortInfo.CapabilityMask (port 0 of a switch, the port of a CA) says
  // IsExtendedSpeedsSupported (bit 14): LinkSpeedExt* are valid, as
  // libibnetdisc's ibnd_get_agg_linkspeedext reads them (true until a
  // CapabilityMask without it was read: a switch whose port 0 did not
  // answer keeps its ports' extended speeds); and the masks say
  // LinkSpeedExt*2 are valid too.
  bool ext_speeds = true;
  bool ext_speeds2 = false;
  // PortInfo.CapabilityMask2 IsPortInfoExtendedSupported (port 0 of a
  // switch, the port of a CA): its ports answer PortInfoExtended (FEC mode).
  bool port_info_extended = false;
  std::uint16_t partition_cap = 0;  // NodeInfo.PartitionCap: P_Key entries per CA port
  std::uint32_t vendor_id = 0;      // NodeInfo.VendorID (IEEE OUI; 0x02c9 Mellanox/NVIDIA)
  std::uint16_t device_id = 0;      // NodeInfo.DeviceID: the ASIC (xmit_wait.h reads it)
  // NodeInfo.SystemImageGUID: shared by the nodes of one system (a
  // director chassis' line and fabric ASICs, a host's HCAs on some
  // platforms); 0 when unknown.
  std::uint64_t system_image_guid = 0;

  const Port* FindPort(std::uint8_t number) const;
};

// Which extended speed fields of a node's PortInfo are valid (Node's
// ext_speeds and ext_speeds2, from its capability masks).
struct ExtSpeeds {
  bool ext = false;   // LinkSpeedExt* (FDR to NDR)
  bool ext2 = false;  // LinkSpeedExt*2 (XDR)
};
inline ExtSpeeds ExtSpeedsOf(const Node& n) { return {n.ext_speeds, n.ext_speeds2}; }

// Immutable after construction; copyable value.
class Fabric {
 public:
  Fabric() = default;
  explicit Fabric(std::vector<Node> nodes);

  const std::vector<Node>& nodes() const { return nodes_; }
  const Node* FindNode(std::uint64_t guid) const;
  const Port* FindPort(const PortRef& ref) const;
  std::size_t switch_count() const;
  std::size_t ca_count() const;
  // Whether more than one node (Aggregation Nodes aside) goes by `name`
  // (ShortName of its description).
  bool NameShared(std::string_view name) const { return shared_names_.count(name) > 0; }

 private:
  std::vector<Node> nodes_;                     // switches first, then by GUID
  std::map<std::uint64_t, std::size_t> index_;  // GUID -> position in nodes_
  std::set<std::string, std::less<>> shared_names_;
};

// The nodes of `fabric` in `guids`, each with only the ports `keep`
// allows (all when `keep` is empty): what a read of some nodes' tables is
// given.
Fabric Part(const Fabric& fabric, const std::set<std::uint64_t>& guids,
            const std::function<bool(const Node&, const Port&)>& keep = {});

// A SHARP Aggregation Node: a CA inside a switch (NVIDIA Quantum and later),
// with a LID and a port GUID of its own, that every switch of a SHARP
// fabric may carry. It names itself "Mellanox Technologies Aggregation
// Node" (../shared/real-hardware.md); it is no host and its link to its
// switch is no cable.
inline constexpr std::string_view kAggregationNodeDescription = "Mellanox Technologies Aggregation Node";
bool IsAggregationNode(const Node& n);
// A port cabled to an Aggregation Node: a switch's link to its own AN,
// inside it (no cable, no module).
bool FacesAggregationNode(const Fabric& fabric, const Port& p);
// A host's channel adapter: a CA that is no Aggregation Node. Routers
// (NodeType 3, to another subnet) and Aggregation Nodes are listed apart:
// no HCA series, no host, no part of the tiers (both are still routing
// destinations: traffic goes to their LIDs). A
// router's link to its switch is still a cable (judged from the switch
// end); an Aggregation Node's is not.
bool IsHca(const Node& n);
// NodeInfo.VendorID of NVIDIA's InfiniBand devices: Mellanox's IEEE OUI,
// which they keep.
inline constexpr std::uint32_t kNvidiaVendorId = 0x02c9;
// An NVIDIA switch with a LID: what may answer NVIDIA's vendor SMPs and
// GMPs (AdaptiveRoutingInfo, GeneralInfo, AccessRegister). Others are
// never asked them.
bool IsNvidiaSwitch(const Node& n);
// Any NVIDIA node (switch or channel adapter) with a LID, and the LID its
// management agents answer at (a switch's, else its first port's with
// one); 0 for others.
std::uint16_t NvidiaAgentLid(const Node& n);

// GUIDs print as 0x-prefixed 16-digit lower-case hex everywhere.
std::string FormatGuid(std::uint64_t guid);
// A GUID as written in hex, "0x" optional ("0x0002c90300a1b2c3"); nullopt
// for anything else.
std::optional<std::uint64_t> ParseGuid(const std::string& text);
// A port number in decimal from `lowest` (0: a switch's own port 0) to 254
// (IBTA: NumPorts is at most 254); nullopt for anything else.
std::optional<std::uint8_t> ParsePortNumber(const std::string& text, int lowest = 1);
// A node description as operators say it. NVIDIA switch systems describe
// each ASIC "MF0;<system name>:<model>/<location>" (MQM8700/U1 for a
// one-ASIC switch; MCS8500/L16/U2 for a line card's ASIC in a director):
// the system's name, and the location where the system has several
// ("LG03-06", "sat11-ib1-A/L16/U2"). Other descriptions as they are.
std::string ShortName(std::string_view description);
// How findings, logs and series name a node: ShortName of its description
// (else its GUID), with " (<GUID>)" after it where several nodes share it
// (switches left at their default description, "Quantum-2 Mellanox
// Technologies", hosts without rdma-ndd).
std::string NodeName(const Fabric& fabric, std::uint64_t guid);
// A port as findings name it: NodeName, then the port number in brackets
// ("leaf01[3]").
std::string PortName(const Fabric& fabric, const PortRef& port);
// Natural order of names, as a person sorts them: runs of digits compare
// by value (leaf2 before leaf10), the rest byte by byte; of names equal so
// (leaf02 and leaf2) the shorter first, then bytewise. A strict weak order.
bool NaturalLess(std::string_view x, std::string_view y);

}  // namespace ibfabric::topology
