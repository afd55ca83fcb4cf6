#pragma once
// A fabric in memory that answers SMPs, directed-route or LID-routed
// (NodeInfo, NodeDescription, PortInfo), and PMA queries (PortCounters,
// PortCountersExtended) the way a real one does, for unit tests of
// discovery and sweeps through FakeMadPort.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "transport/attributes.h"
#include "transport/mad.h"
#include "transport/mad_engine.h"
#include "transport/testing/fake_mad_port.h"

namespace ibfabric::testing {

class FakeFabric {
 public:
  // Adds a node; returns its index. GUIDs are 0x1000 + index (node) and
  // 0x1000 + index << 8 | port (CA port GUIDs).
  int AddSwitch(const std::string& name, int ports, std::uint16_t lid);
  int AddCa(const std::string& name, int ports);
  void Connect(int a, int port_a, int b, int port_b);
  void SetCaLid(int ca, int port, std::uint16_t lid);
  void SetLinkDown(int node, int port);  // both ends
  void SetCounters(int node, int port, const transport::PortCounters& c);
  void SetExtended(int node, int port, const transport::PortCountersExtended& c);
  void DisableExtended(int node) { nodes_.at(node).no_extended = true; }
  void SetRcvErrorDetails(int node, int port, const transport::PortRcvErrorDetails& d);
  void DisableRcvErrorDetails(int node) { nodes_.at(node).no_details = true; }
  void SetXmitDiscardDetails(int node, int port, const transport::PortXmitDiscardDetails& d);
  void DisableXmitDiscardDetails(int node) { nodes_.at(node).no_discard_details = true; }
  // Its PMA answers PortSamplesControl with this Tick (by default it
  // answers "unsupported attribute", as ibsim's never answers), or, with
  // a non-zero `status`, with that MAD status.
  void SetSampleTick(int node, std::uint8_t tick, std::uint16_t status = 0) {
    nodes_.at(node).sample_tick = tick;
    nodes_.at(node).samples_status = status;
  }
  // Its PMA answers attribute `attr` with this MAD status (0: normally).
  void SetAttributeStatus(int node, std::uint16_t attr, std::uint16_t status) {
    nodes_.at(node).attr_status[attr] = status;
  }
  // Its PMA answers PortCounters with this MAD status (0: normally).
  void SetPortCountersStatus(int node, std::uint16_t status) { nodes_.at(node).counters_status = status; }
  // PMA ClassPortInfo.CapabilityMask/2 of a node; by default switches
  // advertise AllPortSelect|ExtWidth|XmitWait and CAs ExtWidth|XmitWait (as
  // ibsim does). `answers` false: ClassPortInfo times out.
  void SetCapabilities(int node, std::uint16_t mask, std::uint32_t mask2 = 0, bool answers = true);
  // The node's ports support XDR (PortInfo LinkSpeedExt*2); a link whose
  // two ends both do runs at 4xXDR. `advertised` false: the fields are set
  // but PortInfo.CapabilityMask2 does not say so (they must be ignored).
  void SetXdr(int node, bool advertised = true) {
    nodes_.at(node).xdr = true;
    nodes_.at(node).xdr_advertised = advertised;
  }
  // A Mellanox device of the FDR10 era (NodeInfo VendorID 0x02c9, DeviceID
  // `device_id`: 0xc738 SwitchX, 0x1003 ConnectX-3): its PortInfo shows QDR
  // and its ExtendedPortInfo (SMP 0xFF90) says FDR10 supported and enabled,
  // and active where the peer is such a device too (and `fdr10_links`).
  void SetMlnxFdr10(int node, std::uint16_t device_id, bool fdr10_links = true) {
    nodes_.at(node).mlnx_device_id = device_id;
    nodes_.at(node).fdr10_links = fdr10_links;
  }
  int mlnx_ext_port_info_smps() const { return mlnx_smps_; }  // ExtendedPortInfo SMPs received
  // The node's ports run FEC `mode` (PortInfoExtended.FECModeActive; its
  // PortInfo says IsPortInfoExtendedSupported); its PMA answers
  // PortExtendedSpeedsCounters (RS-FEC layout) with SetFecCounters' values
  // (give it the RS-FEC capability bit with SetCapabilities).
  void SetFec(int node, std::uint16_t mode) { nodes_.at(node).fec_mode = mode; }
  void SetFecCounters(int node, int port, const transport::ExtendedSpeedsRsFec& c) {
    nodes_.at(node).ports.at(port).fec = c;
  }
  // A PortExtendedSpeedsCounters Set with any CounterSelect bit zeroes the
  // port's FEC counters (and counts in sets()); with a status set here it
  // is answered with that status instead.
  void SetFecClearStatus(int node, std::uint16_t status) { nodes_.at(node).fec_clear_status = status; }
  const transport::ExtendedSpeedsRsFec& FecCounters(int node, int port) const {
    return nodes_.at(node).ports.at(port).fec;
  }
  // NVIDIA's vendor class (0x0A): GeneralInfo with the AccessRegister bit
  // `access_register`, and AccessRegister answering register ID -> its
  // bytes (MFSM by tachometer: `fan_rpm`); a register not given answers
  // "register not supported" (MAD status 0x14). Without this, the class
  // goes unanswered. The node's VendorID becomes NVIDIA's.
  void SetVendorRegisters(int node, bool access_register, std::map<std::uint16_t, std::vector<std::uint8_t>> registers,
                          std::map<int, int> fan_rpm = {}) {
    FakeNode& n = nodes_.at(node);
    n.vendor_class = true;
    n.access_register = access_register;
    n.registers = std::move(registers);
    n.fan_rpm = std::move(fan_rpm);
    if (n.mlnx_device_id == 0) n.mlnx_device_id = 0xd2f2;
  }
  // PPCNT group 0x16 of a port of a node given SetVendorRegisters (with
  // AccessRegister): these counters, answered whatever its `registers`
  // say of PPCNT; a port without them answers from `registers` (none
  // there: "register not supported").
  void SetPhysCounters(int node, int port, const transport::PhysLayerStatistics& c) {
    nodes_.at(node).ports.at(port).phys = c;
  }
  void SetLid(int node, std::uint16_t lid) { nodes_.at(node).lid = lid; }
  const transport::PortCounters& Counters(int node, int port) const { return nodes_.at(node).ports.at(port).counters; }
  int sets() const { return sets_; }
  void Silence(int node) { nodes_.at(node).silent = true; }  // answers nothing
  void SetSilent(int node, bool silent) { nodes_.at(node).silent = silent; }
  void SetName(int node, const std::string& name) { nodes_.at(node).name = name; }
  // false: LID-routed SMPs go unanswered, as when the forwarding tables do
  // not lead there yet; directed routes still work.
  void SetLidRouting(bool on) { lid_routing_ = on; }
  // An SA at `lid` answers SubnAdmGet(LinkRecord) by FromLID, as opensm:
  // the cable of the CA port with that LID, or status 0x0300 (no records).
  // 0: no SA (SA queries time out).
  void ServeSa(std::uint16_t lid) { sa_lid_ = lid; }
  int sa_queries() const { return sa_queries_; }
  // LID-routed SMPs to `lid` are answered by `node`'s agent instead of the
  // LID's owner: a LID the SM just gave to another node, or ibsim's packet
  // that a routing loop leaves wherever its hop limit runs out.
  void MisrouteLid(std::uint16_t lid, int node) { misrouted_[lid] = node; }
  int lid_routed_smps() const { return lid_routed_smps_; }  // received, answered or not

