#pragma once
// fec: forward error correction per port, from the standard source, where
// the device has it: PMA PortExtendedSpeedsCounters (0x1F) in its RS-FEC
// layout (transport/attributes.h ExtendedSpeedsRsFec). On HDR and later
// links FEC corrects raw errors, so SymbolErrorCounter moves only for what
// it could not correct: a cable going bad shows first in corrected
// symbols, for days, while symbol errors stay 0.
//
// Asked as infiniband-diags' perfquery asks it: of a port whose node's PMA
// ClassPortInfo says IsPMRSFECCountersSupported (the capabilities part,
// CapabilityMask bit 14) and whose PortInfoExtended (SMP 0x33, asked where
// PortInfo.CapabilityMask2 says the node has it) says RS-FEC is active.
// PortInfoExtended is asked once per port (again when its link runs at
// another speed); the counters at most once per port every `interval`
// (--phy.interval, default 5 minutes, UFM's low-frequency telemetry: a
// slower beat than the sweep's). Both are spread over the interval: each
// sweep asks its share (its time since the last sweep over the interval)
// of the ports, the longest waiting first, and of those never read at
// least 512 (a small fabric is read whole at once). Both ride in the
// sweep's one batch. "Unsupported attribute" or an invalid-field status
// stops asking the port for good (until its node leaves); no answer or
// any other status waits for the next interval. No SMP is sent while the
// fabric drops this exporter's SMPs (M_Key).
//
// Totals start at what the device counted when first read (as the port
// counters' do; a counter that went back was cleared: it counts on from
// its new value). With --counters.clear-threshold set, a port one of
// whose 32-bit counters reached that percent of its maximum is cleared
// after the read (PortExtendedSpeedsCounters Set, every counter, as
// perfquery -R -T): its totals go on, each counter counting from its new
// value when it reads lower than before and from its last otherwise (a
// device that acknowledged but did not clear is never counted whole
// again); what it counted between the read and the clear is lost, so
// that window is a lower bound. A Set answered "unsupported" or "method
// not supported" is not sent to the port again. Unset (the default), a
// counter at its maximum stays pinned there. Bit error ratios are over the window between the port's
// last two reads, against the bits its link carried (the signalling rate
// of its lanes times the seconds; idle symbols are bits on the wire too):
// raw = corrected symbols per bit, effective = uncorrectable blocks per
// bit. Both are lower bounds (a corrected symbol holds at least one bit
// error, an uncorrectable block at least one). None across a link down (the
// next read starts the window), nor from a counter pinned at its 32-bit
// maximum that did not move (it counts no more); a port no longer on
// RS-FEC keeps its totals and loses its ratios.
//
// Part: FecReadings under "fec" (Snapshot::by_collector). Metrics:
// infiniband_{switch,hca}_port_fec_{corrected_blocks,uncorrectable_blocks,
// corrected_symbols}_total, infiniband_{switch,hca}_port_lane_fec_
// corrected_symbols_total{lane} (the lanes the link runs on),
// infiniband_port_{raw,effective}_bit_error_ratio{guid,node,port} (after
// two reads), infiniband_port_raw_bit_error_ratio_baseline (after a 24th
// of the degrading period), infiniband_port_fec_counter_pinned,
// infiniband_exporter_fec_port_resets_total, and
// infiniband_port_fec_info{guid,node,port,fec_mode,source} for each port
// whose mode was read. Absent, not 0, where the device does not have them.

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "collectors/collector.h"

namespace ibfabric::collectors {

inline constexpr std::string_view kFecCollector = "fec";

// One port's FEC as last read.
struct FecPort {
  topology::PortRef port;
  transport::FecMode mode = transport::FecMode::kNone;  // PortInfoExtended.FECModeActive
  bool counted = false;  // PortExtendedSpeedsCounters read: the totals below mean something
  std::uint64_t corrected_blocks = 0;
  std::uint64_t uncorrectable_blocks = 0;
  std::uint64_t corrected_symbols = 0;
  std::array<std::uint64_t, transport::kFecLanes> lane_symbols{};
  int lanes = 0;        // lanes the link ran on at the last read: the lane series
  bool pinned = false;  // a counter stopped at its maximum (32 bits): it counts no more until cleared
  // Over the window between the last two reads; absent before two.
  std::optional<double> raw_ber;
  std::optional<double> effective_ber;
  double window_seconds = 0;
  int worst_lane = -1;  // the lane that corrected the most symbols in the window (-1: none did)
  // Each lane's raw ratio over the window (its corrected symbols over the
  // bits it carried, a lanes-th of the link's), where raw_ber is.
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

std::unique_ptr<Collector> MakeFecCollector(const CollectorOptions& options);
void RenderFec(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
