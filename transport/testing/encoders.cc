#include "transport/testing/encoders.h"

#include <infiniband/mad.h>

#include <algorithm>

#include "transport/codec.h"

namespace ibfabric::transport::testing {
namespace {

struct Buf {
  explicit Buf(std::size_t n) : bytes(n, 0) {}
  void Set(MAD_FIELDS f, std::uint32_t v) { mad_set_field(bytes.data(), 0, f, v); }
  void Set64(MAD_FIELDS f, std::uint64_t v) { mad_set_field64(bytes.data(), 0, f, v); }
  std::vector<std::uint8_t> bytes;
};

}  // namespace

std::vector<std::uint8_t> EncodeNodeInfo(const NodeInfo& n) {
  Buf b(kSmpDataSize);
  b.Set(IB_NODE_BASE_VERS_F, 1);
  b.Set(IB_NODE_CLASS_VERS_F, 1);
  b.Set(IB_NODE_TYPE_F, static_cast<std::uint32_t>(n.node_type));
  b.Set(IB_NODE_NPORTS_F, n.num_ports);
  b.Set64(IB_NODE_SYSTEM_GUID_F, n.system_image_guid);
  b.Set64(IB_NODE_GUID_F, n.node_guid);
  b.Set64(IB_NODE_PORT_GUID_F, n.port_guid);
  b.Set(IB_NODE_DEVID_F, n.device_id);
  b.Set(IB_NODE_REVISION_F, n.revision);
  b.Set(IB_NODE_LOCAL_PORT_F, n.local_port);
  b.Set(IB_NODE_VENDORID_F, n.vendor_id);
  return b.bytes;
}

std::vector<std::uint8_t> EncodeNodeDescription(const std::string& s) {
  std::vector<std::uint8_t> out(kSmpDataSize, 0);
  std::copy_n(s.begin(), std::min(s.size(), out.size()), out.begin());
  return out;
}

std::vector<std::uint8_t> EncodePortInfo(const PortInfo& p) {
  Buf b(kSmpDataSize);
  b.Set(IB_PORT_LID_F, p.lid);
  b.Set(IB_PORT_SMLID_F, p.sm_lid);
  b.Set(IB_PORT_CAPMASK_F, p.capability_mask);
  b.Set(IB_PORT_LOCAL_PORT_F, p.local_port);
  b.Set(IB_PORT_LINK_WIDTH_ENABLED_F, p.link_width_enabled);
  b.Set(IB_PORT_LINK_WIDTH_SUPPORTED_F, p.link_width_supported);
  b.Set(IB_PORT_LINK_WIDTH_ACTIVE_F, p.link_width_active);
  b.Set(IB_PORT_LINK_SPEED_SUPPORTED_F, p.link_speed_supported);
  b.Set(IB_PORT_STATE_F, p.port_state);
  b.Set(IB_PORT_PHYS_STATE_F, p.port_phys_state);
  b.Set(IB_PORT_LMC_F, p.lmc);
  b.Set(IB_PORT_LINK_SPEED_ACTIVE_F, p.link_speed_active);
  b.Set(IB_PORT_LINK_SPEED_ENABLED_F, p.link_speed_enabled);
  b.Set(IB_PORT_LINK_SPEED_EXT_ACTIVE_F, p.link_speed_ext_active);
  b.Set(IB_PORT_LINK_SPEED_EXT_SUPPORTED_F, p.link_speed_ext_supported);
  b.Set(IB_PORT_LINK_SPEED_EXT_ENABLED_F, p.link_speed_ext_enabled);
  b.Set(IB_PORT_CAPMASK2_F, p.capability_mask2);
  // LinkSpeedExtActive2/Supported2/Enabled2: byte 56, bits 6-5, 4-3, 2-0.
  b.bytes[56] = static_cast<std::uint8_t>((b.bytes[56] & 0x80) | (p.link_speed_ext2_active & 0x3) << 5 |
                                          (p.link_speed_ext2_supported & 0x3) << 3 | (p.link_speed_ext2_enabled & 0x7));
  b.Set(IB_PORT_SUBN_TIMEOUT_F, p.subnet_timeout);
  b.Set(IB_PORT_RESP_TIME_VAL_F, p.resp_time_value);
  return b.bytes;
}

std::vector<std::uint8_t> EncodePortCounters(const PortCounters& c) {
  Buf b(kPmaDataSize);
  b.Set(IB_PC_PORT_SELECT_F, c.port_select);
  b.Set(IB_PC_ERR_SYM_F, c.symbol_error);
  b.Set(IB_PC_LINK_RECOVERS_F, c.link_error_recovery);
  b.Set(IB_PC_LINK_DOWNED_F, c.link_downed);
  b.Set(IB_PC_ERR_RCV_F, c.rcv_errors);
  b.Set(IB_PC_ERR_PHYSRCV_F, c.rcv_remote_physical_errors);
  b.Set(IB_PC_ERR_SWITCH_REL_F, c.rcv_switch_relay_errors);
  b.Set(IB_PC_XMT_DISCARDS_F, c.xmit_discards);
  b.Set(IB_PC_ERR_XMTCONSTR_F, c.xmit_constraint_errors);
  b.Set(IB_PC_ERR_RCVCONSTR_F, c.rcv_constraint_errors);
  b.Set(IB_PC_ERR_LOCALINTEG_F, c.local_link_integrity_errors);
  b.Set(IB_PC_ERR_EXCESS_OVR_F, c.excessive_buffer_overrun_errors);
  // QP1Dropped at data bytes 20-21 (IBTA 16.1.3.5; libibmad's
  // IB_PC_QP1_DROP_F names VL15Dropped's bytes 22-23).
  b.bytes[kPortCountersQp1DroppedByte] = static_cast<std::uint8_t>(c.qp1_dropped >> 8);
  b.bytes[kPortCountersQp1DroppedByte + 1] = static_cast<std::uint8_t>(c.qp1_dropped);
  b.Set(IB_PC_VL15_DROPPED_F, c.vl15_dropped);
  b.Set(IB_PC_XMT_BYTES_F, c.xmit_data);
  b.Set(IB_PC_RCV_BYTES_F, c.rcv_data);
  b.Set(IB_PC_XMT_PKTS_F, c.xmit_pkts);
  b.Set(IB_PC_RCV_PKTS_F, c.rcv_pkts);
  b.Set(IB_PC_XMT_WAIT_F, c.xmit_wait);
  return b.bytes;
}

std::vector<std::uint8_t> EncodePortRcvErrorDetails(const PortRcvErrorDetails& d) {
  Buf b(kPmaDataSize);
  b.Set(IB_PC_PORT_SELECT_F, d.port_select);
  b.Set(IB_PC_RCV_LOCAL_PHY_ERR_F, d.local_physical_errors);
  b.Set(IB_PC_RCV_MALFORMED_PKT_ERR_F, d.malformed_packet_errors);
  b.Set(IB_PC_RCV_BUF_OVR_ERR_F, d.buffer_overrun_errors);
  b.Set(IB_PC_RCV_DLID_MAP_ERR_F, d.dlid_mapping_errors);
  b.Set(IB_PC_RCV_VL_MAP_ERR_F, d.vl_mapping_errors);
  b.Set(IB_PC_RCV_LOOPING_ERR_F, d.looping_errors);
  return b.bytes;
}

std::vector<std::uint8_t> EncodePortXmitDiscardDetails(const PortXmitDiscardDetails& d) {
  Buf b(kPmaDataSize);
  b.Set(IB_PC_PORT_SELECT_F, d.port_select);
  b.Set(IB_PC_XMT_INACT_DISC_F, d.inactive_discards);
  b.Set(IB_PC_XMT_NEIGH_MTU_DISC_F, d.neighbor_mtu_discards);
  b.Set(IB_PC_XMT_SW_LIFE_DISC_F, d.sw_lifetime_limit_discards);
  b.Set(IB_PC_XMT_SW_HOL_DISC_F, d.sw_hoq_lifetime_limit_discards);
  return b.bytes;
}

std::vector<std::uint8_t> EncodePortSamplesControl(const PortSamplesControl& c) {
  Buf b(kPmaDataSize);
  b.Set(IB_PSC_PORT_SELECT_F, c.port_select);
  b.Set(IB_PSC_TICK_F, c.tick);
  b.Set(IB_PSC_COUNTER_WIDTH_F, c.counter_width);
  b.Set(IB_PSC_SAMPLE_STATUS_F, c.sample_status);
  return b.bytes;
}

namespace {
// `v` big-endian into `width` bytes at byte `at` (MAD fields are big-endian).
void Put(std::vector<std::uint8_t>& d, std::size_t at, std::uint64_t v, std::size_t width) {
  for (std::size_t i = 0; i < width; ++i) d[at + i] = static_cast<std::uint8_t>(v >> (8 * (width - 1 - i)));
}
}  // namespace

std::vector<std::uint8_t> EncodePortInfoExtended(const PortInfoExtended& p) {
  std::vector<std::uint8_t> d(kSmpDataSize, 0);
  Put(d, 0, p.capability_mask, 4);  // CapMask: bits 0..31
  Put(d, 4, p.fec_mode_active, 2);  // FECModeActive: BITSOFFS(32, 16)
  return d;
}

std::vector<std::uint8_t> EncodeExtendedSpeedsRsFec(const ExtendedSpeedsRsFec& e) {
  std::vector<std::uint8_t> d(kPmaDataSize, 0);
  Put(d, 1, e.port_select, 1);          // PortSelect: BITSOFFS(8, 8)
  Put(d, 16, e.sync_header_errors, 2);  // SyncHeaderErrorCounter: BITSOFFS(128, 16)
  Put(d, 18, e.unknown_blocks, 2);      // UnknownBlockCounter: BITSOFFS(144, 16)
  for (std::size_t lane = 0; lane < kFecLanes; ++lane) {
    Put(d, 44 + 4 * lane, e.corrected_symbols_lane[lane], 4);  // FECCorrectableSymbolCtrLane<n>: bit 352 + 32n
  }
  Put(d, 140, e.corrected_blocks, 4);      // PortFECCorrectableBlockCtr: bit 1120
  Put(d, 144, e.uncorrectable_blocks, 4);  // PortFECUncorrectableBlockCtr: bit 1152
  Put(d, 148, e.corrected_symbols, 4);     // PortFECCorrectedSymbolCtr: bit 1184
  return d;
}

std::vector<std::uint8_t> EncodePortCountersExtended(const PortCountersExtended& c) {
  Buf b(kPmaDataSize);
  b.Set(IB_PC_EXT_PORT_SELECT_F, c.port_select);
  b.Set64(IB_PC_EXT_XMT_BYTES_F, c.xmit_data);
  b.Set64(IB_PC_EXT_RCV_BYTES_F, c.rcv_data);
  b.Set64(IB_PC_EXT_XMT_PKTS_F, c.xmit_pkts);
  b.Set64(IB_PC_EXT_RCV_PKTS_F, c.rcv_pkts);
  b.Set64(IB_PC_EXT_XMT_UPKTS_F, c.unicast_xmit_pkts);
  b.Set64(IB_PC_EXT_RCV_UPKTS_F, c.unicast_rcv_pkts);
  b.Set64(IB_PC_EXT_XMT_MPKTS_F, c.multicast_xmit_pkts);
  b.Set64(IB_PC_EXT_RCV_MPKTS_F, c.multicast_rcv_pkts);
  b.Set64(IB_PC_EXT_ERR_SYM_F, c.symbol_error);
  b.Set64(IB_PC_EXT_LINK_RECOVERS_F, c.link_error_recovery);
  b.Set64(IB_PC_EXT_LINK_DOWNED_F, c.link_downed);
  b.Set64(IB_PC_EXT_ERR_RCV_F, c.rcv_errors);
  b.Set64(IB_PC_EXT_ERR_PHYSRCV_F, c.rcv_remote_physical_errors);
  b.Set64(IB_PC_EXT_ERR_SWITCH_REL_F, c.rcv_switch_relay_errors);
  b.Set64(IB_PC_EXT_XMT_DISCARDS_F, c.xmit_discards);
  b.Set64(IB_PC_EXT_ERR_XMTCONSTR_F, c.xmit_constraint_errors);
  b.Set64(IB_PC_EXT_ERR_RCVCONSTR_F, c.rcv_constraint_errors);
  b.Set64(IB_PC_EXT_ERR_LOCALINTEG_F, c.local_link_integrity_errors);
  b.Set64(IB_PC_EXT_ERR_EXCESS_OVR_F, c.excessive_buffer_overrun_errors);
  b.Set64(IB_PC_EXT_VL15_DROPPED_F, c.vl15_dropped);
  b.Set64(IB_PC_EXT_XMT_WAIT_F, c.xmit_wait);
  b.Set64(IB_PC_EXT_QP1_DROP_F, c.qp1_dropped);
  return b.bytes;
}

std::vector<std::uint8_t> EncodePerfClassPortInfo(const PerfClassPortInfo& c) {
  Buf b(kPmaDataSize);
  b.Set(IB_CPI_BASEVER_F, 1);
  b.Set(IB_CPI_CLASSVER_F, 1);
  b.Set(IB_CPI_CAPMASK_F, c.capability_mask);
  b.Set(IB_CPI_CAPMASK2_F, c.capability_mask2);
  b.Set(IB_CPI_RESP_TIME_VALUE_F, c.resp_time_value);
  b.Set(IB_CPI_REDIRECT_LID_F, c.redirect_lid);
  b.Set(IB_CPI_REDIRECT_QP_F, c.redirect_qp);
  b.Set(IB_CPI_REDIRECT_QKEY_F, c.redirect_qkey);
  return b.bytes;
}

std::vector<std::uint8_t> EncodeSwitchInfo(const SwitchInfo& s) {
  Buf b(kSmpDataSize);
  b.Set(IB_SW_LINEAR_FDB_CAP_F, s.linear_fdb_cap);
  b.Set(IB_SW_LINEAR_FDB_TOP_F, s.linear_fdb_top);
  b.Set(IB_SW_PARTITION_ENFORCE_CAP_F, s.partition_enforcement_cap);
  return b.bytes;
}

std::vector<std::uint8_t> EncodeSmInfo(const SmInfo& s) {
  Buf b(kSmpDataSize);
  b.Set64(IB_SMINFO_GUID_F, s.guid);
  b.Set64(IB_SMINFO_KEY_F, s.sm_key);
  b.Set(IB_SMINFO_ACT_F, s.act_count);
  b.Set(IB_SMINFO_PRIO_F, s.priority);
  b.Set(IB_SMINFO_STATE_F, static_cast<std::uint32_t>(s.state));
  return b.bytes;
}

MadBytes EncodeNoticeReport(const Notice& n, std::uint64_t tid) {
  MadBytes m{};
  void* b = m.data();
  mad_set_field(b, 0, IB_MAD_BASEVER_F, 1);
  mad_set_field(b, 0, IB_MAD_MGMTCLASS_F, static_cast<std::uint32_t>(MgmtClass::kSubnAdm));
  mad_set_field(b, 0, IB_MAD_CLASSVER_F, 2);
  mad_set_field(b, 0, IB_MAD_METHOD_F, static_cast<std::uint32_t>(MadMethod::kReport));
  mad_set_field64(b, 0, IB_MAD_TRID_F, tid);
  mad_set_field(b, 0, IB_MAD_ATTRID_F, sa_attr::kNotice);
  void* notice = m.data() + kSaDataOffset;
  mad_set_field(notice, 0, IB_NOTICE_IS_GENERIC_F, 1);
  mad_set_field(notice, 0, IB_NOTICE_TYPE_F, 1);
  mad_set_field(notice, 0, IB_NOTICE_PRODUCER_F, n.producer_type);
  mad_set_field(notice, 0, IB_NOTICE_TRAP_NUMBER_F, n.trap_number);
  mad_set_field(notice, 0, IB_NOTICE_ISSUER_LID_F, n.issuer_lid);
  if (n.trap_number == trap::kLocalChange) {
    mad_set_field(notice, 0, IB_NOTICE_DATA_144_LID_F, n.lid);
  } else if (n.trap_number == trap::kLinkStateChange) {
    mad_set_field(notice, 0, IB_NOTICE_DATA_LID_F, n.lid);
  } else {
    // DataDetails at Notice byte 10: 6 reserved bytes, then the GID.
    std::uint8_t* gid = m.data() + kSaDataOffset + 10 + 6;
    gid[0] = 0xfe;
    gid[1] = 0x80;
    for (int i = 0; i < 8; ++i) gid[8 + i] = static_cast<std::uint8_t>(n.port_guid >> (56 - 8 * i));
  }
  return m;
}

InboundMad EncodeSaTableTransfer(const MadBytes& request, std::size_t stride, const std::vector<std::uint8_t>& records,
                                 std::uint16_t status) {
  const std::vector<std::uint8_t> none;
  const std::vector<std::uint8_t>& data = status != 0 ? none : records;
  const std::size_t first = std::min(data.size(), kSaDataSize);
  InboundMad in;
  in.mad = EncodeResponse(request, std::span<const std::uint8_t>(data.data(), first), status);
  in.tail.assign(data.begin() + static_cast<std::ptrdiff_t>(first), data.end());
  in.length = static_cast<std::uint32_t>(kSaDataOffset + data.size());
  void* b = in.mad.data();
  mad_set_field(b, 0, IB_SA_RMPP_VERS_F, 1);
  mad_set_field(b, 0, IB_SA_RMPP_TYPE_F, 1);                             // DATA
  mad_set_field(b, 0, IB_SA_RMPP_FLAGS_F, in.tail.empty() ? 0x7 : 0x3);  // Active, First (, Last)
  mad_set_field(b, 0, IB_SA_RMPP_D1_F, 1);                               // SegmentNumber
  // PayloadLength: every segment's SA header (20 bytes) and the records.
  const std::size_t segments = std::max<std::size_t>(1, (data.size() + kSaDataSize - 1) / kSaDataSize);
  mad_set_field(b, 0, IB_SA_RMPP_D2_F, static_cast<std::uint32_t>(20 * segments + data.size()));
  mad_set_field(b, 0, IB_SA_ATTROFFS_F, data.empty() ? 0 : static_cast<std::uint32_t>(stride / 8));
  return in;
}

MadBytes EncodeSmInfoRecordsResponse(const MadBytes& request, const std::vector<SmInfoRecord>& records) {
  constexpr std::size_t kStride = 32;
  const std::size_t n = std::min(records.size(), kSaDataSize / kStride);
  std::vector<std::uint8_t> data(n * kStride, 0);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint8_t* rec = data.data() + i * kStride;
    rec[0] = static_cast<std::uint8_t>(records[i].lid >> 8);
    rec[1] = static_cast<std::uint8_t>(records[i].lid);
    const std::vector<std::uint8_t> info = EncodeSmInfo(records[i].info);
    std::copy(info.begin(), info.begin() + 21, rec + 4);
  }
  return EncodeSaTableTransfer(request, kStride, data).mad;  // one MAD: First and Last
}

}  // namespace ibfabric::transport::testing
