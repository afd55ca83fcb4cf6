// Decoding PortCounters and PortCountersExtended from MAD bytes captured on
// ibsim (tests/tools/capture_mad against a leaf port with planted values),
// delivered through the fake transport and the real engine.

#include "transport/codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "transport/attributes.h"
#include "transport/mad_engine.h"
#include "transport/testing/encoders.h"
#include "transport/testing/fake_mad_port.h"

namespace ibfabric::transport {
namespace {

// GetResponse from LID 2 port 3 after PerformanceSet of SymbolErrorCounter=65535,
// LinkErrorRecoveryCounter=255, LinkDownedCounter=17, PortRcvErrors=4660,
// PortRcvRemotePhysicalErrors=258, PortRcvSwitchRelayErrors=772,
// PortXmitDiscards=1286, PortXmitConstraintErrors=7, PortRcvConstraintErrors=8,
// LocalLinkIntegrityErrors=9, ExcessiveBufferOverrunErrors=10, VL15Dropped=2748,
// PortXmitData=0xffffffff, PortRcvData=0x12345678, PortXmitPkts=0x87654321,
// PortRcvPkts=0x01020304, PortXmitWait=0xdeadbeef. The tail is ibsim's garbage.
constexpr const char* kPortCountersHex =
    "010401810000000000000002212aa43300120000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "00030000ffffff1112340102030405060708009a00000abcffffffff12345678"
    "8765432101020304deadbeef0000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000002500000000000000b0e52eae3a5600009878700464309f08";

// PortCountersExtended from the same port: PortXmitData=0x0123456789abcdef,
// PortRcvData=0x123456789abcdef0, PortXmitPkts=2^32, PortRcvPkts=2^64-1,
// unicast 11/12, multicast xmit 13 (ibsim did not keep multicast rcv).
constexpr const char* kPortCountersExtendedHex =
    "01040181000000000000000240d3ad0a001d0000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "00030000000000000123456789abcdef123456789abcdef00000000100000000"
    "ffffffffffffffff000000000000000b000000000000000c000000000000000d"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000002500000000000000b005e58adf5500005d390cf3671b88cf";

MadBytes FromHex(const std::string& hex) {
  MadBytes b{};
  for (std::size_t i = 0; i < kMadSize; ++i)
    b[i] = static_cast<std::uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return b;
}

// A fake port that answers each request with a captured response whose TID
// is patched to the request's (bytes 8..15, IBTA 13.4.2).
testing::FakeMadPort::Responder Replay(const MadBytes& pc, const MadBytes& pce) {
  return [pc, pce](const MadAddress&, const MadBytes& req) -> std::optional<MadBytes> {
    const MadHeader h = DecodeHeader(req);
    MadBytes out = h.attr_id == pma_attr::kPortCounters ? pc : pce;
    std::memcpy(out.data() + 8, req.data() + 8, 8);
    return out;
  };
}

TEST(CodecTest, DecodesCapturedPortCountersThroughTheEngine) {
  testing::FakeMadPort port(Replay(FromHex(kPortCountersHex), FromHex(kPortCountersExtendedHex)));
  MadEngine engine(port, {});
  const std::vector<MadRequest> reqs{PortCountersQuery(2, 3), PortCountersExtendedQuery(2, 3)};
  const auto results = engine.Run(reqs);
  ASSERT_EQ(results[0].outcome, MadOutcome::kOk);
  ASSERT_EQ(results[1].outcome, MadOutcome::kOk);

  const PortCounters c = DecodePortCounters(results[0].response);
  EXPECT_EQ(c.port_select, 3);
  EXPECT_EQ(c.symbol_error, 65535);
  EXPECT_EQ(c.link_error_recovery, 255);
  EXPECT_EQ(c.link_downed, 17);
  EXPECT_EQ(c.rcv_errors, 4660);
  EXPECT_EQ(c.rcv_remote_physical_errors, 258);
  EXPECT_EQ(c.rcv_switch_relay_errors, 772);
  EXPECT_EQ(c.xmit_discards, 1286);
  EXPECT_EQ(c.xmit_constraint_errors, 7);
  EXPECT_EQ(c.rcv_constraint_errors, 8);
  EXPECT_EQ(c.local_link_integrity_errors, 9);
  EXPECT_EQ(c.excessive_buffer_overrun_errors, 10);
  EXPECT_EQ(c.vl15_dropped, 2748);
  EXPECT_EQ(c.qp1_dropped, 0) << "ibsim keeps no QP1Dropped: data bytes 20-21 of the capture are 0";
  EXPECT_EQ(c.xmit_data, 0xffffffffu);
  EXPECT_EQ(c.rcv_data, 0x12345678u);
  EXPECT_EQ(c.xmit_pkts, 0x87654321u);
  EXPECT_EQ(c.rcv_pkts, 0x01020304u);
  EXPECT_EQ(c.xmit_wait, 0xdeadbeefu);

  const PortCountersExtended x = DecodePortCountersExtended(results[1].response);
  EXPECT_EQ(x.port_select, 3);
  EXPECT_EQ(x.xmit_data, 0x0123456789abcdefULL);
  EXPECT_EQ(x.rcv_data, 0x123456789abcdef0ULL);
  EXPECT_EQ(x.xmit_pkts, 1ULL << 32);
  EXPECT_EQ(x.rcv_pkts, ~0ULL);
  EXPECT_EQ(x.unicast_xmit_pkts, 11u);
  EXPECT_EQ(x.unicast_rcv_pkts, 12u);
  EXPECT_EQ(x.multicast_xmit_pkts, 13u);
  EXPECT_EQ(x.multicast_rcv_pkts, 0u);
}

// QP1Dropped and VL15Dropped are two 16-bit counters side by side: data
// bytes 20-21 and 22-23 (IBTA 16.1.3.5 table 225; opensm ib_types.h
// ib_port_counters_t qp1_dropped, vl15_dropped). libibmad 44's
// IB_PC_QP1_DROP_F names bytes 22-23, so neither the decoder nor the test
// bed's encoder may use it.
TEST(CodecTest, Qp1DroppedAndVl15DroppedAreEachTheirOwnBytes) {
  MadBytes m{};
  m[64 + 19] = 0x9a;  // LocalLinkIntegrityErrors 9, ExcessiveBufferOverrunErrors 10
  m[64 + 20] = 0x01;  // QP1Dropped 0x0102
  m[64 + 21] = 0x02;
  m[64 + 22] = 0x03;  // VL15Dropped 0x0304
  m[64 + 23] = 0x04;
  const PortCounters c = DecodePortCounters(m);
  EXPECT_EQ(c.qp1_dropped, 0x0102);
  EXPECT_EQ(c.vl15_dropped, 0x0304);
  EXPECT_EQ(c.local_link_integrity_errors, 9);
  EXPECT_EQ(c.excessive_buffer_overrun_errors, 10);

  PortCounters planted;
  planted.qp1_dropped = 0x0506;
  planted.vl15_dropped = 0x0708;
  const std::vector<std::uint8_t> data = testing::EncodePortCounters(planted);
  EXPECT_EQ(data[20], 0x05);
  EXPECT_EQ(data[21], 0x06);
  EXPECT_EQ(data[22], 0x07);
  EXPECT_EQ(data[23], 0x08);
}

// PortXmitDiscardDetails (attribute 0x16) from ibsim's leaf LID 1 port 3
// after PerformanceSet of PortInactiveDiscards=1, PortNeighborMTUDiscards=2,
// PortSwLifetimeLimitDiscards=3, PortSwHOQLifetimeLimitDiscards=4660
// (capture_mad xdd 1 3; `perfquery -D 1 3` printed the same).
constexpr const char* kPortXmitDiscardDetailsHex =
    "0104018100000000000000025141768500160000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "0003000000010002000312340000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000025000000000000008051dc295d5500005e6dcd6c82da756e";

// PortVLXmitWaitCounters (attribute 0x1C) from the same port (capture_mad
// vlxw 1 3): ibsim answers it with every VL at 0, so the test writes values
// into the captured reply where IBTA puts them (PortVLXmitWait[n], 16 bits
// big-endian at data byte 4 + 2n; the data section starts at MAD byte 64).
constexpr const char* kPortVlXmitWaitHex =
    "0104018100000000000000022f9c6d50001c0000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "0003000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000002500000000000000803127b98b55000027c5ba6cc4308401";

TEST(CodecTest, DecodesCapturedPortXmitDiscardDetails) {
  const MadBytes m = FromHex(kPortXmitDiscardDetailsHex);
  EXPECT_EQ(DecodeHeader(m).attr_id, pma_attr::kPortXmitDiscardDetails);
  const PortXmitDiscardDetails d = DecodePortXmitDiscardDetails(m);
  EXPECT_EQ(d.port_select, 3);
  EXPECT_EQ(d.inactive_discards, 1);
  EXPECT_EQ(d.neighbor_mtu_discards, 2);
  EXPECT_EQ(d.sw_lifetime_limit_discards, 3);
  EXPECT_EQ(d.sw_hoq_lifetime_limit_discards, 4660);
}

TEST(CodecTest, DecodesPortVlXmitWaitByTheSpecsLayout) {
  MadBytes m = FromHex(kPortVlXmitWaitHex);
  EXPECT_EQ(DecodeHeader(m).attr_id, pma_attr::kPortVlXmitWaitCounters);
  EXPECT_EQ(DecodePortVlXmitWait(m).wait, (std::array<std::uint16_t, kVlCount>{}));  // as ibsim answers
  const auto put = [&m](std::size_t vl, std::uint16_t v) {
    m[64 + 4 + 2 * vl] = static_cast<std::uint8_t>(v >> 8);
    m[64 + 4 + 2 * vl + 1] = static_cast<std::uint8_t>(v & 0xff);
  };
  for (std::size_t vl = 0; vl < kVlCount; ++vl) put(vl, static_cast<std::uint16_t>(0x0100 * vl + vl + 1));
  put(3, 0xffff);  // sticky at its maximum
  const PortVlXmitWait w = DecodePortVlXmitWait(m);
  EXPECT_EQ(w.port_select, 3);
  for (std::size_t vl = 0; vl < kVlCount; ++vl) {
    EXPECT_EQ(w.wait[vl], vl == 3 ? 0xffff : 0x0100 * vl + vl + 1) << "VL " << vl;
  }
  // The request asks the attribute of the port, PortSelect in the data.
  const MadBytes q = EncodeRequest(PortVlXmitWaitQuery(7, 19), 1);
  EXPECT_EQ(DecodeHeader(q).attr_id, pma_attr::kPortVlXmitWaitCounters);
  EXPECT_EQ(MadData(q)[1], 19);  // PortSelect
}

TEST(CodecTest, DecodesPortSamplesControlByTheSpecsLayout) {
  // PortSamplesControl (IBTA 16.1.3.2) laid out by hand from libibmad's
  // fields.c, in the data section at byte 64: OpCode bits 0..7, PortSelect
  // 8..15, Tick 16..23, CounterWidth 29..31, CounterMask0 34..36,
  // SampleMechanisms 80..87, SampleStatus 94..95.
  const MadBytes q = EncodeRequest(PortSamplesControlQuery(7, 19), 1);
  EXPECT_EQ(DecodeHeader(q).attr_id, pma_attr::kPortSamplesControl);
  EXPECT_EQ(DecodeHeader(q).mgmt_class, static_cast<std::uint8_t>(MgmtClass::kPerformance));
  EXPECT_EQ(MadData(q)[1], 19);  // PortSelect
  MadBytes m = q;
  m[64 + 0] = 0xff;          // OpCode
  m[64 + 1] = 5;             // PortSelect
  m[64 + 2] = 0x1f;          // Tick: 32 symbol times (Switch-IB 2)
  m[64 + 3] = 0xe0 | 0x04;   // three bits of CounterMask0 above, CounterWidth 4 (32-bit)
  m[64 + 10] = 0x77;         // SampleMechanisms: not Tick
  m[64 + 11] = 0xfc | 0x02;  // six bits of reserved above, SampleStatus 2 (running)
  const PortSamplesControl c = DecodePortSamplesControl(m);
  EXPECT_EQ(c.port_select, 5);
  EXPECT_EQ(c.tick, 0x1f);
  EXPECT_EQ(c.counter_width, 4);
  EXPECT_EQ(c.sample_status, 2);
  m[64 + 2] = 0x07;  // Quantum-family switches
  EXPECT_EQ(DecodePortSamplesControl(m).tick, 7);
}

TEST(CodecTest, OnlyStatusCodeThreeSaysUnsupported) {
  // IBTA 13.4.7 table 114: bit 0 Busy, bit 1 Redirect, bits 2..4 the
  // invalid-field code, 3 being "unsupported method/attribute combination".
  const auto with = [](MadOutcome o, std::uint16_t status) {
    MadResult r;
    r.outcome = o;
    r.mad_status = status;
    return r;
  };
  EXPECT_TRUE(Unsupported(with(MadOutcome::kRemoteError, 0x000C)));
  EXPECT_TRUE(Unsupported(with(MadOutcome::kRemoteError, 0x010C))) << "class-specific bits aside";
  EXPECT_FALSE(Unsupported(with(MadOutcome::kRemoteError, 0x0001))) << "Busy";
  EXPECT_FALSE(Unsupported(with(MadOutcome::kRemoteError, 0x0002))) << "Redirect";
  EXPECT_FALSE(Unsupported(with(MadOutcome::kRemoteError, 0x0008))) << "unsupported class or version";
  EXPECT_FALSE(Unsupported(with(MadOutcome::kRemoteError, 0x001C))) << "invalid attribute value";
  EXPECT_FALSE(Unsupported(with(MadOutcome::kTimeout, 0)));
}

TEST(CodecTest, RequestsCarryPortSelectAndClass) {
  const MadBytes m = EncodeRequest(PortCountersQuery(7, 19), 0xabcdef);
  const MadHeader h = DecodeHeader(m);
  EXPECT_EQ(h.base_version, 1);
  EXPECT_EQ(h.mgmt_class, 0x04);
  EXPECT_EQ(h.class_version, 1);
  EXPECT_EQ(h.method, 0x01);
  EXPECT_EQ(h.attr_id, pma_attr::kPortCounters);
  EXPECT_EQ(h.tid, 0xabcdefu);
  EXPECT_EQ(MadData(m)[1], 19);  // PortSelect
}

TEST(CodecTest, DirectedRouteCarriesThePath) {
  const MadBytes m = EncodeRequest(NodeInfoQuery(MadAddress::Directed({1, 20, 3})), 5);
  EXPECT_EQ(m[1], 0x81);
  EXPECT_EQ(m[7], 3);        // HopCount (IBTA 14.2.1.2, byte 7)
  EXPECT_EQ(m[128 + 1], 1);  // InitialPath[1..3] at byte 128
  EXPECT_EQ(m[128 + 2], 20);
  EXPECT_EQ(m[128 + 3], 3);
  const MadBytes r = EncodeResponse(m, std::vector<std::uint8_t>(64, 0xee), 0);
  EXPECT_EQ(r[128 + 2], 20) << "a response keeps the route";
  EXPECT_EQ(DecodeHeader(r).method, 0x81);
}

TEST(CodecTest, NodeDescriptionIsTrimmedAndPrintable) {
  MadBytes m{};
  const char text[] = "ib-leaf01 \x01\x7f  ";
  std::memcpy(m.data() + kMadDataOffset, text, sizeof text - 1);
  EXPECT_EQ(DecodeNodeDescription(m), "ib-leaf01 ??");
}

// PortInfo's XDR fields (IBTA 1.7), which libibmad 44 has no ids for: bytes
// laid out by hand from the bit offsets of rdma-core's later fields.c
// (LinkSpeedExtActive2 bits 449-450, Supported2 451-452, Enabled2 453-455;
// CapabilityMask at bits 160-191, CapabilityMask2 at 480-495).
TEST(CodecTest, DecodesPortInfoXdrFields) {
  MadBytes m{};
  std::uint8_t* data = m.data() + kMadDataOffset;
  data[22] = 0xc0;  // CapabilityMask: HasCapabilityMask2 | HasExtendedSpeeds
  data[56] = 0x29;  // 0 01 01 001: active XDR, supported XDR, enabled XDR
  data[60] = 0x08;  // CapabilityMask2: IsExtendedSpeeds2Supported
  data[62] = 0x88;  // LinkSpeedExtActive NDR, LinkSpeedExtSupported NDR
  PortInfo p = DecodePortInfo(m);
  EXPECT_EQ(p.capability_mask, 0xc000u);
  EXPECT_EQ(p.capability_mask2, 0x0800u);
  EXPECT_EQ(p.link_speed_ext2_active, 1);
  EXPECT_EQ(p.link_speed_ext2_supported, 1);
  EXPECT_EQ(p.link_speed_ext2_enabled, 1);
  EXPECT_EQ(p.link_speed_ext_active, 8);
  EXPECT_EQ(p.link_speed_ext_supported, 8);
  EXPECT_TRUE(HasExtendedSpeeds2(p));

  data[56] = 0x5e;  // 0 10 11 110: each field's neighbours set, XDR bit clear
  p = DecodePortInfo(m);
  EXPECT_EQ(p.link_speed_ext2_active, 2);
  EXPECT_EQ(p.link_speed_ext2_supported, 3);
  EXPECT_EQ(p.link_speed_ext2_enabled, 6);

  data[60] = 0;  // without IsExtendedSpeeds2Supported the fields mean nothing
  EXPECT_FALSE(HasExtendedSpeeds2(DecodePortInfo(m)));
  data[60] = 0x08;
  data[22] = 0x40;  // nor without CapabilityMask2
  EXPECT_FALSE(HasExtendedSpeeds2(DecodePortInfo(m)));
}

// Mellanox ExtendedPortInfo (SMP 0xFF90): LinkSpeedSupported, Enabled and
// Active are one byte each at data bytes 7, 11 and 15 (rdma-core
// libibmad/fields.c IB_MLNX_EXT_PORT_LINK_SPEED_*_F), bit 0 FDR10; byte 3
// is StateChangeEnable.
TEST(CodecTest, DecodesMlnxExtendedPortInfoSpeeds) {
  MadBytes m{};
  std::uint8_t* data = m.data() + kMadDataOffset;
  data[3] = 0xff;  // StateChangeEnable, not a speed
  data[7] = 0x01;
  data[11] = 0x03;
  data[15] = 0x01;
  MlnxExtPortInfo e = DecodeMlnxExtPortInfo(m);
  EXPECT_EQ(e.link_speed_supported, kMlnxSpeedFdr10);
  EXPECT_EQ(e.link_speed_enabled, 3);
  EXPECT_EQ(e.link_speed_active, kMlnxSpeedFdr10);
  data[15] = 0;
  data[14] = 0xff;  // a neighbour byte
  data[16] = 0xff;
  EXPECT_EQ(DecodeMlnxExtPortInfo(m).link_speed_active, 0);
  const MadRequest q = MlnxExtPortInfoQuery(MadAddress::Lid(7), 3);
  EXPECT_EQ(q.attr_id, 0xFF90);
  EXPECT_EQ(q.attr_mod, 3u);
  EXPECT_EQ(q.mgmt_class, MgmtClass::kSubnLidRouted);
}

// NVIDIA AdaptiveRoutingInfo (SMP 0xFF20): "e" is bit 0 of data byte 3
// (adb2c 0x0.0 of a big-endian dword; opensm's ib_ar_info_t
// enable_features & 0x01); AdaptiveRoutingGroupCap bits 0..11 of the dword
// at byte 4 (0x4.0-11), the top four bits of that dword other fields.
TEST(CodecTest, DecodesAdaptiveRoutingInfo) {
  MadBytes m{};
  std::uint8_t* data = m.data() + kMadDataOffset;
  data[3] = 0x01;
  data[4] = 0xff;  // group_table_cap, string_width_cap: not GroupCap
  data[5] = 0xf0;
  data[6] = 0x01;
  data[7] = 0x40;
  AdaptiveRoutingInfo a = DecodeAdaptiveRoutingInfo(m);
  EXPECT_TRUE(a.enabled);
  EXPECT_EQ(a.group_cap, 0x140);
  data[3] = 0xfe;  // every other feature bit, "e" clear
  data[6] = 0xf0;  // group_top only
  data[7] = 0;
  a = DecodeAdaptiveRoutingInfo(m);
  EXPECT_FALSE(a.enabled);
  EXPECT_EQ(a.group_cap, 0);
  const MadRequest q = AdaptiveRoutingInfoQuery(MadAddress::Lid(9));
  EXPECT_EQ(q.attr_id, 0xFF20);
  EXPECT_EQ(q.attr_mod, 0u);
}

// A Redirect's ClassPortInfo (IBTA 13.4.8.1, table 126): RedirectTC data
// byte 24, RedirectSL the high 4 bits of 25, RedirectLID 28-29,
// RedirectP_Key 30-31, RedirectQP the low 24 bits of 32-35, RedirectQ_Key
// 36-39; the data starts at byte 64, 56 in an SA MAD (IBTA 15.2.1.1), 24
// in a vendor class of range 1 (IBTA 13.4.5; rdma-core mad.h
// IB_VENDOR_RANGE1_DATA_OFFS).
TEST(CodecTest, DecodesARedirectAtEachClasssDataOffset) {
  for (const auto& [cls, offset] :
       {std::pair{MgmtClass::kPerformance, std::size_t{64}}, std::pair{MgmtClass::kSubnAdm, std::size_t{56}},
        std::pair{MgmtClass::kVendorNvidia, std::size_t{24}}}) {  // vendor range 1: data after the common header
    MadBytes m{};
    m[1] = static_cast<std::uint8_t>(cls);
    std::uint8_t* d = m.data() + offset;
    d[24] = 0x0f;  // RedirectTC: not the SL
    d[25] = 0x7f;  // RedirectSL 7 (bits 7-4), the top of RedirectFL below
    d[28] = 0x01;
    d[29] = 0x2c;  // LID 300
    d[30] = 0xff;  // RedirectP_Key: not the LID's, not the QP's
    d[31] = 0xff;
    d[32] = 0xff;  // the reserved byte above RedirectQP
    d[33] = 0x00;
    d[34] = 0x00;
    d[35] = 0x20;
    d[36] = 0x80;
    d[37] = 0x01;
    d[38] = 0x00;
    d[39] = 0x02;
    const ClassRedirect r = DecodeClassRedirect(m);
    EXPECT_EQ(r.lid, 300) << static_cast<int>(cls);
    EXPECT_EQ(r.qp, 0x20u) << static_cast<int>(cls);
    EXPECT_EQ(r.qkey, 0x80010002u) << static_cast<int>(cls);
    EXPECT_EQ(r.sl, 7) << static_cast<int>(cls);
  }
}

// An SMP carries the M_Key at bytes 24-31 (IBTA 14.2.1.1, table 145;
// libibmad IB_MAD_MKEY_F), LID-routed and directed alike; a GMP has no
// M_Key and those bytes are its own (PMA: reserved, left 0).
TEST(CodecTest, SmpsCarryTheMKeyAndGmpsDoNot) {
  constexpr std::uint64_t kKey = 0x0123456789abcdefULL;
  for (const MadRequest& r : {NodeInfoQuery(MadAddress::Lid(5)), NodeInfoQuery(MadAddress::Directed({1, 2}))}) {
    const MadBytes m = EncodeRequest(r, 7, kKey);
    std::uint64_t key = 0;
    for (int i = 24; i < 32; ++i) key = key << 8 | m[static_cast<std::size_t>(i)];
    EXPECT_EQ(key, kKey) << static_cast<int>(r.mgmt_class);
    EXPECT_EQ(DecodeHeader(m).tid, 7u) << "the TID (bytes 8-15) untouched";
  }
  const MadBytes pma = EncodeRequest(PortCountersQuery(5, 1), 7, kKey);
  for (int i = 24; i < 32; ++i) EXPECT_EQ(pma[static_cast<std::size_t>(i)], 0) << i;
  const MadBytes plain = EncodeRequest(NodeInfoQuery(MadAddress::Lid(5)), 7);
  for (int i = 24; i < 32; ++i) EXPECT_EQ(plain[static_cast<std::size_t>(i)], 0) << "no key: 0";
}

// PortInfo.PartitionEnforcementInbound/Outbound are bits 348 and 349 (byte
// 43, masks 0x08 and 0x04); SwitchInfo.PartitionEnforcementCap is bytes
// 14-15 (IBTA 14.2.5.6 and 14.2.5.4; rdma-core libibmad/fields.c).
TEST(CodecTest, DecodesPartitionEnforcementFields) {
  MadBytes m{};
  std::uint8_t* data = m.data() + kMadDataOffset;
  data[43] = 0x08;
  PortInfo p = DecodePortInfo(m);
  EXPECT_TRUE(p.partition_enforcement_inbound);
  EXPECT_FALSE(p.partition_enforcement_outbound);
  data[43] = 0xf7 & ~0x08;  // every neighbour set, inbound clear
  p = DecodePortInfo(m);
  EXPECT_FALSE(p.partition_enforcement_inbound);
  EXPECT_TRUE(p.partition_enforcement_outbound);

  MadBytes s{};
  s[kMadDataOffset + 14] = 0x01;
  s[kMadDataOffset + 15] = 0x40;
  EXPECT_EQ(DecodeSwitchInfo(s).partition_enforcement_cap, 0x140);
}

// SMInfo (IBTA 14.2.5.13, table 158): GUID bytes 0-7, SM_Key 8-15,
// ActCount 16-19, then Priority (4 bits) and SMState (4 bits) in byte 20.
TEST(CodecTest, DecodesSmInfoByTheSpecsLayout) {
  MadBytes m{};
  std::uint8_t* data = m.data() + kMadDataOffset;
  const std::uint8_t bytes[] = {0x00, 0x02, 0xc9, 0x03, 0x00, 0xa1, 0xb2, 0xc3,  // GUID
                                0,    0,    0,    0,    0,    0,    0,    0,     // SM_Key
                                0x00, 0x01, 0x02, 0x03,                          // ActCount
                                0xa3};                                           // priority 10, master
  std::memcpy(data, bytes, sizeof bytes);
  SmInfo s = DecodeSmInfo(m);
  EXPECT_EQ(s.guid, 0x0002c90300a1b2c3u);
  EXPECT_EQ(s.act_count, 0x00010203u);
  EXPECT_EQ(s.priority, 10);
  EXPECT_EQ(s.state, SmState::kMaster);
  EXPECT_STREQ(ToString(s.state), "master");
  data[20] = 0x12;
  s = DecodeSmInfo(m);
  EXPECT_EQ(s.priority, 1);
  EXPECT_EQ(s.state, SmState::kStandby);
  data[20] = 0x0f;  // a reserved state value reads as not active
  EXPECT_EQ(DecodeSmInfo(m).state, SmState::kNotActive);
  const MadRequest q = SmInfoQuery(7);
  EXPECT_EQ(q.mgmt_class, MgmtClass::kSubnLidRouted);
  EXPECT_EQ(q.attr_id, smp_attr::kSmInfo);
  EXPECT_EQ(q.address.lid, 7);
}

// SubnAdmGetTableResponse(SMInfoRecord) from opensm on ibsim (capture_mad
// smir 1 0): the master (LID 1, GUID 0x100001, priority 10, master) and a
// standby started after it (LID 3, GUID 0x100003, priority 1, standby).
// Without a kernel in between, RMPP says only Active and no PayloadLength.
constexpr const char* kSmInfoRecordsHex =
    "010302920000000000020003da39ce2000180000000000000000010000000000"
    "0000000000000000000000000004000000000000000000000001000000000000"
    "00100001000000000000000000000337a3000000000000000003000000000000"
    "0010000300000000000000000000022912000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000";

TEST(CodecTest, DecodesTheSasSmInfoRecords) {
  const MadBytes m = FromHex(kSmInfoRecordsHex);
  std::vector<SmInfoRecord> r = DecodeSmInfoRecords(m);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].lid, 1);
  EXPECT_EQ(r[0].info.guid, 0x100001u);
  EXPECT_EQ(r[0].info.act_count, 0x337u);
  EXPECT_EQ(r[0].info.priority, 10);
  EXPECT_EQ(r[0].info.state, SmState::kMaster);
  EXPECT_EQ(r[1].lid, 3);
  EXPECT_EQ(r[1].info.guid, 0x100003u);
  EXPECT_EQ(r[1].info.priority, 1);
  EXPECT_EQ(r[1].info.state, SmState::kStandby);

