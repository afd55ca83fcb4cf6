#include "tests/unit/fake_fabric.h"

#include <infiniband/mad.h>

#include <algorithm>

#include "transport/attributes.h"
#include "transport/codec.h"
#include "transport/registers.h"
#include "transport/testing/encoders.h"

namespace ibfabric::testing {

using namespace transport;
using transport::testing::EncodeNodeDescription;
using transport::testing::EncodeNodeInfo;
using transport::testing::EncodePortCounters;
using transport::testing::EncodePortCountersExtended;
using transport::testing::EncodePortInfo;

int FakeFabric::AddSwitch(const std::string& name, int ports, std::uint16_t lid) {
  FakeNode n{name, NodeType::kSwitch, lid, {}, ports};
  n.cap_mask = pma_cap::kAllPortSelect | pma_cap::kExtWidth | pma_cap::kXmitWait;
  for (int p = 1; p <= ports; ++p) n.ports[p] = PortState{};
  nodes_.push_back(n);
  return static_cast<int>(nodes_.size()) - 1;
}

int FakeFabric::AddCa(const std::string& name, int ports) {
  FakeNode n{name, NodeType::kCa, 0, {}, ports};
  n.cap_mask = pma_cap::kExtWidth | pma_cap::kXmitWait;
  for (int p = 1; p <= ports; ++p) n.ports[p] = PortState{};
  nodes_.push_back(n);
  return static_cast<int>(nodes_.size()) - 1;
}

void FakeFabric::Connect(int a, int pa, int b, int pb) {
  PortState& x = nodes_.at(a).ports.at(pa);
  PortState& y = nodes_.at(b).ports.at(pb);
  x.peer = b;
  x.peer_port = pb;
  x.up = true;
  y.peer = a;
  y.peer_port = pa;
  y.up = true;
}

void FakeFabric::SetCapabilities(int node, std::uint16_t mask, std::uint32_t mask2, bool answers) {
  nodes_.at(node).cap_mask = mask;
  nodes_.at(node).cap_mask2 = mask2;
  nodes_.at(node).cpi_answers = answers;
}

void FakeFabric::SetCaLid(int ca, int port, std::uint16_t lid) { nodes_.at(ca).ports.at(port).lid = lid; }

void FakeFabric::SetLinkDown(int node, int port) {
  PortState& p = nodes_.at(node).ports.at(port);
  if (p.peer >= 0) nodes_.at(p.peer).ports.at(p.peer_port).up = false;
  p.up = false;
}

void FakeFabric::SetCounters(int node, int port, const PortCounters& c) { nodes_.at(node).ports.at(port).counters = c; }
void FakeFabric::SetExtended(int node, int port, const PortCountersExtended& c) {
  nodes_.at(node).ports.at(port).extended = c;
}

void FakeFabric::SetRcvErrorDetails(int node, int port, const transport::PortRcvErrorDetails& d) {
  nodes_.at(node).ports.at(port).details = d;
}

void FakeFabric::SetXmitDiscardDetails(int node, int port, const transport::PortXmitDiscardDetails& d) {
  nodes_.at(node).ports.at(port).discard_details = d;
}

transport::testing::FakeMadPort::Responder FakeFabric::Responder(int local, int local_port) {
  return [this, local, local_port](const MadAddress& to, const MadBytes& req) {
    return Answer(local, local_port, to, req);
  };
}

std::optional<MadBytes> FakeFabric::Answer(int local, int local_port, const MadAddress& to, const MadBytes& req) {
  const MadHeader h = DecodeHeader(req);
  if (h.mgmt_class == static_cast<std::uint8_t>(MgmtClass::kSubnDirectRoute)) {
    // Walk the route: each hop leaves the current node by the given port.
    int node = local;
    int entered = local_port;
    for (std::uint8_t out : to.dr_path) {
      const FakeNode& n = nodes_.at(node);
      if (node != local && n.type != NodeType::kSwitch) return std::nullopt;  // CAs do not forward
      auto it = n.ports.find(out);
      if (it == n.ports.end() || !it->second.up) return std::nullopt;
      entered = it->second.peer_port;
      node = it->second.peer;
    }
    return Smp(node, entered, req);
  }
  if (h.mgmt_class == static_cast<std::uint8_t>(MgmtClass::kSubnLidRouted)) {
    ++lid_routed_smps_;
    if (!lid_routing_ || to.lid == 0) return std::nullopt;
    if (auto m = misrouted_.find(to.lid); m != misrouted_.end()) {
      const FakeNode& n = nodes_.at(m->second);
      return Smp(m->second, n.type == NodeType::kSwitch ? 0 : n.ports.begin()->first, req);
    }
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      const FakeNode& n = nodes_[i];
      if (n.type == NodeType::kSwitch) {
        if (n.lid == to.lid) return Smp(static_cast<int>(i), 0, req);
        continue;
      }
      for (const auto& [num, p] : n.ports) {
        if (p.lid == to.lid) return Smp(static_cast<int>(i), num, req);
      }
    }
    return std::nullopt;
  }
  if (h.mgmt_class == static_cast<std::uint8_t>(MgmtClass::kPerformance)) return Pma(to, req);
  if (h.mgmt_class == static_cast<std::uint8_t>(MgmtClass::kVendorNvidia)) return Vendor(to, req);
  if (h.mgmt_class == static_cast<std::uint8_t>(MgmtClass::kSubnAdm) && sa_lid_ != 0 && to.lid == sa_lid_) {
    return Sa(req);
  }
  return std::nullopt;
}

