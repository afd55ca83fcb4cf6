// How long a PortXmitWait count lasts, by device family, Tick and the
// port's speed and width (topology/xmit_wait.h; figures from NVIDIA's
// ibdiagnet manual, "Congestion Assessment on InfiniBand Links").

#include "topology/xmit_wait.h"

#include <gtest/gtest.h>

namespace ibfabric::topology {
namespace {

constexpr std::uint32_t kMellanox = 0x02c9;

// A node of one port, up at `width_bit` (PortInfo LinkWidthActive: 1 1x,
// 16 2x, 2 4x) and the speed given (LinkSpeedActive 4 QDR; else
// LinkSpeedExtActive 2 EDR, 8 NDR), supporting `ext_supported`.
Node Device(NodeKind kind, std::uint32_t vendor, std::uint16_t device, std::uint8_t width_bit,
            std::uint8_t speed_ext_active, std::uint8_t ext_supported) {
  Node n;
  n.guid = 1;
  n.kind = kind;
  n.vendor_id = vendor;
  n.device_id = device;
  Port p;
  p.number = 1;
  p.phys_state = 5;
  p.state = 4;
  p.width_active = width_bit;
  p.speed_active = 4;
  p.speed_supported = 7;
  p.speed_ext_active = speed_ext_active;
  p.speed_ext_supported = ext_supported;
  n.ports.push_back(p);
  return n;
}

constexpr std::uint8_t k1x = 1, k2x = 16, k4x = 2;
constexpr std::uint8_t kEdr = 2, kNdr = 8;
constexpr std::uint8_t kUpToEdr = 1 | 2, kUpToNdr = 2 | 4 | 8;

TEST(XmitWaitTest, FamiliesByDeviceIdAndByWhatTheirPortsSupport) {
  // infiniband-diags' Mellanox switch ASICs: SwitchX, Switch-IB, Switch-IB 2.
  for (std::uint16_t id : {0xc738, 0xc73b, 0xcb20, 0xcf08}) {
    const XmitWaitUnit u = XmitWaitUnitOf(Device(NodeKind::kSwitch, kMellanox, id, k4x, kEdr, kUpToEdr));
    EXPECT_STREQ(u.family, "switch-ib") << std::hex << id;
    EXPECT_EQ(u.counting, WaitCounting::kLane);
    EXPECT_EQ(u.documented_tick, 31);
  }
  for (std::uint16_t id : {0xd2f0, 0xd2f2, 0xd2f4}) {
    const XmitWaitUnit u = XmitWaitUnitOf(Device(NodeKind::kSwitch, kMellanox, id, k4x, kEdr, kUpToEdr));
    EXPECT_STREQ(u.family, "quantum") << std::hex << id;
    EXPECT_EQ(u.counting, WaitCounting::kPort);
    EXPECT_EQ(u.documented_tick, 7);
  }
  // An ID not listed: an NVIDIA switch that runs HDR or faster is of the
  // Quantum family; one that stops at EDR is not known.
  EXPECT_STREQ(XmitWaitUnitOf(Device(NodeKind::kSwitch, kMellanox, 0xd2f8, k4x, kNdr, kUpToNdr)).family, "quantum");
  EXPECT_STREQ(XmitWaitUnitOf(Device(NodeKind::kSwitch, kMellanox, 0xb924, k4x, 0, 0)).family, "ibta");
  // HCAs and other vendors' switches: the IBTA reading.
  const XmitWaitUnit hca = XmitWaitUnitOf(Device(NodeKind::kCa, kMellanox, 0x1021, k4x, kNdr, kUpToNdr));
  EXPECT_STREQ(hca.family, "ibta");
  EXPECT_EQ(hca.counting, WaitCounting::kLane);
  EXPECT_FALSE(hca.documented_tick);
  EXPECT_STREQ(XmitWaitUnitOf(Device(NodeKind::kSwitch, 0x119f, 0xcf08, k4x, kNdr, kUpToNdr)).family, "ibta");
}

TEST(XmitWaitTest, TheTickComesFromTheOverrideTheDeviceTheFamilyOrIsTheMinimum) {
  const Node q2 = Device(NodeKind::kSwitch, kMellanox, 0xd2f2, k4x, kNdr, kUpToNdr);
  const Node hca = Device(NodeKind::kCa, kMellanox, 0x1021, k4x, kNdr, kUpToNdr);
  EXPECT_EQ(TickOf(q2, 15, 4.0).ticks_plus_one, 4);
  EXPECT_EQ(TickOf(q2, 15, 4.0).source, TickSource::kOverride);
  EXPECT_EQ(TickOf(q2, 15, std::nullopt).ticks_plus_one, 16);
  EXPECT_EQ(TickOf(q2, 15, std::nullopt).source, TickSource::kDevice);
  EXPECT_EQ(TickOf(q2, std::nullopt, std::nullopt).ticks_plus_one, 8);
  EXPECT_EQ(TickOf(q2, std::nullopt, std::nullopt).source, TickSource::kDocumented);
  EXPECT_EQ(TickOf(hca, std::nullopt, std::nullopt).ticks_plus_one, 1);
  EXPECT_EQ(TickOf(hca, std::nullopt, std::nullopt).source, TickSource::kMinimum);
  EXPECT_STREQ(ToString(TickSource::kDocumented), "documented");
}

// Seconds of one count: (Tick + 1) bytes at the rate of the whole port
// (Quantum) or of one lane (IBTA, Switch-IB).
TEST(XmitWaitTest, OneCountLastsTickPlusOneBytesOfThePortOrOfALane) {
  auto seconds = [](const Node& n, std::optional<std::uint8_t> tick) {
    return XmitWaitCountSeconds(n, n.ports[0], TickOf(n, tick, std::nullopt));
  };
  // Quantum-2 at 4xNDR (400 Gb/s): 8 bytes = 64 bits / 400e9 b/s = 0.16 ns.
  EXPECT_DOUBLE_EQ(seconds(Device(NodeKind::kSwitch, kMellanox, 0xd2f2, k4x, kNdr, kUpToNdr), 7), 0.16e-9);
  // The same counts on a port running 2x and 1x last two and four times as long.
  EXPECT_DOUBLE_EQ(seconds(Device(NodeKind::kSwitch, kMellanox, 0xd2f2, k2x, kNdr, kUpToNdr), 7), 0.32e-9);
  EXPECT_DOUBLE_EQ(seconds(Device(NodeKind::kSwitch, kMellanox, 0xd2f2, k1x, kNdr, kUpToNdr), 7), 0.64e-9);
  // Switch-IB 2 at 4xEDR: 32 bytes of a 25 Gb/s lane = 256 / 25e9 = 10.24 ns,
  // whatever the width.
  EXPECT_DOUBLE_EQ(seconds(Device(NodeKind::kSwitch, kMellanox, 0xcf08, k4x, kEdr, kUpToEdr), 31), 10.24e-9);
  EXPECT_DOUBLE_EQ(seconds(Device(NodeKind::kSwitch, kMellanox, 0xcf08, k1x, kEdr, kUpToEdr), 31), 10.24e-9);
  // A tick the device reports other than its family's is what counts.
  EXPECT_DOUBLE_EQ(seconds(Device(NodeKind::kSwitch, kMellanox, 0xd2f2, k4x, kNdr, kUpToNdr), 15), 0.32e-9);
  // An HCA at 4xNDR with no Tick: one symbol time, a byte of a 100 Gb/s lane.
  EXPECT_DOUBLE_EQ(seconds(Device(NodeKind::kCa, kMellanox, 0x1021, k4x, kNdr, kUpToNdr), std::nullopt), 0.08e-9);
  // QDR (the simulator's): 1 ns a symbol time, as IBTA's example has it (4 ns at SDR).
  EXPECT_DOUBLE_EQ(seconds(Device(NodeKind::kSwitch, kMellanox, 0xb924, k4x, 0, 0), std::nullopt), 1e-9);
  // The operator's multiplier replaces Tick + 1, not the family's counting.
  const Node q2 = Device(NodeKind::kSwitch, kMellanox, 0xd2f2, k4x, kNdr, kUpToNdr);
  EXPECT_DOUBLE_EQ(XmitWaitCountSeconds(q2, q2.ports[0], TickOf(q2, 7, 16.0)), 0.32e-9);
  // A link not up has no length.
  Node down = q2;
  down.ports[0].phys_state = 3;
  EXPECT_EQ(XmitWaitCountSeconds(down, down.ports[0], TickOf(down, 7, std::nullopt)), 0);
}

}  // namespace
}  // namespace ibfabric::topology
