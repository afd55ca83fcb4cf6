#pragma once
// The per-port counters this project exports: where each comes from (IBTA
// attribute and field), its width on the wire, and its Prometheus name. One
// table, so a counter is named and sourced in exactly one place.

#include <array>
#include <bitset>
#include <cstdint>
#include <string>

#include "transport/attributes.h"

namespace ibfabric::collectors {

enum class Counter : std::uint8_t {
  kSymbolError,
  kLinkErrorRecovery,
  kLinkDowned,
  kRcvErrors,
  kRcvRemotePhysicalErrors,
  kRcvSwitchRelayErrors,
  kXmitDiscards,
  kXmitConstraintErrors,
  kRcvConstraintErrors,
  kLocalLinkIntegrityErrors,
  kExcessiveBufferOverrunErrors,
  kVl15Dropped,
  kQp1Dropped,
  kXmitWait,
  kXmitData,
  kRcvData,
  kXmitPkts,
  kRcvPkts,
  kUnicastXmitPkts,
  kUnicastRcvPkts,
  kMulticastXmitPkts,
  kMulticastRcvPkts,
  // PortRcvErrorDetails: what PortRcvErrors counted, by cause.
  kLocalPhysicalErrors,
  kMalformedPacketErrors,
  kBufferOverrunErrors,
  kDlidMappingErrors,
  kVlMappingErrors,
  kLoopingErrors,
  // PortXmitDiscardDetails: what PortXmitDiscards counted, by cause.
  kInactiveDiscards,
  kNeighborMtuDiscards,
  kSwitchLifetimeLimitDiscards,
  kSwitchHoqLifetimeLimitDiscards,
};
inline constexpr std::size_t kCounterCount = 32;

struct CounterSpec {
  Counter id;
  const char* metric;     // infiniband_{switch,hca}_port_<metric>_total
  const char* ibta_name;  // field name in IBTA 16.1.3.5 / 16.1.4.11 / the details attributes (and perfquery)
  std::uint64_t scale;    // raw unit to exported base unit (data: 4 octets -> bytes)
  // Bit in PortCounters' CounterSelect (0..15) or, as 16 + n, bit n of
  // CounterSelect2 (IBTA table 225); -1 when a Set cannot clear it.
  int select_bit;
  // The width of its own field: PortCounters' (IBTA 16.1.3.5, table 225)
  // or its details attribute's (16); 64 for the counters that only
  // PortCountersExtended has. Read from PortCountersExtended, any is 64.
  std::uint8_t bits;
};

// What a node's PMA says it supports (ClassPortInfo, IBTA 16.1.2). When
// ClassPortInfo did not answer, `known` is false and everything that may
// exist is asked for: what the port answers is what is exported.
struct PmaCapabilities {
  bool known = false;
  std::uint16_t mask = 0;
  std::uint32_t mask2 = 0;

  static PmaCapabilities From(const transport::PerfClassPortInfo& cpi) {
    return {true, cpi.capability_mask, cpi.capability_mask2};
  }
  bool Extended() const {
    return !known || (mask & (transport::pma_cap::kExtWidth | transport::pma_cap::kExtWidthNoIetf));
  }
  bool ExtendedUnicastMulticast() const { return !known || (mask & transport::pma_cap::kExtWidth); }
  bool XmitWait() const { return !known || (mask & transport::pma_cap::kXmitWait); }
  bool Qp1Dropped() const { return known && (mask & transport::pma_cap::kQp1Dropped); }
  bool AdditionalExtended() const { return known && (mask2 & transport::pma_cap::kAdditionalExtended); }
};

const std::array<CounterSpec, kCounterCount>& CounterSpecs();
inline std::size_t Index(Counter c) { return static_cast<std::size_t>(c); }

// Groups of per-port series a big site can leave out of the exposition
// (--counters.groups); what is read, and what link health and the alerts
// judge, stays the same.
//   errors      the error counters (symbol errors .. QP1Dropped)
//   congestion  PortXmitWait
//   data        PortXmitData, PortRcvData (bytes)
//   packets     PortXmitPkts, PortRcvPkts and the unicast/multicast ones
//   details     PortRcvErrorDetails' six breakdowns of PortRcvErrors and
//               PortXmitDiscardDetails' four of PortXmitDiscards
//   state       the port's state, physical state and rates (fabric collector)
// kLanes: the physical layer's series per lane (FEC corrected symbols or
// PPCNT raw errors, a lane of the link each; module rx and tx power, a
// lane of the module each: 4 + 16 on a 4x port with an OSFP).
enum class PortGroup : std::uint8_t { kErrors, kCongestion, kData, kPackets, kDetails, kState, kLanes };
inline constexpr std::size_t kPortGroupCount = 7;
using PortGroups = std::bitset<kPortGroupCount>;
const char* ToString(PortGroup g);
PortGroup GroupOf(Counter c);
inline bool Has(const PortGroups& groups, PortGroup g) { return groups.test(static_cast<std::size_t>(g)); }

// What is exported when the groups are left to the exporter ("auto"): every
// group on a fabric of at most kAllGroupsPorts ports; above, errors,
// congestion and data (about half the series; docs/benchmarks.md).
inline constexpr std::size_t kAllGroupsPorts = 20000;
PortGroups AutoPortGroups(std::size_t fabric_ports);

// "auto", "all" or a comma-separated list of group names. False with a
// one-line reason naming the bad entry. `automatic` tells "auto" apart.
bool ParsePortGroups(const std::string& text, PortGroups* groups, bool* automatic, std::string* error);

// The width of the field counter `i` came from: 64 when `wide` (read from
// PortCountersExtended), else its own (CounterSpec::bits).
std::uint8_t FieldBits(std::size_t i, bool wide);

// Raw readings of one port in one sweep. Where a counter came from tells
// its width (a counter read from a 32-bit field in one sweep and a 64-bit
// field in the next is a different series of values).
struct PortSample {
  std::array<std::uint64_t, kCounterCount> value{};
  std::bitset<kCounterCount> present;
  std::bitset<kCounterCount> wide;  // read from a 64-bit field
  std::uint8_t Bits(std::size_t i) const { return FieldBits(i, wide.test(i)); }
  void Set(Counter c, std::uint64_t v, bool from_wide) {
    value[Index(c)] = v;
    present.set(Index(c));
    wide.set(Index(c), from_wide);
  }
};

// Builds a sample from PortCounters and, when the port answered it,
// PortCountersExtended, whose 64-bit counters are preferred. A counter the
// capabilities say is not supported is absent from the sample, but for
// PortXmitWait when it is not 0: mlx5 HCAs fill it without claiming it
// (../shared/real-hardware.md), and a PMA without it reads 0 there.
PortSample SampleFrom(const transport::PortCounters& pc, const transport::PortCountersExtended* ext,
                      const PmaCapabilities& caps);
// Adds PortRcvErrorDetails' six counters (16-bit) to `s`. Without it (not
// asked this sweep, or the port lacks the attribute) they are absent from
// the sample, and a total keeps its last value.
void AddRcvErrorDetails(const transport::PortRcvErrorDetails& d, PortSample* s);
// Adds PortXmitDiscardDetails' four counters (16-bit) to `s`, likewise.
void AddXmitDiscardDetails(const transport::PortXmitDiscardDetails& d, PortSample* s);

// The largest raw value of a field `bits` wide (a sticky counter stops there).
inline std::uint64_t MaxOf(std::uint8_t bits) { return bits >= 64 ? ~0ULL : (1ULL << bits) - 1; }

}  // namespace ibfabric::collectors