  // As a kernel delivers it (RMPP version 1, Active|First|Last): the
  // PayloadLength (SA header 20 + records) says how many records count,
  // even where a slot beyond them is not zero.
  MadBytes k = m;
  k[24] = 1;     // RMPPVersion
  k[25] = 1;     // RMPPType DATA
  k[26] = 0x07;  // RMPPFlags Active|First|Last
  k[35] = 20 + 32;
  EXPECT_EQ(DecodeSmInfoRecords(k).size(), 1u);
  k[35] = 20 + 2 * 32;
  EXPECT_EQ(DecodeSmInfoRecords(k).size(), 2u);

  // Not records: another attribute, a request, a stride shorter than a record.
  MadBytes other = m;
  other[17] = 0x11;  // NodeRecord
  EXPECT_TRUE(DecodeSmInfoRecords(other).empty());
  MadBytes request = m;
  request[3] = 0x12;
  EXPECT_TRUE(DecodeSmInfoRecords(request).empty());
  MadBytes short_stride = m;
  short_stride[45] = 3;  // AttributeOffset 3 words: 24 bytes < 25
  EXPECT_TRUE(DecodeSmInfoRecords(short_stride).empty());

  const MadRequest q = SmInfoRecordTableQuery(5);
  EXPECT_EQ(q.mgmt_class, MgmtClass::kSubnAdm);
  EXPECT_EQ(q.method, MadMethod::kGetTable);
  EXPECT_EQ(q.attr_id, sa_attr::kSmInfoRecord);
  EXPECT_EQ(q.address.lid, 5);
  const MadBytes wire = EncodeRequest(q, 0x1234);
  EXPECT_EQ(wire[1], 0x03);  // SubnAdm
  EXPECT_EQ(wire[2], 2);     // class version 2
  EXPECT_EQ(wire[3], 0x12);  // GetTable
  EXPECT_EQ(DecodeHeader(wire).attr_id, 0x0018);
}

