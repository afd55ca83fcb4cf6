// NVIDIA's in-band registers (transport/registers.h) and the vendor class
// MADs that carry them (transport/attributes.h GeneralInfo,
// AccessRegister): each field written here byte by byte where the public
// layouts put it (mstflint's tools_layouts/adb/prm register_access_table.adb
// for the registers; rdma-core's vendstat.c and mstflint's mtcr_ib_ofed.c
// for the MADs), with values from real switches where SckyzO's ibswinfo
// test dumps show them, and read back by the decoders.

#include "transport/registers.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "transport/attributes.h"
#include "transport/codec.h"

namespace ibfabric::transport {
namespace {

// `v` big-endian into `n` bytes at byte `at`.
void Put(std::vector<std::uint8_t>* r, std::size_t at, std::uint64_t v, std::size_t n) {
  if (r->size() < at + n) r->resize(at + n, 0);
  for (std::size_t i = 0; i < n; ++i) (*r)[at + i] = static_cast<std::uint8_t>(v >> (8 * (n - 1 - i)));
}
void PutText(std::vector<std::uint8_t>* r, std::size_t at, const std::string& s, std::size_t n) {
  if (r->size() < at + n) r->resize(at + n, 0);
  for (std::size_t i = 0; i < n; ++i) (*r)[at + i] = i < s.size() ? static_cast<std::uint8_t>(s[i]) : ' ';
}

TEST(VendorMadTest, GeneralInfoSaysWhetherAccessRegisterIsSupported) {
  MadBytes mad{};
  mad[1] = 0x0A;
  mad[32] = 0x00;  // device_hw_revision 0x00a0
  mad[33] = 0xa0;
  mad[34] = 0xd2;  // device_id 0xd2f2 (a Quantum-2 QM9790)
  mad[35] = 0xf2;
  std::vector<std::uint8_t> m(mad.begin(), mad.end());
  Put(&m, 60, 123456, 4);  // uptime, seconds
  Put(&m, 100, 31, 4);     // extended major, minor, sub-minor
  Put(&m, 104, 2010, 4);
  Put(&m, 108, 3118, 4);
  for (std::size_t i = 0; i < 13; ++i) m[80 + i] = static_cast<std::uint8_t>("MT_0000000063"[i]);
  m[161] = 0x10;  // capability mask bit 20 (the dword at byte 160)
  std::copy(m.begin(), m.end(), mad.begin());
  GeneralInfo g = DecodeGeneralInfo(mad);
  EXPECT_TRUE(g.access_register);
  EXPECT_EQ(g.general.device_id, 0xd2f2);
  EXPECT_EQ(g.general.hw_revision, 0x00a0);
  EXPECT_EQ(g.general.uptime_seconds, 123456u);
  EXPECT_EQ(g.general.fw_major, 31u);
  EXPECT_EQ(g.general.fw_minor, 2010u);
  EXPECT_EQ(g.general.fw_sub_minor, 3118u);
  EXPECT_EQ(g.general.psid, "MT_0000000063");
  mad[161] = 0x00;
  mad[160] = 0x02;  // bit 25 (port-0 reset), not AccessRegister
  EXPECT_FALSE(DecodeGeneralInfo(mad).access_register);
  const MadBytes q = EncodeRequest(GeneralInfoQuery(7), 0x1234, 0);
  EXPECT_EQ(q[1], 0x0A);
  EXPECT_EQ(q[2], 1) << "class version 1";
  EXPECT_EQ(q[3], 0x01) << "Get";
  EXPECT_EQ(q[16] << 8 | q[17], 0x0017);
}

TEST(VendorMadTest, AccessRegisterCarriesTheRegisterIdAndItsIndexFields) {
  const MadBytes q =
      EncodeRequest(AccessRegisterQuery(9, reg::kPpcnt, PpcntRequest(5, kPpcntPhysLayerStatistics)), 1, 0);
  EXPECT_EQ(q[1], 0x0A);
  EXPECT_EQ(q[3], 0x01) << "Get";
  EXPECT_EQ(q[16] << 8 | q[17], 0x0051);
  EXPECT_EQ(static_cast<std::uint32_t>(q[20]) << 24 | q[21] << 16 | q[22] << 8 | q[23], 0x5008u)
      << "the register ID in the AttributeModifier";
  for (std::size_t i = 24; i < 36; ++i) EXPECT_EQ(q[i], 0) << "VS_Key and config (block 0) at " << i;
  EXPECT_EQ(q[36], 0x00);         // swid
  EXPECT_EQ(q[37], 5);            // local_port [23:16]
  EXPECT_EQ(q[38], 0x40);         // pnat [15:14] = 1: an IB port number
  EXPECT_EQ(q[39] & 0x3f, 0x16);  // grp [5:0]
  MadBytes answer = q;
  answer[36 + 0x10 + 7] = 42;  // phy_received_bits low byte
  EXPECT_EQ(AccessRegisterData(answer).size(), 220u);
  EXPECT_EQ(DecodePhysLayerStatistics(AccessRegisterData(answer)).received_bits, 42u);
}

TEST(RegistersTest, PhysicalLayerStatisticsEveryFieldFromItsOwnBits) {
  std::vector<std::uint8_t> r(0x100, 0);
  r[1] = 3;                            // local_port
  Put(&r, 0x08, 0x1'0000'0002ULL, 8);  // time_since_last_clear, ms (high dword, low dword)
  Put(&r, 0x10, 0x2'5000'0000ULL, 8);  // phy_received_bits
  Put(&r, 0x18, 4, 8);                 // phy_symbol_errors
  Put(&r, 0x20, 0x3'0000'0007ULL, 8);  // phy_corrected_bits
  for (std::size_t lane = 0; lane < 8; ++lane) Put(&r, 0x28 + 8 * lane, 100 * (lane + 1), 8);
  r[0x68 + 2] = 15;  // raw_ber_magnitude [15:8]
  r[0x68 + 3] = 2;   // raw_ber_coef [3:0]: 2e-15
  r[0x6C + 2] = 12;
  r[0x6C + 3] = 9;  // effective 9e-12
  r[0x70 + 2] = 14;
  r[0x70 + 3] = 1;       // symbol 1e-14
  Put(&r, 0x84, 11, 8);  // phy_effective_errors
  const PhysLayerStatistics p = DecodePhysLayerStatistics(r);
  EXPECT_EQ(p.port, 3);
  EXPECT_EQ(p.time_since_clear_ms, 0x1'0000'0002ULL);
  EXPECT_EQ(p.received_bits, 0x2'5000'0000ULL);
  EXPECT_EQ(p.symbol_errors, 4u);
  EXPECT_EQ(p.corrected_bits, 0x3'0000'0007ULL);
  for (std::size_t lane = 0; lane < 8; ++lane) EXPECT_EQ(p.raw_errors_lane[lane], 100 * (lane + 1)) << lane;
  EXPECT_DOUBLE_EQ(p.raw_ber.value(), 2e-15);
  EXPECT_DOUBLE_EQ(p.effective_ber.value(), 9e-12);
  EXPECT_DOUBLE_EQ(p.symbol_ber.value(), 1e-14);
  EXPECT_EQ(p.effective_errors, 11u);
  EXPECT_EQ(DecodePhysLayerStatistics(std::span<const std::uint8_t>(r).first(0x30)).raw_errors_lane[1], 0u)
      << "nothing read past the buffer";
}

TEST(RegistersTest, ModuleInfoNamesTheCableAndItsReadings) {
  const std::vector<std::uint8_t> req = PddrModuleInfoRequest(7);
  ASSERT_GE(req.size(), 8u);
  EXPECT_EQ(req[1], 7);
  EXPECT_EQ(req[2] & 0xc0, 0x40) << "pnat 1";
  EXPECT_EQ(req[4] & 0x60, 0x20) << "module_info_ext 1: power in uW";
  EXPECT_EQ(req[7], 3) << "page_select 3: module info";
  std::vector<std::uint8_t> r(0x100, 0);
  r[4] = 0x20;  // module_info_ext as answered
  r[7] = 3;
  const std::size_t page = 0x08;
  r[page + 0x00] = 0x00;  // cable_technology: 850 nm VCSEL
  r[page + 0x04] = 0x22;  // cable_type 2 (optical module), cable_vendor 2
  r[page + 0x05] = 30;    // cable_length, m
  r[page + 0x06] = 8;     // cable_identifier: OSFP
  PutText(&r, page + 0x14, "NVIDIA", 16);
  PutText(&r, page + 0x24, "MMA4Z00-NS", 16);
  PutText(&r, page + 0x34, "A5", 4);
  PutText(&r, page + 0x3C, "MT2234FT01234", 16);
  Put(&r, page + 0x4C, static_cast<std::uint16_t>(static_cast<std::int16_t>(48 * 256 + 128)), 2);  // 48.5 C
  Put(&r, page + 0x4E, 33000, 2);                                                                  // 3.3 V, 100 uV
  for (std::size_t lane = 0; lane < 8; ++lane) {
    Put(&r, page + 0x50 + 2 * lane, 500 + lane, 2);  // rx, uW (even lane in the high half)
    Put(&r, page + 0x60 + 2 * lane, 800 + lane, 2);  // tx
  }
  Put(&r, page + 0x80, 75 * 256, 2);  // temperature_high_th (alarm)
  Put(&r, page + 0x82, static_cast<std::uint16_t>(static_cast<std::int16_t>(-5 * 256)), 2);
  r[page + 0x9C + 2] = 0x0f;  // monitor_cap_mask: temperature, voltage, tx, rx power
  const ModuleInfo m = DecodeModuleInfo(r);
  EXPECT_EQ(m.cable_type, 2);
  EXPECT_TRUE(m.plugged());
  EXPECT_EQ(m.cable_length, 30);
  EXPECT_EQ(m.cable_identifier, 8);
  EXPECT_EQ(m.vendor_name, "NVIDIA");
  EXPECT_EQ(m.vendor_pn, "MMA4Z00-NS");
  EXPECT_EQ(m.vendor_rev, "A5");
  EXPECT_EQ(m.vendor_sn, "MT2234FT01234");
  ASSERT_TRUE(m.temperature_celsius);
  EXPECT_DOUBLE_EQ(*m.temperature_celsius, 48.5);
  EXPECT_DOUBLE_EQ(*m.temperature_high_celsius, 75);
  EXPECT_DOUBLE_EQ(*m.temperature_low_celsius, -5);
  EXPECT_NEAR(m.voltage_volts, 3.3, 1e-9);
  EXPECT_TRUE(m.power_in_microwatts);
  for (std::size_t lane = 0; lane < 8; ++lane) {
    EXPECT_NEAR(m.rx_power_watts[lane], (500 + lane) * 1e-6, 1e-12) << lane;
    EXPECT_NEAR(m.tx_power_watts[lane], (800 + lane) * 1e-6, 1e-12) << lane;
  }
  EXPECT_EQ(m.monitors, 0x0f);
  // cable_length of a CMIS module (an OSFP): bits [5:0] times 0.1, 1, 10
  // or 100 m by bits [7:6]; of another, whole metres.
  EXPECT_TRUE(m.cmis());
  EXPECT_DOUBLE_EQ(m.LengthMeters(), 3.0);
  ModuleInfo other = m;
  other.cable_length = 0x40 | 5;
  EXPECT_DOUBLE_EQ(other.LengthMeters(), 5.0);
  other.cable_identifier = 0;  // QSFP28
  EXPECT_FALSE(other.cmis());
  EXPECT_DOUBLE_EQ(other.LengthMeters(), 69.0);
  EXPECT_STREQ(CableTypeName(m.cable_type), "optical_module");
  EXPECT_STREQ(CableTypeName(3), "passive_copper");
  EXPECT_STREQ(CableTypeName(15), "unknown");
  EXPECT_STREQ(CableIdentifierName(m.cable_identifier), "osfp");
  EXPECT_STREQ(CableIdentifierName(6), "qsfp_dd");
  EXPECT_STREQ(CableIdentifierName(200), "unknown");
  EXPECT_EQ(ModuleLanes(8), 8) << "OSFP";
  EXPECT_EQ(ModuleLanes(0), 4) << "QSFP28";
  EXPECT_EQ(ModuleLanes(2), 1) << "SFP";
  EXPECT_EQ(ModuleLanes(5), 2) << "SFP-DD";
  // A firmware that ignores module_info_ext answers whole dBm: -3 dBm is 0.5 mW.
  r[4] = 0;
  Put(&r, page + 0x50, static_cast<std::uint16_t>(static_cast<std::int16_t>(-3)), 2);
  EXPECT_NEAR(DecodeModuleInfo(r).rx_power_watts[0], 0.000501, 0.000001);
  // Unplugged, no temperature.
  r[page + 0x04] = 0x40;
  Put(&r, page + 0x4C, 0, 2);
  EXPECT_FALSE(DecodeModuleInfo(r).plugged());
  EXPECT_FALSE(DecodeModuleInfo(r).temperature_celsius);
}

TEST(RegistersTest, TemperaturesFansGeneralInfoAndPowerSuppliesAsSwitchesAnswer) {
  // MTMP of the ASIC on a QM9790 (ibswinfo's dump): 0x1c8 = 57 C, high
  // threshold 0x348 = 105 C, low 0x2f8 = 95 C, name "asic".
  EXPECT_EQ(MtmpRequest(64 + 3)[2] << 8 | MtmpRequest(64 + 3)[3], 67) << "module 3's sensor";
  std::vector<std::uint8_t> t(0x20, 0);
  Put(&t, 0x04, 0x1c8, 4);
  Put(&t, 0x08, 0x1d0, 4);
  Put(&t, 0x0C, 0x348, 4);
  Put(&t, 0x10, 0x2f8, 4);
  PutText(&t, 0x18, "asic", 8);
  Temperature asic = DecodeTemperature(t);
  EXPECT_TRUE(asic.present);
  EXPECT_DOUBLE_EQ(asic.celsius, 57);
  EXPECT_DOUBLE_EQ(asic.max_celsius, 58);
  EXPECT_DOUBLE_EQ(asic.threshold_high_celsius, 105);
  EXPECT_DOUBLE_EQ(asic.threshold_low_celsius, 95);
  EXPECT_EQ(asic.name, "asic");
  Put(&t, 0x04, 0xffe6, 4);  // -3.25 C, the PRM's example
  EXPECT_DOUBLE_EQ(DecodeTemperature(t).celsius, -3.25);
  Put(&t, 0x04, 0x8001, 4);  // no sensor
  EXPECT_FALSE(DecodeTemperature(t).present);

  // MFCR of a QM9790: tacho_active 0x3fe, msb 0x1f: tachometers 1..14.
  std::vector<std::uint8_t> mfcr(8, 0);
  Put(&mfcr, 0x04, 0x1fu << 26 | 0x3feu << 16, 4);
  std::vector<int> want;
  for (int i = 1; i <= 14; ++i) want.push_back(i);
  EXPECT_EQ(ActiveTachometers(mfcr), want);
  // Bit 0 is tachometer 0 (Linux mlxsw core_hwmon.c reads tacho_active
  // from BIT(0) and asks MFSM for that index): a device that has it.
  Put(&mfcr, 0x04, 0x007u << 16, 4);
  EXPECT_EQ(ActiveTachometers(mfcr), (std::vector<int>{0, 1, 2}));
  const std::vector<std::uint8_t> q = MfsmRequest(12);
  EXPECT_EQ(q[0], 0x0c) << "tacho [27:24] = 12, tacho_hi 0";
  std::vector<std::uint8_t> mfsm(8, 0);
  Put(&mfsm, 0x06, 11234, 2);
  EXPECT_EQ(DecodeFanRpm(mfsm), 11234);
  std::vector<std::uint8_t> fore(0x0c, 0);
  Put(&fore, 0x00, 1u << (16 + 3), 4);  // tacho 3 under its limit
  Put(&fore, 0x04, 1u << 26, 4);        // tacho 10 (msb bit 0) over its limit
  const FanLimits limits = DecodeFanLimits(fore);
  EXPECT_TRUE(limits.failed(3));
  EXPECT_TRUE(limits.failed(10));
  EXPECT_FALSE(limits.failed(4));

  // MGIR: device 0xd2f2, uptime, PSID, firmware 31.2010.3118.
  std::vector<std::uint8_t> g(0xa0, 0);
  Put(&g, 0x00, 0x00a0d2f2, 4);
  Put(&g, 0x1C, 86400 * 3 + 5, 4);
  PutText(&g, 0x30, "MT_0000000063", 16);
  Put(&g, 0x44, 31, 4);
  Put(&g, 0x48, 2010, 4);
  Put(&g, 0x4C, 3118, 4);
  const GeneralRegister mgir = DecodeGeneralRegister(g);
  EXPECT_EQ(mgir.device_id, 0xd2f2);
  EXPECT_EQ(mgir.hw_revision, 0x00a0);
  EXPECT_EQ(mgir.uptime_seconds, 86400u * 3 + 5);
  EXPECT_EQ(mgir.psid, "MT_0000000063");
  EXPECT_EQ(mgir.FirmwareVersion(), "31.2010.3118");
  for (std::size_t at : {0x44, 0x48, 0x4C}) Put(&g, at, 0, 4);
  Put(&g, 0x20, 0x000f0a03, 4);  // no extended version: the 8-bit major 15, minor 10, sub-minor 3
  EXPECT_EQ(DecodeGeneralRegister(g).FirmwareVersion(), "15.0010.0003");

  // MSGI: part and serial numbers.
  std::vector<std::uint8_t> msgi(0x80, 0);
  PutText(&msgi, 0x00, "MT2152T10239", 24);
  PutText(&msgi, 0x20, "MQM8790-HS2F", 20);
  PutText(&msgi, 0x38, "A1", 4);
  PutText(&msgi, 0x40, "Quantum HDR switch", 64);
  const SystemInfo si = DecodeSystemInfo(msgi);
  EXPECT_EQ(si.serial_number, "MT2152T10239");
  EXPECT_EQ(si.part_number, "MQM8790-HS2F");
  EXPECT_EQ(si.revision, "A1");
  EXPECT_EQ(si.product_name, "Quantum HDR switch");

  // MSPS of a QM9790 (ibswinfo's dump): psu0 0x50000010, 0x00000002,
  // 0x80000124: present, DC and fan OK, 292 W; psu1 failed, its fan not
  // reported; a chassis-managed switch (all 0) reports none.
  std::vector<std::uint8_t> m(0xa0, 0);
  Put(&m, 0x00, 0x50000010, 4);
  Put(&m, 0x04, 0x00000002, 4);
  Put(&m, 0x08, 0x80000124, 4);
  Put(&m, 0x50, 0x40000000, 4);
  Put(&m, 0x54, 0x00000003, 4);
  const std::vector<PowerSupply> psus = DecodePowerSupplies(m);
  ASSERT_EQ(psus.size(), 2u);
  EXPECT_TRUE(psus[0].ok);
  EXPECT_TRUE(psus[0].dc_ok);
  EXPECT_EQ(psus[0].fan_ok, true);
  EXPECT_EQ(psus[0].watts, 292);
  EXPECT_EQ(psus[1].index, 1);
  EXPECT_FALSE(psus[1].ok);
  EXPECT_FALSE(psus[1].dc_ok);
  EXPECT_FALSE(psus[1].fan_ok.has_value());
  EXPECT_FALSE(psus[1].watts.has_value());
  EXPECT_TRUE(DecodePowerSupplies(std::vector<std::uint8_t>(0xa0, 0)).empty());
  Put(&m, 0x08, 0x00000124, 4);  // not ibswinfo's shape: no watts, rather than 292 or 4 G
  EXPECT_FALSE(DecodePowerSupplies(m)[0].watts.has_value());
}

}  // namespace
}  // namespace ibfabric::transport
