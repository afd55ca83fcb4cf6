// hw_personality: an LD_PRELOAD library that makes the simulated fabric
// answer as real hardware does, between a client (the exporter, perfquery,
// smpquery, ...) and ibsim, where MADs cross libibumad (umad_send,
// umad_recv). Preload it after umad2sim:
//
//   LD_PRELOAD="libumad2sim.so libhw_personality.so" HW_PERSONALITY=state.json
//
// The state file (written by tests/testbed/personality.h, re-read whenever
// it changes, so values can be planted while clients run) gives the graph
// of the net file, each node's model (tests/model/personalities.h), the
// LIDs the SM gave out, and what was planted. Per MAD:
// - the node a request goes to is found from its destination LID, or by
//   following a directed route's InitialPath through the graph from the
//   node this process is attached to (SIM_HOST, else the state's attach);
// - a request the model answers itself never reaches ibsim: PMA
//   PortSamplesControl (ibsim has no handler for it) with the model's or
//   the planted Tick, or "unsupported attribute"; NVIDIA's SMP
//   AdaptiveRoutingInfo (ibsim does not answer it) with AR planted on or
//   off, or "unsupported attribute" where the model has none; a PMA
//   request to a node planted Busy is answered with the Busy status, that
//   many times; an SMP to a node planted `mkey` whose M_Key differs is
//   dropped (no answer, as M_Key protection does); a PMA request whose
//   P_Key (the attached node's planted table at its P_Key index) matches
//   no entry of the target's planted table is dropped (IBTA 10.9.3); one
//   to QP1 of a node planted `redirect` with the Redirect status and
//   a ClassPortInfo naming the QP at its LID, or at LID 0 and a GID (a
//   GRH-routed agent) where so planted (and one to that QP goes on as to
//   QP1);
//   PortInfoExtended (SMP 0x33) with the FEC mode the link's speed runs
//   (or the planted one) and PMA PortExtendedSpeedsCounters (0x1F) in its
//   RS-FEC layout with the planted counters, where the model claims them
//   (ibsim answers neither); a Set of it clears the port's counters, which
//   count on from there; NVIDIA's vendor class 0x0A (ibsim has none):
//   GeneralInfo with the model's AccessRegister bit, and AccessRegister of
//   the switch environment's registers (MGIR, MSGI, MTMP, MFCR, MFSM,
//   FORE, MSPS) with what was planted (`env`), else a healthy switch;
// - ibsim's answers to requests to a modelled node are rewritten: NodeInfo
//   (VendorID, DeviceID), PortInfo (capability masks, the widths and
//   speeds supported and enabled, and what the link runs at, negotiated
//   with the model of the far end and capped by what was planted on the
//   cable: NDR, XDR through LinkSpeedExtActive2, 2x), Mellanox
//   ExtendedPortInfo (FDR10), PMA ClassPortInfo (the capability bits) and
//   PortCountersExtended of a model that claims its error counters
//   (CapabilityMask2 bit 1), filled from a PortCounters request of the
//   same port sent ahead of it (ibsim fills only the first eight), and
//   the QP1Dropped planted on a port (ibsim keeps none) in PortCounters
//   (data bytes 20-21) and PortCountersExtended, with ClassPortInfo's
//   IsQP1DropSupported on the node that has one planted.
// A node with no model passes as it is, but for a width or speed planted
// on one of its cables: its PortInfo then says the link runs at that
// (ibsim's enabled and supported widths and speeds stay, so a cable of a
// plain QDR fabric that trained 1x is below what both its ends allow, as
// on hardware; ibsim's net-file note sets the enabled width instead).
// Every MAD passes as it is when HW_PERSONALITY is unset. A test tool:
// process-wide state, one lock.

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <infiniband/mad.h>
#include <infiniband/umad.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/model/personalities.h"

