#include "transport/attributes.h"

#include <infiniband/mad.h>

#include <algorithm>
#include <cctype>

#include "transport/codec.h"

namespace ibfabric::transport {
namespace {

// libibmad field ids for the attribute data sections are relative to the
// start of the data (byte 64 of the MAD); these helpers read from there.
void* Data(const MadBytes& m) { return const_cast<std::uint8_t*>(m.data() + kMadDataOffset); }
std::uint32_t Get(const MadBytes& m, MAD_FIELDS f) { return mad_get_field(Data(m), 0, f); }
std::uint64_t Get64(const MadBytes& m, MAD_FIELDS f) { return mad_get_field64(Data(m), 0, f); }

// A field libibmad 44 has no id for: `width` bits starting `bit` bits into
// the attribute data, most significant bit first (the IBTA's numbering).
std::uint8_t Bits(const MadBytes& m, int bit, int width) {
  const std::uint8_t byte = m[static_cast<std::size_t>(kMadDataOffset + bit / 8)];
  const int shift = 8 - bit % 8 - width;
  return static_cast<std::uint8_t>((byte >> shift) & ((1u << width) - 1));
}

template <typename T>
T Narrow(std::uint32_t v) {
  return static_cast<T>(v);
}

// A 16-bit field at `p`, big-endian on the wire.
std::uint16_t Be16(const std::uint8_t* p) {
  return Narrow<std::uint16_t>(static_cast<std::uint32_t>(p[0] << 8 | p[1]));
}

// A P_KeyTable block (32 P_Keys) at `p`: an SMP's data, a P_KeyTableRecord's.
PKeyBlock PKeysAt(const std::uint8_t* p) {
  PKeyBlock b{};
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = Be16(p + 2 * i);
  return b;
}

// A request with no data of its own, LID routed (GMPs to QP1).
MadRequest Gmp(MgmtClass c, MadMethod method, std::uint16_t attr_id, std::uint32_t mod, std::uint16_t lid) {
  MadRequest r;
  r.mgmt_class = c;
  r.method = method;
  r.attr_id = attr_id;
  r.attr_mod = mod;
  r.address = MadAddress::Lid(lid);
  return r;
}

MadRequest Smp(const MadAddress& route, std::uint16_t attr_id, std::uint32_t mod) {
  const bool lid = route.dr_path.empty() && route.lid != 0;
  MadRequest r = Gmp(lid ? MgmtClass::kSubnLidRouted : MgmtClass::kSubnDirectRoute, MadMethod::kGet, attr_id, mod, 0);
  r.address = route;
  return r;
}

MadRequest Pma(std::uint16_t lid, std::uint16_t attr_id, std::uint8_t port_select) {
  MadRequest r = Gmp(MgmtClass::kPerformance, MadMethod::kGet, attr_id, 0, lid);
  if (attr_id != pma_attr::kClassPortInfo) {
    // PortSelect is byte 1 of PortCounters and PortCountersExtended data;
    // the codec sends the rest as zeros. Only the first 32-bit word is
    // held (libibmad's fields address bytes within one): a sweep holds
    // 160k of these at once at 80k ports.
    r.payload.assign(4, 0);
    mad_set_field(r.payload.data(), 0, IB_PC_PORT_SELECT_F, port_select);
  }
  return r;
}

// SMInfo (IBTA 14.2.5.13) at `info`: an SMP's data, or the SMInfo inside an
// SA SMInfoRecord.
SmInfo SmInfoAt(const std::uint8_t* info) {
  void* b = const_cast<std::uint8_t*>(info);
  SmInfo s;
  s.guid = mad_get_field64(b, 0, IB_SMINFO_GUID_F);
  s.sm_key = mad_get_field64(b, 0, IB_SMINFO_KEY_F);
  s.act_count = mad_get_field(b, 0, IB_SMINFO_ACT_F);
  s.priority = Narrow<std::uint8_t>(mad_get_field(b, 0, IB_SMINFO_PRIO_F));
  const std::uint32_t state = mad_get_field(b, 0, IB_SMINFO_STATE_F);
  s.state = state <= 3 ? static_cast<SmState>(state) : SmState::kNotActive;
  return s;
}

}  // namespace

NodeInfo DecodeNodeInfo(const MadBytes& mad) {
  NodeInfo n;
  n.node_type = static_cast<NodeType>(Get(mad, IB_NODE_TYPE_F));
  n.num_ports = Narrow<std::uint8_t>(Get(mad, IB_NODE_NPORTS_F));
  n.system_image_guid = Get64(mad, IB_NODE_SYSTEM_GUID_F);
  n.node_guid = Get64(mad, IB_NODE_GUID_F);
  n.port_guid = Get64(mad, IB_NODE_PORT_GUID_F);
  n.device_id = Narrow<std::uint16_t>(Get(mad, IB_NODE_DEVID_F));
  n.revision = Get(mad, IB_NODE_REVISION_F);
  n.local_port = Narrow<std::uint8_t>(Get(mad, IB_NODE_LOCAL_PORT_F));
  n.vendor_id = Get(mad, IB_NODE_VENDORID_F);
  n.partition_cap = Narrow<std::uint16_t>(Get(mad, IB_NODE_PARTITION_CAP_F));
  return n;
}

std::string DecodeNodeDescription(const MadBytes& mad) {
  const auto data = MadData(mad).first(kSmpDataSize);
  std::string s;
  for (std::uint8_t c : data) {
    if (c == 0) break;
    s.push_back(std::isprint(c) ? static_cast<char>(c) : '?');
  }
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

PortInfo DecodePortInfo(const MadBytes& mad) {
  PortInfo p;
  p.lid = Narrow<std::uint16_t>(Get(mad, IB_PORT_LID_F));
  p.sm_lid = Narrow<std::uint16_t>(Get(mad, IB_PORT_SMLID_F));
  p.capability_mask = Get(mad, IB_PORT_CAPMASK_F);
  p.local_port = Narrow<std::uint8_t>(Get(mad, IB_PORT_LOCAL_PORT_F));
  p.link_width_enabled = Narrow<std::uint8_t>(Get(mad, IB_PORT_LINK_WIDTH_ENABLED_F));
  p.link_width_supported = Narrow<std::uint8_t>(Get(mad, IB_PORT_LINK_WIDTH_SUPPORTED_F));
  p.link_width_active = Narrow<std::uint8_t>(Get(mad, IB_PORT_LINK_WIDTH_ACTIVE_F));
  p.link_speed_supported = Narrow<std::uint8_t>(Get(mad, IB_PORT_LINK_SPEED_SUPPORTED_F));
  p.link_speed_active = Narrow<std::uint8_t>(Get(mad, IB_PORT_LINK_SPEED_ACTIVE_F));
  p.link_speed_enabled = Narrow<std::uint8_t>(Get(mad, IB_PORT_LINK_SPEED_ENABLED_F));
  p.port_state = Narrow<std::uint8_t>(Get(mad, IB_PORT_STATE_F));
  p.port_phys_state = Narrow<std::uint8_t>(Get(mad, IB_PORT_PHYS_STATE_F));
  p.lmc = Narrow<std::uint8_t>(Get(mad, IB_PORT_LMC_F));
  p.link_speed_ext_active = Narrow<std::uint8_t>(Get(mad, IB_PORT_LINK_SPEED_EXT_ACTIVE_F));
  p.link_speed_ext_supported = Narrow<std::uint8_t>(Get(mad, IB_PORT_LINK_SPEED_EXT_SUPPORTED_F));
  p.link_speed_ext_enabled = Narrow<std::uint8_t>(Get(mad, IB_PORT_LINK_SPEED_EXT_ENABLED_F));
  p.capability_mask2 = Narrow<std::uint16_t>(Get(mad, IB_PORT_CAPMASK2_F));
  p.link_speed_ext2_active = Bits(mad, 449, 2);
  p.link_speed_ext2_supported = Bits(mad, 451, 2);
  p.link_speed_ext2_enabled = Bits(mad, 453, 3);
  p.partition_enforcement_inbound = Get(mad, IB_PORT_PART_EN_INB_F) != 0;
  p.partition_enforcement_outbound = Get(mad, IB_PORT_PART_EN_OUTB_F) != 0;
  p.subnet_timeout = Narrow<std::uint8_t>(Get(mad, IB_PORT_SUBN_TIMEOUT_F));
  p.resp_time_value = Narrow<std::uint8_t>(Get(mad, IB_PORT_RESP_TIME_VAL_F));
  return p;
}

const char* ToString(FecMode m) {
  switch (m) {
    case FecMode::kNone: return "none";
    case FecMode::kFireCode: return "fire_code";
    case FecMode::kRsFec: return "rs_fec";
    case FecMode::kLowLatencyRsFec: return "low_latency_rs_fec";
    case FecMode::kRsFec2: return "rs_fec2";
    case FecMode::kMlnxStrongRsFec: return "mlnx_strong_rs_fec";
    case FecMode::kMlnxLowLatencyRsFec: return "mlnx_low_latency_rs_fec";
    case FecMode::kMlnxAdaptiveRsFec: return "mlnx_adaptive_rs_fec";
    case FecMode::kMlnxCodFec: return "mlnx_cod_fec";
    case FecMode::kMlnxZeroLatencyFec: return "mlnx_zero_latency_fec";
    case FecMode::kMlnxRsFec544Plr: return "mlnx_rs_fec_544_514_plr";
    case FecMode::kMlnxLowLatencyPlr: return "mlnx_rs_fec_271_257_plr";
  }
  return "unknown";
}

bool RsFecLayout(FecMode m) {
  switch (m) {
    case FecMode::kRsFec:
    case FecMode::kLowLatencyRsFec:
    case FecMode::kRsFec2:
    case FecMode::kMlnxStrongRsFec:
    case FecMode::kMlnxLowLatencyRsFec:
    case FecMode::kMlnxAdaptiveRsFec:
    case FecMode::kMlnxCodFec:
    case FecMode::kMlnxRsFec544Plr:
    case FecMode::kMlnxLowLatencyPlr: return true;
    case FecMode::kNone:
    case FecMode::kFireCode:
    case FecMode::kMlnxZeroLatencyFec: return false;
  }
  return false;
}

PortInfoExtended DecodePortInfoExtended(const MadBytes& mad) {
  PortInfoExtended p;
  p.capability_mask = Get(mad, IB_PORT_EXT_CAPMASK_F);                                 // bits 0..31
  p.fec_mode_active = Narrow<std::uint16_t>(Get(mad, IB_PORT_EXT_FEC_MODE_ACTIVE_F));  // bits 32..47
  return p;
}

ExtendedSpeedsRsFec DecodeExtendedSpeedsRsFec(const MadBytes& mad) {
  ExtendedSpeedsRsFec e;
  e.port_select = Narrow<std::uint8_t>(Get(mad, IB_PESC_RSFEC_PORT_SELECT_F));
  e.sync_header_errors = Narrow<std::uint16_t>(Get(mad, IB_PESC_RSFEC_SYNC_HDR_ERR_CTR_F));
  e.unknown_blocks = Narrow<std::uint16_t>(Get(mad, IB_PESC_RSFEC_UNK_BLOCK_CTR_F));
  for (std::size_t lane = 0; lane < kFecLanes; ++lane) {  // bits 352 + 32 * lane
    const auto field = static_cast<MAD_FIELDS>(IB_PESC_RSFEC_FEC_CORR_SYMBOL_CTR_LANE0_F + static_cast<int>(lane));
    e.corrected_symbols_lane[lane] = Get(mad, field);
  }
  e.corrected_blocks = Get(mad, IB_PESC_PORT_FEC_CORR_BLOCK_CTR_F);        // bits 1120..1151
  e.uncorrectable_blocks = Get(mad, IB_PESC_PORT_FEC_UNCORR_BLOCK_CTR_F);  // bits 1152..1183
  e.corrected_symbols = Get(mad, IB_PESC_PORT_FEC_CORR_SYMBOL_CTR_F);      // bits 1184..1215
  return e;
}

MlnxExtPortInfo DecodeMlnxExtPortInfo(const MadBytes& mad) {
  MlnxExtPortInfo e;
  e.link_speed_supported = Narrow<std::uint8_t>(Get(mad, IB_MLNX_EXT_PORT_LINK_SPEED_SUPPORTED_F));  // byte 7
  e.link_speed_enabled = Narrow<std::uint8_t>(Get(mad, IB_MLNX_EXT_PORT_LINK_SPEED_ENABLED_F));      // byte 11
  e.link_speed_active = Narrow<std::uint8_t>(Get(mad, IB_MLNX_EXT_PORT_LINK_SPEED_ACTIVE_F));        // byte 15
  return e;
}

AdaptiveRoutingInfo DecodeAdaptiveRoutingInfo(const MadBytes& mad) {
  const std::uint8_t* d = mad.data() + kMadDataOffset;
  AdaptiveRoutingInfo a;
  a.enabled = (d[3] & 0x01) != 0;                                       // "e"
  a.group_cap = static_cast<std::uint16_t>((d[6] & 0x0f) << 8 | d[7]);  // bits 0..11 of bytes 4-7
  return a;
}

bool HasExtendedSpeeds(const PortInfo& caps) { return (caps.capability_mask & kPortCapHasExtSpeeds) != 0; }

bool HasExtendedSpeeds2(const PortInfo& caps) {
  return (caps.capability_mask & kPortCapHasExtSpeeds) && (caps.capability_mask & kPortCapHasCapMask2) &&
         (caps.capability_mask2 & kPortCap2ExtSpeeds2);
}

bool HasPortInfoExtended(const PortInfo& caps) {
  return (caps.capability_mask & kPortCapHasCapMask2) != 0 && (caps.capability_mask2 & kPortCap2PortInfoExtended) != 0;
}

PerfClassPortInfo DecodePerfClassPortInfo(const MadBytes& mad) {
  PerfClassPortInfo c;
  c.capability_mask = Narrow<std::uint16_t>(Get(mad, IB_CPI_CAPMASK_F));
  c.capability_mask2 = Get(mad, IB_CPI_CAPMASK2_F);
  c.resp_time_value = Narrow<std::uint8_t>(Get(mad, IB_CPI_RESP_TIME_VALUE_F));
  c.redirect_lid = Narrow<std::uint16_t>(Get(mad, IB_CPI_REDIRECT_LID_F));
  c.redirect_qp = Get(mad, IB_CPI_REDIRECT_QP_F);
  c.redirect_qkey = Get(mad, IB_CPI_REDIRECT_QKEY_F);
  return c;
}

ClassRedirect DecodeClassRedirect(const MadBytes& mad) {
  const auto cls = static_cast<MgmtClass>(mad[1]);  // MgmtClass, IBTA 13.4.2
  void* data = const_cast<std::uint8_t*>(mad.data() + DataOffset(cls));
  ClassRedirect r;
  r.lid = Narrow<std::uint16_t>(mad_get_field(data, 0, IB_CPI_REDIRECT_LID_F));
  r.sl = Narrow<std::uint8_t>(mad_get_field(data, 0, IB_CPI_REDIRECT_SL_F));
  r.qp = mad_get_field(data, 0, IB_CPI_REDIRECT_QP_F);
  r.qkey = mad_get_field(data, 0, IB_CPI_REDIRECT_QKEY_F);
  return r;
}

std::chrono::microseconds ExpectedTime(std::uint8_t value) {
  const unsigned v = value > 31 ? 31u : value;
  // 4.096 us * 2^v = 4096 ns << v; 2^31 * 4096 ns fits in 64 bits.
  return std::chrono::microseconds((std::uint64_t{4096} << v) / 1000);
}

PortCounters DecodePortCounters(const MadBytes& mad) {
  PortCounters c;
  c.port_select = Narrow<std::uint8_t>(Get(mad, IB_PC_PORT_SELECT_F));
  c.symbol_error = Narrow<std::uint16_t>(Get(mad, IB_PC_ERR_SYM_F));
  c.link_error_recovery = Narrow<std::uint8_t>(Get(mad, IB_PC_LINK_RECOVERS_F));
  c.link_downed = Narrow<std::uint8_t>(Get(mad, IB_PC_LINK_DOWNED_F));
  c.rcv_errors = Narrow<std::uint16_t>(Get(mad, IB_PC_ERR_RCV_F));
  c.rcv_remote_physical_errors = Narrow<std::uint16_t>(Get(mad, IB_PC_ERR_PHYSRCV_F));
  c.rcv_switch_relay_errors = Narrow<std::uint16_t>(Get(mad, IB_PC_ERR_SWITCH_REL_F));
  c.xmit_discards = Narrow<std::uint16_t>(Get(mad, IB_PC_XMT_DISCARDS_F));
  c.xmit_constraint_errors = Narrow<std::uint8_t>(Get(mad, IB_PC_ERR_XMTCONSTR_F));
  c.rcv_constraint_errors = Narrow<std::uint8_t>(Get(mad, IB_PC_ERR_RCVCONSTR_F));
  c.local_link_integrity_errors = Narrow<std::uint8_t>(Get(mad, IB_PC_ERR_LOCALINTEG_F));
  c.excessive_buffer_overrun_errors = Narrow<std::uint8_t>(Get(mad, IB_PC_ERR_EXCESS_OVR_F));
  // QP1Dropped is data bytes 20-21 (IBTA 16.1.3.5 table 225; opensm
  // ib_types.h ib_port_counters_t.qp1_dropped; NVIDIA ibis PM_PortCounters).
  // libibmad 44's IB_PC_QP1_DROP_F reads bytes 22-23, VL15Dropped's.
  c.qp1_dropped = Be16(mad.data() + kMadDataOffset + kPortCountersQp1DroppedByte);
  c.vl15_dropped = Narrow<std::uint16_t>(Get(mad, IB_PC_VL15_DROPPED_F));
  c.xmit_data = Get(mad, IB_PC_XMT_BYTES_F);
  c.rcv_data = Get(mad, IB_PC_RCV_BYTES_F);
  c.xmit_pkts = Get(mad, IB_PC_XMT_PKTS_F);
  c.rcv_pkts = Get(mad, IB_PC_RCV_PKTS_F);
  c.xmit_wait = Get(mad, IB_PC_XMT_WAIT_F);
  return c;
}

PortRcvErrorDetails DecodePortRcvErrorDetails(const MadBytes& mad) {
  PortRcvErrorDetails d;
  d.port_select = Narrow<std::uint8_t>(Get(mad, IB_PC_PORT_SELECT_F));
  d.local_physical_errors = Narrow<std::uint16_t>(Get(mad, IB_PC_RCV_LOCAL_PHY_ERR_F));
  d.malformed_packet_errors = Narrow<std::uint16_t>(Get(mad, IB_PC_RCV_MALFORMED_PKT_ERR_F));
  d.buffer_overrun_errors = Narrow<std::uint16_t>(Get(mad, IB_PC_RCV_BUF_OVR_ERR_F));
  d.dlid_mapping_errors = Narrow<std::uint16_t>(Get(mad, IB_PC_RCV_DLID_MAP_ERR_F));
  d.vl_mapping_errors = Narrow<std::uint16_t>(Get(mad, IB_PC_RCV_VL_MAP_ERR_F));
  d.looping_errors = Narrow<std::uint16_t>(Get(mad, IB_PC_RCV_LOOPING_ERR_F));
  return d;
}

PortXmitDiscardDetails DecodePortXmitDiscardDetails(const MadBytes& mad) {
  PortXmitDiscardDetails d;
  d.port_select = Narrow<std::uint8_t>(Get(mad, IB_PC_PORT_SELECT_F));
  d.inactive_discards = Narrow<std::uint16_t>(Get(mad, IB_PC_XMT_INACT_DISC_F));
  d.neighbor_mtu_discards = Narrow<std::uint16_t>(Get(mad, IB_PC_XMT_NEIGH_MTU_DISC_F));
  d.sw_lifetime_limit_discards = Narrow<std::uint16_t>(Get(mad, IB_PC_XMT_SW_LIFE_DISC_F));
  d.sw_hoq_lifetime_limit_discards = Narrow<std::uint16_t>(Get(mad, IB_PC_XMT_SW_HOL_DISC_F));
  return d;
}

PortVlXmitWait DecodePortVlXmitWait(const MadBytes& mad) {
  PortVlXmitWait w;
  w.port_select = Narrow<std::uint8_t>(Get(mad, IB_PC_PORT_SELECT_F));
  for (std::size_t vl = 0; vl < kVlCount; ++vl) {
    const auto field = static_cast<MAD_FIELDS>(IB_PC_PORT_VL_XMIT_WAIT0_F + static_cast<int>(vl));
    w.wait[vl] = Narrow<std::uint16_t>(Get(mad, field));
  }
  return w;
}

PortSamplesControl DecodePortSamplesControl(const MadBytes& mad) {
  PortSamplesControl c;
  c.port_select = Narrow<std::uint8_t>(Get(mad, IB_PSC_PORT_SELECT_F));      // bits 8..15
  c.tick = Narrow<std::uint8_t>(Get(mad, IB_PSC_TICK_F));                    // bits 16..23
  c.counter_width = Narrow<std::uint8_t>(Get(mad, IB_PSC_COUNTER_WIDTH_F));  // bits 29..31
  c.sample_status = Narrow<std::uint8_t>(Get(mad, IB_PSC_SAMPLE_STATUS_F));  // bits 94..95
  return c;
}

PortCountersExtended DecodePortCountersExtended(const MadBytes& mad) {
  PortCountersExtended c;
  c.port_select = Narrow<std::uint8_t>(Get(mad, IB_PC_EXT_PORT_SELECT_F));
  c.xmit_data = Get64(mad, IB_PC_EXT_XMT_BYTES_F);
  c.rcv_data = Get64(mad, IB_PC_EXT_RCV_BYTES_F);
  c.xmit_pkts = Get64(mad, IB_PC_EXT_XMT_PKTS_F);
  c.rcv_pkts = Get64(mad, IB_PC_EXT_RCV_PKTS_F);
  c.unicast_xmit_pkts = Get64(mad, IB_PC_EXT_XMT_UPKTS_F);
  c.unicast_rcv_pkts = Get64(mad, IB_PC_EXT_RCV_UPKTS_F);
  c.multicast_xmit_pkts = Get64(mad, IB_PC_EXT_XMT_MPKTS_F);
  c.multicast_rcv_pkts = Get64(mad, IB_PC_EXT_RCV_MPKTS_F);
  c.symbol_error = Get64(mad, IB_PC_EXT_ERR_SYM_F);
  c.link_error_recovery = Get64(mad, IB_PC_EXT_LINK_RECOVERS_F);
  c.link_downed = Get64(mad, IB_PC_EXT_LINK_DOWNED_F);
  c.rcv_errors = Get64(mad, IB_PC_EXT_ERR_RCV_F);
  c.rcv_remote_physical_errors = Get64(mad, IB_PC_EXT_ERR_PHYSRCV_F);
  c.rcv_switch_relay_errors = Get64(mad, IB_PC_EXT_ERR_SWITCH_REL_F);
  c.xmit_discards = Get64(mad, IB_PC_EXT_XMT_DISCARDS_F);
  c.xmit_constraint_errors = Get64(mad, IB_PC_EXT_ERR_XMTCONSTR_F);
  c.rcv_constraint_errors = Get64(mad, IB_PC_EXT_ERR_RCVCONSTR_F);
  c.local_link_integrity_errors = Get64(mad, IB_PC_EXT_ERR_LOCALINTEG_F);
  c.excessive_buffer_overrun_errors = Get64(mad, IB_PC_EXT_ERR_EXCESS_OVR_F);
  c.vl15_dropped = Get64(mad, IB_PC_EXT_VL15_DROPPED_F);
  c.xmit_wait = Get64(mad, IB_PC_EXT_XMT_WAIT_F);
  c.qp1_dropped = Get64(mad, IB_PC_EXT_QP1_DROP_F);
  return c;
}

MadRequest NodeInfoQuery(const MadAddress& route) { return Smp(route, smp_attr::kNodeInfo, 0); }
MadRequest NodeDescriptionQuery(const MadAddress& route) { return Smp(route, smp_attr::kNodeDescription, 0); }
MadRequest PortInfoQuery(const MadAddress& route, std::uint8_t port) { return Smp(route, smp_attr::kPortInfo, port); }
MadRequest AdaptiveRoutingInfoQuery(const MadAddress& route) {
  return Smp(route, smp_attr::kMlnxAdaptiveRoutingInfo, 0);
}
MadRequest MlnxExtPortInfoQuery(const MadAddress& route, std::uint8_t port) {
  return Smp(route, smp_attr::kMlnxExtendedPortInfo, port);
}
MadRequest PortInfoExtendedQuery(const MadAddress& route, std::uint8_t port) {
  return Smp(route, smp_attr::kPortInfoExtended, port);
}

SmInfo DecodeSmInfo(const MadBytes& mad) { return SmInfoAt(mad.data() + kMadDataOffset); }

const char* ToString(SmState s) {
  switch (s) {
    case SmState::kNotActive: return "not_active";
    case SmState::kDiscovering: return "discovering";
    case SmState::kStandby: return "standby";
    case SmState::kMaster: return "master";
  }
  return "not_active";
}

SwitchInfo DecodeSwitchInfo(const MadBytes& mad) {
  SwitchInfo s;
  s.linear_fdb_cap = Narrow<std::uint16_t>(Get(mad, IB_SW_LINEAR_FDB_CAP_F));
  s.linear_fdb_top = Narrow<std::uint16_t>(Get(mad, IB_SW_LINEAR_FDB_TOP_F));
  s.partition_enforcement_cap = Narrow<std::uint16_t>(Get(mad, IB_SW_PARTITION_ENFORCE_CAP_F));
  return s;
}

LftBlock DecodeLftBlock(const MadBytes& mad) {
  LftBlock b{};
  std::copy_n(mad.begin() + kMadDataOffset, kLftBlockSize, b.begin());
  return b;
}

PKeyBlock DecodePKeyBlock(const MadBytes& mad) { return PKeysAt(mad.data() + kMadDataOffset); }

MadRequest PKeyBlockQuery(const MadAddress& route, std::uint8_t port, std::uint16_t block) {
  return Smp(route, smp_attr::kPKeyTable, static_cast<std::uint32_t>(port) << 16 | block);
}

MadRequest SwitchInfoQuery(const MadAddress& route) { return Smp(route, smp_attr::kSwitchInfo, 0); }
MadRequest LftBlockQuery(const MadAddress& route, std::uint32_t block) {
  return Smp(route, smp_attr::kLinearForwardingTable, block);
}

MadRequest SmInfoQuery(std::uint16_t lid) { return Smp(MadAddress::Lid(lid), smp_attr::kSmInfo, 0); }

MadRequest SmInfoRecordTableQuery(std::uint16_t sm_lid) {
  return Gmp(MgmtClass::kSubnAdm, MadMethod::kGetTable, sa_attr::kSmInfoRecord, 0, sm_lid);
}

MadRequest LinkRecordQuery(std::uint16_t sa_lid, std::uint16_t from_lid) {
  MadRequest r = Gmp(MgmtClass::kSubnAdm, MadMethod::kGet, sa_attr::kLinkRecord, 0, sa_lid);
  // LinkRecord: FromLID (16 bits), FromPort, ToPort (8 each), ToLID (16),
  // 16 reserved; ComponentMask bit 0 is FromLID. libibmad has no fields.
  r.payload = {static_cast<std::uint8_t>(from_lid >> 8), static_cast<std::uint8_t>(from_lid), 0, 0, 0, 0, 0, 0};
  r.component_mask = 1;
  return r;
}

std::optional<LinkRecord> DecodeLinkRecord(const MadBytes& response) {
  const MadHeader h = DecodeHeader(response);
  if (h.mgmt_class != static_cast<std::uint8_t>(MgmtClass::kSubnAdm) ||
      h.method != static_cast<std::uint8_t>(MadMethod::kGetResponse) || h.attr_id != sa_attr::kLinkRecord ||
      h.status != 0) {
    return std::nullopt;
  }
  const std::uint8_t* rec = response.data() + kSaDataOffset;
  LinkRecord r;
  r.from_lid = Be16(rec);
  r.from_port = rec[2];
  r.to_port = rec[3];
  r.to_lid = Be16(rec + 4);
  return r;
}

MadRequest NodeRecordQuery(std::uint16_t sa_lid, std::uint16_t lid) {
  MadRequest r = Gmp(MgmtClass::kSubnAdm, MadMethod::kGet, sa_attr::kNodeRecord, 0, sa_lid);
  // NodeRecord: LID (16 bits), 16 reserved, NodeInfo, NodeDescription;
  // ComponentMask bit 0 is LID.
  r.payload = {static_cast<std::uint8_t>(lid >> 8), static_cast<std::uint8_t>(lid), 0, 0};
  r.component_mask = 1;
  return r;
}

std::optional<std::uint64_t> DecodeNodeRecordGuid(const MadBytes& response) {
  const MadHeader h = DecodeHeader(response);
  if (h.mgmt_class != static_cast<std::uint8_t>(MgmtClass::kSubnAdm) ||
      h.method != static_cast<std::uint8_t>(MadMethod::kGetResponse) || h.attr_id != sa_attr::kNodeRecord ||
      h.status != 0) {
    return std::nullopt;
  }
  // NodeInfo (IBTA 14.2.5.3) from byte 4 of the record; its NodeGUID at
  // byte 12 of it.
  std::uint64_t guid = 0;
  for (int i = 0; i < 8; ++i) guid = guid << 8 | response[kSaDataOffset + 4 + 12 + i];
  return guid;
}

std::optional<SaTable> DecodeSaTable(const MadResult& result, std::uint16_t attr_id, std::size_t record_bytes) {
  const MadBytes& first = result.response;
  const MadHeader h = DecodeHeader(first);
  if (h.mgmt_class != static_cast<std::uint8_t>(MgmtClass::kSubnAdm) ||
      h.method != static_cast<std::uint8_t>(MadMethod::kGetTableResponse) || h.attr_id != attr_id || h.status != 0) {
    return std::nullopt;
  }
  void* m = const_cast<std::uint8_t*>(first.data());
  SaTable t;
  t.stride = 8 * static_cast<std::size_t>(mad_get_field(m, 0, IB_SA_ATTROFFS_F));
  // How many record bytes the transfer holds.
  std::size_t bytes = kSaDataSize;
  if (!result.tail.empty() || result.length < kMadSize) {
    bytes = result.length > kSaDataOffset ? result.length - kSaDataOffset : 0;
  } else {
    // RMPP (IBTA 13.6.2.1): RMPPFlags bit 0 Active, bit 1 First, bit 2
    // Last; a lone segment's PayloadLength counts the SA header (20
    // bytes) and its records.
    constexpr std::size_t kSaHeaderBytes = 20;
    const std::uint32_t flags = mad_get_field(m, 0, IB_SA_RMPP_FLAGS_F);
    if ((flags & 0x7) == 0x7) {
      const std::size_t payload = mad_get_field(m, 0, IB_SA_RMPP_D2_F);
      bytes = std::min(bytes, payload > kSaHeaderBytes ? payload - kSaHeaderBytes : 0);
    }
  }
  if (t.stride == 0) {
    if (bytes == 0) return t;  // no records (opensm: AttributeOffset 0)
    return std::nullopt;
  }
  if (t.stride < record_bytes) return std::nullopt;
  const std::size_t in_first = std::min(bytes, kSaDataSize);
  t.bytes.assign(first.begin() + kSaDataOffset, first.begin() + static_cast<std::ptrdiff_t>(kSaDataOffset + in_first));
  const std::size_t in_tail = std::min(bytes - in_first, result.tail.size());
  t.bytes.insert(t.bytes.end(), result.tail.begin(), result.tail.begin() + static_cast<std::ptrdiff_t>(in_tail));
  t.count = t.bytes.size() >= record_bytes ? (t.bytes.size() - record_bytes) / t.stride + 1 : 0;
  return t;
}

namespace {
// SubnAdmGetTable of `attr_id` records whose first field, a LID (16 bits;
// ComponentMask bit 0), is `lid`.
MadRequest SaTableByLid(std::uint16_t attr_id, std::uint16_t sa_lid, std::uint16_t lid) {
  MadRequest r = Gmp(MgmtClass::kSubnAdm, MadMethod::kGetTable, attr_id, 0, sa_lid);
  r.payload = {static_cast<std::uint8_t>(lid >> 8), static_cast<std::uint8_t>(lid), 0, 0, 0, 0, 0, 0};
  r.component_mask = 1;
  return r;
}
}  // namespace

// LinearForwardingTableRecord: LID (16 bits), BlockNum (16), 32 reserved,
// the block's 64 ports.
MadRequest LftRecordTableQuery(std::uint16_t sa_lid, std::uint16_t switch_lid) {
  return SaTableByLid(sa_attr::kLftRecord, sa_lid, switch_lid);
}

namespace {
// Every record of a GetTableResponse of `attr_id` (DecodeSaTable), each
// `record_bytes` long, by `decode`; nullopt where it is no such answer.
template <typename Record, typename Decode>
std::optional<std::vector<Record>> RecordsOf(const MadResult& result, std::uint16_t attr_id, std::size_t record_bytes,
                                             Decode decode) {
  const std::optional<SaTable> t = DecodeSaTable(result, attr_id, record_bytes);
  if (!t) return std::nullopt;
  std::vector<Record> out(t->count);
  for (std::size_t i = 0; i < t->count; ++i) out[i] = decode(t->record(i));
  return out;
}
}  // namespace

std::optional<std::vector<LftRecord>> DecodeLftRecords(const MadResult& result) {
  return RecordsOf<LftRecord>(result, sa_attr::kLftRecord, 8 + kLftBlockSize, [](const std::uint8_t* rec) {
    LftRecord r;
    r.lid = Be16(rec);
    r.block = Be16(rec + 2);
    std::copy_n(rec + 8, kLftBlockSize, r.ports.begin());
    return r;
  });
}

// P_KeyTableRecord: LID (16 bits), BlockNum (16), PortNum (8), 24
// reserved, the block's 32 P_Keys.
MadRequest PKeyRecordTableQuery(std::uint16_t sa_lid, std::uint16_t lid) {
  return SaTableByLid(sa_attr::kPKeyTableRecord, sa_lid, lid);
}

std::optional<std::vector<PKeyTableRecord>> DecodePKeyRecords(const MadResult& result) {
  return RecordsOf<PKeyTableRecord>(result, sa_attr::kPKeyTableRecord, 8 + 2 * kPKeyBlockSize,
                                    [](const std::uint8_t* rec) {
                                      PKeyTableRecord r;
                                      r.lid = Be16(rec);
                                      r.block = Be16(rec + 2);
                                      r.port = rec[4];
                                      r.keys = PKeysAt(rec + 8);
                                      return r;
                                    });
}

std::vector<SmInfoRecord> DecodeSmInfoRecords(const MadResult& result) {
  // SMInfoRecord: LID (16 bits), 16 reserved, then SMInfo's 21 bytes.
  const std::optional<SaTable> t = DecodeSaTable(result, sa_attr::kSmInfoRecord, 4 + 21);
  std::vector<SmInfoRecord> out;
  if (!t) return out;
  for (std::size_t i = 0; i < t->count; ++i) {
    const std::uint8_t* rec = t->record(i);
    SmInfoRecord r;
    r.lid = Be16(rec);
    if (r.lid == 0) continue;
    r.info = SmInfoAt(rec + 4);
    out.push_back(r);
  }
  return out;
}

std::vector<SmInfoRecord> DecodeSmInfoRecords(const MadBytes& response) {
  MadResult r;
  r.response = response;
  return DecodeSmInfoRecords(r);
}

MadRequest PerfClassPortInfoQuery(std::uint16_t lid) { return Pma(lid, pma_attr::kClassPortInfo, 0); }
MadRequest PortCountersQuery(std::uint16_t lid, std::uint8_t port) { return Pma(lid, pma_attr::kPortCounters, port); }
MadRequest PortCountersExtendedQuery(std::uint16_t lid, std::uint8_t port) {
  return Pma(lid, pma_attr::kPortCountersExtended, port);
}
MadRequest PortRcvErrorDetailsQuery(std::uint16_t lid, std::uint8_t port) {
  return Pma(lid, pma_attr::kPortRcvErrorDetails, port);
}
MadRequest PortXmitDiscardDetailsQuery(std::uint16_t lid, std::uint8_t port) {
  return Pma(lid, pma_attr::kPortXmitDiscardDetails, port);
}
MadRequest PortVlXmitWaitQuery(std::uint16_t lid, std::uint8_t port) {
  return Pma(lid, pma_attr::kPortVlXmitWaitCounters, port);
}
MadRequest PortSamplesControlQuery(std::uint16_t lid, std::uint8_t port) {
  return Pma(lid, pma_attr::kPortSamplesControl, port);  // PortSelect is byte 1 here too
}
MadRequest ExtendedSpeedsCountersQuery(std::uint16_t lid, std::uint8_t port) {
  return Pma(lid, pma_attr::kPortExtendedSpeedsCounters, port);  // PortSelect is byte 1 (IB_PESC_PORT_SELECT_F)
}
MadRequest PortCountersClear(std::uint16_t lid, std::uint8_t port, std::uint16_t select, std::uint8_t select2) {
  MadRequest r = Pma(lid, pma_attr::kPortCounters, port);
  r.method = MadMethod::kSet;
  r.payload.resize(kPmaDataSize, 0);  // CounterSelect2 is at byte 41
  mad_set_field(r.payload.data(), 0, IB_PC_COUNTER_SELECT_F, select);
  mad_set_field(r.payload.data(), 0, IB_PC_COUNTER_SELECT2_F, select2);
  return r;
}

MadRequest ExtendedSpeedsCountersClear(std::uint16_t lid, std::uint8_t port) {
  MadRequest r = Pma(lid, pma_attr::kPortExtendedSpeedsCounters, port);
  r.method = MadMethod::kSet;
  r.payload.resize(kPmaDataSize, 0);
  mad_set_field64(r.payload.data(), 0, IB_PESC_COUNTER_SELECT_F, ~std::uint64_t{0});
  return r;
}

MadRequest GeneralInfoQuery(std::uint16_t lid) {
  return Gmp(MgmtClass::kVendorNvidia, MadMethod::kGet, vs_attr::kGeneralInfo, 0, lid);
}

GeneralInfo DecodeGeneralInfo(const MadBytes& mad) {
  GeneralInfo g;
  g.general = DecodeGeneralRegister(std::span<const std::uint8_t>(mad).subspan(32));
  g.access_register = (mad[161] & 0x10) != 0;  // bit 20 of the big-endian dword at byte 160
  return g;
}

MadRequest AccessRegisterQuery(std::uint16_t lid, std::uint16_t register_id, const std::vector<std::uint8_t>& request) {
  MadRequest r = Gmp(MgmtClass::kVendorNvidia, MadMethod::kGet, vs_attr::kAccessRegister, register_id, lid);
  // From byte 24: VS_Key (8 bytes, 0), the config dword (block 0), the
  // register's first bytes.
  r.payload.assign(kAccessRegisterDataOffset - kVendorDataOffset, 0);
  r.payload.insert(r.payload.end(), request.begin(),
                   request.begin() + static_cast<std::ptrdiff_t>(std::min(request.size(), kAccessRegisterDataSize)));
  return r;
}

std::span<const std::uint8_t> AccessRegisterData(const MadBytes& mad) {
  return std::span<const std::uint8_t>(mad).subspan(kAccessRegisterDataOffset);
}

bool VendorUnsupported(const MadResult& m) {
  const std::uint16_t code = StatusCode(m);
  return Unsupported(m) || code == 0x0004 || code == 0x0014;
}

bool IsNoticeReport(const MadBytes& mad) {
  const MadHeader h = DecodeHeader(mad);
  return h.mgmt_class == static_cast<std::uint8_t>(MgmtClass::kSubnAdm) &&
         h.method == static_cast<std::uint8_t>(MadMethod::kReport) && h.attr_id == sa_attr::kNotice;
}

Notice DecodeNotice(const MadBytes& report) {
  // libibmad's Notice fields are relative to the attribute, which an SA
  // Report carries at byte 56.
  void* n = const_cast<std::uint8_t*>(report.data() + kSaDataOffset);
  Notice out;
  out.generic = mad_get_field(n, 0, IB_NOTICE_IS_GENERIC_F) != 0;
  out.producer_type = mad_get_field(n, 0, IB_NOTICE_PRODUCER_F);
  out.trap_number = Narrow<std::uint16_t>(mad_get_field(n, 0, IB_NOTICE_TRAP_NUMBER_F));
  out.issuer_lid = Narrow<std::uint16_t>(mad_get_field(n, 0, IB_NOTICE_ISSUER_LID_F));
  if (!out.generic) return out;
  switch (out.trap_number) {
    case trap::kLinkStateChange: out.lid = Narrow<std::uint16_t>(mad_get_field(n, 0, IB_NOTICE_DATA_LID_F)); break;
    case trap::kLocalChange: out.lid = Narrow<std::uint16_t>(mad_get_field(n, 0, IB_NOTICE_DATA_144_LID_F)); break;
    case trap::kGidInService:
    case trap::kGidOutOfService: {
      // DataDetails (Notice byte 10): 6 reserved bytes, then the 16-byte
      // GIDADDR; its interface ID (the last 8 bytes) is the port GUID.
      const std::uint8_t* gid = report.data() + kSaDataOffset + 10 + 6;
      for (int i = 8; i < 16; ++i) out.port_guid = out.port_guid << 8 | gid[i];
      break;
    }
    default: break;
  }
  return out;
}

MadBytes ReportResponse(const MadBytes& report) {
  MadBytes out = report;
  mad_set_field(out.data(), 0, IB_MAD_METHOD_F, static_cast<std::uint32_t>(MadMethod::kReportResponse) & 0x7f);
  mad_set_field(out.data(), 0, IB_MAD_RESPONSE_F, 1);
  mad_set_field(out.data(), 0, IB_MAD_STATUS_F, 0);
  return out;
}

MadRequest InformInfoSubscribe(std::uint16_t sm_lid, std::uint16_t trap_number, bool subscribe) {
  MadRequest r;
  r.mgmt_class = MgmtClass::kSubnAdm;
  r.method = MadMethod::kSet;
  r.attr_id = sa_attr::kInformInfo;
  r.address = MadAddress::Lid(sm_lid);
  // InformInfo (IBTA 13.4.8.3, table 132); libibmad has no fields for it.
  std::vector<std::uint8_t> d(36, 0);
  // GID (bytes 0-15) zero: LIDRangeBegin names the producers instead;
  // 0xFFFF there means every LID.
  d[16] = 0xff;
  d[17] = 0xff;
  d[22] = 1;  // IsGeneric
  d[23] = subscribe ? 1 : 0;
  d[24] = 0xff;  // Type 0xFFFF: every type
  d[25] = 0xff;
  d[26] = static_cast<std::uint8_t>(trap_number >> 8);
  d[27] = static_cast<std::uint8_t>(trap_number);
  // QPN (bytes 28-30) 0: the SA reports to the requester's QP1; bytes
  // 33-35 ProducerType 0xFFFFFF: every producer.
  d[33] = 0xff;
  d[34] = 0xff;
  d[35] = 0xff;
  r.payload = std::move(d);
  return r;
}

}  // namespace ibfabric::transport
