#pragma once
// What PortInfo's width and speed bit masks mean (IBTA 14.2.5.6, table 155:
// LinkWidth*, LinkSpeed*, LinkSpeedExt*), and the data rate of a link.

#include <cstdint>
#include <string>
#include <string_view>

#include "topology/fabric.h"

namespace ibfabric::topology {

// Speeds in increasing order. LinkSpeedActive: 1 SDR, 2 DDR, 4 QDR;
// LinkSpeedExtActive: 1 FDR, 2 EDR, 4 HDR, 8 NDR; LinkSpeedExtActive2
// (IBTA 1.7): 1 XDR. The ExtActive2 field, when set, outranks the others
// (as libibnetdisc's ibnd_get_agg_linkspeedext does). FDR10 is Mellanox's:
// a port at QDR whose ExtendedPortInfo (Port::mlnx) says FDR10 runs FDR10
// (as iblinkinfo prints it).
enum class Speed : std::uint8_t { kUnknown, kSdr, kDdr, kQdr, kFdr10, kFdr, kEdr, kHdr, kNdr, kXdr };

const char* ToString(Speed s);
// The speed ToString names ("SDR" .. "XDR", exactly); kUnknown for any other text.
Speed ParseSpeed(std::string_view name);
// Lanes of a single-bit LinkWidth value: 1 1x, 16 2x, 2 4x, 4 8x, 8 12x.
int Lanes(std::uint8_t width_bit);
// The widest lane count in a LinkWidthSupported/Enabled mask.
int MaxLanes(std::uint8_t width_mask);
// The speed a port runs at: the extended one when it has one.
Speed ActiveSpeed(const Port& p);
// The fastest speed a port supports (extended speeds and FDR10 included).
Speed MaxSupportedSpeed(const Port& p);
// The fastest speed a port has enabled, likewise.
Speed MaxEnabledSpeed(const Port& p);
// Data rate of one lane in Gb/s after line encoding (8b/10b up to QDR,
// 64b/66b from FDR10, PAM4 with FEC from HDR as commonly quoted).
double LaneGbps(Speed s);
// Signalling rate of one lane in Gb/s, before line encoding (IBTA 6.x:
// 2.5, 5, 10, 14.0625, 25.78125 Gbaud, FDR10 10.3125; PAM4 from HDR: 53.125, 106.25,
// 212.5 Gb/s).
double LaneSignalGbps(Speed s);
// Data rate of the port's active link in Gb/s; 0 when it is not up.
double ActiveGbps(const Port& p);
// Signalling rate of the port's active link in Gb/s; 0 when it is not up.
double ActiveSignalGbps(const Port& p);
// "4xQDR", as ibnetdiscover prints it; "" when not up.
std::string RateString(const Port& p);
// The inverse: sets the port's active width and speed fields from a rate
// RateString prints ("1x".."12x", SDR..XDR, FDR10 as Mellanox's
// ExtendedPortInfo says it), and its enabled and supported masks to the
// same (all a rate tells). False, the port untouched, for anything else.
bool SetRate(std::string_view rate, Port* p);

}  // namespace ibfabric::topology