namespace {

using ibfabric::model::LinkSpeed;
using ibfabric::model::Personality;
using ibfabric::model::PortPlant;

constexpr std::size_t kMadSize = 256;
constexpr int kData = 64;  // SMP and PMA data offset (IBTA 13.4.3, 14.2.1)
constexpr std::uint8_t kSmpLid = 0x01, kSmpDirected = 0x81, kPerformance = 0x04, kVendor = 0x0A;
// NVIDIA's vendor class (data from byte 24): GeneralInfo, AccessRegister
// (register ID in the AttributeModifier, the register from byte 36).
constexpr std::size_t kVendorData = 24, kRegister = 36;
constexpr std::uint16_t kGeneralInfo = 0x0017, kAccessRegister = 0x0051;
constexpr std::uint16_t kStatusNoRegister = 0x0014;  // MAD status 20: register not supported (mstflint)
constexpr std::uint16_t kNodeInfo = 0x0011, kPortInfo = 0x0015, kPortInfoExtended = 0x0033, kMlnxExtPortInfo = 0xff90,
                        kArInfo = 0xff20;
constexpr std::uint16_t kClassPortInfo = 0x0001, kPortSamplesControl = 0x0010, kPortCounters = 0x0012,
                        kPortCountersExtended = 0x001d, kExtendedSpeedsCounters = 0x001f;
// PortInfo.CapabilityMask2 IsPortInfoExtendedSupported and PMA
// ClassPortInfo.CapabilityMask IsPMRSFECCountersSupported (rdma-core
// iba_types.h): where a model has them, this preload answers
// PortInfoExtended and PortExtendedSpeedsCounters, which ibsim does not.
constexpr std::uint16_t kCap2PortInfoExt = 0x0002, kPmaRsFec = 1 << 14;
constexpr std::uint16_t kStatusBusy = 0x0001, kStatusRedirect = 0x0002, kStatusUnsupported = 0x000c;
constexpr std::uint32_t kCapExtSpeeds = 0x4000, kCapCapMask2 = 0x8000;  // PortInfo.CapabilityMask

struct Node {
  std::string id;
  bool is_switch = false;
  const Personality* model = nullptr;
  std::uint8_t widths = 0;                   // LinkWidthSupported: the model's, or narrower (a 2x HCA)
  std::map<int, std::pair<int, int>> ports;  // port -> (peer node index, peer port)
  std::optional<std::uint8_t> tick;          // planted PortSamplesControl.Tick
  int busy = 0;                              // planted: PMA requests to answer Busy
  std::uint16_t busy_attr = 0;               // only requests of this attribute (0: any)
  std::uint64_t busy_serial = 0;             // which planting `busy` is
  std::uint32_t redirect_qp = 0;             // planted: its PMA lives on this QP (0: QP1)
  std::uint32_t redirect_qkey = 0;
  bool redirect_to_gid = false;              // planted: the Redirect names RedirectLID 0 and a RedirectGID
  std::map<int, std::uint64_t> qp1_dropped;  // planted: port -> QP1Dropped (ibsim keeps none)
  bool adaptive_routing = false;             // planted: AR on (the model must have it)
  std::uint64_t m_key = 0;                   // planted: SMPs with another M_Key are dropped (0: none)
  std::vector<std::uint16_t> pkeys;          // planted: its ports' P_Key table (empty: every P_Key matches)
  std::map<int, PortPlant> plants;           // port -> planted width/speed
  bool registers_off = false;                // planted: GeneralInfo says no AccessRegister, which answers "unsupported"
  // Planted: a port's RS-FEC counters (PortExtendedSpeedsCounters), and
  // its FEC mode where not the one its link speed implies.
  struct Fec {
    std::optional<std::uint16_t> mode;
    std::vector<std::uint32_t> lanes;  // FECCorrectableSymbolCtrLane0..
    std::uint32_t corrected_blocks = 0;
    std::uint32_t uncorrectable_blocks = 0;
    // Counting on from the planting (wall clock, ms): corrected symbols
    // per second per lane, uncorrectable blocks per second.
    std::vector<double> lanes_per_second;
    double uncorrectable_per_second = 0;
    double step_factor = 1;  // the rates rise so many times every step_seconds, `steps` times
    double step_seconds = 0;
    int steps = 0;
    double step_after = -1;  // the first step (negative: after step_seconds)
    std::int64_t since_ms = 0;
    std::uint64_t serial = 0;            // which planting
    std::vector<std::uint64_t> lineage;  // the plantings it counts on from
  };
  std::map<int, Fec> fec;
  // Planted: a switch's environment as its registers report it (MTMP,
  // MFSM, FORE, MSPS); unplanted, a healthy switch.
  struct Env {
    std::optional<double> temperature;  // the ASIC's, C (45 when not planted)
    std::map<int, int> fan_rpm;         // tachometer -> RPM (11000 when not planted)
    std::vector<int> failed_fans;       // under their limit (FORE), at 0 RPM
    std::map<int, std::string> psus;    // supply -> "ok", "failed" (ok when not planted)
    std::map<int, int> watts;           // supply -> W (290 when not planted)
  } env;
  // Planted: the module at a port (PDDR page 3) where not the default (an
  // NVIDIA OSFP optical module with its monitors, at 45 C).
  struct Module {
    std::string vendor, pn, sn, rev;
    std::optional<double> temperature, high;  // C
    std::optional<int> type, identifier, length;
    std::optional<double> rx, tx;  // W on every lane
  };
  std::map<int, Module> modules;
};

// A port's FEC counters as counted, before the 32-bit clamp.
struct FecCount {
  std::array<double, 12> lanes{};
  double symbols = 0;
  double corrected_blocks = 0;
  double uncorrectable_blocks = 0;
};

// A port's FEC counters as they were cleared, for the planting then.
struct Cleared {
  std::uint64_t serial = 0;
  FecCount at;
};

struct Pending {
  int node = -1;
  int agent = 0;
  std::uint8_t mgmt_class = 0;
  std::uint16_t attr = 0;
  std::uint32_t attr_mod = 0;
  // This preload's own PortCounters request, sent ahead of a
  // PortCountersExtended one to fill its error counters (see OnSend).
  bool companion = false;
  // A companion's: the TID (low 32 bits) of the extended request it goes
  // ahead of. An extended request's: whether a companion went ahead.
  std::uint32_t for_tid = 0;
  bool filled = false;
};

// PortCounters' error counters and the PortCountersExtended fields that
// hold them as 64-bit counters (libibmad fields.c, IBTA 16.1.4.11 with
// CapabilityMask2 IsAdditionalPortCountersExtendedSupported), in pairs.
constexpr std::pair<MAD_FIELDS, MAD_FIELDS> kErrorCounters[] = {
    {IB_PC_ERR_SYM_F, IB_PC_EXT_ERR_SYM_F},
    {IB_PC_LINK_RECOVERS_F, IB_PC_EXT_LINK_RECOVERS_F},
    {IB_PC_LINK_DOWNED_F, IB_PC_EXT_LINK_DOWNED_F},
    {IB_PC_ERR_RCV_F, IB_PC_EXT_ERR_RCV_F},
    {IB_PC_ERR_PHYSRCV_F, IB_PC_EXT_ERR_PHYSRCV_F},
    {IB_PC_ERR_SWITCH_REL_F, IB_PC_EXT_ERR_SWITCH_REL_F},
    {IB_PC_XMT_DISCARDS_F, IB_PC_EXT_XMT_DISCARDS_F},
    {IB_PC_ERR_XMTCONSTR_F, IB_PC_EXT_ERR_XMTCONSTR_F},
    {IB_PC_ERR_RCVCONSTR_F, IB_PC_EXT_ERR_RCVCONSTR_F},
    {IB_PC_ERR_LOCALINTEG_F, IB_PC_EXT_ERR_LOCALINTEG_F},
    {IB_PC_ERR_EXCESS_OVR_F, IB_PC_EXT_ERR_EXCESS_OVR_F},
    {IB_PC_VL15_DROPPED_F, IB_PC_EXT_VL15_DROPPED_F},
    {IB_PC_XMT_WAIT_F, IB_PC_EXT_XMT_WAIT_F},
};
// PortCounters.QP1Dropped: data bytes 20-21 (IBTA 16.1.3.5 table 225;
// opensm ib_types.h ib_port_counters_t.qp1_dropped). Not libibmad 44's
// IB_PC_QP1_DROP_F, which names VL15Dropped's bytes 22-23. ibsim keeps no
// QP1Dropped: a planted one is written here, and the 64-bit one of
// PortCountersExtended (IB_PC_EXT_QP1_DROP_F, data bytes 176-183).
constexpr int kQp1DroppedByte = 20;
constexpr std::uint16_t kPmaQp1Dropped = 1 << 15;           // ClassPortInfo.CapabilityMask IsQP1DropSupported
constexpr std::uint32_t kPma2AdditionalExtended = 1u << 1;  // ClassPortInfo.CapabilityMask2 bit 1

struct Synthesized {
  int fd = -1;  // the umad descriptor the request left from: its answer comes back there
  int agent = 0;
  std::uint16_t lid = 0;
  std::uint8_t mad[kMadSize];
};

// The wall clock in ms: what the test bed stamps a planting with (another process).
std::int64_t WallMs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

class Personalities {
 public:
  static Personalities& Get() {
    static Personalities p;
    return p;
  }

