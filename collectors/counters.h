#pragma once
// The per-port counters this project exports: where each comes from (IBTA
// attribute and field), its width on the wire, and its Prometheus name. One
// table, so a counter is named and sourced in exactly one place.

#include <array>
#include <bitset>
#include <cstdint>

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
  kXmitWait,
  kXmitData,
  kRcvData,
  kXmitPkts,
  kRcvPkts,
  kUnicastXmitPkts,
  kUnicastRcvPkts,
  kMulticastXmitPkts,
  kMulticastRcvPkts,
};
inline constexpr std::size_t kCounterCount = 21;

struct CounterSpec {
  Counter id;
  const char* metric;     // infiniband_{switch,hca}_port_<metric>_total
  const char* ibta_name;  // field name in IBTA 16.1.3.5 / 16.1.4.11 (and perfquery)
  std::uint64_t scale;    // raw unit to exported base unit (data: 4 octets -> bytes)
};

const std::array<CounterSpec, kCounterCount>& CounterSpecs();
inline std::size_t Index(Counter c) { return static_cast<std::size_t>(c); }

// Raw readings of one port in one sweep. `bits` is the width of the field
// the reading came from (a counter read from a 32-bit field in one sweep and
// a 64-bit field in the next is a different series of values).
struct PortSample {
  std::array<std::uint64_t, kCounterCount> value{};
  std::array<std::uint8_t, kCounterCount> bits{};
  std::bitset<kCounterCount> present;
};

// Builds a sample from PortCounters and, when the port answered it,
// PortCountersExtended, whose 64-bit data and packet counters are preferred.
PortSample SampleFrom(const transport::PortCounters& pc,
                      const transport::PortCountersExtended* ext);

}  // namespace ibfabric::collectors
