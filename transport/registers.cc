#include "transport/registers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

namespace ibfabric::transport {
namespace {

// The big-endian dword at byte `at` (zeros past the end).
std::uint32_t Dword(std::span<const std::uint8_t> r, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = v << 8 | (at + i < r.size() ? r[at + i] : 0u);
  return v;
}
std::uint32_t Bits(std::uint32_t dword, int hi, int lo) {
  const int width = hi - lo + 1;
  return (dword >> lo) & (width >= 32 ? 0xffffffffu : (1u << width) - 1);
}
std::uint64_t Counter64(std::span<const std::uint8_t> r, std::size_t at) {
  return static_cast<std::uint64_t>(Dword(r, at)) << 32 | Dword(r, at + 4);
}
// ASCII of `n` bytes at `at`, trailing spaces and NULs dropped.
std::string Text(std::span<const std::uint8_t> r, std::size_t at, std::size_t n) {
  std::string s;
  for (std::size_t i = at; i < at + n && i < r.size(); ++i) {
    const char c = static_cast<char>(r[i]);
    s += c >= 0x20 && c < 0x7f ? c : ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  const auto first = s.find_first_not_of(' ');
  return first == std::string::npos ? "" : s.substr(first);
}
void PutDword(std::vector<std::uint8_t>* r, std::size_t at, std::uint32_t v) {
  if (r->size() < at + 4) r->resize(at + 4, 0);
  for (std::size_t i = 0; i < 4; ++i) (*r)[at + i] = static_cast<std::uint8_t>(v >> (24 - 8 * i));
}
ReportedBer Ber(std::uint32_t dword) {
  return {static_cast<std::uint8_t>(Bits(dword, 3, 0)), static_cast<std::uint8_t>(Bits(dword, 15, 8))};
}
std::int16_t Signed16(std::uint32_t v) { return static_cast<std::int16_t>(static_cast<std::uint16_t>(v)); }

}  // namespace

double ReportedBer::value() const { return coef == 0 ? 0 : coef * std::pow(10.0, -static_cast<double>(magnitude)); }

std::vector<std::uint8_t> PpcntRequest(std::uint8_t ib_port, std::uint8_t group) {
  std::vector<std::uint8_t> r;
  // local_port [23:16], pnat [15:14] 1 (an IB port number), grp [5:0].
  PutDword(&r, 0x00, static_cast<std::uint32_t>(ib_port) << 16 | 1u << 14 | (group & 0x3fu));
  PutDword(&r, 0x04, 0);
  return r;
}

PhysLayerStatistics DecodePhysLayerStatistics(std::span<const std::uint8_t> reg) {
  PhysLayerStatistics p;
  p.port = static_cast<std::uint8_t>(Bits(Dword(reg, 0x00), 23, 16));
  p.time_since_clear_ms = Counter64(reg, 0x08);
  p.received_bits = Counter64(reg, 0x10);
  p.symbol_errors = Counter64(reg, 0x18);
  p.corrected_bits = Counter64(reg, 0x20);
  for (std::size_t lane = 0; lane < kPhysLayerLanes; ++lane) p.raw_errors_lane[lane] = Counter64(reg, 0x28 + 8 * lane);
  p.raw_ber = Ber(Dword(reg, 0x68));
  p.effective_ber = Ber(Dword(reg, 0x6C));
  p.symbol_ber = Ber(Dword(reg, 0x70));
  p.effective_errors = Counter64(reg, 0x84);
  return p;
}

std::vector<std::uint8_t> PddrModuleInfoRequest(std::uint8_t ib_port) {
  std::vector<std::uint8_t> r;
  PutDword(&r, 0x00, static_cast<std::uint32_t>(ib_port) << 16 | 1u << 14);
  // module_info_ext [30:29] 1: rx/tx power in uW; page_select [7:0].
  PutDword(&r, 0x04, 1u << 29 | kPddrModuleInfoPage);
  return r;
}

ModuleInfo DecodeModuleInfo(std::span<const std::uint8_t> reg) {
  constexpr std::size_t kPage = 0x08;
  const auto at = [&](std::size_t off) { return Dword(reg, kPage + off); };
  ModuleInfo m;
  m.cable_technology = static_cast<std::uint8_t>(Bits(at(0x00), 31, 24));
  m.cable_type = static_cast<std::uint8_t>(Bits(at(0x04), 31, 28));
  m.cable_length = static_cast<std::uint8_t>(Bits(at(0x04), 23, 16));
  m.cable_identifier = static_cast<std::uint8_t>(Bits(at(0x04), 15, 8));
  m.vendor_name = Text(reg, kPage + 0x14, 16);
  m.vendor_pn = Text(reg, kPage + 0x24, 16);
  m.vendor_rev = Text(reg, kPage + 0x34, 4);
  m.vendor_sn = Text(reg, kPage + 0x3C, 16);
  const std::int16_t t = Signed16(Bits(at(0x4C), 31, 16));
  if (t != 0) m.temperature_celsius = t / 256.0;
  const std::uint32_t th = at(0x80);
  if (th != 0) {
    m.temperature_high_celsius = Signed16(Bits(th, 31, 16)) / 256.0;
    m.temperature_low_celsius = Signed16(Bits(th, 15, 0)) / 256.0;
  }
  m.voltage_volts = Bits(at(0x4C), 15, 0) * 100e-6;
  m.power_in_microwatts = Bits(Dword(reg, 0x04), 30, 29) == 1;
  const auto power = [&](std::uint32_t raw) {
    if (m.power_in_microwatts) return raw * 1e-6;
    return std::pow(10.0, Signed16(raw) / 10.0) * 1e-3;  // dBm
  };
  for (std::size_t lane = 0; lane < kModuleLanes; ++lane) {
    const int hi = lane % 2 == 0 ? 31 : 15;
    m.rx_power_watts[lane] = power(Bits(at(0x50 + 4 * (lane / 2)), hi, hi - 15));
    m.tx_power_watts[lane] = power(Bits(at(0x60 + 4 * (lane / 2)), hi, hi - 15));
  }
  m.monitors = static_cast<std::uint8_t>(Bits(at(0x9C), 15, 8));
  return m;
}

bool ModuleInfo::cmis() const {
  return cable_identifier == 5 || cable_identifier == 6 || cable_identifier == 7 || cable_identifier == 8 ||
         cable_identifier == 10;
}

double ModuleInfo::LengthMeters() const {
  if (!cmis()) return cable_length;
  static constexpr double kMultiplier[] = {0.1, 1, 10, 100};
  return (cable_length & 0x3f) * kMultiplier[cable_length >> 6];
}

const char* CableTypeName(std::uint8_t cable_type) {
  static constexpr const char* kNames[] = {
      "unidentified", "active_cable", "optical_module", "passive_copper", "unplugged", "twisted_pair", "cpo",
      "oe",           "els"};
  return cable_type < std::size(kNames) ? kNames[cable_type] : "unknown";
}

int ModuleLanes(std::uint8_t cable_identifier) {
  switch (cable_identifier) {
    case 2: return 1;  // SFP28 or SFP+
    case 5:            // SFP-DD
    case 10:           // DSFP
      return 2;
    case 6:  // QSFP-DD
    case 8:  // OSFP
      return 8;
    default: return 4;
  }
}

const char* CableIdentifierName(std::uint8_t cable_identifier) {
  static constexpr const char* kNames[] = {
      "qsfp28", "qsfp_plus", "sfp28_or_sfp_plus", "qsa", "backplane", "sfp_dd", "qsfp_dd", "qsfp_cmis", "osfp",
      "c2c",    "dsfp",      "qsfp_split_cable",  "cpo", "oe",        "els"};
  return cable_identifier < std::size(kNames) ? kNames[cable_identifier] : "unknown";
}

std::vector<std::uint8_t> MtmpRequest(std::uint16_t sensor) {
  std::vector<std::uint8_t> r;
  PutDword(&r, 0x00, sensor & 0xfffu);
  return r;
}

Temperature DecodeTemperature(std::span<const std::uint8_t> reg) {
  Temperature t;
  t.sensor = static_cast<std::uint16_t>(Bits(Dword(reg, 0x00), 11, 0));
  const std::uint32_t raw = Bits(Dword(reg, 0x04), 15, 0);
  t.present = raw < 0x8000 || raw > 0x8003;
  t.celsius = Signed16(raw) * 0.125;
  t.max_celsius = Signed16(Bits(Dword(reg, 0x08), 15, 0)) * 0.125;
  t.threshold_high_celsius = Signed16(Bits(Dword(reg, 0x0C), 15, 0)) * 0.125;
  t.threshold_low_celsius = Signed16(Bits(Dword(reg, 0x10), 15, 0)) * 0.125;
  t.name = Text(reg, 0x18, 8);
  return t;
}

std::vector<int> ActiveTachometers(std::span<const std::uint8_t> mfcr) {
  const std::uint32_t d = Dword(mfcr, 0x04);
  const std::uint32_t active = Bits(d, 31, 26) << 10 | Bits(d, 25, 16);
  std::vector<int> out;
  for (int t = 0; t < 16; ++t) {  // bit 0 is tachometer 0 (Linux mlxsw core_hwmon.c mlxsw_hwmon_fans_init)
    if (active >> t & 1u) out.push_back(t);
  }
  return out;
}

std::vector<std::uint8_t> MfsmRequest(int tacho) {
  std::vector<std::uint8_t> r;
  PutDword(&r, 0x00,
           static_cast<std::uint32_t>(tacho >> 4 & 0xf) << 28 | static_cast<std::uint32_t>(tacho & 0xf) << 24);
  return r;
}

int DecodeFanRpm(std::span<const std::uint8_t> mfsm) { return static_cast<int>(Bits(Dword(mfsm, 0x04), 15, 0)); }

FanLimits DecodeFanLimits(std::span<const std::uint8_t> fore) {
  const auto limits = [](std::uint32_t d) { return Bits(d, 31, 26) << 10 | Bits(d, 25, 16); };
  return {limits(Dword(fore, 0x00)), limits(Dword(fore, 0x04))};
}

GeneralRegister DecodeGeneralRegister(std::span<const std::uint8_t> mgir) {
  GeneralRegister g;
  g.hw_revision = static_cast<std::uint16_t>(Bits(Dword(mgir, 0x00), 31, 16));
  g.device_id = static_cast<std::uint16_t>(Bits(Dword(mgir, 0x00), 15, 0));
  g.uptime_seconds = Dword(mgir, 0x1C);
  g.psid = Text(mgir, 0x30, 16);
  g.fw_major = Dword(mgir, 0x44);
  g.fw_minor = Dword(mgir, 0x48);
  g.fw_sub_minor = Dword(mgir, 0x4C);
  if (g.fw_major == 0 && g.fw_minor == 0 && g.fw_sub_minor == 0) {
    // No extended version: the 8-bit one (fw_info major [23:16], minor
    // [15:8], sub_minor [7:0] at 0x20), as vendstat falls back to it.
    const std::uint32_t v = Dword(mgir, 0x20);
    g.fw_major = Bits(v, 23, 16);
    g.fw_minor = Bits(v, 15, 8);
    g.fw_sub_minor = Bits(v, 7, 0);
  }
  return g;
}

std::string GeneralRegister::FirmwareVersion() const {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%u.%04u.%04u", fw_major, fw_minor, fw_sub_minor);
  return buf;
}

SystemInfo DecodeSystemInfo(std::span<const std::uint8_t> msgi) {
  return {Text(msgi, 0x00, 24), Text(msgi, 0x20, 20), Text(msgi, 0x38, 4), Text(msgi, 0x40, 64)};
}

std::vector<PowerSupply> DecodePowerSupplies(std::span<const std::uint8_t> msps) {
  std::vector<PowerSupply> out;
  for (int i = 0; i < kPowerSupplies; ++i) {
    const std::size_t base = 0x50 * static_cast<std::size_t>(i);
    bool any = false;
    for (std::size_t d = 0; d < 20; ++d) any |= Dword(msps, base + 4 * d) != 0;
    if (!any) continue;  // chassis managed: nothing reported
    PowerSupply p;
    p.index = i;
    const std::uint32_t status = Dword(msps, base), fan = Dword(msps, base + 4), power = Dword(msps, base + 8);
    p.ok = Bits(status, 31, 28) == 5;
    p.dc_ok = Bits(status, 7, 4) == 1;
    const std::uint32_t f = Bits(fan, 3, 0);
    if (f != 3) p.fan_ok = f == 2;
    // Only in the shape ibswinfo knows (the 0x8 nibble); anything else is
    // not taken for watts.
    if (Bits(power, 31, 28) == 8 && Bits(power, 27, 0) != 0) p.watts = Bits(power, 27, 0);
    out.push_back(p);
  }
  return out;
}

}  // namespace ibfabric::transport