  // A request on its way out: true when it was answered here instead.
  // `companion` gets a request of this preload's own to send ahead of it.
  bool OnSend(int fd, int agent, ib_user_mad* u, std::vector<std::uint8_t>* companion) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!Reload()) return false;
    sending_fd_ = fd;
    const std::uint8_t* mad = u->data;
    Pending p;
    p.agent = agent;
    p.mgmt_class = mad[1];
    p.attr = static_cast<std::uint16_t>(mad_get_field(const_cast<std::uint8_t*>(mad), 0, IB_MAD_ATTRID_F));
    p.attr_mod = mad_get_field(const_cast<std::uint8_t*>(mad), 0, IB_MAD_ATTRMOD_F);
    p.node = Target(u);
    if (p.node < 0) return false;
    Node& n = nodes_[static_cast<std::size_t>(p.node)];
    const bool get = (mad[3] & 0x7f) == 0x01;  // Get
    const bool set = (mad[3] & 0x7f) == 0x02;  // Set
    if ((p.mgmt_class == kSmpLid || p.mgmt_class == kSmpDirected) && n.m_key != 0 &&
        mad_get_field64(const_cast<std::uint8_t*>(mad), 0, IB_MAD_MKEY_F) != n.m_key) {
      // M_Key protection (IBTA 14.2.4; opensm's m_key_protection_level 2):
      // an SMP whose M_Key does not match is dropped, no answer at all.
      return true;
    }
    if (p.mgmt_class == kPerformance && !Admits(n, u->addr.pkey_index)) {
      // P_Key enforcement (IBTA 10.9.3): the target's port drops a packet
      // whose P_Key matches none of its entries.
      return true;
    }
    if (p.mgmt_class == kPerformance && n.redirect_qp != 0) {
      // A PMA redirected to another QP (IBTA 13.5.3.3): QP1 names it in a
      // ClassPortInfo with the Redirect status; a request there with the
      // right Q_Key goes on to ibsim as to QP1; a wrong Q_Key is dropped,
      // as a QP drops it.
      const std::uint32_t qp = ntohl(u->addr.qpn);
      if (qp == 1) {
        std::uint8_t data[kMadSize - kData] = {};
        mad_set_field(data, 0, IB_CPI_BASEVER_F, 1);
        mad_set_field(data, 0, IB_CPI_CLASSVER_F, 1);
        // RedirectLID 0 with a RedirectGID (the node's, on the default
        // subnet prefix): the agent is reached by GID, through a GRH.
        mad_set_field(data, 0, IB_CPI_REDIRECT_LID_F, n.redirect_to_gid ? 0 : ntohs(u->addr.lid));
        if (n.redirect_to_gid) {
          data[8] = 0xfe;  // RedirectGID (bytes 8-23): fe80::<node index>
          data[9] = 0x80;
          data[23] = static_cast<std::uint8_t>(p.node + 1);
        }
        mad_set_field(data, 0, IB_CPI_REDIRECT_QP_F, n.redirect_qp);
        mad_set_field(data, 0, IB_CPI_REDIRECT_QKEY_F, n.redirect_qkey);
        Answer(agent, u, kStatusRedirect, data);
        return true;
      }
      if (qp != n.redirect_qp || ntohl(u->addr.qkey) != n.redirect_qkey) return true;
      u->addr.qpn = htonl(1);
      u->addr.qkey = htonl(IB_DEFAULT_QP1_QKEY);
    }
    if (p.mgmt_class == kPerformance && n.busy > 0 && (n.busy_attr == 0 || n.busy_attr == p.attr)) {
      --n.busy;
      auto& used = consumed_[n.id];
      used = {n.busy_serial, used.first == n.busy_serial ? used.second + 1 : 1};
      Answer(agent, u, kStatusBusy, nullptr);
      return true;
    }
    if ((p.mgmt_class == kSmpLid || p.mgmt_class == kSmpDirected) && p.attr == kArInfo && get && n.model) {
      // NVIDIA AdaptiveRoutingInfo (vendor SMP 0xFF20; Mellanox's opensm
      // ib_ar_info_t), which ibsim does not answer: "e" is data byte 3 bit
      // 0, AdaptiveRoutingGroupCap the low 12 bits of bytes 4-7; a model
      // without AR answers "unsupported attribute". A directed-route
      // response carries the D bit.
      std::uint8_t data[kMadSize - kData] = {};
      const std::uint16_t cap = n.model->ar_group_cap;
      data[3] = n.adaptive_routing ? 1 : 0;
      data[6] = static_cast<std::uint8_t>(cap >> 8 & 0x0f);
      data[7] = static_cast<std::uint8_t>(cap & 0xff);
      const std::uint16_t direction = p.mgmt_class == kSmpDirected ? 0x8000 : 0;
      Answer(agent, u, static_cast<std::uint16_t>(direction | (cap == 0 ? kStatusUnsupported : 0)),
             cap == 0 ? nullptr : data);
      return true;
    }
    if ((p.mgmt_class == kSmpLid || p.mgmt_class == kSmpDirected) && p.attr == kPortInfoExtended && get && n.model) {
      // PortInfoExtended (SMP 0x33; libibmad IB_PORT_EXT_*_F), which ibsim
      // does not answer: CapMask bit 0 IsFECModeSupported, FECModeActive
      // (bits 32..47) the planted mode, else the one the link's speed runs
      // (HDR and later RS-FEC: shared/real-hardware.md; FDR Firecode:
      // assumed), none on a port that is down. A model without it answers
      // "unsupported attribute".
      const std::uint16_t direction = p.mgmt_class == kSmpDirected ? 0x8000 : 0;
      if ((n.model->capability_mask2 & kCap2PortInfoExt) == 0) {
        Answer(agent, u, static_cast<std::uint16_t>(direction | kStatusUnsupported), nullptr);
        return true;
      }
      const int port = static_cast<int>(p.attr_mod & 0xff);
      std::uint8_t data[kMadSize - kData] = {};
      mad_set_field(data, 0, IB_PORT_EXT_CAPMASK_F, 1);
      mad_set_field(data, 0, IB_PORT_EXT_FEC_MODE_ACTIVE_F, FecModeOf(n, port));
      Answer(agent, u, direction, data);
      return true;
    }
    if (p.mgmt_class == kPerformance && p.attr == kExtendedSpeedsCounters && (get || set) && n.model) {
      // PortExtendedSpeedsCounters (PMA 0x1F) in its RS-FEC layout
      // (libibmad IB_PESC_RSFEC_*_F), which ibsim does not answer: the
      // planted counters of the port (0 where none), the port's corrected
      // symbols the sum of its lanes'. A Set with any CounterSelect bit
      // (bytes 8-15, IB_PESC_COUNTER_SELECT_F) clears them all: they count
      // on from there. A model whose ClassPortInfo lacks the RS-FEC bit
      // answers "unsupported attribute".
      if ((n.model->pma_mask & kPmaRsFec) == 0) {
        Answer(agent, u, kStatusUnsupported, nullptr);
        return true;
      }
      const int port = mad[kData + 1];  // PortSelect
      const FecCount now = Counted(n, port);
      const auto f = n.fec.find(port);
      const std::pair<std::string, int> key{n.id, port};
      const std::uint64_t serial = f != n.fec.end() ? f->second.serial : 0;
      if (set && std::any_of(mad + kData + 8, mad + kData + 16, [](std::uint8_t b) { return b != 0; })) {
        NoteClear(key, {serial, now});
      }
      SyncClears();
      // A clear holds for its planting and those counting on from it.
      auto c = cleared_.find(key);
      if (c != cleared_.end() && c->second.serial != serial &&
          (f == n.fec.end() ||
           std::find(f->second.lineage.begin(), f->second.lineage.end(), c->second.serial) == f->second.lineage.end()))
        c = cleared_.end();
      // Since the clear, if any; 32-bit counters stop at their maximum
      // (IBTA 16.1.3.5).
      const FecCount zero;
      const FecCount& at = c != cleared_.end() ? c->second.at : zero;
      const auto value = [](double v, double at_clear) {
        return static_cast<std::uint32_t>(std::clamp(v - at_clear, 0.0, 4294967295.0));
      };
      std::uint8_t data[kMadSize - kData] = {};
      data[1] = static_cast<std::uint8_t>(port);
      for (std::size_t lane = 0; lane < now.lanes.size(); ++lane) {
        const auto field = static_cast<MAD_FIELDS>(IB_PESC_RSFEC_FEC_CORR_SYMBOL_CTR_LANE0_F + static_cast<int>(lane));
        mad_set_field(data, 0, field, value(now.lanes[lane], at.lanes[lane]));
      }
      mad_set_field(data, 0, IB_PESC_PORT_FEC_CORR_BLOCK_CTR_F, value(now.corrected_blocks, at.corrected_blocks));
      mad_set_field(data, 0, IB_PESC_PORT_FEC_UNCORR_BLOCK_CTR_F,
                    value(now.uncorrectable_blocks, at.uncorrectable_blocks));
      mad_set_field(data, 0, IB_PESC_PORT_FEC_CORR_SYMBOL_CTR_F, value(now.symbols, at.symbols));
      Answer(agent, u, 0, data);
      return true;
    }
    if (p.mgmt_class == kVendor && n.model && get) {
      // GeneralInfo (mstflint mtcr_ib_ofed.c, rdma-core vendstat.c) and
      // AccessRegister GMP, which ibsim does not answer (no class 0x0A):
      // GeneralInfo of every NVIDIA model, its capability bit 20 the
      // model's; registers only of a model that claims them.
      std::uint8_t data[kMadSize - kVendorData] = {};
      const bool registers = n.model->access_register && !n.registers_off;
      if (p.attr == kGeneralInfo) {
        // HWInfo and FWInfo from byte 32 as MGIR's hw_info and fw_info.
        Register(n, 0x9020, data + (32 - kVendorData));
        if (registers) data[161 - kVendorData] = 0x10;
        Answer(agent, u, 0, data, kVendorData);
        return true;
      }
      if (p.attr == kAccessRegister) {
        if (!registers) {
          Answer(agent, u, kStatusUnsupported, nullptr, kVendorData);
          return true;
        }
        std::uint8_t reg[kMadSize - kRegister] = {};
        std::memcpy(reg, mad + kRegister, sizeof reg);  // the index fields come back as asked
        const bool known = Register(n, static_cast<std::uint16_t>(p.attr_mod), reg);
        std::memcpy(data + (kRegister - kVendorData), reg, sizeof reg);
        Answer(agent, u, known ? 0 : kStatusNoRegister, known ? data : nullptr, kVendorData);
        return true;
      }
      Answer(agent, u, kStatusUnsupported, nullptr, kVendorData);
      return true;
    }
    if (p.mgmt_class == kPerformance && p.attr == kPortSamplesControl && get && (n.model || n.tick)) {
      const std::optional<std::uint8_t> tick = n.tick ? n.tick : n.model->tick;
      if (!tick) {
        Answer(agent, u, kStatusUnsupported, nullptr);
        return true;
      }
      std::uint8_t data[kMadSize - kData] = {};
      data[1] = mad[kData + 1];  // PortSelect
      data[2] = *tick;           // Tick (bits 16..23)
      data[3] = 4;               // CounterWidth 4: 32-bit sample counters (assumed)
      Answer(agent, u, 0, data);
      return true;
    }
    if (p.mgmt_class == kPerformance && p.attr == kPortCountersExtended && get && n.model &&
        (n.model->pma_mask2 & kPma2AdditionalExtended)) {
      // ibsim fills only the first eight extended counters: a PortCounters
      // request of the same port goes ahead (ibsim answers in order), and
      // its error counters fill the extended reply's 64-bit ones.
      companion->assign(reinterpret_cast<const std::uint8_t*>(u),
                        reinterpret_cast<const std::uint8_t*>(u) + sizeof(ib_user_mad) + kMadSize);
      std::uint8_t* c = companion->data() + sizeof(ib_user_mad);
      mad_set_field(c, 0, IB_MAD_ATTRID_F, kPortCounters);
      const std::uint32_t tid = 0xc0de0000u | (++companions_ & 0xffffu);
      mad_set_field(c, 0, IB_MAD_TRID_F, 0);  // the low 32 bits below (bytes 12..15)
      c[12] = static_cast<std::uint8_t>(tid >> 24);
      c[13] = static_cast<std::uint8_t>(tid >> 16);
      c[14] = static_cast<std::uint8_t>(tid >> 8);
      c[15] = static_cast<std::uint8_t>(tid);
      Pending q = p;
      q.attr = kPortCounters;
      q.companion = true;
      q.for_tid = Tid(mad);
      pending_[tid] = q;
      p.filled = true;
    }
    pending_[Tid(mad)] = p;
    return false;
  }

  // A synthesized answer waiting for umad_recv on `fd`, if any.
  std::optional<Synthesized> Take(int fd) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = answers_.begin(); it != answers_.end(); ++it) {
      if (it->fd != fd) continue;
      Synthesized s = *it;
      answers_.erase(it);
      return s;
    }
    return std::nullopt;
  }
  // An answer from ibsim: rewritten as its node's model would have it.
  // True when it is for no client: this preload's own (a companion's), or
  // an extended answer whose companion was lost (lost with it).
  bool OnReceive(ib_user_mad* u) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!loaded_) return false;
    std::uint8_t* mad = u->data;
    const auto it = pending_.find(Tid(mad));
    if (it == pending_.end()) return false;
    const Pending p = it->second;
    pending_.erase(it);
    if (p.companion) {
      if (u->status == 0 && mad_get_field(mad, 0, IB_MAD_STATUS_F) == 0) {
        auto& counters = companion_counters_[p.for_tid];
        for (std::size_t i = 0; i < std::size(kErrorCounters); ++i) {
          counters[i] = mad_get_field(mad, kData, kErrorCounters[i].first);
        }
        // Those of extended requests lost on the way go, the lowest TIDs first.
        while (companion_counters_.size() > kCompanionsKept) companion_counters_.erase(companion_counters_.begin());
      }
      return true;
    }
    if (u->status != 0) return false;
    if ((mad[3] & 0x80) == 0 || p.node < 0) return false;  // not a response
    Node& n = nodes_[static_cast<std::size_t>(p.node)];
    if (p.mgmt_class == kPerformance && p.attr == kPortCountersExtended) {
      if (p.filled) {
        // Its companion's values, or nothing: with the companion lost (or
        // refused) the answer would carry 0 errors and whatever umad2sim
        // left past ibsim's eight counters; it is lost with it instead.
        const auto c = companion_counters_.find(Tid(mad));
        if (c == companion_counters_.end()) return true;
        for (std::size_t i = 0; i < std::size(kErrorCounters); ++i) {
          mad_set_field64(mad, kData, kErrorCounters[i].second, c->second[i]);
        }
        companion_counters_.erase(c);
      }
      const auto q = n.qp1_dropped.find(mad[kData + 1]);
      mad_set_field64(mad, kData, IB_PC_EXT_QP1_DROP_F, q != n.qp1_dropped.end() ? q->second : 0);
      return false;
    }
    if (p.mgmt_class == kPerformance && p.attr == kPortCounters) {
      const auto q = n.qp1_dropped.find(mad[kData + 1]);
      const std::uint64_t v = q != n.qp1_dropped.end() ? std::min<std::uint64_t>(q->second, 0xffff) : 0;
      mad[kData + kQp1DroppedByte] = static_cast<std::uint8_t>(v >> 8);
      mad[kData + kQp1DroppedByte + 1] = static_cast<std::uint8_t>(v);
    }
    const bool smp = p.mgmt_class == kSmpLid || p.mgmt_class == kSmpDirected;
    if (smp && p.attr == kPortInfo) Learn(p.node, mad);
    if (!n.model) {
      if (smp && p.attr == kPortInfo) PlantOnPlain(p, n, mad);
      return false;
    }
    if (smp && p.attr == kNodeInfo) {
      mad_set_field(mad, kData, IB_NODE_VENDORID_F, n.model->vendor_id);
      mad_set_field(mad, kData, IB_NODE_DEVID_F, n.model->device_id);
    } else if (smp && p.attr == kPortInfo) {
      RewritePortInfo(p, n, mad);
    } else if (smp && p.attr == kMlnxExtPortInfo) {
      RewriteExtPortInfo(p, n, mad);
    } else if (p.mgmt_class == kPerformance && p.attr == kClassPortInfo) {
      mad_set_field(mad, kData, IB_CPI_CAPMASK_F, n.model->pma_mask | (n.qp1_dropped.empty() ? 0 : kPmaQp1Dropped));
      mad_set_field(mad, kData, IB_CPI_CAPMASK2_F, n.model->pma_mask2);
    }
    return false;
  }

 private:
  static std::uint32_t Tid(const std::uint8_t* mad) {
    // The low 32 bits: ibsim rewrites the high ones (its client id).
    return static_cast<std::uint32_t>(mad[12]) << 24 | static_cast<std::uint32_t>(mad[13]) << 16 |
           static_cast<std::uint32_t>(mad[14]) << 8 | mad[15];
  }

  static std::string ClearsPath() {
    const char* path = std::getenv("HW_PERSONALITY");
    return std::string(path ? path : "") + ".fec-clears";
  }
  // Appends a clear: "node port serial lane0..lane11 symbols blocks
  // uncorrectable" (one write, O_APPEND: whole lines from every process).
  void NoteClear(const std::pair<std::string, int>& key, const Cleared& c) {
    std::string line = key.first + " " + std::to_string(key.second) + " " + std::to_string(c.serial);
    for (double v : c.at.lanes) line += " " + std::to_string(v);
    line += " " + std::to_string(c.at.symbols) + " " + std::to_string(c.at.corrected_blocks) + " " +
            std::to_string(c.at.uncorrectable_blocks) + "\n";
    const int fd = open(ClearsPath().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    const ssize_t wrote = write(fd, line.data(), line.size());
    (void)wrote;
    close(fd);
  }
  // Takes in the clears appended since the last look, this process's own
  // included.
  void SyncClears() {
    std::ifstream in(ClearsPath());
    if (!in) return;
    in.seekg(clears_read_);
    std::string line;
    while (std::getline(in, line)) {
      if (in.eof()) break;  // a line still being written
      clears_read_ = in.tellg();
      std::istringstream words(line);
      std::pair<std::string, int> key;
      Cleared c;
      words >> key.first >> key.second >> c.serial;
      for (double& v : c.at.lanes) words >> v;
      words >> c.at.symbols >> c.at.corrected_blocks >> c.at.uncorrectable_blocks;
      if (words) cleared_[key] = c;
    }
  }

  // Reads the state file again when it changed (checked at most every 50 ms).
  bool Reload() {
    const char* path = std::getenv("HW_PERSONALITY");
    if (!path || !*path) return false;
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    const std::int64_t ms = now.tv_sec * 1000 + now.tv_nsec / 1000000;
    if (loaded_ && ms - checked_ms_ < 50) return true;
    checked_ms_ = ms;
    struct stat st {};
    if (stat(path, &st) != 0) return loaded_;
    // The file is replaced whole (a rename): a new inode or a new time.
    const std::int64_t stamp =
        (st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec) ^ (static_cast<std::int64_t>(st.st_ino) << 20);
    if (loaded_ && stamp == stamp_) return true;
    std::ifstream in(path);
    nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return loaded_;  // half-written: keep what we had
    stamp_ = stamp;
    Parse(j);
    loaded_ = true;
    return true;
  }

  void Parse(const nlohmann::json& j) {
    nodes_.clear();
    index_.clear();
    lids_.clear();
    const nlohmann::json nodes = j.value("nodes", nlohmann::json::array());
    for (const auto& n : nodes) {
      Node node;
      node.id = n.value("id", "");
      node.is_switch = n.value("switch", false);
      node.model = ibfabric::model::FindPersonality(n.value("model", ""));
      node.widths = node.model ? node.model->widths : 0;
      if (auto w = ibfabric::model::ParseWidth(n.value("max_width", ""))) {
        // Only the widths up to the given one (a 2x NDR200 HCA).
        std::uint8_t keep = 0;
        for (std::uint8_t bit : {ibfabric::model::width::k1x, ibfabric::model::width::k2x, ibfabric::model::width::k4x,
                                 ibfabric::model::width::k8x, ibfabric::model::width::k12x}) {
          keep |= bit;
          if (bit == *w) break;
        }
        node.widths &= keep;
      }
      if (n.contains("tick")) node.tick = n["tick"].get<std::uint8_t>();
      node.registers_off = n.value("registers_off", false);
      node.adaptive_routing = n.value("adaptive_routing", false);
      node.m_key = std::strtoull(n.value("m_key", std::string("0")).c_str(), nullptr, 0);
      node.pkeys = n.value("pkeys", std::vector<std::uint16_t>{});
      if (n.contains("redirect")) {
        node.redirect_qp = n["redirect"].value("qp", 0U);
        node.redirect_qkey = n["redirect"].value("qkey", 0U);
        node.redirect_to_gid = n["redirect"].value("to_gid", false);
      }
      if (n.contains("busy")) {
        node.busy_serial = n["busy"].value("serial", 0ULL);
        node.busy = n["busy"].value("count", 0);
        node.busy_attr = n["busy"].value("attr", static_cast<std::uint16_t>(0));
        const auto used = consumed_.find(node.id);
        if (used != consumed_.end() && used->second.first == node.busy_serial) node.busy -= used->second.second;
      }
      const nlohmann::json qp1 = n.value("qp1_dropped", nlohmann::json::object());
      for (const auto& [port, v] : qp1.items()) node.qp1_dropped[std::stoi(port)] = v.get<std::uint64_t>();
      const nlohmann::json plants = n.value("plant", nlohmann::json::object());
      for (const auto& [port, plant] : plants.items()) {
        PortPlant pp;
        pp.width = ibfabric::model::ParseWidth(plant.value("width", ""));
        pp.speed = ibfabric::model::ParseLinkSpeed(plant.value("speed", ""));
        node.plants[std::stoi(port)] = pp;
      }
      const nlohmann::json fec = n.value("fec", nlohmann::json::object());
      for (const auto& [port, f] : fec.items()) {
        Node::Fec x;
        if (f.contains("mode")) x.mode = f["mode"].get<std::uint16_t>();
        x.lanes = f.value("lanes", std::vector<std::uint32_t>{});
        x.corrected_blocks = f.value("corrected_blocks", 0U);
        x.uncorrectable_blocks = f.value("uncorrectable_blocks", 0U);
        x.lanes_per_second = f.value("lanes_per_second", std::vector<double>{});
        x.uncorrectable_per_second = f.value("uncorrectable_per_second", 0.0);
        x.since_ms = f.value("since_ms", std::int64_t{0});
        x.step_factor = f.value("step_factor", 1.0);
        x.step_seconds = f.value("step_seconds", 0.0);
        x.steps = f.value("steps", 0);
        x.step_after = f.value("step_after", -1.0);
        x.serial = f.value("serial", std::uint64_t{0});
        x.lineage = f.value("lineage", std::vector<std::uint64_t>{});
        node.fec[std::stoi(port)] = x;
      }
      const nlohmann::json modules = n.value("modules", nlohmann::json::object());
      for (const auto& [port, m] : modules.items()) {
        Node::Module x;
        x.vendor = m.value("vendor", "");
        x.pn = m.value("pn", "");
        x.sn = m.value("sn", "");
        x.rev = m.value("rev", "");
        if (m.contains("temperature")) x.temperature = m["temperature"].get<double>();
        if (m.contains("high")) x.high = m["high"].get<double>();
        if (m.contains("type")) x.type = m["type"].get<int>();
        if (m.contains("identifier")) x.identifier = m["identifier"].get<int>();
        if (m.contains("length")) x.length = m["length"].get<int>();
        if (m.contains("rx")) x.rx = m["rx"].get<double>();
        if (m.contains("tx")) x.tx = m["tx"].get<double>();
        node.modules[std::stoi(port)] = x;
      }
      const nlohmann::json env = n.value("env", nlohmann::json::object());
      if (env.contains("temperature")) node.env.temperature = env["temperature"].get<double>();
      // Each map held by name: items() of a temporary would outlive it.
      const nlohmann::json fans = env.value("fans", nlohmann::json::object());
      for (const auto& [t, rpm] : fans.items()) node.env.fan_rpm[std::stoi(t)] = rpm.get<int>();
      node.env.failed_fans = env.value("failed_fans", std::vector<int>{});
      const nlohmann::json psus = env.value("psus", nlohmann::json::object());
      for (const auto& [i, state] : psus.items()) node.env.psus[std::stoi(i)] = state.get<std::string>();
      const nlohmann::json watts = env.value("watts", nlohmann::json::object());
      for (const auto& [i, w] : watts.items()) node.env.watts[std::stoi(i)] = w.get<int>();
      index_[node.id] = static_cast<int>(nodes_.size());
      const nlohmann::json lids = n.value("lids", nlohmann::json::array());
      for (const auto& lid : lids) {
        lids_[lid.get<std::uint16_t>()] = static_cast<int>(nodes_.size());
      }
      nodes_.push_back(std::move(node));
    }
    // Ports second: their peers are named.
    std::size_t i = 0;
    for (const auto& n : nodes) {
      const nlohmann::json ports = n.value("ports", nlohmann::json::object());
      for (const auto& [port, peer] : ports.items()) {
        const auto at = index_.find(peer.at(0).get<std::string>());
        if (at != index_.end()) nodes_[i].ports[std::stoi(port)] = {at->second, peer.at(1).get<int>()};
      }
      ++i;
    }
    const char* host = std::getenv("SIM_HOST");
    const auto at = index_.find(host && *host ? std::string(host) : j.value("attach", ""));
    attach_ = at == index_.end() ? -1 : at->second;
  }

  // Whether a GMP from the attached node on P_Key index `index` gets into
  // `target`: the P_Key there and one of the target's entries have the
  // same 15 bits and one of them is a full member (bit 15). Unmodelled
  // tables (empty) admit everything.
  bool Admits(const Node& target, std::uint16_t index) const {
    if (attach_ < 0 || target.pkeys.empty()) return true;
    const auto& own = nodes_[static_cast<std::size_t>(attach_)].pkeys;
    if (own.empty()) return true;
    if (index >= own.size()) return false;
    const std::uint16_t pkey = own[index];
    if ((pkey & 0x7fff) == 0) return false;
    return std::any_of(target.pkeys.begin(), target.pkeys.end(), [pkey](std::uint16_t e) {
      return (e & 0x7fff) == (pkey & 0x7fff) && ((e | pkey) & 0x8000) != 0;
    });
  }

  // The node a request goes to: by LID, or along a directed route.
  int Target(const ib_user_mad* u) const {
    const std::uint8_t* mad = u->data;
    if (mad[1] != kSmpDirected) {
      const auto it = lids_.find(ntohs(u->addr.lid));
      return it == lids_.end() ? -1 : it->second;
    }
    int at = attach_;
    const int hops = mad[7];  // HopCount
    for (int i = 1; i <= hops && at >= 0; ++i) {
      const auto& ports = nodes_[static_cast<std::size_t>(at)].ports;
      const auto next = ports.find(mad[128 + i]);  // InitialPath[i]
      at = next == ports.end() ? -1 : next->second.first;
    }
    return at;
  }

  // A PortInfo answer names the LID of its node (a switch's port 0 LID on
  // every port; a CA's port LID): later LID-routed requests find the node.
  void Learn(int node, std::uint8_t* mad) {
    const auto lid = static_cast<std::uint16_t>(mad_get_field(mad, kData, IB_PORT_LID_F));
    if (lid != 0 && lid < 0xc000) lids_[lid] = node;
  }

  int PortOf(const Pending& p, const Node& n, std::uint8_t* mad) const {
    const int port = static_cast<int>(p.attr_mod & 0xff);
    if (port == 0 && !n.is_switch) return static_cast<int>(mad_get_field(mad, kData, IB_PORT_LOCAL_PORT_F));
    return port;
  }

  // What the link of `port` runs at; none where its peer has no model
  // (ibsim's answer stands) or the port has no peer.
  std::optional<ibfabric::model::Negotiated> LinkOf(const Node& n, int port) const {
    const auto peer = n.ports.find(port);
    if (peer == n.ports.end()) return std::nullopt;
    const Node& far = nodes_[static_cast<std::size_t>(peer->second.first)];
    if (!far.model) return std::nullopt;
    return ibfabric::model::Negotiate(*n.model, n.widths, *far.model, far.widths,
                                      CablePlant(n, port, far, peer->second.second));
  }
  // A plain node's PortInfo: what was planted on the cable of its port
  // (either end), in place of what the link runs at.
  void PlantOnPlain(const Pending& p, const Node& n, std::uint8_t* mad) const {
    const int port = PortOf(p, n, mad);
    const auto peer = n.ports.find(port);
    if (port == 0 || peer == n.ports.end() || mad_get_field(mad, kData, IB_PORT_PHYS_STATE_F) != 5) return;
    const PortPlant plant =
        CablePlant(n, port, nodes_[static_cast<std::size_t>(peer->second.first)], peer->second.second);
    if (plant.width) mad_set_field(mad, kData, IB_PORT_LINK_WIDTH_ACTIVE_F, *plant.width);
    if (plant.speed && *plant.speed <= LinkSpeed::kQdr) {
      mad_set_field(mad, kData, IB_PORT_LINK_SPEED_ACTIVE_F, BaseSpeed(*plant.speed));
    }
  }
  // What was planted on the cable between `port` of `n` and `far_port` of
  // `far`, either end.
  static PortPlant CablePlant(const Node& n, int port, const Node& far, int far_port) {
    PortPlant plant;
    for (const PortPlant* pp : {Plant(n, port), Plant(far, far_port)}) {
      if (!pp) continue;
      if (pp->width) plant.width = pp->width;
      if (pp->speed) plant.speed = pp->speed;
    }
    return plant;
  }
  // LinkSpeedActive of a speed: SDR, DDR, or QDR (also what FDR and faster
  // show there, their own speed being in the extended fields).
  static std::uint8_t BaseSpeed(LinkSpeed s) {
    return s == LinkSpeed::kSdr   ? ibfabric::model::speed::kSdr
           : s == LinkSpeed::kDdr ? ibfabric::model::speed::kDdr
                                  : ibfabric::model::speed::kQdr;
  }
  static const PortPlant* Plant(const Node& n, int port) {
    const auto it = n.plants.find(port);
    return it == n.plants.end() ? nullptr : &it->second;
  }

  void RewritePortInfo(const Pending& p, const Node& n, std::uint8_t* mad) const {
    const Personality& m = *n.model;
    const std::uint32_t caps = mad_get_field(mad, kData, IB_PORT_CAPMASK_F);
    // A switch's capability masks are its port 0's: its external ports
    // answer 0 (as the Quantum-2 ports of a real NDR fabric's ibdiagnet
    // capture do, START_PORTS CapMsk).
    const bool external = n.is_switch && PortOf(p, n, mad) != 0;
    mad_set_field(mad, kData, IB_PORT_CAPMASK_F, external ? 0 : caps | kCapExtSpeeds | kCapCapMask2);
    mad_set_field(mad, kData, IB_PORT_CAPMASK2_F, external ? 0 : m.capability_mask2);
    mad_set_field(mad, kData, IB_PORT_LINK_WIDTH_SUPPORTED_F, n.widths);
    mad_set_field(mad, kData, IB_PORT_LINK_WIDTH_ENABLED_F, n.widths);
    mad_set_field(mad, kData, IB_PORT_LINK_SPEED_SUPPORTED_F, m.speeds);
    mad_set_field(mad, kData, IB_PORT_LINK_SPEED_ENABLED_F, m.speeds);
    mad_set_field(mad, kData, IB_PORT_LINK_SPEED_EXT_SUPPORTED_F, m.speeds_ext);
    mad_set_field(mad, kData, IB_PORT_LINK_SPEED_EXT_ENABLED_F, m.speeds_ext);
    std::uint8_t ext2_active = 0;
    const int port = PortOf(p, n, mad);
    const bool up = mad_get_field(mad, kData, IB_PORT_PHYS_STATE_F) == 5;  // LinkUp
    const auto link = port != 0 && up ? LinkOf(n, port) : std::nullopt;
    if (link) {
      mad_set_field(mad, kData, IB_PORT_LINK_WIDTH_ACTIVE_F, link->width);
      // Up to QDR the speed is LinkSpeedActive's; above it the extended
      // field's (FDR10 shows as QDR here: ExtendedPortInfo tells it).
      const int s = static_cast<int>(link->speed);
      mad_set_field(mad, kData, IB_PORT_LINK_SPEED_ACTIVE_F, BaseSpeed(link->speed));
      std::uint8_t ext = 0;
      if (s >= static_cast<int>(LinkSpeed::kFdr) && link->speed != LinkSpeed::kXdr) {
        ext = static_cast<std::uint8_t>(1 << (s - static_cast<int>(LinkSpeed::kFdr)));  // FDR 1 .. NDR 8
      }
      mad_set_field(mad, kData, IB_PORT_LINK_SPEED_EXT_ACTIVE_F, ext);
      if (link->speed == LinkSpeed::kXdr) ext2_active = ibfabric::model::speed_ext2::kXdr;
    }
    // LinkSpeedExtActive2, Supported2, Enabled2: PortInfo bits 449..455
    // (data byte 56: bit 7 is 448's, then 2, 2 and 3 bits).
    std::uint8_t& b = mad[kData + 56];
    b = static_cast<std::uint8_t>((b & 0x80) | (ext2_active & 0x3) << 5 | (m.speeds_ext2 & 0x3) << 3 |
                                  (m.speeds_ext2 & 0x7));
  }

  // The FECModeActive of `port`: planted, else by the speed its link runs
  // at (none where the link is down or its peer has no model).
  // PortInfoExtended.FECModeActive (ibdm Fabric.h IBFECMode, the values
  // NVIDIA's tools read): the planted mode, else the one a real fabric
  // shows at the link's speed. NDR, as gary-minghuili/infiniband-exporter's
  // ibdiagnet 2.10 capture (FEC_MODE section, FECActv) reports it: 4
  // (RS-FEC 544/514) between switches, 14 (MLNX_RS_271_257_PLR) on 104 of
  // its 256 host cables (4 on the others): a host cable here runs 14, the
  // mode of the PLR levels. XDR like NDR, HDR 4 (IBTA's HDR FEC, RS
  // 544/514), FDR Firecode: assumed.
  std::uint16_t FecModeOf(const Node& n, int port) const {
    const auto f = n.fec.find(port);
    if (f != n.fec.end() && f->second.mode) return *f->second.mode;
    const auto link = LinkOf(n, port);
    if (!link) return 0;
    const auto peer = n.ports.find(port);
    const Node* far = peer != n.ports.end() ? &nodes_[static_cast<std::size_t>(peer->second.first)] : nullptr;
    // A switch's port to its own Aggregation Node is no cable: no FEC
    // (the capture's FECActv 255, N/A, on those 7 ports).
    if (far && far->model && far->model->name == "aggregation-node") return 0;
    const bool host_cable = !n.is_switch || (far && !far->is_switch);
    if (link->speed >= LinkSpeed::kNdr) return host_cable ? 14 : 4;
    if (link->speed == LinkSpeed::kHdr) return 4;
    if (link->speed == LinkSpeed::kFdr) return 1;  // Firecode
    return 0;
  }

  // Mellanox ExtendedPortInfo (vendor SMP 0xFF90; libibmad
  // IB_MLNX_EXT_PORT_*): LinkSpeed* bit 0 is FDR10.
  void RewriteExtPortInfo(const Pending& p, const Node& n, std::uint8_t* mad) const {
    const std::uint8_t fdr10 = n.model->fdr10 ? 1 : 0;
    mad_set_field(mad, kData, IB_MLNX_EXT_PORT_LINK_SPEED_SUPPORTED_F, fdr10);
    mad_set_field(mad, kData, IB_MLNX_EXT_PORT_LINK_SPEED_ENABLED_F, fdr10);
    const auto link = LinkOf(n, static_cast<int>(p.attr_mod & 0xff));
    mad_set_field(mad, kData, IB_MLNX_EXT_PORT_LINK_SPEED_ACTIVE_F, link && link->speed == LinkSpeed::kFdr10 ? 1 : 0);
  }

  // A port's FEC counters now, before any clear: what was planted, and
  // what the planted rates counted since (zeros where nothing was).
  static FecCount Counted(const Node& n, int port) {
    FecCount now;
    const auto f = n.fec.find(port);
    if (f == n.fec.end()) return now;
    const Node::Fec& plant = f->second;
    const double seconds = plant.since_ms > 0 ? static_cast<double>(WallMs() - plant.since_ms) / 1000 : 0;
    const auto counted = [&](std::uint32_t at, double per_second) {
      return ibfabric::model::CountedSince(at, per_second, seconds, plant.step_factor, plant.step_seconds, plant.steps,
                                           plant.step_after);
    };
    const std::size_t lanes = std::max(plant.lanes.size(), plant.lanes_per_second.size());
    for (std::size_t lane = 0; lane < lanes && lane < now.lanes.size(); ++lane) {
      now.lanes[lane] = counted(lane < plant.lanes.size() ? plant.lanes[lane] : 0,
                                lane < plant.lanes_per_second.size() ? plant.lanes_per_second[lane] : 0);
      now.symbols += now.lanes[lane];
    }
    now.corrected_blocks = plant.corrected_blocks;
    now.uncorrectable_blocks = counted(plant.uncorrectable_blocks, plant.uncorrectable_per_second);
    return now;
  }

  // PPCNT group 0x16 (Physical Layer Statistical Counters, mstflint's
  // ppcnt_reg_ext / phys_layer_stat_cntrs_ext) of `port` from the same
  // plant as its PMA counters: a bit corrected per corrected symbol, the
  // lanes' raw errors their corrected symbols, effective and symbol
  // errors the uncorrectable blocks; bits received at the link's
  // signalling rate since this process first read the state (0 where the
  // port is on no modelled link). The counters are 64 bits and never
  // cleared here.
  void PhysLayerCounters(const Node& n, int port, std::uint8_t* reg) const {
    const FecCount now = Counted(n, port);
    const auto link = LinkOf(n, port);
    const double ms = static_cast<double>(WallMs() - started_ms_);
    const double bits = link ? ibfabric::model::SignalGbps(*link) * 1e6 * ms : 0;
    PutBe(reg, 0x08, static_cast<std::uint64_t>(ms), 8);
    PutBe(reg, 0x10, static_cast<std::uint64_t>(bits), 8);
    PutBe(reg, 0x18, static_cast<std::uint64_t>(now.uncorrectable_blocks), 8);
    PutBe(reg, 0x20, static_cast<std::uint64_t>(now.symbols), 8);
    for (std::size_t lane = 0; lane < 8; ++lane)
      PutBe(reg, 0x28 + 8 * lane, static_cast<std::uint64_t>(now.lanes[lane]), 8);
    // The device's own ratios since the clear: coef x 10^-magnitude.
    const auto ber = [&](std::size_t at, double errors) {
      if (bits <= 0 || errors <= 0) return;
      const int magnitude = static_cast<int>(std::ceil(-std::log10(errors / bits)));
      const auto coef = static_cast<std::uint32_t>(std::lround(errors / bits * std::pow(10.0, magnitude)));
      PutBe(reg, at, static_cast<std::uint32_t>(magnitude) << 8 | std::min<std::uint32_t>(coef, 15), 4);
    };
    ber(0x68, now.symbols);
    ber(0x6C, now.uncorrectable_blocks);
    ber(0x70, now.uncorrectable_blocks);
    PutBe(reg, 0x84, static_cast<std::uint64_t>(now.uncorrectable_blocks), 8);
  }

  // PDDR page 3, Module Info (mstflint's pddr_module_info_ext, from
  // register byte 0x08) of the module at `port`: planted, else an NVIDIA
  // OSFP optical module (twin-port on a switch, single-port on an HCA)
  // with its monitors (temperature 45 C under a 75 C alarm, 3.3 V, 0.5 mW
  // received and 0.6 mW sent on each lane), its serial number its node's
  // and port's. Power in uW where the request asked module_info_ext 1,
  // else whole dBm.
  void ModulePage(const Node& n, int port, bool microwatts, std::uint8_t* reg) const {
    const auto planted = n.modules.find(port);
    const Node::Module none;
    const Node::Module& m = planted != n.modules.end() ? planted->second : none;
    std::uint8_t* page = reg + 0x08;
    const auto text = [&](std::size_t at, const std::string& value, std::size_t size) {
      std::memset(page + at, ' ', size);
      std::memcpy(page + at, value.data(), std::min(value.size(), size));
    };
    reg[4] = static_cast<std::uint8_t>((reg[4] & 0x9f) | (microwatts ? 0x20 : 0));
    PutBe(page, 0x04,
          static_cast<std::uint32_t>(m.type.value_or(2)) << 28 |
              static_cast<std::uint32_t>(m.length.value_or(0)) << 16 |
              static_cast<std::uint32_t>(m.identifier.value_or(8)) << 8,
          4);
    char sn[32];
    std::snprintf(sn, sizeof sn, "MT23%04d%02d", static_cast<int>(&n - nodes_.data()), port);
    text(0x14, m.vendor.empty() ? "NVIDIA" : m.vendor, 16);
    text(0x24, !m.pn.empty() ? m.pn : n.is_switch ? "MMA4Z00-NS" : "MMA4Z00-NS400", 16);
    text(0x34, m.rev.empty() ? "A1" : m.rev, 4);
    text(0x3C, m.sn.empty() ? sn : m.sn, 16);
    const auto c256 = [](double c) {
      return static_cast<std::uint16_t>(static_cast<std::int16_t>(std::lround(c * 256)));
    };
    PutBe(page, 0x4C, static_cast<std::uint32_t>(c256(m.temperature.value_or(45))) << 16 | 33000, 4);
    const auto power = [microwatts](double watts) {
      return microwatts
                 ? static_cast<std::uint16_t>(std::lround(watts * 1e6))
                 : static_cast<std::uint16_t>(static_cast<std::int16_t>(std::lround(10 * std::log10(watts * 1e3))));
    };
    for (std::size_t lane = 0; lane < 8; lane += 2) {
      const std::uint32_t rx = power(m.rx.value_or(0.0005)), tx = power(m.tx.value_or(0.0006));
      PutBe(page, 0x50 + 2 * lane, rx << 16 | rx, 4);
      PutBe(page, 0x60 + 2 * lane, tx << 16 | tx, 4);
    }
    PutBe(page, 0x80, static_cast<std::uint32_t>(c256(m.high.value_or(75))) << 16 | c256(-5), 4);
    PutBe(page, 0x9C, 0x0Fu << 8, 4);  // monitor_cap_mask: temperature, voltage, tx and rx power
  }

  static void PutBe(std::uint8_t* at, std::size_t off, std::uint64_t v, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) at[off + i] = static_cast<std::uint8_t>(v >> (8 * (n - 1 - i)));
  }
  // Seconds since the node's last reset: three days when this process
  // first read the state, counting on.
  std::uint32_t UptimeOf(const Node&) const {
    return static_cast<std::uint32_t>(3 * 86400 + (WallMs() - started_ms_) / 1000);
  }
  // Fills register `id` of `n` (its index fields already in `reg`, as
  // asked; layouts: mstflint's register_access_table.adb, MSPS as
  // SckyzO's ibswinfo reads it); false for a register it does not have.
  bool Register(const Node& n, std::uint16_t id, std::uint8_t* reg) const {
    const Node::Env& env = n.env;
    switch (id) {
      case 0x5031: {  // PDDR: local_port 0x00 [23:16], page_select 0x04 [7:0]; page 3 only is modelled
        if (reg[7] == 3) ModulePage(n, reg[1], (reg[4] >> 5 & 3) == 1, reg);
        return true;
      }
      case 0x5008: {  // PPCNT: local_port 0x00 [23:16], grp 0x00 [5:0]; group 0x16 only is modelled
        if ((reg[3] & 0x3f) == 0x16) PhysLayerCounters(n, reg[1], reg);
        return true;
      }
      case 0x9020: {  // MGIR
        PutBe(reg, 0x00, n.model->device_id, 4);
        PutBe(reg, 0x1C, UptimeOf(n), 4);
        std::memcpy(reg + 0x30, "MT_0000000063", 13);
        PutBe(reg, 0x44, 31, 4);
        PutBe(reg, 0x48, 2010, 4);
        PutBe(reg, 0x4C, 3118, 4);
        return true;
      }
      case 0x9021: {  // MSGI
        const std::string serial = "MT2301X" + std::to_string(10000 + (&n - nodes_.data()));
        const std::string part = n.model->device_id == 0xd2f4 ? "Q3400-RA" : "MQM9790-NS2F";
        std::memset(reg, ' ', 0x80);
        std::memcpy(reg + 0x00, serial.data(), std::min<std::size_t>(serial.size(), 24));
        std::memcpy(reg + 0x20, part.data(), std::min<std::size_t>(part.size(), 20));
        std::memcpy(reg + 0x38, "A1  ", 4);
        std::memcpy(reg + 0x40, n.model->hardware.data(), std::min<std::size_t>(n.model->hardware.size(), 64));
        return true;
      }
      case 0x900A: {  // MTMP: the ASIC (sensor 0); no other sensor is modelled
        const int sensor = (reg[2] & 0x0f) << 8 | reg[3];
        if (sensor != 0) {
          PutBe(reg, 0x04, 0x8001, 4);  // no sensor there
          return true;
        }
        const auto raw = static_cast<std::uint16_t>(static_cast<std::int16_t>(env.temperature.value_or(45.0) * 8));
        PutBe(reg, 0x04, raw, 4);
        PutBe(reg, 0x08, raw, 4);
        PutBe(reg, 0x0C, 105 * 8, 4);
        PutBe(reg, 0x10, 95 * 8, 4);
        std::memcpy(reg + 0x18, "asic", 4);
        return true;
      }
      case 0x9001: {  // MFCR: tachometers 1..fans active
        if (n.model->fans == 0) return false;
        std::uint32_t active = 0;
        for (int t = 1; t <= n.model->fans && t < 16; ++t) active |= 1u << t;
        PutBe(reg, 0x04, (active >> 10) << 26 | (active & 0x3ff) << 16, 4);
        return true;
      }
      case 0x9003: {  // MFSM
        if (n.model->fans == 0) return false;
        const int t = reg[0];  // tacho_hi [31:28] and tacho [27:24]: the whole first byte
        const bool failed = std::find(env.failed_fans.begin(), env.failed_fans.end(), t) != env.failed_fans.end();
        const auto rpm = env.fan_rpm.find(t);
        PutBe(reg, 0x04, failed ? 0 : rpm != env.fan_rpm.end() ? rpm->second : 11000, 4);
        return true;
      }
      case 0x9007: {  // FORE: failed fans under their limit
        if (n.model->fans == 0) return false;
        std::uint32_t under = 0;
        for (int t : env.failed_fans) under |= t >= 0 && t < 16 ? 1u << t : 0;
        PutBe(reg, 0x00, (under >> 10) << 26 | (under & 0x3ff) << 16, 4);
        return true;
      }
      case 0x900D: {  // MSPS, as ibswinfo decodes it
        if (n.model->power_supplies == 0) return false;
        for (int i = 0; i < n.model->power_supplies && i < 2; ++i) {
          const auto state = env.psus.find(i);
          const bool ok = state == env.psus.end() || state->second == "ok";
          const auto w = env.watts.find(i);
          const std::size_t base = 0x50 * static_cast<std::size_t>(i);
          PutBe(reg, base + 0x00, ok ? 0x50000010u : 0x40000000u, 4);
          PutBe(reg, base + 0x04, ok ? 2 : 1, 4);
          PutBe(reg, base + 0x08,
                ok ? 0x80000000u | static_cast<std::uint32_t>(w != env.watts.end() ? w->second : 290) : 0, 4);
          PutBe(reg, base + 0x0C, 1, 4);
        }
        return true;
      }
      default: return false;
    }
  }

  // Queues the answer to request `u` for umad_recv: its header with the
  // response bit and `status`, and `data` (zeros when null) from byte `at`
  // of the MAD (SMP and PMA data at 64, the vendor class's at 24) to the
  // end.
  void Answer(int agent, const ib_user_mad* u, std::uint16_t status, const std::uint8_t* data, std::size_t at = kData) {
    Synthesized s;
    s.fd = sending_fd_;
    s.agent = agent;
    s.lid = ntohs(u->addr.lid);
    std::memcpy(s.mad, u->data, kMadSize);
    s.mad[3] = 0x81;  // GetResp
    mad_set_field(s.mad, 0, IB_MAD_STATUS_F, status);
    std::memset(s.mad + at, 0, kMadSize - at);
    if (data) std::memcpy(s.mad + at, data, kMadSize - at);
    answers_.push_back(s);
  }

  std::mutex mu_;
  std::uint32_t companions_ = 0;
  // The extended request's TID -> the error counters of the companion
  // PortCounters reply that came ahead of its answer; at most
  // kCompanionsKept (an extended answer lost leaves its companion's).
  static constexpr std::size_t kCompanionsKept = 4096;
  std::map<std::uint32_t, std::array<std::uint64_t, std::size(kErrorCounters)>> companion_counters_;
  bool loaded_ = false;
  std::int64_t checked_ms_ = 0;
  std::int64_t started_ms_ = WallMs();  // when this process loaded the preload
  std::int64_t stamp_ = 0;
  std::vector<Node> nodes_;
  std::map<std::string, int> index_;
  std::map<std::uint16_t, int> lids_;
  int attach_ = -1;
  std::map<std::uint32_t, Pending> pending_;
  std::deque<Synthesized> answers_;
  int sending_fd_ = -1;  // the descriptor of the request OnSend is looking at
  // Busy answers given per node, for the planting they belong to: a
  // reload keeps counting down the same planting.
  std::map<std::string, std::pair<std::uint64_t, int>> consumed_;
  // FEC counters cleared, by (node, port): what they had counted then
  // (unclamped), for the planting they belong to. Shared by every process
  // of the fabric (the exporter clears, perfquery reads) through a file
  // beside the state, one line a clear, appended.
  std::map<std::pair<std::string, int>, Cleared> cleared_;
  std::streamoff clears_read_ = 0;  // how far this process read the clears file
};