// LinearForwardingTableRecords of one switch as the kernel hands a long
// RMPP transfer over: the first segment's 200 data bytes, the rest in the
// tail, the length of the whole.
TEST(CodecTest, DecodesAWholeTableOfLftRecords) {
  const MadRequest q = LftRecordTableQuery(1, 0x1234);
  EXPECT_EQ(q.method, MadMethod::kGetTable);
  EXPECT_EQ(q.attr_id, sa_attr::kLftRecord);
  EXPECT_EQ(q.component_mask, 1u);
  ASSERT_GE(q.payload.size(), 2u);
  EXPECT_EQ(q.payload[0], 0x12);
  EXPECT_EQ(q.payload[1], 0x34);
  const MadBytes request = EncodeRequest(q, 42);
  std::vector<std::uint8_t> records;
  for (int b = 0; b < 5; ++b) {  // 5 x 72 = 360 bytes: two segments
    const std::uint8_t head[8] = {0x12, 0x34, 0, static_cast<std::uint8_t>(b), 0, 0, 0, 0};
    records.insert(records.end(), head, head + 8);
    for (int p = 0; p < 64; ++p) records.push_back(static_cast<std::uint8_t>(b * 10 + p % 7));
  }
  MadResult r;
  const InboundMad whole = testing::EncodeSaTableTransfer(request, 72, records);
  r.response = whole.mad;
  r.tail = whole.tail;
  r.length = whole.length;
  EXPECT_EQ(r.tail.size(), 360u - 200u);
  auto got = DecodeLftRecords(r);
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->size(), 5u);
  for (int b = 0; b < 5; ++b) {
    EXPECT_EQ((*got)[b].lid, 0x1234);
    EXPECT_EQ((*got)[b].block, b);
    EXPECT_EQ((*got)[b].ports[0], b * 10);
    EXPECT_EQ((*got)[b].ports[63], b * 10 + 63 % 7);
  }
  // Without its tail (what a MAD holds): the two records whole in it.
  MadResult first;
  first.response = whole.mad;
  EXPECT_EQ(DecodeLftRecords(first)->size(), 2u);
  // One segment, the kernel's length: one record; no records at all.
  const InboundMad one =
      testing::EncodeSaTableTransfer(request, 72, std::vector<std::uint8_t>(records.begin(), records.begin() + 72));
  MadResult single;
  single.response = one.mad;
  single.length = one.length;
  EXPECT_EQ(DecodeLftRecords(single)->size(), 1u);
  single.length = kMadSize;  // no length below: the PayloadLength says it
  EXPECT_EQ(DecodeLftRecords(single)->size(), 1u);
  MadResult empty;
  empty.response = testing::EncodeSaTableTransfer(request, 72, {}).mad;
  empty.length = kSaDataOffset;
  EXPECT_TRUE(DecodeLftRecords(empty)->empty());
  // Not records: an error status, another attribute, a stride too short.
  MadResult error = r;
  error.response = testing::EncodeSaTableTransfer(request, 72, records, 0x0300).mad;
  EXPECT_FALSE(DecodeLftRecords(error).has_value());
  MadResult other = r;
  other.response[17] = 0x20;
  EXPECT_FALSE(DecodeLftRecords(other).has_value());
  MadResult short_stride = r;
  short_stride.response[45] = 8;  // 64 bytes < 72
  EXPECT_FALSE(DecodeLftRecords(short_stride).has_value());
}

