#pragma once
// xmit_wait_tick: how long one PortXmitWait tick of each device is, read
// where it matters: PMA PortSamplesControl.Tick (IBTA 16.1.3.2, mandatory
// for every PMA; transport/attributes.h) of a node once one of its ports
// has counted PortXmitWait, in the sweep's one batch. Devices differ
// (Quantum-family switches report 7, Switch-IB 2 and earlier 31, NVIDIA's
// ibdiagnet manual), so one multiplier for the whole fabric (the alerts
// config's override) is no way to turn ticks into time; a quiet node,
// whose ticks need no converting, is never asked.
//
// A node is asked once: its answer holds until it leaves the fabric. An
// answer of "unsupported attribute" (MAD status 0x000C) is kept as such
// and the node is not asked again; no answer, or any other status (Busy
// past its retries, a Redirect), is asked again 1, 2, 4 and 8 sweeps
// later, then left until the node is walked again.
//
// With the Tick and the device's family (topology/xmit_wait.h) it turns
// each port's PortXmitWait into seconds waited since the exporter first
// read the port (counter_store.h PortWait): each sweep's new counts at the
// length one count has at the speed the port runs then (this sweep's
// PortInfo where read, else as discovered), so a link that retrains does
// not rescale its past. New counts are converted once the node's Tick is
// settled (read, unsupported, given up, or the alerts config's
// xmit_wait_tick_multiplier overrides every device's): they wait for it
// rather than be converted at a guess. The seconds survive a re-exec
// (Saved, read back from CollectorOptions::restored).
//
// Part: XmitWaitTicks under "xmit_wait_tick" (Snapshot::by_collector).
// Metrics: infiniband_node_pma_samples_tick{guid}, absent where not read;
// infiniband_{switch,hca}_port_transmit_wait_seconds_total per port that
// reports PortXmitWait (a port whose new counts wait for their Tick keeps
// its last value); and
// infiniband_node_transmit_wait_unit_info{guid,family,counting,tick_source}
// for each node with a port that waited.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "collectors/framework/collector_info.h"
#include "collectors/parts/xmit_wait_tick.h"
#include "topology/xmit_wait.h"

namespace ibfabric::collectors {

// Its declaration (name, help, factory, render, reads, flags): the registry's line.
CollectorInfo XmitWaitTickCollectorInfo();
std::unique_ptr<Collector> MakeXmitWaitTickCollector(const CollectorOptions& options);
void RenderXmitWaitTick(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