std::optional<MadBytes> FakeFabric::Sa(const MadBytes& req) {
  ++sa_queries_;
  const MadHeader h = DecodeHeader(req);
  // Get by the record's first field (LID, FromLID): ComponentMask bit 0.
  void* m = const_cast<std::uint8_t*>(req.data());
  if (h.method != static_cast<std::uint8_t>(transport::MadMethod::kGet) ||
      mad_get_field64(m, 0, IB_SA_COMPMASK_F) != 1) {
    return EncodeResponse(req, {}, 0x0200);  // ERR_REQ_INVALID
  }
  const std::uint8_t* rec = req.data() + transport::kSaDataOffset;
  const std::uint16_t from = static_cast<std::uint16_t>(rec[0] << 8 | rec[1]);
  if (h.attr_id == transport::sa_attr::kNodeRecord) {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (&nodes_[i] != NodeAt(from)) continue;
      std::vector<std::uint8_t> data(4 + 40, 0);
      data[0] = rec[0];
      data[1] = rec[1];
      const std::uint64_t guid = Guid(static_cast<int>(i));
      for (int b = 0; b < 8; ++b) data[4 + 12 + b] = static_cast<std::uint8_t>(guid >> (56 - 8 * b));
      return EncodeResponse(req, data);
    }
    return EncodeResponse(req, {}, 0x0300);
  }
  if (h.attr_id != transport::sa_attr::kLinkRecord) return std::nullopt;
  for (const FakeNode& n : nodes_) {
    if (n.type == NodeType::kSwitch) continue;
    for (const auto& [num, p] : n.ports) {
      if (p.lid != from || !p.up || p.peer < 0) continue;
      const FakeNode& sw = nodes_.at(p.peer);
      const std::uint16_t to = sw.lid;
      const std::vector<std::uint8_t> data{rec[0],
                                           rec[1],
                                           static_cast<std::uint8_t>(num),
                                           static_cast<std::uint8_t>(p.peer_port),
                                           static_cast<std::uint8_t>(to >> 8),
                                           static_cast<std::uint8_t>(to),
                                           0,
                                           0};
      return EncodeResponse(req, data);
    }
  }
  return EncodeResponse(req, {}, 0x0300);
}

FakeFabric::FakeNode* FakeFabric::NodeAt(std::uint16_t lid) {
  if (lid == 0) return nullptr;
  for (FakeNode& n : nodes_) {
    if (n.type == NodeType::kSwitch ? n.lid == lid : std::any_of(n.ports.begin(), n.ports.end(), [lid](const auto& p) {
          return p.second.lid == lid;
        }))
      return &n;
  }
  return nullptr;
}

namespace {
// PPCNT with group 0x16 as mstflint's ppcnt_reg_ext and
// phys_layer_stat_cntrs_ext lay it out (the offsets transport/registers.h
// names), big-endian.
std::vector<std::uint8_t> EncodePhysLayerStatistics(std::uint8_t port, const transport::PhysLayerStatistics& c) {
  std::vector<std::uint8_t> r(transport::kAccessRegisterDataSize, 0);  // what one GMP carries of it
  const auto put = [&](std::size_t at, std::uint64_t v, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) r[at + i] = static_cast<std::uint8_t>(v >> (8 * (n - 1 - i)));
  };
  r[1] = port;
  r[2] = 0x40;  // pnat 1: an IB port number
  r[3] = transport::kPpcntPhysLayerStatistics;
  put(0x08, c.time_since_clear_ms, 8);
  put(0x10, c.received_bits, 8);
  put(0x18, c.symbol_errors, 8);
  put(0x20, c.corrected_bits, 8);
  for (std::size_t lane = 0; lane < transport::kPhysLayerLanes; ++lane)
    put(0x28 + 8 * lane, c.raw_errors_lane[lane], 8);
  put(0x84, c.effective_errors, 8);
  return r;
}
}  // namespace