  std::uint64_t Guid(int node) const { return 0x1000 + static_cast<std::uint64_t>(node); }
  int node_count() const { return static_cast<int>(nodes_.size()); }

  // The responder for FakeMadPort; `local` is the node the port sits on.
  transport::testing::FakeMadPort::Responder Responder(int local, int local_port);

 private:
  struct PortState {
    int peer = -1;
    int peer_port = 0;
    bool up = false;
    std::uint16_t lid = 0;  // CA ports
    transport::PortCounters counters;
    transport::PortCountersExtended extended;
    transport::PortRcvErrorDetails details;
    transport::PortXmitDiscardDetails discard_details;
    transport::ExtendedSpeedsRsFec fec;
    std::optional<transport::PhysLayerStatistics> phys;
  };
  struct FakeNode {
    std::string name;
    transport::NodeType type;
    std::uint16_t lid = 0;  // switches
    std::map<int, PortState> ports;
    int num_ports = 0;
    bool no_extended = false;
    bool no_details = false;          // PortRcvErrorDetails: unsupported attribute
    bool no_discard_details = false;  // PortXmitDiscardDetails: likewise
    std::uint16_t counters_status = 0;
    std::map<std::uint16_t, std::uint16_t> attr_status = {};  // PMA attribute -> status
    std::optional<std::uint8_t> sample_tick = std::nullopt;
    std::uint16_t samples_status = 0;
    bool silent = false;
    std::uint16_t cap_mask = 0;
    std::uint32_t cap_mask2 = 0;
    bool cpi_answers = true;
    bool xdr = false;
    bool xdr_advertised = false;
    std::uint16_t mlnx_device_id = 0;  // non-zero: answers ExtendedPortInfo
    bool fdr10_links = false;
    std::optional<std::uint16_t> fec_mode = std::nullopt;
    std::uint16_t fec_clear_status = 0;
    bool vendor_class = false;
    bool access_register = false;
    std::map<std::uint16_t, std::vector<std::uint8_t>> registers = {};
    std::map<int, int> fan_rpm = {};
  };
  std::optional<transport::MadBytes> Answer(int local, int local_port, const transport::MadAddress& to,
                                            const transport::MadBytes& req);

