#include "tests/model/personalities.h"

#include <algorithm>
#include <array>

namespace ibfabric::model {
namespace {

// NodeInfo.VendorID of Mellanox/NVIDIA devices (its IEEE OUI, 0x0002c9,
// as opensm and infiniband-diags test it).
constexpr std::uint32_t kMellanox = 0x0002c9;

// PortInfo.CapabilityMask2 bits (rdma-core iba_types.h IB_PORT_CAP2_*).
constexpr std::uint16_t kCap2SetNodeDesc = 0x0001;
constexpr std::uint16_t kCap2PortInfoExt = 0x0002;  // PortInfoExtended (FEC mode)
constexpr std::uint16_t kCap2SwitchPortStateTable = 0x0008;
constexpr std::uint16_t kCap2Width2x = 0x0010;
constexpr std::uint16_t kCap2Hdr = 0x0020;
constexpr std::uint16_t kCap2Ndr = 0x0400;
constexpr std::uint16_t kCap2ExtSpeeds2 = 0x0800;  // LinkSpeedExt*2 valid
constexpr std::uint16_t kCap2Xdr = 0x1000;

// PMA ClassPortInfo.CapabilityMask bits (IBTA 16.1.2, table 218): 8
// AllPortSelect, 9 PortCountersExtended, 12 PortXmitWait, 14 RS-FEC
// counters (PortExtendedSpeedsCounters, infiniband-diags perfquery.c);
// CapabilityMask2 bit 1: the error counters in PortCountersExtended.
constexpr std::uint16_t kPmaAllPortSelect = 1 << 8, kPmaExtWidth = 1 << 9, kPmaXmitWait = 1 << 12, kPmaRsFec = 1 << 14;
// CapabilityMask2 bit 1, IsAdditionalPortCountersExtendedSupported (rdma-core
// mad.h IB_PM_IS_ADDL_PORT_CTRS_EXT_SUP): the error counters also in
// PortCountersExtended, as 64-bit counters. Claimed by the Quantum
// switches (assumed); the preload fills those fields, which ibsim leaves 0.
constexpr std::uint32_t kPma2AdditionalExtended = 1u << 1;

// Adaptive routing groups a switch can hold (AdaptiveRoutingGroupCap):
// assumed, no public figure; only its being non-zero (AR supported) matters.
constexpr std::uint16_t kArGroupCap = 2048;

constexpr std::uint8_t kBaseSpeeds = speed::kSdr | speed::kDdr | speed::kQdr;
constexpr std::uint8_t kNdrSpeeds = speed_ext::kEdr | speed_ext::kHdr | speed_ext::kNdr;

}  // namespace

const std::vector<Personality>& Personalities() {
  // Device IDs: Switch-IB 2 0xcf08 is in infiniband-diags'
  // is_mlnx_ext_port_info_supported; the Quantum IDs continue that series
  // by the ASICs' MT numbers (54000 Quantum, 54002 Quantum-2, 54004
  // Quantum-3: assumed), the ConnectX ones are the PCI device IDs (MT4129
  // ConnectX-7, MT4131 ConnectX-8). Ticks: NVIDIA's ibdiagnet manual
  // ("Congestion Assessment on InfiniBand Links"): the Quantum family
  // reports 7 and counts 8 bytes of the port, Switch-IB 2 reports 31 and
  // counts 32 bytes of a lane. A real NDR fabric's ibdiagnet 2.10 capture
  // (gary-minghuili/infiniband-exporter data/ibdiagnet2/ibdiagnet2.db_csv,
  // START_PM_PORT_SAMPLES_CONTROL) shows Tick 7 and CounterWidth 4 on
  // its Quantum-2 ports, its ConnectX-7 ports and its Aggregation Nodes
  // alike; its START_PORTS, CapabilityMask2 0x43b at a Quantum-2's port 0
  // and 0x432 at a ConnectX-7's (and CapabilityMask 0 on a switch's
  // external ports, which this model's preload answers too). ConnectX-8:
  // no figure (no PortSamplesControl).
  // ClassPortInfo of mlx5 HCAs: little more than ExtWidth, although
  // PortXmitWait is filled (Linux drivers/infiniband/hw/mlx5). The
  // Quantum switches answer AccessRegister in band (14 fan tachometers
  // and 2 power supplies, as a QM9790 reports them in SckyzO's ibswinfo
  // test dumps); the Switch-IB 2 model does not (a device without it).
  // The ConnectX HCAs answer AccessRegister too (their PPCNT, as UFM and
  // ibdiagnet --get_phy_info read HCA ports: assumed for the GMP path),
  // with no fans or supplies of their own.
  static const std::vector<Personality> kAll{
      {"quantum-2", "NVIDIA Quantum-2 NDR switch (QM9700)", true, kMellanox, 0xd2f2,
       width::k1x | width::k2x | width::k4x, kBaseSpeeds, kNdrSpeeds, 0, false,
       kCap2SetNodeDesc | kCap2PortInfoExt | kCap2SwitchPortStateTable | kCap2Width2x | kCap2Hdr | kCap2Ndr,
       kPmaAllPortSelect | kPmaExtWidth | kPmaXmitWait | kPmaRsFec, kPma2AdditionalExtended, 7, kArGroupCap, true, 14,
       2},
      {"quantum-3", "NVIDIA Quantum-3 XDR switch (Q3400)", true, kMellanox, 0xd2f4,
       width::k1x | width::k2x | width::k4x, kBaseSpeeds, kNdrSpeeds, speed_ext2::kXdr, false,
       kCap2SetNodeDesc | kCap2PortInfoExt | kCap2SwitchPortStateTable | kCap2Width2x | kCap2Hdr | kCap2Ndr |
           kCap2ExtSpeeds2 | kCap2Xdr,
       kPmaAllPortSelect | kPmaExtWidth | kPmaXmitWait | kPmaRsFec, kPma2AdditionalExtended, 7, kArGroupCap, true, 14,
       2},
      {"switch-ib-2", "Mellanox Switch-IB 2 EDR switch (SB7800)", true, kMellanox, 0xcf08, width::k1x | width::k4x,
       kBaseSpeeds, speed_ext::kFdr | speed_ext::kEdr, 0, true, 0, kPmaAllPortSelect | kPmaExtWidth | kPmaXmitWait, 0,
       31, kArGroupCap},
      {"connectx-7", "NVIDIA ConnectX-7 NDR HCA (MT4129)", false, kMellanox, 0x1021,
       width::k1x | width::k2x | width::k4x, kBaseSpeeds, kNdrSpeeds, 0, false,
       kCap2PortInfoExt | kCap2Width2x | kCap2Hdr | kCap2Ndr, kPmaExtWidth, 0, 7, 0, true},
      {"connectx-8", "NVIDIA ConnectX-8 XDR HCA (MT4131)", false, kMellanox, 0x1023,
       width::k1x | width::k2x | width::k4x, kBaseSpeeds, kNdrSpeeds, speed_ext2::kXdr, false,
       kCap2PortInfoExt | kCap2Width2x | kCap2Hdr | kCap2Ndr | kCap2ExtSpeeds2 | kCap2Xdr, kPmaExtWidth, 0,
       std::nullopt, 0, true},
      // A SHARP Aggregation Node: a CA inside a Quantum-2 switch, with the
      // switch's ASIC (NodeDescription "Mellanox Technologies Aggregation
      // Node", set by the net file).
      {"aggregation-node", "SHARP Aggregation Node in a Quantum-2 switch", false, kMellanox, 0xd2f2, width::k4x,
       kBaseSpeeds, kNdrSpeeds, 0, false, kCap2Ndr, kPmaExtWidth | kPmaXmitWait, 0, 7},
  };
  return kAll;
}

const Personality* FindPersonality(std::string_view name) {
  for (const Personality& p : Personalities()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::optional<LinkSpeed> ParseLinkSpeed(std::string_view s) {
  static constexpr std::array<std::pair<std::string_view, LinkSpeed>, 9> kNames{{{"SDR", LinkSpeed::kSdr},
                                                                                 {"DDR", LinkSpeed::kDdr},
                                                                                 {"QDR", LinkSpeed::kQdr},
                                                                                 {"FDR10", LinkSpeed::kFdr10},
                                                                                 {"FDR", LinkSpeed::kFdr},
                                                                                 {"EDR", LinkSpeed::kEdr},
                                                                                 {"HDR", LinkSpeed::kHdr},
                                                                                 {"NDR", LinkSpeed::kNdr},
                                                                                 {"XDR", LinkSpeed::kXdr}}};
  for (const auto& [name, speed] : kNames) {
    if (name == s) return speed;
  }
  return std::nullopt;
}

const char* ToString(LinkSpeed s) {
  switch (s) {
    case LinkSpeed::kSdr: return "SDR";
    case LinkSpeed::kDdr: return "DDR";
    case LinkSpeed::kQdr: return "QDR";
    case LinkSpeed::kFdr10: return "FDR10";
    case LinkSpeed::kFdr: return "FDR";
    case LinkSpeed::kEdr: return "EDR";
    case LinkSpeed::kHdr: return "HDR";
    case LinkSpeed::kNdr: return "NDR";
    case LinkSpeed::kXdr: return "XDR";
  }
  return "?";
}

namespace {

// The speeds a model supports, as LinkSpeed values.
std::vector<LinkSpeed> SpeedsOf(const Personality& p) {
  std::vector<LinkSpeed> out;
  if (p.speeds & speed::kSdr) out.push_back(LinkSpeed::kSdr);
  if (p.speeds & speed::kDdr) out.push_back(LinkSpeed::kDdr);
  if (p.speeds & speed::kQdr) out.push_back(LinkSpeed::kQdr);
  if (p.fdr10) out.push_back(LinkSpeed::kFdr10);
  if (p.speeds_ext & speed_ext::kFdr) out.push_back(LinkSpeed::kFdr);
  if (p.speeds_ext & speed_ext::kEdr) out.push_back(LinkSpeed::kEdr);
  if (p.speeds_ext & speed_ext::kHdr) out.push_back(LinkSpeed::kHdr);
  if (p.speeds_ext & speed_ext::kNdr) out.push_back(LinkSpeed::kNdr);
  if (p.speeds_ext2 & speed_ext2::kXdr) out.push_back(LinkSpeed::kXdr);
  return out;
}

// Lanes of a LinkWidth bit, to order widths (2x sits between 1x and 4x).
int LanesOf(std::uint8_t bit) {
  switch (bit) {
    case width::k1x: return 1;
    case width::k2x: return 2;
    case width::k4x: return 4;
    case width::k8x: return 8;
    case width::k12x: return 12;
    default: return 0;
  }
}

}  // namespace

std::uint8_t WidestBit(std::uint8_t widths) {
  std::uint8_t best = 0;
  for (std::uint8_t bit : {width::k1x, width::k2x, width::k4x, width::k8x, width::k12x}) {
    if ((widths & bit) && LanesOf(bit) > LanesOf(best)) best = bit;
  }
  return best;
}

std::optional<std::uint8_t> ParseWidth(std::string_view s) {
  if (s == "1x") return width::k1x;
  if (s == "2x") return width::k2x;
  if (s == "4x") return width::k4x;
  if (s == "8x") return width::k8x;
  if (s == "12x") return width::k12x;
  return std::nullopt;
}

double SignalGbps(const Negotiated& link) {
  double lane = 0;
  switch (link.speed) {
    case LinkSpeed::kSdr: lane = 2.5; break;
    case LinkSpeed::kDdr: lane = 5; break;
    case LinkSpeed::kQdr: lane = 10; break;
    case LinkSpeed::kFdr10: lane = 10.3125; break;
    case LinkSpeed::kFdr: lane = 14.0625; break;
    case LinkSpeed::kEdr: lane = 25.78125; break;
    case LinkSpeed::kHdr: lane = 53.125; break;
    case LinkSpeed::kNdr: lane = 106.25; break;
    case LinkSpeed::kXdr: lane = 212.5; break;
  }
  return LanesOf(link.width) * lane;
}

Negotiated Negotiate(const Personality& a, std::uint8_t a_widths, const Personality& b, std::uint8_t b_widths,
                     const PortPlant& plant) {
  Negotiated n;
  std::uint8_t common = a_widths & b_widths;
  if (plant.width) {
    // A cable that trained narrower: the planted width if both ends have
    // it, else the narrowest they share.
    const std::uint8_t capped = common & *plant.width;
    common = capped ? capped : static_cast<std::uint8_t>(common & width::k1x);
  }
  n.width = WidestBit(common);
  const std::vector<LinkSpeed> sa = SpeedsOf(a), sb = SpeedsOf(b);
  for (LinkSpeed s : sa) {
    if (std::find(sb.begin(), sb.end(), s) == sb.end()) continue;
    if (plant.speed && static_cast<int>(s) > static_cast<int>(*plant.speed)) continue;
    n.speed = std::max(n.speed, s);
  }
  return n;
}

double CountedSince(double at, double per_second, double seconds, double factor, double step_seconds, int steps,
                    double first_step) {
  if (seconds <= 0 || per_second <= 0) return at;
  if (steps <= 0 || step_seconds <= 0) return at + per_second * seconds;
  if (first_step < 0) first_step = step_seconds;
  // The rate before the first step, then each step's, the last one on.
  double total = at + per_second * std::min(seconds, first_step);
  double rate = per_second;
  for (int k = 0; k < steps; ++k) {
    rate *= factor;
    const double from = first_step + k * step_seconds;
    if (seconds <= from) return total;
    const double to = k + 1 < steps ? from + step_seconds : seconds;
    total += rate * (std::min(seconds, to) - from);
  }
  return total;
}

}  // namespace ibfabric::model