std::optional<MadBytes> FakeFabric::Vendor(const MadAddress& to, const MadBytes& req) {
  const MadHeader h = DecodeHeader(req);
  const FakeNode* found = NodeAt(to.lid);
  if (!found || found->silent || !found->vendor_class) return std::nullopt;
  const FakeNode& n = *found;
  // The answer's data from byte 24 (transport::kVendorDataOffset).
  std::vector<std::uint8_t> data(transport::kMadSize - transport::kVendorDataOffset, 0);
  const auto at = [&](std::size_t mad_byte) -> std::uint8_t& { return data[mad_byte - transport::kVendorDataOffset]; };
  if (h.attr_id == transport::vs_attr::kGeneralInfo) {
    at(34) = static_cast<std::uint8_t>(n.mlnx_device_id >> 8);
    at(35) = static_cast<std::uint8_t>(n.mlnx_device_id);
    if (n.access_register) at(161) = 0x10;  // capability bit 20
    return EncodeResponse(req, data);
  }
  if (h.attr_id != transport::vs_attr::kAccessRegister || !n.access_register) return EncodeResponse(req, {}, 0x0c);
  if (h.attr_mod == transport::reg::kPpcnt) {  // local_port: register byte 1
    const auto port = n.ports.find(req[37]);
    if (port != n.ports.end() && port->second.phys && (req[39] & 0x3f) == transport::kPpcntPhysLayerStatistics) {
      const std::vector<std::uint8_t> bytes = EncodePhysLayerStatistics(req[37], *port->second.phys);
      std::copy(bytes.begin(), bytes.end(), &at(36));
      return EncodeResponse(req, data);
    }
  }
  const auto reg = n.registers.find(static_cast<std::uint16_t>(h.attr_mod));
  if (reg == n.registers.end()) return EncodeResponse(req, {}, 0x14);
  std::vector<std::uint8_t> bytes = reg->second;
  if (h.attr_mod == transport::reg::kMfsm) {  // the asked tachometer's speed
    const int t = req[36];                    // tacho_hi [31:28] and tacho [27:24]: the whole first byte
    const auto rpm = n.fan_rpm.find(t);
    const int value = rpm == n.fan_rpm.end() ? 0 : rpm->second;
    bytes = {req[36], 0, 0, 0, 0, 0, static_cast<std::uint8_t>(value >> 8), static_cast<std::uint8_t>(value)};
  }
  std::copy(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(bytes.size(), 220)),
            &at(36));
  return EncodeResponse(req, data);
}

