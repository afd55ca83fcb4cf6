#pragma once
// Hardware personalities: what a real device answers that ibsim (a QDR-era
// simulator) does not, one model per kind of device. The preload
// tests/tools/hw_personality.cc applies them to the MADs between a client
// (the exporter, perfquery, ...) and ibsim; the test bed
// (tests/testbed/personality.h) assigns them to nodes. No dependency on the
// rest of the project: the preload is built from this file alone.
//
// Where each value comes from is said beside it: documented (a public
// source), or assumed (no public figure; a capture of the real device
// replaces it). docs/testing.md lists them.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ibfabric::model {

// PortInfo encodings (IBTA 14.2.5.6, table 155; rdma-core libibmad fields.c).
namespace width {
inline constexpr std::uint8_t k1x = 1, k4x = 2, k8x = 4, k12x = 8, k2x = 16;
}
namespace speed {  // LinkSpeed*: 1 SDR, 2 DDR, 4 QDR
inline constexpr std::uint8_t kSdr = 1, kDdr = 2, kQdr = 4;
}
namespace speed_ext {  // LinkSpeedExt*: 1 FDR, 2 EDR, 4 HDR, 8 NDR
inline constexpr std::uint8_t kFdr = 1, kEdr = 2, kHdr = 4, kNdr = 8;
}
namespace speed_ext2 {  // LinkSpeedExt*2 (IBTA 1.7): 1 XDR
inline constexpr std::uint8_t kXdr = 1;
}

// The speeds a link can run at, slowest first; FDR10 is Mellanox's, seen
// only through the vendor SMP ExtendedPortInfo (attribute 0xFF90).
enum class LinkSpeed : std::uint8_t { kSdr, kDdr, kQdr, kFdr10, kFdr, kEdr, kHdr, kNdr, kXdr };
std::optional<LinkSpeed> ParseLinkSpeed(std::string_view s);  // "QDR", "FDR10", "NDR", ...
const char* ToString(LinkSpeed s);

struct Personality {
  std::string_view name;      // as a personality file names it: "quantum-2"
  std::string_view hardware;  // what it stands for
  bool is_switch = false;
  // NodeInfo (IBTA 14.2.5.3).
  std::uint32_t vendor_id = 0;
  std::uint16_t device_id = 0;
  // PortInfo: what the ports support (and have enabled).
  std::uint8_t widths = 0;  // LinkWidthSupported
  std::uint8_t speeds = 0;  // LinkSpeedSupported
  std::uint8_t speeds_ext = 0;
  std::uint8_t speeds_ext2 = 0;
  bool fdr10 = false;                  // ExtendedPortInfo LinkSpeedSupported bit 0
  std::uint16_t capability_mask2 = 0;  // PortInfo.CapabilityMask2
  // PMA ClassPortInfo (IBTA 16.1.2, table 218).
  std::uint16_t pma_mask = 0;
  std::uint32_t pma_mask2 = 0;
  // PortSamplesControl.Tick; none: the PMA answers "unsupported attribute".
  std::optional<std::uint8_t> tick;
  // NVIDIA AdaptiveRoutingInfo (SMP 0xFF20) AdaptiveRoutingGroupCap; 0:
  // the device answers "unsupported attribute". Whether AR is on is the
  // SM's doing: off until planted (HardwareFabric::PlantAdaptiveRouting).
  std::uint16_t ar_group_cap = 0;
  // NVIDIA vendor class GeneralInfo capability bit 20: AccessRegister GMP
  // (the device's registers in band); a switch's fans (tachometers 1..N)
  // and power supplies as its registers report them.
  bool access_register = false;
  int fans = 0;
  int power_supplies = 0;
};

// Every model, and one by name (null when there is none).
const std::vector<Personality>& Personalities();
const Personality* FindPersonality(std::string_view name);

// What a port runs at, given what it and its peer support: the fastest
// speed and the widest width both have, each capped by what was planted
// on the cable (a 4x cable running 1x). `peer` null: a peer with no model,
// whose fields ibsim's answer keeps.
struct Negotiated {
  std::uint8_t width = 0;  // one LinkWidth bit
  LinkSpeed speed = LinkSpeed::kSdr;
};
struct PortPlant {
  std::optional<std::uint8_t> width;  // one LinkWidth bit
  std::optional<LinkSpeed> speed;
};
// The signalling rate of a link in Gb/s: its lanes times each lane's
// (IBTA: 2.5, 5, 10 Gbaud to QDR, FDR10 10.3125, FDR 14.0625, EDR
// 25.78125; PAM4 HDR 53.125, NDR 106.25, XDR 212.5 Gb/s).
double SignalGbps(const Negotiated& link);
Negotiated Negotiate(const Personality& a, std::uint8_t a_widths, const Personality& b, std::uint8_t b_widths,
                     const PortPlant& plant);
// The widest lane count of a LinkWidth mask, as its bit ("4x" -> 2).
std::uint8_t WidestBit(std::uint8_t widths);
std::optional<std::uint8_t> ParseWidth(std::string_view s);  // "1x", "2x", "4x", "8x", "12x"

// A counter planted at `at` that counts on at `per_second`, `seconds`
// after the planting, its rate rising `factor` times at `first_step`
// seconds (negative: `step_seconds`) and every `step_seconds` after, for
// `steps` steps, and steady after (steps 0: a steady rate): a cable whose
// raw error ratio rises step by step. Unclamped.
double CountedSince(double at, double per_second, double seconds, double factor = 1, double step_seconds = 0,
                    int steps = 0, double first_step = -1);

}  // namespace ibfabric::model
