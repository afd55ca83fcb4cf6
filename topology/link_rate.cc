#include "topology/link_rate.h"

#include <iterator>

#include "transport/attributes.h"

namespace ibfabric::topology {

const char* ToString(Speed s) {
  switch (s) {
    case Speed::kSdr: return "SDR";
    case Speed::kDdr: return "DDR";
    case Speed::kQdr: return "QDR";
    case Speed::kFdr10: return "FDR10";
    case Speed::kFdr: return "FDR";
    case Speed::kEdr: return "EDR";
    case Speed::kHdr: return "HDR";
    case Speed::kNdr: return "NDR";
    case Speed::kXdr: return "XDR";
    case Speed::kUnknown: break;
  }
  return "unknown";
}

int Lanes(std::uint8_t width_bit) {
  switch (width_bit) {
    case 1: return 1;
    case 2: return 4;
    case 4: return 8;
    case 8: return 12;
    case 16: return 2;
  }
  return 0;
}

int MaxLanes(std::uint8_t width_mask) {
  int best = 0;
  for (std::uint8_t bit = 1; bit != 0 && bit <= 16; bit = static_cast<std::uint8_t>(bit << 1)) {
    if ((width_mask & bit) && Lanes(bit) > best) best = Lanes(bit);
  }
  return best;
}

namespace {
Speed FromBase(std::uint8_t bit) {
  switch (bit) {
    case 1: return Speed::kSdr;
    case 2: return Speed::kDdr;
    case 4: return Speed::kQdr;
  }
  return Speed::kUnknown;
}
Speed FromExt(std::uint8_t bit) {
  switch (bit) {
    case 1: return Speed::kFdr;
    case 2: return Speed::kEdr;
    case 4: return Speed::kHdr;
    case 8: return Speed::kNdr;
  }
  return Speed::kUnknown;
}
Speed Highest(std::uint8_t mask, Speed (*from)(std::uint8_t)) {
  Speed best = Speed::kUnknown;
  for (std::uint8_t bit = 1; bit != 0 && bit <= 8; bit = static_cast<std::uint8_t>(bit << 1)) {
    if ((mask & bit) && from(bit) > best) best = from(bit);
  }
  return best;
}
Speed FromExt2(std::uint8_t bit) { return bit == 1 ? Speed::kXdr : Speed::kUnknown; }

bool Fdr10(std::uint8_t mlnx_mask) { return (mlnx_mask & transport::kMlnxSpeedFdr10) != 0; }

// The fastest of a port's masks: XDR's field, then FDR and up, then FDR10,
// then SDR..QDR.
Speed Fastest(std::uint8_t base, std::uint8_t ext, std::uint8_t ext2, std::uint8_t mlnx) {
  if (const Speed s = Highest(ext2, FromExt2); s != Speed::kUnknown) return s;
  if (const Speed s = Highest(ext, FromExt); s != Speed::kUnknown) return s;
  if (Fdr10(mlnx)) return Speed::kFdr10;
  return Highest(base, FromBase);
}
}  // namespace

Speed ActiveSpeed(const Port& p) {
  if (p.speed_ext2_active != 0) return FromExt2(p.speed_ext2_active);
  if (p.speed_ext_active != 0) return FromExt(p.speed_ext_active);
  const Speed base = FromBase(p.speed_active);
  return base == Speed::kQdr && Fdr10(p.mlnx.active) ? Speed::kFdr10 : base;
}

Speed MaxSupportedSpeed(const Port& p) {
  return Fastest(p.speed_supported, p.speed_ext_supported, p.speed_ext2_supported, p.mlnx.supported);
}

Speed MaxEnabledSpeed(const Port& p) {
  return Fastest(p.speed_enabled, p.speed_ext_enabled, p.speed_ext2_enabled, p.mlnx.enabled);
}

namespace {

// One lane at each speed, in Gb/s: the data rate after line encoding and
// the signalling rate before it (8b/10b to QDR, 64b/66b from FDR, PAM4
// with FEC from HDR); indexed by Speed.
struct LaneRate {
  double data;
  double signal;
};
constexpr LaneRate kLaneRates[] = {
    {0, 0},            // unknown
    {2.0, 2.5},        // SDR
    {4.0, 5.0},        // DDR
    {8.0, 10.0},       // QDR
    {10.0, 10.3125},   // FDR10
    {13.64, 14.0625},  // FDR
    {25.0, 25.78125},  // EDR
    {50.0, 53.125},    // HDR
    {100.0, 106.25},   // NDR
    {200.0, 212.5},    // XDR
};
static_assert(std::size(kLaneRates) == static_cast<std::size_t>(Speed::kXdr) + 1);

}  // namespace

double LaneGbps(Speed s) { return kLaneRates[static_cast<std::size_t>(s)].data; }

double LaneSignalGbps(Speed s) { return kLaneRates[static_cast<std::size_t>(s)].signal; }

double ActiveSignalGbps(const Port& p) {
  if (!p.link_up()) return 0;
  return Lanes(p.width_active) * LaneSignalGbps(ActiveSpeed(p));
}

double ActiveGbps(const Port& p) {
  if (!p.link_up()) return 0;
  return Lanes(p.width_active) * LaneGbps(ActiveSpeed(p));
}

std::string RateString(const Port& p) {
  if (!p.link_up() || Lanes(p.width_active) == 0) return "";
  return std::to_string(Lanes(p.width_active)) + "x" + ToString(ActiveSpeed(p));
}

Speed ParseSpeed(std::string_view name) {
  for (int s = static_cast<int>(Speed::kSdr); s <= static_cast<int>(Speed::kXdr); ++s) {
    if (name == ToString(static_cast<Speed>(s))) return static_cast<Speed>(s);
  }
  return Speed::kUnknown;
}

bool SetRate(std::string_view rate, Port* p) {
  const std::size_t x = rate.find('x');
  if (x == std::string_view::npos || x == 0 || x > 2) return false;
  std::uint8_t width = 0;
  for (const std::uint8_t bit : {1, 2, 4, 8, 16}) {
    if (std::to_string(Lanes(bit)) == rate.substr(0, x)) width = bit;
  }
  const Speed speed = ParseSpeed(rate.substr(x + 1));
  if (width == 0 || speed == Speed::kUnknown) return false;
  Port q = *p;
  q.width_active = q.width_enabled = q.width_supported = width;
  q.speed_active = q.speed_ext_active = q.speed_ext2_active = 0;
  q.mlnx = {};
  switch (speed) {
    case Speed::kSdr: q.speed_active = 1; break;
    case Speed::kDdr: q.speed_active = 2; break;
    case Speed::kQdr: q.speed_active = 4; break;
    case Speed::kFdr10:
      q.speed_active = 4;  // PortInfo shows QDR; ExtendedPortInfo says FDR10
      q.mlnx = {true, transport::kMlnxSpeedFdr10, transport::kMlnxSpeedFdr10, transport::kMlnxSpeedFdr10};
      break;
    case Speed::kFdr: q.speed_ext_active = 1; break;
    case Speed::kEdr: q.speed_ext_active = 2; break;
    case Speed::kHdr: q.speed_ext_active = 4; break;
    case Speed::kNdr: q.speed_ext_active = 8; break;
    case Speed::kXdr: q.speed_ext2_active = 1; break;
    case Speed::kUnknown: return false;
  }
  if (q.speed_ext_active != 0 || q.speed_ext2_active != 0)
    q.speed_active = 4;  // the fastest base speed, as ports report
  q.speed_enabled = q.speed_supported = q.speed_active;
  q.speed_ext_enabled = q.speed_ext_supported = q.speed_ext_active;
  q.speed_ext2_enabled = q.speed_ext2_supported = q.speed_ext2_active;
  *p = q;
  return true;
}

}  // namespace ibfabric::topology
