#pragma once
// The levels at which a port's forward error correction ratios make a bad
// cable: by the speed its link runs, its FEC mode and the process of the
// ASIC that receives (the end whose ratio it is), as NVIDIA's field
// thresholds give them. Their source is the UFM PDR plugin's
// Field_BER_Thresholds.csv (Mellanox/ufm_sdk_3.0,
// plugins/pdr_deterministic_plugin/build/config/), version V06 (branch
// pdr_dynamic_telemetry, commit 0eea373b; V05 on the main branch, f5097fe7
// to e04f549a, has the same levels): per ASIC (7nm, 16nm), speed, FEC
// opcode and media, a pre-FEC (raw) and a post-FEC (effective) error and
// warning level, and V06's column "FEC OPCODE vs MAD" maps each opcode to
// PortInfoExtended's FECModeActive. Read here:
//
//   speed  FEC                ASIC    raw warning/error   effective warning/error
//   NDR    PLR                any     5e-6 / 1e-5         5e-12 / 1e-11
//   NDR    RS, no PLR         any     5e-6 / 1e-5         5e-14 / 1e-13
//   NDR    not read           any     5e-6 / 1e-5         5e-12 / 1e-11
//   HDR    any                7nm     5e-8 / 1e-7         5e-14 / 1e-13
//   HDR    any                other   5e-6 / 1e-5         5e-14 / 1e-13
//   EDR    RS                 7nm     5e-13 / 1e-12       5e-14 / 1e-13
//   EDR    low-latency RS     any     5e-13 / 1e-12       5e-14 / 1e-13
//   EDR    RS                 other   5e-10 / 1e-9        5e-14 / 1e-13
//   EDR    none               any     5e-14 / 1e-13       5e-14 / 1e-13
//   EDR    not read           any     5e-10 / 1e-9        5e-14 / 1e-13
//   XDR    as NDR (no XDR rows: assumed)
//
// NDR's raw levels are the table's optical ("Active") ones: the media is
// not known here, and a copper (DAC) link's are 10 to 100 times lower
// (5e-7 / 1e-6 with PLR, 5e-8 / 1e-7 without): a fabric of copper cables
// sets its own rows. An ASIC of unknown process is judged by the 16nm
// rows, the higher levels (fewer pages where it is not known). FDR and
// older, and a speed no row names, use AlertConfig's plain levels.
//
// The FEC modes are PortInfoExtended.FECModeActive's (transport/
// attributes.h FecMode); the table's opcodes are PPLM's, another
// numbering (RS-FEC 544/514 is 4 there and 7 in PPLM; 271/257 with PLR
// 14 and 13; V06's MAD column says so). Where a row is missing or the
// mode was not read, the higher of the levels that could apply (no page
// for want of knowing). Pure: no state.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectors/health/detail/threshold.h"
#include "topology/link_rate.h"
#include "transport/attributes.h"

namespace ibfabric::collectors {

// The process an ASIC is made in, as the table tells ASICs apart.
enum class AsicProcess : std::uint8_t { kUnknown, k16nm, k7nm };
const char* ToString(AsicProcess p);  // "unknown", "16nm", "7nm"
// From NodeInfo.VendorID and DeviceID: NVIDIA's (0x02c9) Quantum-2
// (0xd2f2) and ConnectX-7 (0x1021) 7nm, and the later Quantum-3 (0xd2f4)
// and ConnectX-8 (0x1023) with them; Quantum (0xd2f0) and ConnectX-6
// (0x101b) 16nm (NVIDIA's product announcements); anything else unknown.
AsicProcess AsicProcessOf(std::uint32_t vendor_id, std::uint16_t device_id);

// Which FEC modes a row is for.
enum class FecClass : std::uint8_t {
  kAny,           // whatever the mode, read or not (a mode not read matches only this)
  kNone,          // no FEC, or FireCode: no Reed-Solomon
  kRs,            // Reed-Solomon without physical layer retransmission (low latency too)
  kLowLatencyRs,  // only the low-latency RS(271,257) modes (FecMode 3, 9)
  kPlr,           // with physical layer retransmission (FecMode 13, 14)
};
const char* ToString(FecClass c);  // "any", "none", "rs", "ll_rs", "plr"
std::optional<FecClass> ParseFecClass(const std::string& s);

struct BerRow {
  topology::Speed speed = topology::Speed::kUnknown;
  FecClass fec = FecClass::kAny;
  std::optional<AsicProcess> asic;  // none: any
  Threshold raw;                    // pre-FEC
  Threshold effective;              // post-FEC
  std::string Describe() const;     // "HDR 7nm", "NDR plr"
};

// NVIDIA's levels as read above, in the order they are matched.
std::vector<BerRow> DefaultBerLevels();

// The first row for an end whose link runs `speed` in `mode` (none: not
// read) on an ASIC of `asic`; null when no row is for it.
const BerRow* MatchBerRow(const std::vector<BerRow>& rows, topology::Speed speed,
                          std::optional<transport::FecMode> mode, AsicProcess asic);

}  // namespace ibfabric::collectors