std::optional<MadBytes> FakeFabric::Smp(int node, int entered, const MadBytes& req) {
  const MadHeader h = DecodeHeader(req);
  const FakeNode& n = nodes_.at(node);
  if (n.silent) return std::nullopt;
  if (h.attr_id == smp_attr::kNodeInfo) {
    NodeInfo ni;
    ni.node_type = n.type;
    ni.num_ports = static_cast<std::uint8_t>(n.num_ports);
    ni.node_guid = Guid(node);
    ni.system_image_guid = Guid(node);
    ni.port_guid = n.type == NodeType::kSwitch ? Guid(node) : (Guid(node) << 8 | static_cast<std::uint64_t>(entered));
    ni.local_port = static_cast<std::uint8_t>(entered);
    if (n.mlnx_device_id != 0) {
      ni.vendor_id = 0x02c9;
      ni.device_id = n.mlnx_device_id;
    }
    return EncodeResponse(req, EncodeNodeInfo(ni));
  }
  if (h.attr_id == smp_attr::kNodeDescription) return EncodeResponse(req, EncodeNodeDescription(n.name));
  if (h.attr_id == smp_attr::kPortInfo) {
    PortInfo pi;
    const int port = static_cast<int>(h.attr_mod);
    if (n.xdr && n.xdr_advertised) {
      pi.capability_mask = transport::kPortCapHasExtSpeeds | transport::kPortCapHasCapMask2;
      pi.capability_mask2 = transport::kPortCap2ExtSpeeds2;
    }
    if (n.fec_mode) {
      pi.capability_mask |= transport::kPortCapHasCapMask2;
      pi.capability_mask2 |= transport::kPortCap2PortInfoExtended;
    }
    if (port == 0 && n.type == NodeType::kSwitch) {
      pi.lid = n.lid;
      pi.port_state = kPortStateActive;
      return EncodeResponse(req, EncodePortInfo(pi));
    }
    auto it = n.ports.find(port);
    if (it == n.ports.end()) return EncodeResponse(req, {}, 0x1c);  // invalid attribute modifier
    pi.lid = n.type == NodeType::kSwitch ? n.lid : it->second.lid;
    pi.local_port = static_cast<std::uint8_t>(entered);
    pi.port_state = it->second.up ? kPortStateActive : kPortStateDown;
    pi.port_phys_state = it->second.up ? kPhysStateLinkUp : 2;
    pi.link_width_active = 2;  // 4x
    pi.link_speed_active = 4;  // QDR
    if (n.xdr) {
      pi.link_speed_ext_supported = 8;  // NDR
      pi.link_speed_ext2_supported = 1;
      pi.link_speed_ext2_enabled = 1;
      const PortState& st = it->second;
      const FakeNode* peer = st.peer >= 0 ? &nodes_.at(static_cast<std::size_t>(st.peer)) : nullptr;
      const bool both = st.up && n.xdr_advertised && peer && peer->xdr && peer->xdr_advertised;
      pi.link_speed_ext2_active = both ? 1 : 0;
    }
    return EncodeResponse(req, EncodePortInfo(pi));
  }
  if (h.attr_id == smp_attr::kMlnxExtendedPortInfo && n.mlnx_device_id != 0) {
    ++mlnx_smps_;
    auto it = n.ports.find(static_cast<int>(h.attr_mod));
    if (it == n.ports.end()) return EncodeResponse(req, {}, 0x1c);
    const PortState& st = it->second;
    const FakeNode* peer = st.peer >= 0 ? &nodes_.at(static_cast<std::size_t>(st.peer)) : nullptr;
    const bool fdr10 = st.up && n.fdr10_links && peer && peer->mlnx_device_id != 0 && peer->fdr10_links;
    std::vector<std::uint8_t> data(64, 0);
    data[7] = transport::kMlnxSpeedFdr10;               // LinkSpeedSupported (libibmad fields.c)
    data[11] = transport::kMlnxSpeedFdr10;              // LinkSpeedEnabled
    data[15] = fdr10 ? transport::kMlnxSpeedFdr10 : 0;  // LinkSpeedActive
    return EncodeResponse(req, data);
  }
  if (h.attr_id == smp_attr::kPortInfoExtended && n.fec_mode) {
    if (n.ports.find(static_cast<int>(h.attr_mod)) == n.ports.end()) return EncodeResponse(req, {}, 0x1c);
    return EncodeResponse(req, transport::testing::EncodePortInfoExtended({1, *n.fec_mode}));
  }
  return EncodeResponse(req, {}, 0x0c);  // unsupported attribute
}