// P_KeyTableRecords of a switch's ports (IBTA 15.2.5.11): LID, BlockNum,
// PortNum, then the block's 32 P_Keys; asked with the SA's key as SM_Key
// (bytes 36-43), which makes the request a trusted one.
TEST(CodecTest, DecodesPKeyTableRecordsAndSendsTheSaKey) {
  const MadRequest q = PKeyRecordTableQuery(1, 0x1234);
  EXPECT_EQ(q.method, MadMethod::kGetTable);
  EXPECT_EQ(q.attr_id, sa_attr::kPKeyTableRecord);
  EXPECT_EQ(q.component_mask, 1u);
  const MadBytes request = EncodeRequest(q, 42, 0, 0x0102030405060708ULL);
  EXPECT_EQ(request[56], 0x12);
  EXPECT_EQ(request[57], 0x34);
  for (int b = 0; b < 8; ++b) EXPECT_EQ(request[36 + b], b + 1) << "SM_Key byte " << b;
  EXPECT_EQ(EncodeRequest(q, 43)[43], 0) << "untrusted: SM_Key 0";
  EXPECT_EQ(EncodeRequest(PortCountersQuery(1, 1), 44, 0, 0x0102030405060708ULL)[43], 0) << "an SA query's only";
  EXPECT_EQ(EncodeRequest(LftRecordTableQuery(1, 0x1234), 45, 0, 0x0102030405060708ULL)[43], 0)
      << "and only where the SA trusts no other: a wrong key would cost every SA query";
  std::vector<std::uint8_t> records;
  for (int port = 0; port < 3; ++port) {  // 3 x 72 = 216 bytes: two segments
    const std::uint8_t head[8] = {0x12, 0x34, 0, 0, static_cast<std::uint8_t>(port), 0, 0, 0};
    records.insert(records.end(), head, head + 8);
    for (int k = 0; k < 32; ++k) {
      const std::uint16_t key = k == 0 ? 0xffff : k == 1 ? static_cast<std::uint16_t>(0x8000 | port) : 0;
      records.push_back(static_cast<std::uint8_t>(key >> 8));
      records.push_back(static_cast<std::uint8_t>(key));
    }
  }
  const InboundMad whole = testing::EncodeSaTableTransfer(request, 72, records);
  MadResult r;
  r.response = whole.mad;
  r.tail = whole.tail;
  r.length = whole.length;
  const auto got = DecodePKeyRecords(r);
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->size(), 3u);
  for (int port = 0; port < 3; ++port) {
    EXPECT_EQ((*got)[port].lid, 0x1234);
    EXPECT_EQ((*got)[port].block, 0);
    EXPECT_EQ((*got)[port].port, port);
    EXPECT_EQ((*got)[port].keys[0], 0xffff);
    EXPECT_EQ((*got)[port].keys[1], 0x8000 | port);
    EXPECT_EQ((*got)[port].keys[31], 0);
  }
  // Refused (opensm to an untrusted request: "invalid request", 0x0200).
  MadResult refused = r;
  refused.response = testing::EncodeSaTableTransfer(request, 72, {}, 0x0200).mad;
  EXPECT_FALSE(DecodePKeyRecords(refused).has_value());
  MadResult lft = r;
  lft.response[17] = 0x15;  // LinearForwardingTableRecords are no P_Key records
  EXPECT_FALSE(DecodePKeyRecords(lft).has_value());
}

}  // namespace
}  // namespace ibfabric::transport
