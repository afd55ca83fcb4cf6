#include "collectors/reads/counters.h"

namespace ibfabric::collectors {

const std::array<CounterSpec, kCounterCount>& CounterSpecs() {
  static const std::array<CounterSpec, kCounterCount> kSpecs{{
      {Counter::kSymbolError, "symbol_error", "SymbolErrorCounter", 1, 0, 16},
      {Counter::kLinkErrorRecovery, "link_error_recovery", "LinkErrorRecoveryCounter", 1, 1, 8},
      {Counter::kLinkDowned, "link_downed", "LinkDownedCounter", 1, 2, 8},
      {Counter::kRcvErrors, "receive_errors", "PortRcvErrors", 1, 3, 16},
      {Counter::kRcvRemotePhysicalErrors, "receive_remote_physical_errors", "PortRcvRemotePhysicalErrors", 1, 4, 16},
      {Counter::kRcvSwitchRelayErrors, "receive_switch_relay_errors", "PortRcvSwitchRelayErrors", 1, 5, 16},
      {Counter::kXmitDiscards, "transmit_discards", "PortXmitDiscards", 1, 6, 16},
      {Counter::kXmitConstraintErrors, "transmit_constraint_errors", "PortXmitConstraintErrors", 1, 7, 8},
      {Counter::kRcvConstraintErrors, "receive_constraint_errors", "PortRcvConstraintErrors", 1, 8, 8},
      {Counter::kLocalLinkIntegrityErrors, "local_link_integrity_errors", "LocalLinkIntegrityErrors", 1, 9, 4},
      {Counter::kExcessiveBufferOverrunErrors, "excessive_buffer_overrun_errors", "ExcessiveBufferOverrunErrors", 1, 10,
       4},
      {Counter::kVl15Dropped, "vl15_dropped", "VL15Dropped", 1, 11, 16},
      {Counter::kQp1Dropped, "qp1_dropped", "QP1Dropped", 1, -1, 16},
      {Counter::kXmitWait, "transmit_wait", "PortXmitWait", 1, 16, 32},
      // PortXmitData/PortRcvData count 32-bit words (IBTA 16.1.3.5 table 225 note).
      {Counter::kXmitData, "transmit_data_bytes", "PortXmitData", 4, 12, 32},
      {Counter::kRcvData, "receive_data_bytes", "PortRcvData", 4, 13, 32},
      {Counter::kXmitPkts, "transmit_packets", "PortXmitPkts", 1, 14, 32},
      {Counter::kRcvPkts, "receive_packets", "PortRcvPkts", 1, 15, 32},
      {Counter::kUnicastXmitPkts, "unicast_transmit_packets", "PortUnicastXmitPkts", 1, -1, 64},
      {Counter::kUnicastRcvPkts, "unicast_receive_packets", "PortUnicastRcvPkts", 1, -1, 64},
      {Counter::kMulticastXmitPkts, "multicast_transmit_packets", "PortMulticastXmitPkts", 1, -1, 64},
      {Counter::kMulticastRcvPkts, "multicast_receive_packets", "PortMulticastRcvPkts", 1, -1, 64},
      // PortRcvErrorDetails has a CounterSelect of its own; these are not cleared.
      {Counter::kLocalPhysicalErrors, "local_physical_errors", "PortLocalPhysicalErrors", 1, -1, 16},
      {Counter::kMalformedPacketErrors, "malformed_packet_errors", "PortMalformedPktErrors", 1, -1, 16},
      {Counter::kBufferOverrunErrors, "buffer_overrun_errors", "PortBufferOverrunErrors", 1, -1, 16},
      // treydock/infiniband_exporter's name (sic: "dli"), kept for its users.
      {Counter::kDlidMappingErrors, "dli_mapping_errors", "PortDLIDMappingErrors", 1, -1, 16},
      {Counter::kVlMappingErrors, "vl_mapping_errors", "PortVLMappingErrors", 1, -1, 16},
      {Counter::kLoopingErrors, "looping_errors", "PortLoopingErrors", 1, -1, 16},
      // PortXmitDiscardDetails likewise has a CounterSelect of its own.
      {Counter::kInactiveDiscards, "inactive_discards", "PortInactiveDiscards", 1, -1, 16},
      {Counter::kNeighborMtuDiscards, "neighbor_mtu_discards", "PortNeighborMTUDiscards", 1, -1, 16},
      {Counter::kSwitchLifetimeLimitDiscards, "switch_lifetime_limit_discards", "PortSwLifetimeLimitDiscards", 1, -1,
       16},
      {Counter::kSwitchHoqLifetimeLimitDiscards, "switch_hoq_lifetime_limit_discards", "PortSwHOQLifetimeLimitDiscards",
       1, -1, 16},
  }};
  return kSpecs;
}

std::uint8_t FieldBits(std::size_t i, bool wide) { return wide ? 64 : CounterSpecs()[i].bits; }

const char* ToString(PortGroup g) {
  switch (g) {
    case PortGroup::kErrors: return "errors";
    case PortGroup::kCongestion: return "congestion";
    case PortGroup::kData: return "data";
    case PortGroup::kPackets: return "packets";
    case PortGroup::kDetails: return "details";
    case PortGroup::kState: return "state";
    case PortGroup::kLanes: return "lanes";
  }
  return "unknown";
}

PortGroup GroupOf(Counter c) {
  switch (c) {
    case Counter::kXmitWait: return PortGroup::kCongestion;
    case Counter::kXmitData:
    case Counter::kRcvData: return PortGroup::kData;
    case Counter::kXmitPkts:
    case Counter::kRcvPkts:
    case Counter::kUnicastXmitPkts:
    case Counter::kUnicastRcvPkts:
    case Counter::kMulticastXmitPkts:
    case Counter::kMulticastRcvPkts: return PortGroup::kPackets;
    case Counter::kLocalPhysicalErrors:
    case Counter::kMalformedPacketErrors:
    case Counter::kBufferOverrunErrors:
    case Counter::kDlidMappingErrors:
    case Counter::kVlMappingErrors:
    case Counter::kLoopingErrors:
    case Counter::kInactiveDiscards:
    case Counter::kNeighborMtuDiscards:
    case Counter::kSwitchLifetimeLimitDiscards:
    case Counter::kSwitchHoqLifetimeLimitDiscards: return PortGroup::kDetails;
    default: return PortGroup::kErrors;
  }
}

PortGroups AutoPortGroups(std::size_t fabric_ports) {
  if (fabric_ports <= kAllGroupsPorts) return PortGroups().set();
  PortGroups g;
  for (PortGroup x : {PortGroup::kErrors, PortGroup::kCongestion, PortGroup::kData}) g.set(static_cast<std::size_t>(x));
  return g;
}

bool ParsePortGroups(const std::string& text, PortGroups* groups, bool* automatic, std::string* error) {
  if (text == "auto" || text == "all") {
    *automatic = text == "auto";
    *groups = PortGroups().set();
    return true;
  }
  PortGroups out;
  std::size_t at = 0;
  while (true) {
    const std::size_t comma = text.find(',', at);
    const std::string name = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    bool known = false;
    for (std::size_t g = 0; g < kPortGroupCount; ++g) {
      if (name != ToString(static_cast<PortGroup>(g))) continue;
      out.set(g);
      known = true;
    }
    if (!known) {
      *error = "'" + name.substr(0, 40) +
               "' is not a group (errors, congestion, data, packets, details, state, lanes; or auto, all)";
      return false;
    }
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  *automatic = false;
  *groups = out;
  return true;
}

PortSample SampleFrom(const transport::PortCounters& pc, const transport::PortCountersExtended* ext,
                      const PmaCapabilities& caps) {
  PortSample s;
  // From PortCountersExtended's 64-bit field, or the counter's own.
  auto wide = [&s](Counter c, std::uint64_t v) { s.Set(c, v, true); };
  auto own = [&s](Counter c, std::uint64_t v) { s.Set(c, v, false); };
  if (ext != nullptr && caps.AdditionalExtended()) {
    // 64-bit copies of the error counters in PortCountersExtended: never sticky.
    wide(Counter::kSymbolError, ext->symbol_error);
    wide(Counter::kLinkErrorRecovery, ext->link_error_recovery);
    wide(Counter::kLinkDowned, ext->link_downed);
    wide(Counter::kRcvErrors, ext->rcv_errors);
    wide(Counter::kRcvRemotePhysicalErrors, ext->rcv_remote_physical_errors);
    wide(Counter::kRcvSwitchRelayErrors, ext->rcv_switch_relay_errors);
    wide(Counter::kXmitDiscards, ext->xmit_discards);
    wide(Counter::kXmitConstraintErrors, ext->xmit_constraint_errors);
    wide(Counter::kRcvConstraintErrors, ext->rcv_constraint_errors);
    wide(Counter::kLocalLinkIntegrityErrors, ext->local_link_integrity_errors);
    wide(Counter::kExcessiveBufferOverrunErrors, ext->excessive_buffer_overrun_errors);
    wide(Counter::kVl15Dropped, ext->vl15_dropped);
    if (caps.XmitWait() || ext->xmit_wait != 0) wide(Counter::kXmitWait, ext->xmit_wait);
    if (caps.Qp1Dropped()) wide(Counter::kQp1Dropped, ext->qp1_dropped);
  } else {
    // Their own widths (IBTA 16.1.3.5, table 225: CounterSpec::bits).
    own(Counter::kSymbolError, pc.symbol_error);
    own(Counter::kLinkErrorRecovery, pc.link_error_recovery);
    own(Counter::kLinkDowned, pc.link_downed);
    own(Counter::kRcvErrors, pc.rcv_errors);
    own(Counter::kRcvRemotePhysicalErrors, pc.rcv_remote_physical_errors);
    own(Counter::kRcvSwitchRelayErrors, pc.rcv_switch_relay_errors);
    own(Counter::kXmitDiscards, pc.xmit_discards);
    own(Counter::kXmitConstraintErrors, pc.xmit_constraint_errors);
    own(Counter::kRcvConstraintErrors, pc.rcv_constraint_errors);
    own(Counter::kLocalLinkIntegrityErrors, pc.local_link_integrity_errors);
    own(Counter::kExcessiveBufferOverrunErrors, pc.excessive_buffer_overrun_errors);
    own(Counter::kVl15Dropped, pc.vl15_dropped);
    if (caps.XmitWait() || pc.xmit_wait != 0) own(Counter::kXmitWait, pc.xmit_wait);
    if (caps.Qp1Dropped()) own(Counter::kQp1Dropped, pc.qp1_dropped);
  }
  if (ext != nullptr) {
    wide(Counter::kXmitData, ext->xmit_data);
    wide(Counter::kRcvData, ext->rcv_data);
    wide(Counter::kXmitPkts, ext->xmit_pkts);
    wide(Counter::kRcvPkts, ext->rcv_pkts);
    if (caps.ExtendedUnicastMulticast()) {
      wide(Counter::kUnicastXmitPkts, ext->unicast_xmit_pkts);
      wide(Counter::kUnicastRcvPkts, ext->unicast_rcv_pkts);
      wide(Counter::kMulticastXmitPkts, ext->multicast_xmit_pkts);
      wide(Counter::kMulticastRcvPkts, ext->multicast_rcv_pkts);
    }
  } else {
    // Without PortCountersExtended only the 32-bit data and packet counters exist.
    own(Counter::kXmitData, pc.xmit_data);
    own(Counter::kRcvData, pc.rcv_data);
    own(Counter::kXmitPkts, pc.xmit_pkts);
    own(Counter::kRcvPkts, pc.rcv_pkts);
  }
  return s;
}

void AddRcvErrorDetails(const transport::PortRcvErrorDetails& d, PortSample* s) {
  const auto set = [s](Counter c, std::uint16_t v) { s->Set(c, v, false); };  // their own 16-bit fields
  set(Counter::kLocalPhysicalErrors, d.local_physical_errors);
  set(Counter::kMalformedPacketErrors, d.malformed_packet_errors);
  set(Counter::kBufferOverrunErrors, d.buffer_overrun_errors);
  set(Counter::kDlidMappingErrors, d.dlid_mapping_errors);
  set(Counter::kVlMappingErrors, d.vl_mapping_errors);
  set(Counter::kLoopingErrors, d.looping_errors);
}

void AddXmitDiscardDetails(const transport::PortXmitDiscardDetails& d, PortSample* s) {
  const auto set = [s](Counter c, std::uint16_t v) { s->Set(c, v, false); };  // their own 16-bit fields
  set(Counter::kInactiveDiscards, d.inactive_discards);
  set(Counter::kNeighborMtuDiscards, d.neighbor_mtu_discards);
  set(Counter::kSwitchLifetimeLimitDiscards, d.sw_lifetime_limit_discards);
  set(Counter::kSwitchHoqLifetimeLimitDiscards, d.sw_hoq_lifetime_limit_discards);
}

}  // namespace ibfabric::collectors