  // The SMA of `node`, reached through its port `entered` (0: a switch's own).
  std::optional<transport::MadBytes> Smp(int node, int entered, const transport::MadBytes& req);
  std::optional<transport::MadBytes> Pma(const transport::MadAddress& to, const transport::MadBytes& req);
  std::optional<transport::MadBytes> Vendor(const transport::MadAddress& to, const transport::MadBytes& req);
  std::optional<transport::MadBytes> Sa(const transport::MadBytes& req);
  // The node a LID names (a switch's, or a CA port's); null for none.
  FakeNode* NodeAt(std::uint16_t lid);

  std::vector<FakeNode> nodes_;
  int sets_ = 0;
  bool lid_routing_ = true;
  std::map<std::uint16_t, int> misrouted_;  // LID -> the node that answers for it
  std::uint16_t sa_lid_ = 0;
  int sa_queries_ = 0;
  int lid_routed_smps_ = 0;
  int mlnx_smps_ = 0;
};

// The SMPs a port sent, by routing, and all its MADs.
struct SentSmps {
  int directed = 0;
  int lid_routed = 0;
  int total = 0;
};
SentSmps CountSent(const transport::testing::FakeMadPort& port);

// Engine options for the in-memory fabric: 100-200 ms timeouts, one retry,
// no adaptation (it answers at once or never; fake_fabric.cc says why so long).
transport::EngineOptions QuickEngine();

// Two spines and two leaves of 8 ports, two CAs on each leaf (ports 1
// and 2), leaf port 5+s to spine s; LIDs from 1: spines, then each leaf and
// its CAs. `host_name(i)` names CA i (0-3).
struct SmallTree {
  std::vector<int> spines, leaves, hosts;
};
SmallTree BuildSmallTree(FakeFabric& f, const std::function<std::string(int)>& host_name);

}  // namespace ibfabric::testing