std::optional<MadBytes> FakeFabric::Pma(const MadAddress& to, const MadBytes& req) {
  const MadHeader h = DecodeHeader(req);
  FakeNode* found = NodeAt(to.lid);
  if (!found) return std::nullopt;  // no such LID: nothing answers
  FakeNode& n = *found;
  if (n.silent) return std::nullopt;
  if (h.attr_id == pma_attr::kClassPortInfo) {
    if (!n.cpi_answers) return std::nullopt;
    return EncodeResponse(req, transport::testing::EncodePerfClassPortInfo({n.cap_mask, n.cap_mask2}));
  }
  const int select = MadData(req)[1];  // PortSelect, IBTA 16.1.3.5
  auto it = n.ports.find(select);
  if (it == n.ports.end()) return EncodeResponse(req, {}, 0x1c);
  if (const auto st = n.attr_status.find(h.attr_id); st != n.attr_status.end() && st->second != 0) {
    return EncodeResponse(req, {}, st->second);
  }
  if (h.attr_id == pma_attr::kPortSamplesControl && n.sample_tick) {
    if (n.samples_status != 0) return EncodeResponse(req, {}, n.samples_status);
    transport::PortSamplesControl c;
    c.port_select = static_cast<std::uint8_t>(select);
    c.tick = *n.sample_tick;
    c.counter_width = 4;  // 32-bit sample counters
    return EncodeResponse(req, transport::testing::EncodePortSamplesControl(c));
  }
  if (h.attr_id == pma_attr::kPortCounters && n.counters_status != 0) {
    return EncodeResponse(req, {}, n.counters_status);
  }
  if (h.attr_id == pma_attr::kPortCounters) {
    PortCounters& c = it->second.counters;
    if (h.method == static_cast<std::uint8_t>(MadMethod::kSet)) {
      // CounterSelect (bits 0..11 of interest here) and CounterSelect2 bit 0.
      const std::uint16_t sel = static_cast<std::uint16_t>(MadData(req)[2] << 8 | MadData(req)[3]);
      if (sel & (1 << 0)) c.symbol_error = 0;
      if (sel & (1 << 1)) c.link_error_recovery = 0;
      if (sel & (1 << 2)) c.link_downed = 0;
      if (sel & (1 << 3)) c.rcv_errors = 0;
      if (sel & (1 << 6)) c.xmit_discards = 0;
      if (sel & (1 << 11)) c.vl15_dropped = 0;
      ++sets_;
    }
    PortCounters out = c;
    out.port_select = static_cast<std::uint8_t>(select);
    return EncodeResponse(req, EncodePortCounters(out));
  }
  if (h.attr_id == pma_attr::kPortCountersExtended && !n.no_extended) {
    PortCountersExtended c = it->second.extended;
    c.port_select = static_cast<std::uint8_t>(select);
    return EncodeResponse(req, EncodePortCountersExtended(c));
  }
  if (h.attr_id == pma_attr::kPortExtendedSpeedsCounters && n.fec_mode) {
    if (h.method == static_cast<std::uint8_t>(MadMethod::kSet)) {
      if (n.fec_clear_status != 0) return EncodeResponse(req, {}, n.fec_clear_status);
      const auto data = MadData(req);
      if (std::any_of(data.begin() + 8, data.begin() + 16, [](std::uint8_t b) { return b != 0; })) {
        it->second.fec = transport::ExtendedSpeedsRsFec{};  // CounterSelect (bytes 8-15)
        ++sets_;
      }
    }
    transport::ExtendedSpeedsRsFec c = it->second.fec;
    c.port_select = static_cast<std::uint8_t>(select);
    return EncodeResponse(req, transport::testing::EncodeExtendedSpeedsRsFec(c));
  }
  if (h.attr_id == pma_attr::kPortRcvErrorDetails && !n.no_details) {
    transport::PortRcvErrorDetails d = it->second.details;
    d.port_select = static_cast<std::uint8_t>(select);
    return EncodeResponse(req, transport::testing::EncodePortRcvErrorDetails(d));
  }
  if (h.attr_id == pma_attr::kPortXmitDiscardDetails && !n.no_discard_details) {
    transport::PortXmitDiscardDetails d = it->second.discard_details;
    d.port_select = static_cast<std::uint8_t>(select);
    return EncodeResponse(req, transport::testing::EncodePortXmitDiscardDetails(d));
  }
  return EncodeResponse(req, {}, 0x0c);
}

SentSmps CountSent(const transport::testing::FakeMadPort& port) {
  SentSmps out;
  for (const auto& m : port.sent_mads()) {
    const auto cls = static_cast<transport::MgmtClass>(transport::DecodeHeader(m).mgmt_class);
    if (cls == transport::MgmtClass::kSubnDirectRoute) ++out.directed;
    if (cls == transport::MgmtClass::kSubnLidRouted) ++out.lid_routed;
    ++out.total;
  }
  return out;
}

EngineOptions QuickEngine() {
  EngineOptions o;
  // The fake port answers at once in its own simulated time (it is the
  // engine's clock), so no pause of a loaded machine expires these; a
  // silent node's wait costs no wall time either.
  o.timeout = std::chrono::milliseconds(100);
  o.timeout_max = std::chrono::milliseconds(200);
  o.retries = 1;
  o.adaptive_timeout = false;
  return o;
}

SmallTree BuildSmallTree(FakeFabric& f, const std::function<std::string(int)>& host_name) {
  SmallTree t;
  std::uint16_t lid = 1;
  for (int s = 0; s < 2; ++s) t.spines.push_back(f.AddSwitch("spine" + std::to_string(s), 8, lid++));
  for (int l = 0; l < 2; ++l) {
    t.leaves.push_back(f.AddSwitch("leaf" + std::to_string(l), 8, lid++));
    for (int s = 0; s < 2; ++s) f.Connect(t.leaves[l], 5 + s, t.spines[s], 1 + l);
    for (int h = 0; h < 2; ++h) {
      t.hosts.push_back(f.AddCa(host_name(2 * l + h), 1));
      f.SetCaLid(t.hosts.back(), 1, lid++);
      f.Connect(t.hosts.back(), 1, t.leaves[l], 1 + h);
    }
  }
  return t;
}

}  // namespace ibfabric::testing
