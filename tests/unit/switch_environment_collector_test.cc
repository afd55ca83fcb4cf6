// The switch_environment collector on the fake fabric, after the
// capabilities collector's walk: who is asked what (GeneralInfo once, of
// NVIDIA nodes only, by capabilities; registers of the NVIDIA switches
// where it says AccessRegister), how often (--phy.interval), what "unsupported" stops
// (a switch without AccessRegister, a register it lacks) and what no
// answer does not, and the series under SckyzO's names.

#include "collectors/switch_environment_collector.h"

#include <gtest/gtest.h>

#include <chrono>

#include "tests/unit/collector_bed.h"
#include "transport/registers.h"

namespace ibfabric::collectors {
namespace {

std::vector<std::uint8_t> Bytes(std::size_t n, std::initializer_list<std::pair<std::size_t, std::uint32_t>> dwords) {
  std::vector<std::uint8_t> r(n, 0);
  for (const auto& [at, v] : dwords) {
    for (std::size_t i = 0; i < 4; ++i) r[at + i] = static_cast<std::uint8_t>(v >> (24 - 8 * i));
  }
  return r;
}

// leaf0: every register, 3 fans (fan 2 under its limit), two supplies
// (the second failed); leaf1: GeneralInfo without AccessRegister; spine0:
// no MSGI or MSPS ("register not supported": chassis managed); spine1 is
// no NVIDIA switch (VendorID 0).
void Shape(Bed& b) {
  namespace reg = transport::reg;
  std::vector<std::uint8_t> mgir =
      Bytes(0xa0, {{0x00, 0x00a0d2f2}, {0x1C, 7200}, {0x44, 31}, {0x48, 2010}, {0x4C, 3118}});
  for (std::size_t i = 0; i < 13; ++i) mgir[0x30 + i] = static_cast<std::uint8_t>("MT_0000000063"[i]);
  std::vector<std::uint8_t> msgi(0x80, ' ');
  for (std::size_t i = 0; i < 12; ++i) msgi[i] = static_cast<std::uint8_t>("MT2152T10239"[i]);
  for (std::size_t i = 0; i < 12; ++i) msgi[0x20 + i] = static_cast<std::uint8_t>("MQM9790-NS2F"[i]);
  const std::vector<std::uint8_t> mtmp = Bytes(0x20, {{0x04, 61 * 8}, {0x0C, 105 * 8}, {0x10, 95 * 8}});
  const std::vector<std::uint8_t> mfcr = Bytes(8, {{0x04, 0x0eu << 16}});  // tachometers 1, 2, 3
  const std::vector<std::uint8_t> fore = Bytes(0x0c, {{0x00, 1u << (16 + 2)}});
  const std::vector<std::uint8_t> msps =
      Bytes(0xa0, {{0x00, 0x50000010}, {0x04, 2}, {0x08, 0x80000124}, {0x50, 0x40000000}, {0x54, 1}});
  b.f.SetVendorRegisters(b.leaves[0], true,
                         {{reg::kMgir, mgir},
                          {reg::kMsgi, msgi},
                          {reg::kMtmp, mtmp},
                          {reg::kMfcr, mfcr},
                          {reg::kMfsm, {}},
                          {reg::kFore, fore},
                          {reg::kMsps, msps}},
                         {{1, 11000}, {2, 0}, {3, 10500}});
  b.f.SetVendorRegisters(b.leaves[1], false, {});
  b.f.SetVendorRegisters(
      b.spines[0], true,
      {{reg::kMgir, mgir}, {reg::kMtmp, mtmp}, {reg::kMfcr, mfcr}, {reg::kMfsm, {}}, {reg::kFore, Bytes(0x0c, {})}},
      {{1, 9000}, {2, 9100}, {3, 9200}});
}

std::map<std::uint64_t, int> Sent(const Bed& b, std::uint16_t attr, std::size_t from) {
  std::map<std::uint64_t, int> out;
  for (const auto& [node, n] : b.SentTo(attr, from)) out[node] += n;
  return out;
}

TEST(SwitchEnvironmentTest, NvidiaSwitchesWithAccessRegisterAreReadEachIntervalUnderSckyzOsNames) {
  Bed b(Shape);
  CollectorOptions o;
  o.phy_interval = std::chrono::milliseconds(1000);
  auto caps = b.Make("capabilities");
  auto env = b.Make("switch_environment", o);
  const auto t0 = std::chrono::steady_clock::now();
  const auto when = [t0](int ms) { return t0 + std::chrono::milliseconds(ms); };
  using transport::vs_attr::kAccessRegister;
  using transport::vs_attr::kGeneralInfo;
  const std::uint64_t leaf0 = b.f.Guid(b.leaves[0]), leaf1 = b.f.Guid(b.leaves[1]), spine0 = b.f.Guid(b.spines[0]),
                      spine1 = b.f.Guid(b.spines[1]);

  std::size_t mark = b.port.sent_mads().size();
  b.Run(*caps);
  EXPECT_EQ(Sent(b, kGeneralInfo, mark), (std::map<std::uint64_t, int>{{leaf0, 1}, {leaf1, 1}, {spine0, 1}}))
      << "every NVIDIA node once (the fake fabric's hosts are no NVIDIA's); no other switch";
  EXPECT_TRUE(Sent(b, kAccessRegister, mark).empty());
  mark = b.port.sent_mads().size();
  b.SweepWith({env.get()}, when(10));  // registers of those that have them; MFCR names the fans
  auto regs = Sent(b, kAccessRegister, mark);
  EXPECT_EQ(regs.count(leaf1), 0u) << "GeneralInfo says no AccessRegister";
  EXPECT_EQ(regs.count(spine1), 0u);
  EXPECT_EQ(regs[leaf0], 6) << "MGIR, MSGI, MTMP, MFCR, FORE, MSPS";
  EXPECT_EQ(regs[spine0], 6);
  mark = b.port.sent_mads().size();
  b.SweepWith({env.get()}, when(20));
  EXPECT_TRUE(Sent(b, kAccessRegister, mark).empty()) << "not again within the interval";
  EXPECT_TRUE(Sent(b, kGeneralInfo, mark).empty());
  mark = b.port.sent_mads().size();
  b.SweepWith({env.get()}, when(1100));
  regs = Sent(b, kAccessRegister, mark);
  EXPECT_EQ(regs[leaf0], 7) << "MGIR, MTMP, three MFSM, FORE, MSPS (MSGI and MFCR once)";
  EXPECT_EQ(regs[spine0], 6) << "MGIR, MTMP, three MFSM, FORE: not MSGI or MSPS, which it does not have";

  Scrape s = b.Render();
  const testbed::Labels at{{"guid", topology::FormatGuid(leaf0)}};
  EXPECT_EQ(s.Value("infiniband_switch_temperature_celsius", at), 61);
  EXPECT_EQ(s.Value("infiniband_switch_temperature_high_threshold_celsius", at), 105);
  EXPECT_EQ(s.Value("infiniband_switch_uptime_seconds", at), 7200);
  EXPECT_EQ(s.Value("infiniband_switch_fan_rpm", {{"guid", topology::FormatGuid(leaf0)}, {"fan", "3"}}), 10500);
  EXPECT_EQ(s.Find("infiniband_switch_fan_rpm", at).size(), 3u);
  EXPECT_EQ(s.Value("infiniband_switch_fan_status_info", {{"guid", topology::FormatGuid(leaf0)}, {"status", "ERROR"}}),
            1);
  EXPECT_EQ(s.Value("infiniband_switch_fan_status_info", {{"guid", topology::FormatGuid(spine0)}, {"status", "OK"}}),
            1);
  EXPECT_EQ(s.Value("infiniband_switch_power_supply_status_info",
                    {{"guid", topology::FormatGuid(leaf0)}, {"psu", "1"}, {"status", "ERROR"}}),
            1);
  EXPECT_EQ(s.Value("infiniband_switch_power_supply_watts", {{"guid", topology::FormatGuid(leaf0)}, {"psu", "0"}}),
            292);
  EXPECT_TRUE(s.Find("infiniband_switch_power_supply_status_info", {{"guid", topology::FormatGuid(spine0)}}).empty())
      << "no MSPS: no supplies, not failed ones";
  const auto hw = s.Find("infiniband_switch_hardware_info", at);
  ASSERT_EQ(hw.size(), 1u);
  EXPECT_EQ(hw[0].labels.at("firmware_version"), "31.2010.3118");
  EXPECT_EQ(hw[0].labels.at("part_number"), "MQM9790-NS2F");
  EXPECT_EQ(hw[0].labels.at("serial_number"), "MT2152T10239");
  EXPECT_EQ(hw[0].labels.at("switch"), topology::NodeName(b.fabric, leaf0));
  for (std::uint64_t none : {leaf1, spine1}) {
    EXPECT_TRUE(s.Find("infiniband_switch_temperature_celsius", {{"guid", topology::FormatGuid(none)}}).empty());
    EXPECT_TRUE(s.Find("infiniband_switch_hardware_info", {{"guid", topology::FormatGuid(none)}}).empty());
  }

  // spine0 stops answering: asked again the next interval, then after two
  // (the wait doubles), its readings dropped once two intervals and a half
  // minute old; leaf1 (no AccessRegister) and spine1 (no NVIDIA) never.
  b.f.Silence(b.spines[0]);
  const auto asked = [&](int ms) {
    const std::size_t from = b.port.sent_mads().size();
    b.SweepWith({env.get()}, when(ms));
    return Sent(b, kAccessRegister, from).count(spine0) > 0;
  };
  EXPECT_TRUE(asked(2200));
  EXPECT_FALSE(asked(2300)) << "no answer: not before the next interval";
  EXPECT_TRUE(asked(3300));
  EXPECT_FALSE(asked(4400)) << "silent twice: two intervals";
  EXPECT_TRUE(asked(5400));
  EXPECT_FALSE(
      b.Render().Find("infiniband_switch_temperature_celsius", {{"guid", topology::FormatGuid(spine0)}}).empty())
      << "its last readings stand a while";
  mark = b.port.sent_mads().size();
  b.SweepWith({env.get()}, when(40000));
  s = b.Render();
  EXPECT_TRUE(s.Find("infiniband_switch_temperature_celsius", {{"guid", topology::FormatGuid(spine0)}}).empty())
      << "gone stale: absent";
  EXPECT_TRUE(s.Find("infiniband_switch_fan_rpm", {{"guid", topology::FormatGuid(spine0)}}).empty());
  EXPECT_FALSE(s.Find("infiniband_switch_temperature_celsius", at).empty()) << "leaf0 still answers";
  EXPECT_EQ(Sent(b, kGeneralInfo, mark).count(leaf1), 0u);
  EXPECT_EQ(Sent(b, kAccessRegister, mark).count(leaf1), 0u);
  EXPECT_EQ(b.SentTo(kGeneralInfo, 0).count(spine1), 0u) << "no NVIDIA switch: nothing of the class, ever";
}

// Without the vendor MAD agent (it could not register), nothing of the
// class is sent: no send errors on every NVIDIA switch each interval.
TEST(SwitchEnvironmentTest, NoVendorAgentSendsNothing) {
  Bed b(Shape);
  b.parts.local.agents_missing = {"vendor"};
  CollectorOptions o;
  o.phy_interval = std::chrono::milliseconds(1000);
  auto caps = b.Make("capabilities");
  auto env = b.Make("switch_environment", o);
  b.Run(*caps);
  const auto t0 = std::chrono::steady_clock::now();
  b.SweepWith({env.get()}, t0);
  b.SweepWith({env.get()}, t0 + std::chrono::milliseconds(1100));
  EXPECT_TRUE(b.SentTo(transport::vs_attr::kGeneralInfo, 0).empty());
  EXPECT_TRUE(b.SentTo(transport::vs_attr::kAccessRegister, 0).empty());
  EXPECT_TRUE(b.Render().Find("infiniband_switch_hardware_info").empty());
}

}  // namespace
}  // namespace ibfabric::collectors
