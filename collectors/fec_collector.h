#pragma once
// fec: forward error correction and bit error ratios per port, where the
// device has them, from one of two sources. On HDR and later links FEC
// corrects raw errors, so SymbolErrorCounter moves only for what it could
// not correct: a cable going bad shows first in corrected bits and
// symbols, for days, while symbol errors stay 0.
//
// - PPCNT's Physical Layer Statistical Counters (group 0x16; register
//   0x5008 through AccessRegister, vendor GMP class 0x0A;
//   transport/registers.h PhysLayerStatistics), on a port of an NVIDIA
//   node whose GeneralInfo says AccessRegister (the capabilities part's
//   `vendor`), switch or HCA, whatever its FEC mode: bits received,
//   corrected by FEC, left uncorrected (effective errors) and in error at
//   the link layer (symbol errors), and raw errors per lane, as 64-bit
//   counters (never pinned, never cleared here), as NVIDIA's UFM and
//   ibdiagnet --get_phy_info read them. Preferred where both are there: it
//   counts the bits the port received and its symbol errors.
// - PMA PortExtendedSpeedsCounters (0x1F) in its RS-FEC layout
//   (transport/attributes.h ExtendedSpeedsRsFec), asked as infiniband-diags'
//   perfquery asks it: of a port whose node's PMA ClassPortInfo says
//   IsPMRSFECCountersSupported (the capabilities part, CapabilityMask bit
//   14) and whose PortInfoExtended says RS-FEC is active.
//
// PortInfoExtended (SMP 0x33, asked where PortInfo.CapabilityMask2 says
// the node has it) gives the FEC mode; it is asked once per port (again
// when its link runs at another speed), before the PMA counters (which it
// gates) or beside PPCNT (which it does not). The counters at most once
// per port every `interval`
// (--phy.interval, default 5 minutes, UFM's low-frequency telemetry: a
// slower beat than the sweep's). Both are spread over the interval: each
// sweep asks its share (its time since the last sweep over the interval)
// of the ports, the longest waiting first, and of those never read at
// least 512 (a small fabric is read whole at once). All ride in the
// sweep's one batch. "Unsupported attribute" or an invalid-field status
// (to PPCNT: also "class" or "register not supported") stops asking the
// port that for good (until its node leaves; a port whose PPCNT is not
// supported is read by the PMA where it can be); no answer or any other
// status waits for the next interval. No SMP is sent while the fabric
// drops this exporter's SMPs (M_Key); PPCNT, a GMP, is still read.
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
// counter at its maximum stays pinned there. Bit error ratios are over the
// window between the port's last two reads. From PPCNT, over the bits the
// port received: raw = corrected bits, effective = effective errors,
// symbol = symbol errors, each per bit. From the PMA, against the bits
// its link carried (the signalling rate of its lanes times the seconds;
// idle symbols are bits on the wire too): raw = corrected symbols per
// bit, effective = uncorrectable blocks per bit, both lower bounds (a
// corrected symbol holds at least one bit error, an uncorrectable block
// at least one). None across a link down (the next read starts the
// window), nor from a counter pinned at its 32-bit maximum that did not
// move (it counts no more); a port no longer on RS-FEC keeps its PMA
// totals and loses its ratios.
//
// Part: FecReadings under "fec" (Snapshot::by_collector). Metrics, from
// the PMA: infiniband_{switch,hca}_port_fec_{corrected_blocks,
// uncorrectable_blocks,corrected_symbols}_total,
// infiniband_{switch,hca}_port_lane_fec_corrected_symbols_total{lane}
// (the lanes the link runs on); from PPCNT: infiniband_{switch,hca}_port_
// phy_{received_bits,corrected_bits,effective_errors,symbol_errors}_total,
// infiniband_{switch,hca}_port_lane_raw_errors_total{lane}; from either,
// infiniband_port_{raw,effective}_bit_error_ratio{guid,node,port} (after
// two reads), infiniband_port_symbol_bit_error_ratio (PPCNT),
// infiniband_port_raw_bit_error_ratio_baseline (after a 24th
// of the degrading period), infiniband_port_fec_counter_pinned,
// infiniband_exporter_fec_port_resets_total, and
// infiniband_port_fec_info{guid,node,port,fec_mode,source} for each port
// whose mode or counters were read (fec_mode "unknown" where the node has
// no PortInfoExtended). Absent, not 0, where the device does not have
// them.

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "collectors/framework/collector_info.h"
#include "collectors/parts/fec.h"
#include "transport/registers.h"

namespace ibfabric::collectors {

// Its declaration (name, help, factory, render, reads, flags): the registry's line.
CollectorInfo FecCollectorInfo();
std::unique_ptr<Collector> MakeFecCollector(const CollectorOptions& options);
void RenderFec(const Snapshot& s, const Emit& out);
// One port's FEC as the collector last read it, for /api/v1/port (its
// mode, source, ratios, totals and lanes); null where it has none.
nlohmann::json FecJson(const Snapshot& s, const topology::PortRef& port);

}  // namespace ibfabric::collectors
