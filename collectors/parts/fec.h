#pragma once
// What the fec collector publishes, for those that read it (link_health;
// listed in its CollectorInfo::reads) and the API: FecReadings under this
// name in Snapshot::by_collector. The collector is fec_collector.h.

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "topology/fabric.h"
#include "transport/attributes.h"
#include "transport/registers.h"

namespace ibfabric::collectors {

inline constexpr std::string_view kFecCollector = "fec";

// Where a port's FEC counters come from.
enum class FecSource : std::uint8_t {
  kNone,               // not read (yet)
  kPmaExtendedSpeeds,  // PortExtendedSpeedsCounters, RS-FEC layout
  kPpcnt,              // PPCNT Physical Layer Statistical Counters
};
const char* ToString(FecSource s);  // "none", "pma_extended_speeds", "ppcnt"

// One port's FEC as last read.
struct FecPort {
  topology::PortRef port;
  transport::FecMode mode = transport::FecMode::kNone;  // PortInfoExtended.FECModeActive
  bool mode_known = false;                              // it was read
  bool counted = false;  // counters read (from `source`): the totals of that source mean something
  FecSource source = FecSource::kNone;
  // From the PMA (kPmaExtendedSpeeds).
  std::uint64_t corrected_blocks = 0;
  std::uint64_t uncorrectable_blocks = 0;
  std::uint64_t corrected_symbols = 0;
  std::array<std::uint64_t, transport::kFecLanes> lane_symbols{};
  // From PPCNT (kPpcnt): phy_received_bits, phy_corrected_bits,
  // phy_effective_errors, phy_symbol_errors, phy_raw_errors_lane<n>.
  std::uint64_t received_bits = 0;
  std::uint64_t corrected_bits = 0;
  std::uint64_t effective_errors = 0;
  std::uint64_t symbol_errors = 0;
  std::array<std::uint64_t, transport::kPhysLayerLanes> lane_raw_errors{};
  int lanes = 0;        // lanes the link ran on at the last read: the lane series
  bool pinned = false;  // a PMA counter stopped at its maximum (32 bits): it counts no more until cleared
  // Over the window between the last two reads; absent before two.
  std::optional<double> raw_ber;
  std::optional<double> effective_ber;
  std::optional<double> symbol_ber;  // PPCNT only
  double window_seconds = 0;
  int worst_lane = -1;  // the lane that corrected the most symbols in the window (-1: none did)
  // Each lane's raw ratio over the window (its corrected symbols or raw
  // errors over the bits it carried, a lanes-th of the link's), where
  // raw_ber is.
  std::array<float, transport::kFecLanes> lane_raw_ber{};
  // The raw ratio's history, for cable_degrading: the lowest ratio of the
  // complete 24ths of the last AlertConfig::degrading.period in which a
  // window ended (the lowest hour of the day by default), how many of
  // those 24ths there are, and the time they span.
  std::optional<double> raw_ber_baseline;
  int baseline_parts = 0;
  double baseline_seconds = 0;
  std::chrono::steady_clock::time_point read_at{};  // when the last counters came
  bool operator==(const FecPort&) const = default;
};

struct FecReadings {
  std::shared_ptr<const std::vector<FecPort>> ports = std::make_shared<const std::vector<FecPort>>();  // by port
  std::chrono::milliseconds interval{300'000};  // --phy.interval: how old a reading may get before it is stale
  std::uint64_t clears = 0;                     // ports whose FEC counters this exporter cleared
};

}  // namespace ibfabric::collectors
