#pragma once
// Decoded SMP and PMA attributes, and the payloads that ask for them.
// Decoders are pure: they read the data section of a whole response MAD and
// never fail (a MAD is always 256 bytes); callers check the MAD status first.

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "transport/mad.h"
#include "transport/registers.h"

namespace ibfabric::transport {

// NodeInfo.NodeType (IBTA 14.2.5.3, table 146).
enum class NodeType : std::uint8_t { kUnknown = 0, kCa = 1, kSwitch = 2, kRouter = 3 };

// NodeInfo (IBTA 14.2.5.3).
struct NodeInfo {
  NodeType node_type = NodeType::kUnknown;
  std::uint8_t num_ports = 0;
  std::uint64_t system_image_guid = 0;
  std::uint64_t node_guid = 0;
  std::uint64_t port_guid = 0;
  std::uint16_t device_id = 0;
  std::uint32_t revision = 0;
  std::uint8_t local_port = 0;  // the port through which this SMP entered the node
  std::uint32_t vendor_id = 0;
  std::uint16_t partition_cap = 0;  // PartitionCap: P_Key table entries of a CA port
};

// PortInfo (IBTA 14.2.5.6), the fields this project uses.
struct PortInfo {
  std::uint16_t lid = 0;  // for switches, meaningful on port 0 only
  std::uint16_t sm_lid = 0;
  std::uint32_t capability_mask = 0;
  std::uint8_t local_port = 0;
  std::uint8_t link_width_enabled = 0;
  std::uint8_t link_width_supported = 0;
  std::uint8_t link_width_active = 0;  // bit mask: 1=1x 2=4x 4=8x 8=12x 16=2x
  std::uint8_t link_speed_supported = 0;
  std::uint8_t link_speed_active = 0;  // 1=SDR 2=DDR 4=QDR
  std::uint8_t link_speed_enabled = 0;
  std::uint8_t port_state = 0;       // 1=Down 2=Init 3=Armed 4=Active
  std::uint8_t port_phys_state = 0;  // 2=Polling 3=Disabled 5=LinkUp ...
  std::uint8_t lmc = 0;
  std::uint8_t link_speed_ext_active = 0;  // IBTA 14.2.5.6: 1=FDR 2=EDR 4=HDR 8=NDR
  std::uint8_t link_speed_ext_supported = 0;
  std::uint8_t link_speed_ext_enabled = 0;
  // IBTA 1.7 (XDR). libibmad 44 has no field ids for these; rdma-core's
  // later libibmad/fields.c places them at PortInfo bit offsets 449 (2 bits),
  // 451 (2) and 453 (3), bit 0 meaning 212.5 Gb/s signalling (XDR). They
  // are meaningful only when HasExtendedSpeeds2 (below) holds for the port
  // that carries the capability masks (port 0 of a switch).
  std::uint16_t capability_mask2 = 0;  // PortInfo.CapabilityMask2
  std::uint8_t link_speed_ext2_active = 0;
  std::uint8_t link_speed_ext2_supported = 0;
  std::uint8_t link_speed_ext2_enabled = 0;
  // PartitionEnforcementInbound/Outbound (switch external ports): packets
  // whose P_Key is not in the port's P_KeyTable are dropped (IBTA 10.9.3).
  bool partition_enforcement_inbound = false;
  bool partition_enforcement_outbound = false;
  // Timing the SM publishes (IBTA 14.2.5.6): SubnetTimeOut, the maximum
  // packet lifetime on the subnet as 4.096 us * 2^value, and RespTimeValue,
  // how long this port's SMA may take to answer, in the same encoding
  // (IBTA 13.4.6.2). Both are 5-bit exponents; see ExpectedTime().
  std::uint8_t subnet_timeout = 0;
  std::uint8_t resp_time_value = 0;
};

// SwitchInfo (IBTA 14.2.5.4), the fields routing needs.
struct SwitchInfo {
  std::uint16_t linear_fdb_cap = 0;             // LinearFDBCap: entries the LFT can hold
  std::uint16_t linear_fdb_top = 0;             // LinearFDBTop: the highest LID in use
  std::uint16_t partition_enforcement_cap = 0;  // PartitionEnforcementCap: P_Key entries per external port
};

// One block of the LinearForwardingTable (IBTA 14.2.5.10): the egress port
// for 64 consecutive LIDs, block b holding LIDs 64b .. 64b+63; 0xFF: none.
inline constexpr std::size_t kLftBlockSize = 64;
inline constexpr std::uint8_t kLftNoPort = 0xFF;
using LftBlock = std::array<std::uint8_t, kLftBlockSize>;

// P_KeyTable (IBTA 14.2.5.7): 32 P_Keys per block. Bit 15 of a P_Key is
// the membership type (1 full, 0 limited); the low 15 bits the partition;
// 0x0000 and 0x8000 are empty entries.
inline constexpr std::size_t kPKeyBlockSize = 32;
using PKeyBlock = std::array<std::uint16_t, kPKeyBlockSize>;

// PortInfo.CapabilityMask IsSM (IBTA 14.2.5.6; rdma-core IB_PORT_CAP_IS_SM):
// a subnet manager runs behind this port.
inline constexpr std::uint32_t kPortCapIsSm = 0x00000002;

// SMInfo (IBTA 14.2.5.13): what a subnet manager says of itself.
enum class SmState : std::uint8_t { kNotActive = 0, kDiscovering = 1, kStandby = 2, kMaster = 3 };
const char* ToString(SmState s);  // "not_active", "discovering", "standby", "master"
struct SmInfo {
  std::uint64_t guid = 0;       // the SM's port GUID
  std::uint64_t sm_key = 0;     // 0 unless the requester proved the key
  std::uint32_t act_count = 0;  // ActCount: moves while the SM sends SMPs (sweeps, polls)
  std::uint8_t priority = 0;    // 0..15, the higher the more it wants to be master
  SmState state = SmState::kNotActive;
};

// PortInfo.CapabilityMask bits (IBTA 14.2.5.6; rdma-core iba_types.h
// IB_PORT_CAP_HAS_EXT_SPEEDS, IB_PORT_CAP_HAS_CAP_MASK2) and the
// CapabilityMask2 bit IsExtendedSpeeds2Supported (IB_PORT_CAP2_IS_EXT_SPEEDS_2_SUPPORTED).
inline constexpr std::uint32_t kPortCapHasExtSpeeds = 0x00004000;
inline constexpr std::uint32_t kPortCapHasCapMask2 = 0x00008000;
inline constexpr std::uint16_t kPortCap2ExtSpeeds2 = 0x0800;
// True when `caps` (PortInfo of a CA port, or of port 0 of a switch) says
// IsExtendedSpeedsSupported: LinkSpeedExt* mean something (libibnetdisc
// ibnetdisc.c ibnd_get_agg_linkspeedext reads them only then).
bool HasExtendedSpeeds(const PortInfo& caps);
// True when `caps` (PortInfo of a CA port, or of port 0 of a switch) says
// the LinkSpeedExt*2 fields are valid.
bool HasExtendedSpeeds2(const PortInfo& caps);
// True when `caps` (likewise) says the port answers PortInfoExtended
// (CapabilityMask2 IsPortInfoExtendedSupported, below).
bool HasPortInfoExtended(const PortInfo& caps);

// PortInfo.LinkSpeedExtEnabled 30 (0x1E): extended speeds disabled, not a
// set of speeds (IBTA 14.2.5.6 table 155; libibnetdisc treats it as 0).
inline constexpr std::uint8_t kLinkSpeedExtDisabled = 30;

// Mellanox ExtendedPortInfo (SMP 0xFF90, modifier the port): its link
// speed masks, one byte each at data bytes 7, 11 and 15 (libibmad fields.c
// IB_MLNX_EXT_PORT_LINK_SPEED_{SUPPORTED,ENABLED,ACTIVE}_F). Bit 0 is FDR10
// (10.3125 Gbaud, 64b/66b), which standard PortInfo shows as QDR.
struct MlnxExtPortInfo {
  std::uint8_t link_speed_supported = 0;
  std::uint8_t link_speed_enabled = 0;
  std::uint8_t link_speed_active = 0;
};
inline constexpr std::uint8_t kMlnxSpeedFdr10 = 1;

// NVIDIA AdaptiveRoutingInfo (SMP 0xFF20, modifier 0) of a switch, the
// fields that say whether it routes adaptively (Mellanox's opensm
// ib_types.h ib_ar_info_t, NVIDIA's ibis adaptive_routing_info layout):
// data byte 3 bit 0 is "e", adaptive routing enabled; bytes 4-7, low 12
// bits, AdaptiveRoutingGroupCap, 0 meaning adaptive routing unsupported.
struct AdaptiveRoutingInfo {
  bool enabled = false;
  std::uint16_t group_cap = 0;
};

// PortInfoExtended (SMP 0x33, IBTA 1.3; libibmad fields.c
// IB_PORT_EXT_*_F): which forward error correction a port runs. A port has
// it where PortInfo.CapabilityMask2 says IsPortInfoExtendedSupported (bit
// 1; rdma-core iba_types.h IB_PORT_CAP2_IS_PORT_INFO_EXT_SUPPORTED), and
// FECModeActive means something where its CapabilityMask says
// IsFECModeSupported (bit 0, IB_PORT_EXT_CAP_IS_FEC_MODE_SUPPORTED).
inline constexpr std::uint16_t kPortCap2PortInfoExtended = 0x0002;
// FECModeActive values: 0-4 the IBTA's (rdma-core iba_types.h
// IB_PORT_EXT_*_FEC_MODE_ACTIVE: RS-FEC is RS(528,514), low latency
// RS(271,257), RS-FEC2 RS(544,514)), 8-14 NVIDIA's, as its tools read
// them (ibutils2 ibdm Fabric.h enum IBFECMode; a real NDR fabric runs 4
// and 14). Not PPCNT's or PPLM's fec_mode_active, which number modes
// otherwise (mstflint reg_access_gpu_layouts.h).
enum class FecMode : std::uint16_t {
  kNone = 0,
  kFireCode = 1,
  kRsFec = 2,
  kLowLatencyRsFec = 3,
  kRsFec2 = 4,
  kMlnxStrongRsFec = 8,
  kMlnxLowLatencyRsFec = 9,
  kMlnxAdaptiveRsFec = 10,
  kMlnxCodFec = 11,          // correct on demand
  kMlnxZeroLatencyFec = 12,  // not Reed-Solomon
  kMlnxRsFec544Plr = 13,     // RS(544,514) with physical layer retransmission
  kMlnxLowLatencyPlr = 14,   // RS(271,257) with physical layer retransmission
};
// "none", "fire_code", "rs_fec", "low_latency_rs_fec", "rs_fec2",
// "mlnx_strong_rs_fec", "mlnx_low_latency_rs_fec", "mlnx_adaptive_rs_fec",
// "mlnx_cod_fec", "mlnx_zero_latency_fec", "mlnx_rs_fec_544_514_plr",
// "mlnx_rs_fec_271_257_plr"; "unknown" otherwise.
const char* ToString(FecMode m);
// Whether the mode is Reed-Solomon FEC, so that PortExtendedSpeedsCounters
// comes in its RS-FEC layout: the modes ibdm's isRSFEC() counts (2, 3, 4,
// 8-11, 13, 14), not only perfquery's two (is_rsfec_mode_active: 2, 4),
// which would leave a real NDR fabric's PLR host cables unread.
bool RsFecLayout(FecMode m);
// Whether the mode retransmits at the physical layer (ibdm IBPort::IsPLR:
// 13, 14): its effective errors are retried, and NVIDIA's BER levels differ.
inline bool Plr(FecMode m) { return m == FecMode::kMlnxRsFec544Plr || m == FecMode::kMlnxLowLatencyPlr; }
struct PortInfoExtended {
  std::uint32_t capability_mask = 0;
  std::uint16_t fec_mode_active = 0;  // FecMode, as read
  bool FecModeSupported() const { return (capability_mask & 0x1) != 0; }
  // The mode the port says it runs (none where it does not say).
  FecMode Mode() const { return FecModeSupported() ? static_cast<FecMode>(fec_mode_active) : FecMode::kNone; }
  bool RsFecActive() const { return RsFecLayout(Mode()); }
};

// PortExtendedSpeedsCounters (PMA 0x1F) in its RS-FEC layout (libibmad
// fields.c IB_PESC_RSFEC_*_F; all 32-bit but the first two): asked of a
// port whose node's PMA ClassPortInfo says IsPMRSFECCountersSupported
// (pma_cap::kRsFecCounters) and whose PortInfoExtended says RS-FEC
// (infiniband-diags perfquery.c). Corrected symbols count what FEC
// repaired (a cable going bad shows here first, while SymbolErrorCounter,
// after FEC, stays 0); uncorrectable blocks what it could not.
inline constexpr std::size_t kFecLanes = 12;
struct ExtendedSpeedsRsFec {
  std::uint8_t port_select = 0;
  std::uint16_t sync_header_errors = 0;  // 16
  std::uint16_t unknown_blocks = 0;      // 16
  std::array<std::uint32_t, kFecLanes> corrected_symbols_lane{};
  std::uint32_t corrected_blocks = 0;
  std::uint32_t uncorrectable_blocks = 0;
  std::uint32_t corrected_symbols = 0;  // the port's, every lane
};

// PortInfo.PortState values (IBTA table 155).
inline constexpr std::uint8_t kPortStateDown = 1;
inline constexpr std::uint8_t kPortStateActive = 4;
// PortInfo.PortPhysicalState LinkUp (IBTA table 155).
inline constexpr std::uint8_t kPhysStateLinkUp = 5;

// PMA ClassPortInfo (IBTA 13.4.8.1 with the PMA capability bits of 16.1.2).
struct PerfClassPortInfo {
  std::uint16_t capability_mask = 0;
  std::uint32_t capability_mask2 = 0;  // 27 bits
  // RespTimeValue: how long this PMA may take to answer, 4.096 us *
  // 2^value (IBTA 13.4.6.2, 13.4.8.1).
  std::uint8_t resp_time_value = 0;
  // Where the PMA asks requesters to go instead of QP1 at this LID
  // (IBTA 13.5.3.3 redirection): meaningful after a reply with the
  // "redirect required" status (kMadStatusRedirect).
  std::uint16_t redirect_lid = 0;
  std::uint32_t redirect_qp = 0;
  std::uint32_t redirect_qkey = 0;
};

// Where a GS agent's Redirect answer sends the requester: the
// ClassPortInfo (IBTA 13.4.8.1, the same layout in every GS class) in the
// data of a reply with the Redirect status, at the class's DataOffset: 64,
// 56 for the SA, 24 for a vendor class of range 1 (IBTA 13.4.5; rdma-core
// mad.h IB_VENDOR_RANGE1_DATA_OFFS). RedirectGID, TC, FL and P_Key are not
// decoded: the engine follows by LID, QP, Q_Key and SL.
struct ClassRedirect {
  // 0: the agent is reached by its RedirectGID, through a GRH (IBTA
  // 13.5.3.3), which the engine does not do (nor libibmad's rpc.c): such
  // a redirect is not followed.
  std::uint16_t lid = 0;
  std::uint8_t sl = 0;  // RedirectSL (data byte 25, bits 7-4)
  std::uint32_t qp = 0;
  std::uint32_t qkey = 0;
};
ClassRedirect DecodeClassRedirect(const MadBytes& mad);

// The time a 5-bit IBTA time exponent stands for: 4.096 us * 2^value
// (IBTA 13.4.6.2; values above 31 are clamped to 31).
std::chrono::microseconds ExpectedTime(std::uint8_t value);

// PMA ClassPortInfo.CapabilityMask bits (IBTA 16.1.2, table 218; the same
// values as IB_PM_* in opensm's ib_types.h, in host order).
namespace pma_cap {
inline constexpr std::uint16_t kAllPortSelect = 1 << 8;
inline constexpr std::uint16_t kExtWidth = 1 << 9;         // PortCountersExtended, all fields
inline constexpr std::uint16_t kExtWidthNoIetf = 1 << 10;  // PortCountersExtended, no uni/multicast
inline constexpr std::uint16_t kXmitWait = 1 << 12;        // PortCounters.PortXmitWait
inline constexpr std::uint16_t kRsFecCounters = 1 << 14;   // IsPMRSFECCountersSupported (iba_types.h)
inline constexpr std::uint16_t kQp1Dropped = 1 << 15;      // PortCounters.QP1Dropped
// CapabilityMask2: PortCountersExtended carries 64-bit copies of the error
// counters (IBTA 1.3 16.1.4.11, "additional" extended counters).
inline constexpr std::uint32_t kAdditionalExtended = 1u << 1;
}  // namespace pma_cap

// Where PortCounters.QP1Dropped starts in the attribute data (IBTA
// 16.1.3.5 table 225: after CounterSelect2 and the 4+4-bit counters of
// byte 19, before VL15Dropped at 22).
inline constexpr std::size_t kPortCountersQp1DroppedByte = 20;

// PortCounters (IBTA 16.1.3.5, table 225). Widths in bits are those of the
// spec; every error counter is sticky at its maximum.
struct PortCounters {
  std::uint8_t port_select = 0;
  std::uint16_t symbol_error = 0;                    // 16
  std::uint8_t link_error_recovery = 0;              // 8
  std::uint8_t link_downed = 0;                      // 8
  std::uint16_t rcv_errors = 0;                      // 16
  std::uint16_t rcv_remote_physical_errors = 0;      // 16
  std::uint16_t rcv_switch_relay_errors = 0;         // 16
  std::uint16_t xmit_discards = 0;                   // 16
  std::uint8_t xmit_constraint_errors = 0;           // 8
  std::uint8_t rcv_constraint_errors = 0;            // 8
  std::uint8_t local_link_integrity_errors = 0;      // 4
  std::uint8_t excessive_buffer_overrun_errors = 0;  // 4
  std::uint16_t qp1_dropped = 0;                     // 16, if ClassPortInfo says so
  std::uint16_t vl15_dropped = 0;                    // 16
  std::uint32_t xmit_data = 0;                       // 32, in units of 4 octets
  std::uint32_t rcv_data = 0;                        // 32, in units of 4 octets
  std::uint32_t xmit_pkts = 0;                       // 32
  std::uint32_t rcv_pkts = 0;                        // 32
  std::uint32_t xmit_wait = 0;                       // 32
};

// PortRcvErrorDetails (IBTA 16.1.4.x, optional; libibmad's IB_PC_RCV_*_F
// fields): what PortRcvErrors counted, by cause. 16-bit, sticky at their
// maximum. A PMA that lacks it answers with a non-zero MAD status.
struct PortRcvErrorDetails {
  std::uint8_t port_select = 0;
  std::uint16_t local_physical_errors = 0;
  std::uint16_t malformed_packet_errors = 0;
  std::uint16_t buffer_overrun_errors = 0;
  std::uint16_t dlid_mapping_errors = 0;
  std::uint16_t vl_mapping_errors = 0;
  std::uint16_t looping_errors = 0;
};

// PortXmitDiscardDetails (IBTA 16.1.4.x, optional; libibmad's
// IB_PC_XMT_*_DISC_F fields): why PortXmitDiscards counted. 16-bit, sticky
// at their maximum. A switch that discards at head of queue
// (SwHOQLifetimeLimit: a packet waited longer than the port's HOQ lifetime
// for credits) sits where congestion starts, not behind it.
struct PortXmitDiscardDetails {
  std::uint8_t port_select = 0;
  std::uint16_t inactive_discards = 0;               // the port was not Active
  std::uint16_t neighbor_mtu_discards = 0;           // longer than the neighbour's MTU
  std::uint16_t sw_lifetime_limit_discards = 0;      // switch lifetime limit
  std::uint16_t sw_hoq_lifetime_limit_discards = 0;  // switch head-of-queue lifetime limit
};

// PortVLXmitWaitCounters (IBTA 16.1.4.x, optional; libibmad's
// IB_PC_PORT_VL_XMIT_WAIT<n>_F): PortXmitWait per virtual lane, 16-bit
// each, sticky at their maximum. Which VL waits tells which service level
// is congested.
inline constexpr std::size_t kVlCount = 16;
struct PortVlXmitWait {
  std::uint8_t port_select = 0;
  std::array<std::uint16_t, kVlCount> wait{};
};

// PortSamplesControl (IBTA 16.1.3.2, mandatory for every PMA; libibmad's
// IB_PSC_*_F, perfquery -c). What matters here is Tick, the length of one
// PortXmitWait tick in symbol times (one byte on one lane, 4 ns at SDR):
// 0x00 is one, 0xFF 256 (Tick + 1). Devices differ: NVIDIA's ibdiagnet
// manual ("Congestion Assessment on InfiniBand Links") has Quantum,
// Quantum-2 and Quantum-3 at 7, counting 8 bytes of the port, and
// Switch-IB 2 and earlier at 31, counting 32 bytes of a lane.
struct PortSamplesControl {
  std::uint8_t port_select = 0;
  std::uint8_t tick = 0;
  std::uint8_t counter_width = 0;  // 3 bits: the sample counters' width
  std::uint8_t sample_status = 0;  // 2 bits
};

// PortCountersExtended (IBTA 16.1.4.11, table 247): 64-bit data counters.
struct PortCountersExtended {
  std::uint8_t port_select = 0;
  std::uint64_t xmit_data = 0;  // units of 4 octets
  std::uint64_t rcv_data = 0;   // units of 4 octets
  std::uint64_t xmit_pkts = 0;
  std::uint64_t rcv_pkts = 0;
  std::uint64_t unicast_xmit_pkts = 0;
  std::uint64_t unicast_rcv_pkts = 0;
  std::uint64_t multicast_xmit_pkts = 0;
  std::uint64_t multicast_rcv_pkts = 0;
  // 64-bit error counters, meaningful only with pma_cap::kAdditionalExtended.
  std::uint64_t symbol_error = 0;
  std::uint64_t link_error_recovery = 0;
  std::uint64_t link_downed = 0;
  std::uint64_t rcv_errors = 0;
  std::uint64_t rcv_remote_physical_errors = 0;
  std::uint64_t rcv_switch_relay_errors = 0;
  std::uint64_t xmit_discards = 0;
  std::uint64_t xmit_constraint_errors = 0;
  std::uint64_t rcv_constraint_errors = 0;
  std::uint64_t local_link_integrity_errors = 0;
  std::uint64_t excessive_buffer_overrun_errors = 0;
  std::uint64_t vl15_dropped = 0;
  std::uint64_t xmit_wait = 0;
  std::uint64_t qp1_dropped = 0;
};

// The traps this exporter subscribes to (IBTA 14.2.5.1, table 150): the SM
// forwards them as SA Reports of a Notice.
namespace trap {
inline constexpr std::uint16_t kGidInService = 64;      // a port joined: GIDADDR
inline constexpr std::uint16_t kGidOutOfService = 65;   // a port left: GIDADDR
inline constexpr std::uint16_t kLinkStateChange = 128;  // some port of a switch changed state: LIDADDR
inline constexpr std::uint16_t kLocalChange = 144;      // capability mask, description, enabled width/speed: LIDADDR
}  // namespace trap

// A Notice (IBTA 14.2.5.1) as an SA Report carries it (at byte 56 of the
// MAD). Only generic notices carry a trap number.
struct Notice {
  bool generic = false;
  std::uint32_t producer_type = 0;  // 1 CA, 2 switch, 3 router, 4 class manager
  std::uint16_t trap_number = 0;
  std::uint16_t issuer_lid = 0;
  // The node the trap is about: traps 128 and 144 name a LID (LIDADDR of
  // their DataDetails), traps 64-67 a port GID (GIDADDR; its low 64 bits
  // are the port GUID).
  std::uint16_t lid = 0;
  std::uint64_t port_guid = 0;
};
// True for an SA Report of a Notice: what a subscription brings.
bool IsNoticeReport(const MadBytes& mad);
Notice DecodeNotice(const MadBytes& report);
// The ReportResponse (IBTA 13.4.5, 13.4.8.3) that acknowledges a Report:
// same TID and attribute, method 0x86. Without it the SA sends it again.
MadBytes ReportResponse(const MadBytes& report);
// SubnAdmSet(InformInfo) (IBTA 13.4.8.3, 15.2.5.12) to the SA at `sm_lid`:
// (un)subscribe to generic trap `trap_number` from every LID, to be
// reported to the requesting port.
MadRequest InformInfoSubscribe(std::uint16_t sm_lid, std::uint16_t trap_number, bool subscribe = true);

// SMInfoRecord (IBTA 15.2.5.13): the SMInfo the SA last had from an SM
// port, and that port's LID. The master's SA lists every SM it knows of,
// the ones started after the exporter's last walk included.
struct SmInfoRecord {
  std::uint16_t lid = 0;
  SmInfo info;
};
// SubnAdmGetTable(SMInfoRecord) to the SA at `sm_lid`, ComponentMask 0:
// every record.
MadRequest SmInfoRecordTableQuery(std::uint16_t sm_lid);
// The records of a SubnAdmGetTableResponse of `attr_id` with status 0
// (IBTA 15.2.2), the whole transfer: from byte 56 of its first MAD
// through MadResult::tail, MadResult::length bytes in all; where the
// length is only one MAD's 256 (no RMPP below to say more), the first
// segment's PayloadLength less the SA header (20 bytes) when RMPP says
// First and Last (IBTA 13.6.2.3). Records are AttributeOffset 8-byte words
// apart (15.2.1.1); a last one shorter than `record_bytes` is left out.
// nullopt for any other answer, or a stride shorter than `record_bytes`.
struct SaTable {
  std::size_t stride = 0;
  std::vector<std::uint8_t> bytes;
  std::size_t count = 0;
  const std::uint8_t* record(std::size_t i) const { return bytes.data() + i * stride; }
};
std::optional<SaTable> DecodeSaTable(const MadResult& result, std::uint16_t attr_id, std::size_t record_bytes);

// LinearForwardingTableRecord (IBTA 15.2.5.6): one LFT block of the switch
// whose port 0 has `lid`, as the SM programmed it.
struct LftRecord {
  std::uint16_t lid = 0;
  std::uint16_t block = 0;
  LftBlock ports{};
};
// SubnAdmGetTable(LinearForwardingTableRecord) to the SA at `sa_lid`,
// ComponentMask LID: every block of the switch at `switch_lid` (opensm:
// block 0 up to the highest in use).
MadRequest LftRecordTableQuery(std::uint16_t sa_lid, std::uint16_t switch_lid);
// The records of its answer; nullopt for anything but a GetTableResponse
// of LinearForwardingTableRecords with status 0.
std::optional<std::vector<LftRecord>> DecodeLftRecords(const MadResult& result);

// P_KeyTableRecord (IBTA 15.2.5.11): one P_KeyTable block of a port as the
// SM set it. `lid` is the port's (a switch's: its port 0's).
struct PKeyTableRecord {
  std::uint16_t lid = 0;
  std::uint16_t block = 0;
  std::uint8_t port = 0;
  PKeyBlock keys{};
};
// SubnAdmGetTable(P_KeyTableRecord) to the SA at `sa_lid`, ComponentMask
// LID: every block of the port with `lid`, or of every port of the switch
// whose LID it is. The SA gives these records to trusted requests only
// (IBTA 1.2.1 p. 922, as opensm cites it; opensm answers others with
// status "invalid request"; with a wrong key it discards the request):
// the engine's SA key makes it one (EngineOptions::sa_key).
MadRequest PKeyRecordTableQuery(std::uint16_t sa_lid, std::uint16_t lid);
// The records of its answer; nullopt for anything but a GetTableResponse
// of P_KeyTableRecords with status 0.
std::optional<std::vector<PKeyTableRecord>> DecodePKeyRecords(const MadResult& result);

// The records of a GetTableResponse, as far as one MAD holds them: the
// first RMPP segment (IBTA 13.6.2), whose 200 data bytes hold six
// records at the usual stride (SA AttributeOffset, 8-byte words, 32 bytes
// from opensm). The record count is the first segment's PayloadLength
// when RMPP is active, else every slot with a LID. A stride shorter than
// a record, or a response that is not a GetTableResponse of
// SMInfoRecords, gives none.
std::vector<SmInfoRecord> DecodeSmInfoRecords(const MadBytes& response);
// Every record of the transfer (DecodeSaTable).
std::vector<SmInfoRecord> DecodeSmInfoRecords(const MadResult& result);

// LinkRecord (IBTA 15.2.5.13): one direction of a cable as the SA knows
// it, each end a port's LID (a switch's: its port 0's) and number.
struct LinkRecord {
  std::uint16_t from_lid = 0;
  std::uint8_t from_port = 0;
  std::uint8_t to_port = 0;
  std::uint16_t to_lid = 0;
};
// SubnAdmGet(LinkRecord) to the SA at `sa_lid`, ComponentMask FromLID: the
// cable of the CA port `from_lid` (one record; a switch's LID would match
// every port, and a Get more than one record is an error).
MadRequest LinkRecordQuery(std::uint16_t sa_lid, std::uint16_t from_lid);
// The record of a GetResponse of LinkRecord; nullopt for anything else.
std::optional<LinkRecord> DecodeLinkRecord(const MadBytes& response);
// SubnAdmGet(NodeRecord) (IBTA 15.2.5.2) to the SA at `sa_lid`,
// ComponentMask LID: the node the SA knows at `lid` (a switch's port 0
// LID, a CA port's base LID).
MadRequest NodeRecordQuery(std::uint16_t sa_lid, std::uint16_t lid);
// The NodeGUID of a GetResponse of NodeRecord (its NodeInfo after the
// LID and 16 reserved bits); nullopt for anything else.
std::optional<std::uint64_t> DecodeNodeRecordGuid(const MadBytes& response);

NodeInfo DecodeNodeInfo(const MadBytes& mad);
// NodeDescription (IBTA 14.2.5.2): up to 64 bytes, NUL padded; trailing
// NULs and whitespace are removed, control characters replaced by '?'.
std::string DecodeNodeDescription(const MadBytes& mad);
PortInfo DecodePortInfo(const MadBytes& mad);
MlnxExtPortInfo DecodeMlnxExtPortInfo(const MadBytes& mad);
AdaptiveRoutingInfo DecodeAdaptiveRoutingInfo(const MadBytes& mad);
PerfClassPortInfo DecodePerfClassPortInfo(const MadBytes& mad);
PortCounters DecodePortCounters(const MadBytes& mad);
PortCountersExtended DecodePortCountersExtended(const MadBytes& mad);
PortRcvErrorDetails DecodePortRcvErrorDetails(const MadBytes& mad);
PortXmitDiscardDetails DecodePortXmitDiscardDetails(const MadBytes& mad);
PortVlXmitWait DecodePortVlXmitWait(const MadBytes& mad);
PortSamplesControl DecodePortSamplesControl(const MadBytes& mad);
PortInfoExtended DecodePortInfoExtended(const MadBytes& mad);
ExtendedSpeedsRsFec DecodeExtendedSpeedsRsFec(const MadBytes& mad);
SmInfo DecodeSmInfo(const MadBytes& mad);
SwitchInfo DecodeSwitchInfo(const MadBytes& mad);
LftBlock DecodeLftBlock(const MadBytes& mad);
PKeyBlock DecodePKeyBlock(const MadBytes& mad);

// Requests. `route` is a directed route for SMPs, a LID for PMA queries.
MadRequest NodeInfoQuery(const MadAddress& route);
MadRequest NodeDescriptionQuery(const MadAddress& route);
MadRequest PortInfoQuery(const MadAddress& route, std::uint8_t port);
MadRequest MlnxExtPortInfoQuery(const MadAddress& route, std::uint8_t port);
MadRequest PortInfoExtendedQuery(const MadAddress& route, std::uint8_t port);
MadRequest AdaptiveRoutingInfoQuery(const MadAddress& route);
MadRequest PerfClassPortInfoQuery(std::uint16_t lid);
// SubnGet(SMInfo), LID routed to the SM's port (answered by the SM itself).
MadRequest SmInfoQuery(std::uint16_t lid);
MadRequest SwitchInfoQuery(const MadAddress& route);
// SubnGet(LinearForwardingTable) of block `block` (AttributeModifier).
MadRequest LftBlockQuery(const MadAddress& route, std::uint32_t block);
// SubnGet(P_KeyTable) of block `block`; `port` matters for switches
// (AttributeModifier bits 16-31), a CA's port is the one the LID names.
MadRequest PKeyBlockQuery(const MadAddress& route, std::uint8_t port, std::uint16_t block);
// PortSelect goes in the data section (IBTA 16.1.3.5), not in the modifier.
MadRequest PortCountersQuery(std::uint16_t lid, std::uint8_t port);
MadRequest PortCountersExtendedQuery(std::uint16_t lid, std::uint8_t port);
MadRequest PortRcvErrorDetailsQuery(std::uint16_t lid, std::uint8_t port);
MadRequest PortXmitDiscardDetailsQuery(std::uint16_t lid, std::uint8_t port);
MadRequest PortVlXmitWaitQuery(std::uint16_t lid, std::uint8_t port);
MadRequest PortSamplesControlQuery(std::uint16_t lid, std::uint8_t port);
MadRequest ExtendedSpeedsCountersQuery(std::uint16_t lid, std::uint8_t port);
// PortCounters Set that zeroes the counters selected by CounterSelect (bit i
// of `select` is the i-th counter of IBTA table 225: SymbolErrorCounter = 0
// ... PortRcvPkts = 15) and CounterSelect2 (bit 0: PortXmitWait).
MadRequest PortCountersClear(std::uint16_t lid, std::uint8_t port, std::uint16_t select, std::uint8_t select2);
// NVIDIA vendor class GeneralInfo (class 0x0A, attribute 0x17, Get;
// rdma-core infiniband-diags vendstat.c, mstflint mtcr_ib_ofed.c): after
// the 8-byte VS_Key at byte 24, HWInfo and FWInfo from byte 32 laid out as
// MGIR's hw_info and fw_info (mstflint's mad_ifc.c unpacks them with
// MGIR's structs: device_hw_revision bytes 32-33, device_id 34-35, uptime
// 60-63, PSID 80-95, extended major, minor, sub-minor 100, 104, 108), and
// the capability mask from byte 160, whose bit 20 (MAD byte 161, 0x10)
// says AccessRegister GMP is supported.
struct GeneralInfo {
  GeneralRegister general;  // as MGIR decodes it
  bool access_register = false;
};
MadRequest GeneralInfoQuery(std::uint16_t lid);
GeneralInfo DecodeGeneralInfo(const MadBytes& mad);
// AccessRegister Get of register `register_id` (the AttributeModifier;
// transport/registers.h): VS_Key 0 at bytes 24-31, the config dword
// (block 0) at 32-35, then the register from byte 36, of which `request`
// gives the first bytes (its index fields). A register larger than 220
// bytes would take more blocks; the ones read here fit in the first.
inline constexpr std::size_t kAccessRegisterDataOffset = 36;
inline constexpr std::size_t kAccessRegisterDataSize = kMadSize - kAccessRegisterDataOffset;  // 220
MadRequest AccessRegisterQuery(std::uint16_t lid, std::uint16_t register_id, const std::vector<std::uint8_t>& request);
// The register's bytes in an AccessRegister answer.
std::span<const std::uint8_t> AccessRegisterData(const MadBytes& mad);
// Whether a vendor-class answer says the device will never have it:
// "unsupported attribute" (IBTA 13.4.7 code 3), "class not supported"
// (code 1) or, to AccessRegister, "register not supported" (MAD status 20,
// mstflint's translate_mad_status_to_reg_status_gmp). A timeout, Busy or
// any other status may pass.
bool VendorUnsupported(const MadResult& m);

// PortExtendedSpeedsCounters Set that zeroes every counter of the port:
// CounterSelect (bytes 8-15, libibmad IB_PESC_COUNTER_SELECT_F) all ones,
// as infiniband-diags' perfquery -R -T sends it by default.
MadRequest ExtendedSpeedsCountersClear(std::uint16_t lid, std::uint8_t port);

}  // namespace ibfabric::transport