template <typename F>
F Next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" {

int umad_send(int fd, int agentid, void* umad, int length, int timeout_ms, int retries) {
  using Fn = int (*)(int, int, void*, int, int, int);
  static const Fn next = Next<Fn>("umad_send");
  std::vector<std::uint8_t> companion;
  if (Personalities::Get().OnSend(fd, agentid, static_cast<ib_user_mad*>(umad), &companion)) return 0;
  if (!companion.empty()) next(fd, agentid, companion.data(), length, timeout_ms, retries);
  return next(fd, agentid, umad, length, timeout_ms, retries);
}

int umad_recv(int fd, void* umad, int* length, int timeout_ms) {
  using Fn = int (*)(int, void*, int*, int);
  static const Fn next = Next<Fn>("umad_recv");
  if (auto s = Personalities::Get().Take(fd)) {
    auto* u = static_cast<ib_user_mad*>(umad);
    if (*length < static_cast<int>(kMadSize)) {
      *length = static_cast<int>(kMadSize);
      return -ENOSPC;
    }
    u->agent_id = static_cast<std::uint32_t>(s->agent);
    u->status = 0;
    u->length = static_cast<std::uint32_t>(sizeof(ib_user_mad) + kMadSize);
    std::memset(&u->addr, 0, sizeof u->addr);
    u->addr.lid = htons(s->lid);
    u->addr.qpn = htonl(s->mad[1] == kPerformance ? 1 : 0);
    std::memcpy(u->data, s->mad, kMadSize);
    *length = static_cast<int>(kMadSize);
    return s->agent;
  }
  // This preload's own answers (companions) are taken in and not handed on.
  const int room = *length;
  while (true) {
    const int rc = next(fd, umad, length, timeout_ms);
    if (rc < 0 || !Personalities::Get().OnReceive(static_cast<ib_user_mad*>(umad))) return rc;
    *length = room;
  }
}

}  // extern "C"
