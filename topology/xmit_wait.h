#pragma once
// How long one PortXmitWait count of a port lasts, by the device that
// counts it. IBTA 16.1.3.5: PortXmitWait counts ticks in which the port
// had data and sent none; a tick is PortSamplesControl.Tick + 1 symbol
// times, a symbol time being one byte on one lane (4 ns at SDR). NVIDIA's
// ibdiagnet manual ("Congestion Assessment on InfiniBand Links") says how
// its switches depart from that:
//   Quantum, Quantum-2, Quantum-3   report Tick 7 and count every 8 bytes
//                                   of the port, whatever its width:
//                                   bytes lost = count x (Tick + 1)
//   Switch-IB 2, Switch-IB, SwitchX report Tick 31 and count every 32
//                                   bytes of a lane: bytes lost =
//                                   count x (Tick + 1) x lanes
// So one count is (Tick + 1) bytes of the port's data rate on the Quantum
// family and (Tick + 1) bytes of one lane's everywhere else (the IBTA
// reading, and the Switch-IB one). Pure functions; no MAD is sent here.

#include <cstdint>
#include <optional>

#include "topology/fabric.h"

namespace ibfabric::topology {

enum class WaitCounting : std::uint8_t {
  kLane,  // (Tick + 1) bytes of one lane a count: IBTA, Switch-IB family, HCAs
  kPort,  // (Tick + 1) bytes of the whole port a count: Quantum family
};

struct XmitWaitUnit {
  const char* family = "ibta";  // "quantum", "switch-ib" or "ibta" (anything else)
  WaitCounting counting = WaitCounting::kLane;
  std::optional<std::uint8_t> documented_tick;  // the Tick NVIDIA documents for the family
};

// The family of a node, from NodeInfo.VendorID and DeviceID:
// - Switch-IB family: Mellanox (0x02c9) switch ASICs 0xc738..0xc73b
//   (SwitchX), 0xcb20 (Switch-IB), 0xcf08 (Switch-IB 2), as
//   infiniband-diags' is_mlnx_ext_port_info_supported lists them;
// - Quantum family: 0xd2f0, 0xd2f2, 0xd2f4 (MT54000/54002/54004: assumed
//   from the ASICs' part numbers), or any Mellanox switch one of whose
//   ports supports HDR or faster (Quantum was the first HDR switch ASIC;
//   Switch-IB 2 stops at EDR);
// - everything else (HCAs, other vendors, unknown IDs): the IBTA reading.
XmitWaitUnit XmitWaitUnitOf(const Node& node);

// Where the Tick + 1 of a conversion came from.
enum class TickSource : std::uint8_t {
  kOverride,    // the operator's multiplier (alerts config)
  kDevice,      // PortSamplesControl.Tick as the device reported it
  kDocumented,  // the family's documented Tick (the device was not read)
  kMinimum,     // none of those: Tick 0, one symbol time (IBTA's finest)
};
const char* ToString(TickSource s);

// Tick + 1 of the node's counts: `multiplier` when given (1..256), else
// the device's `tick` + 1 when read, else its family's documented Tick +
// 1, else 1.
struct TickLength {
  double ticks_plus_one = 1;
  TickSource source = TickSource::kMinimum;
};
TickLength TickOf(const Node& node, std::optional<std::uint8_t> tick, std::optional<double> multiplier);

// Seconds one PortXmitWait count of `port` of `node` stands for, at the
// speed and width the port runs now; 0 when its link is not up or its
// rate unknown.
double XmitWaitCountSeconds(const Node& node, const Port& port, const TickLength& tick);

}  // namespace ibfabric::topology
