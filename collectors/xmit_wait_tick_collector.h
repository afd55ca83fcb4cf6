#pragma once
// xmit_wait_tick: how long one PortXmitWait tick of each device is, read
// where it matters: PMA PortSamplesControl.Tick (IBTA 16.1.3.2, mandatory
// for every PMA; transport/attributes.h) of a node once one of its ports
// has counted PortXmitWait, in the sweep's one batch. Devices differ
// (Quantum-family switches report 7, Switch-IB 2 and earlier 31, NVIDIA's
// ibdiagnet manual), so no multiplier for the whole fabric can turn ticks
// into time; a quiet node, whose ticks need no converting, is never asked.
//
// A node is asked once: its answer holds until it leaves the fabric. An
// answer of "unsupported attribute" (MAD status 0x000C) is kept as such
// and the node is not asked again; no answer, or any other status (Busy
// past its retries, a Redirect), is asked again 1, 2, 4 and 8 sweeps
// later, then left until the node is walked again.
//
// Part: XmitWaitTicks under "xmit_wait_tick" (Snapshot::by_collector).
// Metric: infiniband_node_pma_samples_tick{guid}, absent where not read.

#include <cstdint>
#include <map>
#include <memory>
#include <set>

#include "collectors/collector.h"

namespace ibfabric::collectors {

inline constexpr std::string_view kXmitWaitTickCollector = "xmit_wait_tick";

struct XmitWaitTicks {
  std::map<std::uint64_t, std::uint8_t> tick;  // node GUID -> PortSamplesControl.Tick
  std::set<std::uint64_t> unsupported;         // answered "unsupported attribute"
};

std::unique_ptr<Collector> MakeXmitWaitTickCollector(const CollectorOptions& options);
void RenderXmitWaitTick(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
