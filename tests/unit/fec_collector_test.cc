// Forward error correction: the PortInfoExtended and PortExtendedSpeedsCounters
// (RS-FEC layout) decoders against layouts written byte by byte from
// rdma-core's libibmad/fields.c (transport/testing/encoders.h), and the fec
// collector on the fake fabric: who is asked what (the capability bit, the
// FEC mode), how often (--phy.interval), what "unsupported" stops, and the
// totals, lanes and bit error rates it exports.

#include "collectors/fec_collector.h"

#include <gtest/gtest.h>

#include <chrono>

#include "tests/model/personalities.h"
#include "tests/unit/collector_bed.h"
#include "transport/attributes.h"
#include "transport/codec.h"
#include "transport/testing/encoders.h"

namespace ibfabric::collectors {
namespace {

using transport::ExtendedSpeedsRsFec;
using transport::FecMode;
using transport::MadBytes;

MadBytes WithData(const std::vector<std::uint8_t>& data) {
  MadBytes m{};
  std::copy(data.begin(), data.end(), m.begin() + transport::kMadDataOffset);
  return m;
}

// PortInfoExtended: CapabilityMask data bytes 0-3 (bit 0
// IsFECModeSupported), FECModeActive bytes 4-5 (libibmad fields.c
// BITSOFFS(32, 16)). Each mode against ibutils2's ibdm Fabric.h (enum
// IBFECMode, isRSFEC(), IBPort::IsPLR()), not against the decoder's table.
TEST(FecDecodeTest, PortInfoExtendedSaysWhenTheCountersComeInTheRsFecLayout) {
  const auto mode = [](std::uint8_t cap, std::uint16_t m) {
    MadBytes b{};
    b[transport::kMadDataOffset + 3] = cap;
    b[transport::kMadDataOffset + 4] = static_cast<std::uint8_t>(m >> 8);
    b[transport::kMadDataOffset + 5] = static_cast<std::uint8_t>(m);
    return transport::DecodePortInfoExtended(b);
  };
  struct Row {
    std::uint16_t value;
    const char* name;
    bool rs;   // ibdm isRSFEC
    bool plr;  // ibdm IsPLR
  };
  const Row rows[] = {{0, "none", false, false},
                      {1, "fire_code", false, false},
                      {2, "rs_fec", true, false},                   // STD-RS
                      {3, "low_latency_rs_fec", true, false},       // STD-LL-RS
                      {4, "rs_fec2", true, false},                  // RS_FEC_544_514
                      {8, "mlnx_strong_rs_fec", true, false},       // MLNX-STRONG-RS
                      {9, "mlnx_low_latency_rs_fec", true, false},  // MLNX-LL-RS
                      {10, "mlnx_adaptive_rs_fec", true, false},    // MLNX-ADAPT-RS
                      {11, "mlnx_cod_fec", true, false},            // MLNX-COD-FEC
                      {12, "mlnx_zero_latency_fec", false, false},  // MLNX-ZL-FEC
                      {13, "mlnx_rs_fec_544_514_plr", true, true},  // MLNX_RS_544_514_PLR
                      {14, "mlnx_rs_fec_271_257_plr", true, true},  // MLNX_RS_271_257_PLR
                      {5, "unknown", false, false},                 // reserved
                      {15, "unknown", false, false}};
  for (const Row& r : rows) {
    const transport::PortInfoExtended p = mode(1, r.value);
    EXPECT_EQ(p.fec_mode_active, r.value);
    EXPECT_EQ(p.RsFecActive(), r.rs) << r.value;
    EXPECT_EQ(transport::Plr(p.Mode()), r.plr) << r.value;
    EXPECT_STREQ(transport::ToString(p.Mode()), r.name) << r.value;
  }
  EXPECT_FALSE(mode(0, 2).RsFecActive()) << "IsFECModeSupported clear: FECModeActive means nothing";
  const transport::PortInfoExtended enc =
      transport::DecodePortInfoExtended(WithData(transport::testing::EncodePortInfoExtended({1, 14})));
  EXPECT_EQ(enc.fec_mode_active, 14) << "the test bed's encoder writes bytes 4-5 too";
}

TEST(FecDecodeTest, EveryRsFecFieldFromItsOwnBits) {
  ExtendedSpeedsRsFec e;
  e.port_select = 17;
  e.sync_header_errors = 0x1234;
  e.unknown_blocks = 0x5678;
  for (std::size_t lane = 0; lane < transport::kFecLanes; ++lane) {
    e.corrected_symbols_lane[lane] = 0x01000000u * static_cast<std::uint32_t>(lane + 1) + 7;
  }
  e.corrected_blocks = 0xdeadbeef;
  e.uncorrectable_blocks = 0x0badf00d;
  e.corrected_symbols = 0xfeedface;
  const ExtendedSpeedsRsFec d =
      transport::DecodeExtendedSpeedsRsFec(WithData(transport::testing::EncodeExtendedSpeedsRsFec(e)));
  EXPECT_EQ(d.port_select, 17);
  EXPECT_EQ(d.sync_header_errors, 0x1234);
  EXPECT_EQ(d.unknown_blocks, 0x5678);
  EXPECT_EQ(d.corrected_symbols_lane, e.corrected_symbols_lane);
  EXPECT_EQ(d.corrected_blocks, 0xdeadbeefu);
  EXPECT_EQ(d.uncorrectable_blocks, 0x0badf00du);
  EXPECT_EQ(d.corrected_symbols, 0xfeedfaceu);
}

// The small tree: leaf0 and spine0 run RS-FEC and their PMAs have the
// counters; spine1 runs RS-FEC but its PMA does not say it has them;
// leaf1's PMA has them but it runs no FEC.
void FecShape(Bed& x) {
  using transport::pma_cap::kRsFecCounters;
  const std::uint16_t base = transport::pma_cap::kAllPortSelect | transport::pma_cap::kExtWidth;
  for (int node : {x.leaves[0], x.spines[0]}) {
    x.f.SetFec(node, 2);
    x.f.SetCapabilities(node, base | kRsFecCounters);
  }
  x.f.SetFec(x.spines[1], 2);
  x.f.SetCapabilities(x.spines[1], base);
  x.f.SetFec(x.leaves[1], 0);
  x.f.SetCapabilities(x.leaves[1], base | kRsFecCounters);
}

// The fec collector after the capabilities were read, with `interval`.
std::unique_ptr<Collector> MakeFec(Bed& b, std::chrono::milliseconds interval, int clear_threshold = 0,
                                   std::chrono::milliseconds trend_period = std::chrono::hours(24)) {
  auto caps = b.Make("capabilities");
  b.Run(*caps);
  CollectorOptions o;
  o.phy_interval = interval;
  o.clear_threshold_percent = clear_threshold;
  o.alerts.degrading.period = trend_period;
  return b.Make("fec", o);
}

TEST(FecCollectorTest, AsksTheModeOnceAndTheCountersOfRsFecPortsEachInterval) {
  Bed b(FecShape);
  auto fec = MakeFec(b, std::chrono::milliseconds(200));
  std::size_t mark = 0;
  // The scheduler's clock is the test's; the answers' times (the windows)
  // are the fake port's, which the test moves on.
  const auto t0 = std::chrono::steady_clock::now();
  const auto when = [t0](int ms) { return t0 + std::chrono::milliseconds(ms); };
  constexpr auto kPie = transport::smp_attr::kPortInfoExtended;
  constexpr auto kPesc = transport::pma_attr::kPortExtendedSpeedsCounters;
  const std::uint64_t leaf0 = b.f.Guid(b.leaves[0]), spine0 = b.f.Guid(b.spines[0]), leaf1 = b.f.Guid(b.leaves[1]);

  mark = b.port.sent_mads().size();
  b.SweepWith({fec.get()}, when(0));  // the modes, of the nodes whose PMA has the counters
  EXPECT_EQ(b.SentTo(kPie, mark),
            (std::map<std::uint64_t, int>{
                {leaf0, b.UpPorts(b.leaves[0])}, {spine0, b.UpPorts(b.spines[0])}, {leaf1, b.UpPorts(b.leaves[1])}}));
  EXPECT_TRUE(b.SentTo(kPesc, mark).empty());
  mark = b.port.sent_mads().size();
  b.SweepWith({fec.get()}, when(10));  // the counters of the RS-FEC ports, first time
  EXPECT_TRUE(b.SentTo(kPie, mark).empty()) << "the mode is asked once";
  EXPECT_EQ(b.SentTo(kPesc, mark),
            (std::map<std::uint64_t, int>{{leaf0, b.UpPorts(b.leaves[0])}, {spine0, b.UpPorts(b.spines[0])}}));
  mark = b.port.sent_mads().size();
  b.SweepWith({fec.get()}, when(20));
  EXPECT_TRUE(b.SentTo(kPesc, mark).empty()) << "not again within the interval";

  // Counts planted on leaf0 port 1 (a host port): the first read gives them.
  ExtendedSpeedsRsFec c;
  c.corrected_symbols_lane = {100, 200, 300, 400};
  c.corrected_symbols = 1000;
  c.corrected_blocks = 40;
  c.uncorrectable_blocks = 2;
  b.f.SetFecCounters(b.leaves[0], 1, c);
  b.port.Advance(std::chrono::milliseconds(250));
  mark = b.port.sent_mads().size();
  b.SweepWith({fec.get()}, when(300));
  EXPECT_EQ(b.SentTo(kPesc, mark)[leaf0], b.UpPorts(b.leaves[0])) << "every port once the interval passed";
  Scrape s = b.Render();
  const testbed::Labels at{{"guid", topology::FormatGuid(leaf0)}, {"port", "1"}};
  EXPECT_EQ(s.Value("infiniband_switch_port_fec_corrected_symbols_total", at), 1000);
  EXPECT_EQ(s.Value("infiniband_switch_port_fec_corrected_blocks_total", at), 40);
  EXPECT_EQ(s.Value("infiniband_switch_port_fec_uncorrectable_blocks_total", at), 2);
  for (int lane = 0; lane < 4; ++lane) {
    auto l = at;
    l["lane"] = std::to_string(lane);
    EXPECT_EQ(s.Value("infiniband_switch_port_lane_fec_corrected_symbols_total", l), 100 * (lane + 1)) << lane;
  }
  EXPECT_EQ(s.Find("infiniband_switch_port_lane_fec_corrected_symbols_total", at).size(), 4u) << "a 4x link";
  // Since the read before (all 0): the window's rates are what its seconds
  // and the 4x QDR link's 40 Gb/s make them.
  const auto window = [&] {
    for (const FecPort& p : *b.parts.by_collector.Get<FecReadings>("fec")->ports) {
      if (p.port == topology::PortRef{leaf0, 1}) return p.window_seconds;
    }
    return 0.0;
  };
  EXPECT_GE(window(), 0.25);
  EXPECT_DOUBLE_EQ(*s.Value("infiniband_port_raw_bit_error_ratio", at), 1000 / (40e9 * window()));
  EXPECT_DOUBLE_EQ(*s.Value("infiniband_port_effective_bit_error_ratio", at), 2 / (40e9 * window()));
  EXPECT_EQ(s.Value("infiniband_port_fec_info", {{"guid", topology::FormatGuid(leaf0)},
                                                 {"port", "1"},
                                                 {"fec_mode", "rs_fec"},
                                                 {"source", "pma_extended_speeds"}}),
            1);
  EXPECT_EQ(s.Value("infiniband_port_fec_info",
                    {{"guid", topology::FormatGuid(leaf1)}, {"port", "1"}, {"fec_mode", "none"}, {"source", "none"}}),
            1);
  EXPECT_TRUE(
      s.Find("infiniband_switch_port_fec_corrected_symbols_total", {{"guid", topology::FormatGuid(leaf1)}}).empty())
      << "no FEC: no counters, absent rather than 0";

  // 4000 more symbols corrected, one more block uncorrectable, the counter
  // of corrected blocks cleared by someone and at 5 since.
  c.corrected_symbols_lane = {1100, 1200, 1300, 1400};
  c.corrected_symbols = 5000;
  c.corrected_blocks = 5;
  c.uncorrectable_blocks = 3;
  b.f.SetFecCounters(b.leaves[0], 1, c);
  b.port.Advance(std::chrono::milliseconds(250));
  b.SweepWith({fec.get()}, when(600));
  s = b.Render();
  EXPECT_EQ(s.Value("infiniband_switch_port_fec_corrected_symbols_total", at), 5000);
  EXPECT_EQ(s.Value("infiniband_switch_port_fec_corrected_blocks_total", at), 45);
  EXPECT_EQ(s.Value("infiniband_switch_port_fec_uncorrectable_blocks_total", at), 3);
  auto lane3 = at;
  lane3["lane"] = "3";
  EXPECT_EQ(s.Value("infiniband_switch_port_lane_fec_corrected_symbols_total", lane3), 1400);
  EXPECT_GE(window(), 0.25);
  EXPECT_LT(window(), 5);
  const double bits = 40e9 * window();
  EXPECT_DOUBLE_EQ(*s.Value("infiniband_port_raw_bit_error_ratio", at), 4000 / bits);
  EXPECT_DOUBLE_EQ(*s.Value("infiniband_port_effective_bit_error_ratio", at), 1 / bits);
  // spine1's PMA lacks the bit: never asked anything.
  EXPECT_EQ(b.SentTo(kPie, 0).count(b.f.Guid(b.spines[1])), 0u);
}

// PPCNT (group 0x16) where GeneralInfo says AccessRegister: leaf0, whose
// PMA has the RS-FEC counters too, is read by PPCNT alone, its totals
// exact per lane and its ratios over the bits it received; spine0 answers
// AccessRegister but has no PPCNT ("register not supported"): read by its
// PMA from then on. Without the vendor MAD agent, the PMA everywhere.
TEST(FecCollectorTest, PpcntWhereTheRegistersAnswerThePmaWhereTheyDoNot) {
  Bed b([](Bed& x) {
    FecShape(x);
    x.f.SetVendorRegisters(x.leaves[0], true, {});
    x.f.SetVendorRegisters(x.spines[0], true, {});
  });
  const std::uint64_t leaf0 = b.f.Guid(b.leaves[0]), spine0 = b.f.Guid(b.spines[0]);
  for (const auto& p : b.fabric.FindNode(leaf0)->ports) {
    if (p.number != 0 && p.link_up()) b.f.SetPhysCounters(b.leaves[0], p.number, {});
  }
  transport::PhysLayerStatistics c;
  c.received_bits = 1'000'000'000;
  c.corrected_bits = 1000;
  c.raw_errors_lane = {100, 200, 300, 400};
  c.effective_errors = 2;
  c.symbol_errors = 1;
  b.f.SetPhysCounters(b.leaves[0], 1, c);
  auto fec = MakeFec(b, std::chrono::milliseconds(200));
  const auto t0 = std::chrono::steady_clock::now();
  const auto when = [t0](int ms) { return t0 + std::chrono::milliseconds(ms); };
  constexpr auto kReg = transport::vs_attr::kAccessRegister;
  constexpr auto kPesc = transport::pma_attr::kPortExtendedSpeedsCounters;

  std::size_t mark = b.port.sent_mads().size();
  b.SweepWith({fec.get()}, when(0));  // PPCNT beside the modes: it does not wait for them
  EXPECT_EQ(b.SentTo(kReg, mark),
            (std::map<std::uint64_t, int>{{leaf0, b.UpPorts(b.leaves[0])}, {spine0, b.UpPorts(b.spines[0])}}));
  EXPECT_TRUE(b.SentTo(kPesc, mark).empty());
  mark = b.port.sent_mads().size();
  b.SweepWith({fec.get()}, when(10));
  EXPECT_TRUE(b.SentTo(kReg, mark).empty()) << "leaf0 not again within the interval, spine0 never again";
  EXPECT_EQ(b.SentTo(kPesc, mark), (std::map<std::uint64_t, int>{{spine0, b.UpPorts(b.spines[0])}}))
      << "spine0 by its PMA once PPCNT was not supported; never leaf0";
  Scrape s = b.Render();
  const testbed::Labels at{{"guid", topology::FormatGuid(leaf0)}, {"port", "1"}};
  EXPECT_EQ(s.Value("infiniband_switch_port_phy_received_bits_total", at), 1e9);
  EXPECT_EQ(s.Value("infiniband_switch_port_phy_corrected_bits_total", at), 1000);
  EXPECT_EQ(s.Value("infiniband_switch_port_phy_effective_errors_total", at), 2);
  EXPECT_EQ(s.Value("infiniband_switch_port_phy_symbol_errors_total", at), 1);
  for (int lane = 0; lane < 4; ++lane) {
    auto l = at;
    l["lane"] = std::to_string(lane);
    EXPECT_EQ(s.Value("infiniband_switch_port_lane_raw_errors_total", l), 100 * (lane + 1)) << lane;
  }
  EXPECT_EQ(s.Find("infiniband_switch_port_lane_raw_errors_total", at).size(), 4u) << "a 4x link";
  EXPECT_TRUE(
      s.Find("infiniband_switch_port_fec_corrected_symbols_total", {{"guid", topology::FormatGuid(leaf0)}}).empty());
  EXPECT_EQ(
      s.Value("infiniband_port_fec_info",
              {{"guid", topology::FormatGuid(leaf0)}, {"port", "1"}, {"fec_mode", "rs_fec"}, {"source", "ppcnt"}}),
      1);
  EXPECT_EQ(s.Value("infiniband_port_fec_info", {{"guid", topology::FormatGuid(spine0)},
                                                 {"port", "1"},
                                                 {"fec_mode", "rs_fec"},
                                                 {"source", "pma_extended_speeds"}}),
            1);
  EXPECT_FALSE(s.Value("infiniband_port_raw_bit_error_ratio", at).has_value()) << "one read: no window yet";

  // 4 Gb more, 4000 corrected on lane 3, one more left and one more symbol
  // error: the window's ratios over those 4 Gb exactly.
  c.received_bits += 4'000'000'000ULL;
  c.corrected_bits += 4000;
  c.raw_errors_lane[3] += 4000;
  c.effective_errors += 1;
  c.symbol_errors += 1;
  b.f.SetPhysCounters(b.leaves[0], 1, c);
  b.SweepWith({fec.get()}, when(300));
  s = b.Render();
  EXPECT_EQ(s.Value("infiniband_switch_port_phy_corrected_bits_total", at), 5000);
  EXPECT_DOUBLE_EQ(*s.Value("infiniband_port_raw_bit_error_ratio", at), 4000 / 4e9);
  EXPECT_DOUBLE_EQ(*s.Value("infiniband_port_effective_bit_error_ratio", at), 1 / 4e9);
  EXPECT_DOUBLE_EQ(*s.Value("infiniband_port_symbol_bit_error_ratio", at), 1 / 4e9);
  for (const FecPort& p : *b.parts.by_collector.Get<FecReadings>("fec")->ports) {
    if (!(p.port == topology::PortRef{leaf0, 1})) continue;
    EXPECT_EQ(p.worst_lane, 3);
    EXPECT_FLOAT_EQ(p.lane_raw_ber[3], static_cast<float>(4000 / 1e9)) << "a lane carries a quarter of the bits";
    EXPECT_EQ(p.lane_raw_ber[0], 0);
  }
  EXPECT_TRUE(s.Find("infiniband_port_symbol_bit_error_ratio", {{"guid", topology::FormatGuid(spine0)}}).empty())
      << "the PMA has no symbol ratio";

  // No vendor agent: nothing of the class, the PMA's counters.
  Bed quiet([](Bed& x) {
    FecShape(x);
    x.f.SetVendorRegisters(x.leaves[0], true, {});
  });
  quiet.parts.local.agents_missing = {"vendor"};
  auto pma = MakeFec(quiet, std::chrono::milliseconds(200));
  quiet.SweepWith({pma.get()}, when(0));
  quiet.SweepWith({pma.get()}, when(10));
  EXPECT_TRUE(quiet.SentTo(kReg, 0).empty());
  EXPECT_TRUE(quiet.SentTo(transport::vs_attr::kGeneralInfo, 0).empty());
  EXPECT_EQ(quiet.SentTo(kPesc, 0)[quiet.f.Guid(quiet.leaves[0])], quiet.UpPorts(quiet.leaves[0]));
}

TEST(FecCollectorTest, UnsupportedStopsAskingATimeoutDoesNot) {
  // leaf0's PMA answers the counters "unsupported attribute" after all;
  // spine0 stops answering anything after its mode was read.
  Bed b([](Bed& x) {
    FecShape(x);
    x.f.SetAttributeStatus(x.leaves[0], transport::pma_attr::kPortExtendedSpeedsCounters, 0x000c);
  });
  auto fec = MakeFec(b, std::chrono::milliseconds(1000));
  std::size_t mark = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const auto when = [t0](int ms) { return t0 + std::chrono::milliseconds(ms); };
  constexpr auto kPesc = transport::pma_attr::kPortExtendedSpeedsCounters;
  const std::uint64_t leaf0 = b.f.Guid(b.leaves[0]), spine0 = b.f.Guid(b.spines[0]);
  b.SweepWith({fec.get()}, when(0));
  b.f.Silence(b.spines[0]);
  mark = b.port.sent_mads().size();
  b.SweepWith({fec.get()}, when(10));
  EXPECT_EQ(b.SentTo(kPesc, mark)[leaf0], b.UpPorts(b.leaves[0]));
  EXPECT_EQ(b.SentTo(kPesc, mark).count(spine0), 1u);
  mark = b.port.sent_mads().size();
  b.SweepWith({fec.get()}, when(20));
  EXPECT_TRUE(b.SentTo(kPesc, mark).empty()) << "unsupported: never again; no answer: not before the interval";
  mark = b.port.sent_mads().size();
  b.SweepWith({fec.get()}, when(1100));
  const auto again = b.SentTo(kPesc, mark);
  EXPECT_EQ(again.count(leaf0), 0u) << "unsupported: never again";
  ASSERT_EQ(again.count(spine0), 1u) << "no answer: asked again the next interval";
  EXPECT_GE(again.at(spine0), b.UpPorts(b.spines[0])) << "each port (and the engine's retries)";
  const Scrape s = b.Render();
  EXPECT_TRUE(s.Find("infiniband_switch_port_fec_corrected_symbols_total").empty());
  EXPECT_EQ(s.Find("infiniband_port_fec_info", {{"source", "none"}, {"fec_mode", "rs_fec"}}).size(),
            static_cast<std::size_t>(b.UpPorts(b.leaves[0]) + b.UpPorts(b.spines[0])));
}

// A due port is read once an interval, the reads spread: each sweep asks
// its share of the ports (its time since the last over the interval).
TEST(FecCollectorTest, ReadsAreSpreadOverTheInterval) {
  Bed b(FecShape);
  auto fec = MakeFec(b, std::chrono::milliseconds(1000));
  constexpr auto kPesc = transport::pma_attr::kPortExtendedSpeedsCounters;
  const auto t0 = std::chrono::steady_clock::now();
  const auto when = [t0](int ms) { return t0 + std::chrono::milliseconds(ms); };
  b.SweepWith({fec.get()}, when(0));    // modes
  b.SweepWith({fec.get()}, when(100));  // every counter, first time
  const int ports = b.UpPorts(b.leaves[0]) + b.UpPorts(b.spines[0]);
  ASSERT_GE(ports, 4);
  std::map<std::uint64_t, int> total;
  std::vector<int> per_sweep;
  for (int ms = 200; ms < 2100; ms += 100) {
    const std::size_t mark = b.port.sent_mads().size();
    b.SweepWith({fec.get()}, when(ms));
    if (ms < 1100) {
      EXPECT_TRUE(b.SentTo(kPesc, mark).empty()) << "within the interval, at " << ms << " ms";
      continue;
    }
    int n = 0;
    for (const auto& [node, k] : b.SentTo(kPesc, mark)) {
      total[node] += k;
      n += k;
    }
    per_sweep.push_back(n);
  }
  const int share = (ports + 9) / 10;  // a tenth of the interval between sweeps
  for (std::size_t i = 0; i < per_sweep.size(); ++i) EXPECT_LE(per_sweep[i], share) << "sweep " << i;
  EXPECT_EQ(total[b.f.Guid(b.leaves[0])] + total[b.f.Guid(b.spines[0])], ports) << "each once in the interval";
}

// --counters.clear-threshold: a port whose 32-bit FEC counter reached the
// percent is cleared after the read (a Set of every counter) and its
// totals count on from the clear; unset, a counter at its maximum stays
// pinned and has no ratio; a Set answered "unsupported" is not sent again.
TEST(FecCollectorTest, ACounterNearItsMaximumIsClearedAndTheTotalsCountOn) {
  constexpr auto kMs = [](int ms) { return std::chrono::milliseconds(ms); };
  const auto plant = [](Bed& b, std::uint32_t lane2) {
    ExtendedSpeedsRsFec c;
    c.corrected_symbols_lane = {0, 0, lane2, 0};
    c.corrected_symbols = lane2;
    b.f.SetFecCounters(b.leaves[0], 1, c);
  };
  {
    Bed b(FecShape);
    auto fec = MakeFec(b, kMs(200), 75);
    const std::uint64_t leaf0 = b.f.Guid(b.leaves[0]);
    testbed::Labels port{{"guid", topology::FormatGuid(leaf0)}, {"port", "1"}};
    plant(b, 3'300'000'000u);  // 76.8% of 2^32-1
    const auto t0 = std::chrono::steady_clock::now();
    b.SweepWith({fec.get()}, t0);            // modes
    b.SweepWith({fec.get()}, t0 + kMs(10));  // counters, and the clear
    EXPECT_EQ(b.f.sets(), 1) << "one port near its maximum, one Set";
    EXPECT_EQ(b.f.FecCounters(b.leaves[0], 1).corrected_symbols, 0u) << "cleared on the fabric";
    Scrape s = b.Render();
    EXPECT_EQ(s.Value("infiniband_switch_port_fec_corrected_symbols_total", port), 3'300'000'000.0);
    EXPECT_EQ(s.Value("infiniband_exporter_fec_port_resets_total"), 1);
    plant(b, 500);  // counted since the clear
    b.port.Advance(kMs(250));
    b.SweepWith({fec.get()}, t0 + kMs(300));
    s = b.Render();
    EXPECT_EQ(s.Value("infiniband_switch_port_fec_corrected_symbols_total", port), 3'300'000'500.0);
    auto lane2 = port;
    lane2["lane"] = "2";
    EXPECT_EQ(s.Value("infiniband_switch_port_lane_fec_corrected_symbols_total", lane2), 3'300'000'500.0);
    const double raw = s.Value("infiniband_port_raw_bit_error_ratio", port).value_or(0);
    EXPECT_GT(raw, 0);
    EXPECT_LE(raw, 500 / (40e9 * 0.25)) << "500 symbols since the clear, not the 3.3 G before it";
    EXPECT_EQ(b.f.sets(), 1) << "not near its maximum now: no Set";
    EXPECT_EQ(s.Value("infiniband_exporter_fec_port_resets_total"), 1);
  }
  {
    // Unset: pinned, no Set, no ratio.
    Bed b(FecShape);
    auto fec = MakeFec(b, kMs(200));
    testbed::Labels port{{"guid", topology::FormatGuid(b.f.Guid(b.leaves[0]))}, {"port", "1"}};
    plant(b, 4'000'000'000u);
    const auto t0 = std::chrono::steady_clock::now();
    b.SweepWith({fec.get()}, t0);
    b.SweepWith({fec.get()}, t0 + kMs(10));
    plant(b, 0xffffffffu);
    b.port.Advance(kMs(250));
    b.SweepWith({fec.get()}, t0 + kMs(300));
    plant(b, 0xffffffffu);
    b.port.Advance(kMs(250));
    b.SweepWith({fec.get()}, t0 + kMs(600));
    const Scrape s = b.Render();
    EXPECT_EQ(b.f.sets(), 0);
    EXPECT_EQ(s.Value("infiniband_port_fec_counter_pinned", port), 1);
    EXPECT_FALSE(s.Value("infiniband_port_raw_bit_error_ratio", port).has_value()) << "it counts no more";
    EXPECT_EQ(s.Value("infiniband_exporter_fec_port_resets_total"), 0);
  }
  {
    // The Set answered "unsupported": sent once, never again.
    Bed b([](Bed& x) {
      FecShape(x);
      x.f.SetFecClearStatus(x.leaves[0], 0x000c);
    });
    auto fec = MakeFec(b, kMs(200), 75);
    plant(b, 4'000'000'000u);
    const auto t0 = std::chrono::steady_clock::now();
    b.SweepWith({fec.get()}, t0);
    std::size_t mark = b.port.sent_mads().size();
    b.SweepWith({fec.get()}, t0 + kMs(10));
    const auto sets = [&](std::size_t from) {
      int n = 0;
      for (std::size_t i = from; i < b.port.sent_mads().size(); ++i) {
        const auto h = transport::DecodeHeader(b.port.sent_mads()[i]);
        n += h.attr_id == transport::pma_attr::kPortExtendedSpeedsCounters &&
             h.method == static_cast<std::uint8_t>(transport::MadMethod::kSet);
      }
      return n;
    };
    EXPECT_EQ(sets(mark), 1);
    mark = b.port.sent_mads().size();
    b.SweepWith({fec.get()}, t0 + kMs(300));
    EXPECT_EQ(sets(mark), 0) << "unsupported: not again";
    EXPECT_EQ(b.Render().Value("infiniband_exporter_fec_port_resets_total"), 0);
  }
}

// The raw ratio's baseline for cable_degrading: the lowest ratio of the
// 24ths of the period behind the port, kept while the ratio rises, with
// how much history it has.
TEST(FecCollectorTest, TheBaselineIsTheLowestPartOfThePeriod) {
  Bed b(FecShape);
  // 20 ms parts; read every sweep.
  auto fec = MakeFec(b, std::chrono::milliseconds(1), 0, std::chrono::milliseconds(480));
  const std::uint64_t leaf0 = b.f.Guid(b.leaves[0]);
  const testbed::Labels at{{"guid", topology::FormatGuid(leaf0)}, {"port", "1"}};
  const auto port = [&]() -> FecPort {
    for (const FecPort& p : *b.parts.by_collector.Get<FecReadings>("fec")->ports) {
      if (p.port == topology::PortRef{leaf0, 1}) return p;
    }
    return {};
  };
  ExtendedSpeedsRsFec c;
  const auto t0 = std::chrono::steady_clock::now();
  int ms = 0;
  const auto sweep = [&](std::uint32_t more) {
    c.corrected_symbols_lane[0] += more;
    c.corrected_symbols += more;
    b.f.SetFecCounters(b.leaves[0], 1, c);
    b.port.Advance(std::chrono::milliseconds(30));
    ms += 30;
    b.SweepWith({fec.get()}, t0 + std::chrono::milliseconds(ms));
  };
  b.SweepWith({fec.get()}, t0);  // the modes
  sweep(0);                      // the first counters
  sweep(1000);
  EXPECT_TRUE(port().raw_ber.has_value());
  EXPECT_FALSE(port().raw_ber_baseline.has_value()) << "no part complete yet";
  for (int i = 0; i < 10; ++i) sweep(1000);
  ASSERT_TRUE(port().raw_ber_baseline.has_value());
  const double lowest = *port().raw_ber_baseline;
  EXPECT_GT(lowest, 0);
  EXPECT_LE(lowest, 1000 / (40e9 * 0.03) * 1.001) << "no part higher than a 30 ms window of 1000 symbols";
  EXPECT_GE(port().baseline_seconds, 0.02 * 8) << "a part per 20 ms, 300 ms of reads";
  EXPECT_LE(port().baseline_seconds, 0.48) << "at most the period";
  // A thousand times as many: the baseline stays the lowest part.
  for (int i = 0; i < 6; ++i) sweep(1'000'000);
  ASSERT_TRUE(port().raw_ber.has_value());
  EXPECT_LT(*port().raw_ber_baseline, *port().raw_ber / 10);
  const Scrape s = b.Render();
  EXPECT_EQ(s.Value("infiniband_port_raw_bit_error_ratio_baseline", at), *port().raw_ber_baseline);
  // Past the period, only the high parts are left.
  for (int i = 0; i < 24; ++i) sweep(1'000'000);
  EXPECT_GT(*port().raw_ber_baseline, lowest * 10) << "the low parts left the period";
}

// The personalities' planted FEC rates (what the integration tests and
// the demo count on): steady, or rising step by step, then steady.
TEST(FecPlantTest, ARateCountsOnSteadyOrStepByStep) {
  using model::CountedSince;
  EXPECT_DOUBLE_EQ(CountedSince(100, 10, 0), 100);
  EXPECT_DOUBLE_EQ(CountedSince(100, 10, 5), 150);
  EXPECT_DOUBLE_EQ(CountedSince(100, 10, -1), 100) << "before the planting";
  // x2 every 10 s, twice: 10/s for 10 s, 20/s for 10 s, then 40/s.
  EXPECT_DOUBLE_EQ(CountedSince(0, 10, 5, 2, 10, 2), 50);
  EXPECT_DOUBLE_EQ(CountedSince(0, 10, 15, 2, 10, 2), 100 + 100);
  EXPECT_DOUBLE_EQ(CountedSince(0, 10, 25, 2, 10, 2), 100 + 200 + 200);
  EXPECT_DOUBLE_EQ(CountedSince(0, 10, 40, 2, 10, 2), 100 + 200 + 800) << "steady after the last step";
  // The first step later: 10/s for 30 s, x8 for 5 s, x64 after.
  EXPECT_DOUBLE_EQ(CountedSince(0, 10, 29, 8, 5, 2, 30), 290);
  EXPECT_DOUBLE_EQ(CountedSince(0, 10, 35, 8, 5, 2, 30), 300 + 400);
  EXPECT_DOUBLE_EQ(CountedSince(0, 10, 40, 8, 5, 2, 30), 300 + 400 + 3200);
}

}  // namespace
}  // namespace ibfabric::collectors
