#pragma once
// NVIDIA device registers read in band through AccessRegister (vendor GMP
// class 0x0A, attribute 0x51; transport/attributes.h AccessRegisterQuery):
// the index fields a request carries (the register's first bytes) and pure
// decoders of what comes back. Layouts are the public PRM definitions in
// mstflint's tools_layouts/adb/prm/{switch,hca}/ext/register_access_table.adb
// (offsets below as there: a big-endian dword's byte offset in the register
// and its bits [hi:lo] from the least significant). A decoder takes the
// register's bytes from its first (what AccessRegisterData gives) and reads
// nothing past what it is given: a short buffer reads as zeros.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ibfabric::transport {

// Register IDs (the AttributeModifier of AccessRegister).
namespace reg {
inline constexpr std::uint16_t kPpcnt = 0x5008;  // Ports Performance Counters
inline constexpr std::uint16_t kPddr = 0x5031;   // Port Diagnostics Database
inline constexpr std::uint16_t kMfcr = 0x9001;   // Management Fan Control (active tachometers)
inline constexpr std::uint16_t kMfsm = 0x9003;   // Management Fan Speed Measurement
inline constexpr std::uint16_t kFore = 0x9007;   // Fan Out of Range Event
inline constexpr std::uint16_t kMtmp = 0x900A;   // Management Temperature
inline constexpr std::uint16_t kMsps = 0x900D;   // Management System Power Supply
inline constexpr std::uint16_t kMgir = 0x9020;   // Management General Information
inline constexpr std::uint16_t kMsgi = 0x9021;   // Management System General Information
}  // namespace reg

// A BER as devices report it: coef x 10^-magnitude (PPCNT group 0x16).
struct ReportedBer {
  std::uint8_t coef = 0;
  std::uint8_t magnitude = 0;
  double value() const;  // 0 when coef is 0
};

// PPCNT with grp 0x16, Physical Layer Statistical Counters
// (ppcnt_reg_ext: local_port 0x00 [23:16], pnat [15:14], grp [5:0]; the
// counter set from register byte 0x08). pnat 1: local_port is the IB port
// number.
inline constexpr std::uint8_t kPpcntPhysLayerStatistics = 0x16;
std::vector<std::uint8_t> PpcntRequest(std::uint8_t ib_port, std::uint8_t group);
inline constexpr std::size_t kPhysLayerLanes = 8;
struct PhysLayerStatistics {
  std::uint8_t port = 0;                                         // local_port as answered
  std::uint64_t time_since_clear_ms = 0;                         // 0x08 (hi, lo)
  std::uint64_t received_bits = 0;                               // phy_received_bits 0x10
  std::uint64_t symbol_errors = 0;                               // phy_symbol_errors 0x18: not corrected by FEC
  std::uint64_t corrected_bits = 0;                              // phy_corrected_bits 0x20: FEC corrected
  std::array<std::uint64_t, kPhysLayerLanes> raw_errors_lane{};  // phy_raw_errors_lane0..7 0x28..0x60
  ReportedBer raw_ber;                                           // 0x68: coef [3:0], magnitude [15:8]
  ReportedBer effective_ber;                                     // 0x6C
  ReportedBer symbol_ber;                                        // 0x70
  std::uint64_t effective_errors = 0;                            // phy_effective_errors 0x84: not corrected by FEC
};
PhysLayerStatistics DecodePhysLayerStatistics(std::span<const std::uint8_t> reg);

// PDDR page 3, module info (pddr_reg_ext: local_port 0x00 [23:16], pnat
// [15:14]; page_select 0x04 [7:0]; module_info_ext 0x04 [30:29], 1: rx/tx
// power in uW; the page from register byte 0x08, offsets below within it).
inline constexpr std::uint8_t kPddrModuleInfoPage = 3;
std::vector<std::uint8_t> PddrModuleInfoRequest(std::uint8_t ib_port);
inline constexpr std::size_t kModuleLanes = 8;
struct ModuleInfo {
  std::uint8_t cable_technology = 0;          // 0x00 [31:24] (SFF-8636 byte 147 / CMIS 212)
  std::uint8_t cable_type = 0;                // 0x04 [31:28]: 1 active, 2 optical, 3 passive copper, 4 unplugged, ...
  std::uint8_t cable_length = 0;              // 0x04 [23:16], metres
  std::uint8_t cable_identifier = 0;          // 0x04 [15:8]: 0 QSFP28, ..., 8 OSFP
  std::string vendor_name;                    // 0x14, 16 ASCII, space padded (trimmed)
  std::string vendor_pn;                      // 0x24, 16
  std::string vendor_rev;                     // 0x34, 4
  std::string vendor_sn;                      // 0x3C, 16
  std::optional<double> temperature_celsius;  // 0x4C [31:16] s16 1/256 C; none when 0 (not reported)
  std::optional<double> temperature_high_celsius;  // 0x80 [31:16], the alarm threshold
  std::optional<double> temperature_low_celsius;   // 0x80 [15:0]
  double voltage_volts = 0;                        // 0x4C [15:0], 100 uV
  // 0x50..0x5C rx, 0x60..0x6C tx, the even lane in [31:16]: uW where
  // module_info_ext came back 1 (asked), else whole dBm (signed).
  bool power_in_microwatts = false;
  std::array<double, kModuleLanes> rx_power_watts{};
  std::array<double, kModuleLanes> tx_power_watts{};
  std::uint8_t monitors = 0;  // monitor_cap_mask 0x9C [15:8]: 0 temperature, 1 voltage, 2 tx power, 3 rx power
  bool plugged() const { return cable_type != 4; }
  bool cmis() const;  // cable_identifier 5, 6, 7, 8 or 10: a CMIS module
  // cable_length in metres: whole metres, or for a CMIS module bits [5:0]
  // times 0.1, 1, 10 or 100 by bits [7:6].
  double LengthMeters() const;
  bool operator==(const ModuleInfo&) const = default;
};
// cable_type and cable_identifier as names (pddr_module_info_ext's enums,
// snake case: "optical_module", "osfp"; "unknown" past them).
const char* CableTypeName(std::uint8_t cable_type);
// The lanes a module of this cable_identifier has: 1 an SFP, 2 an SFP-DD
// or DSFP, 8 a QSFP-DD or OSFP, else 4 (QSFP, QSFP28, QSFP CMIS, ...).
int ModuleLanes(std::uint8_t cable_identifier);
const char* CableIdentifierName(std::uint8_t cable_identifier);
ModuleInfo DecodeModuleInfo(std::span<const std::uint8_t> reg);

// MTMP (mtmp_ext): sensor_index 0x00 [11:0] (0: the ASIC, 64 + N: module
// N), temperature 0x04 [15:0] s16 0.125 C, max_temperature 0x08 [15:0],
// temperature_threshold_hi 0x0C [15:0], _lo 0x10 [15:0], sensor_name
// 0x18..0x1F.
inline constexpr std::uint16_t kMtmpAsic = 0;
inline constexpr std::uint16_t kMtmpModuleBase = 64;
std::vector<std::uint8_t> MtmpRequest(std::uint16_t sensor);
struct Temperature {
  std::uint16_t sensor = 0;
  double celsius = 0;
  double max_celsius = 0;
  double threshold_high_celsius = 0;
  double threshold_low_celsius = 0;
  std::string name;
  // 0x8000..0x8003: no sensor there (MTBR's codes: not connected, no
  // sensor, index not applicable, incorrect information).
  bool present = true;
  bool operator==(const Temperature&) const = default;
};
Temperature DecodeTemperature(std::span<const std::uint8_t> reg);

// Fans. MFCR: tacho_active 0x04 [25:16], tacho_active_msb [31:26] (bit t:
// tachometer t, t from 0, as the Linux mlxsw driver numbers them for MFSM). MFSM: tacho 0x00 [27:24] (tacho_hi
// [31:28]), rpm 0x04 [15:0]. FORE: fan_under_limit 0x00 [25:16] (msb [31:26]), fan_over_limit 0x04 [25:16] (msb
// [31:26]).
std::vector<int> ActiveTachometers(std::span<const std::uint8_t> mfcr);
std::vector<std::uint8_t> MfsmRequest(int tacho);
int DecodeFanRpm(std::span<const std::uint8_t> mfsm);
struct FanLimits {
  std::uint32_t under = 0;  // bit t: tachometer t under its minimum
  std::uint32_t over = 0;
  bool failed(int tacho) const { return ((under | over) >> tacho & 1u) != 0; }
  bool operator==(const FanLimits&) const = default;
};
FanLimits DecodeFanLimits(std::span<const std::uint8_t> fore);

// MGIR (mgir_ext): hw_info device_hw_revision 0x00 [31:16], device_id
// [15:0], uptime 0x1C (seconds since the last reset); fw_info psid
// 0x30..0x3F, extended_major/minor/sub_minor 0x44/0x48/0x4C (all 0: the
// 8-bit major/minor/sub_minor at 0x20 [23:16]/[15:8]/[7:0]).
struct GeneralRegister {
  std::uint16_t device_id = 0;
  std::uint16_t hw_revision = 0;
  std::uint32_t uptime_seconds = 0;
  std::string psid;
  std::uint32_t fw_major = 0, fw_minor = 0, fw_sub_minor = 0;
  std::string FirmwareVersion() const;  // "27.2010.3118" (%d.%04d.%04d, as mlxfwmanager)
  bool operator==(const GeneralRegister&) const = default;
};
GeneralRegister DecodeGeneralRegister(std::span<const std::uint8_t> mgir);

// MSGI (msgi_ext): serial_number 0x00..0x17, part_number 0x20..0x33,
// revision 0x38..0x3B, product_name 0x40..0x7F, ASCII.
struct SystemInfo {
  std::string serial_number;
  std::string part_number;
  std::string revision;
  std::string product_name;
  bool operator==(const SystemInfo&) const = default;
};
SystemInfo DecodeSystemInfo(std::span<const std::uint8_t> msgi);

// MSPS: two power supplies of 20 dwords each (psu0 at 0x00, psu1 at
// 0x50). No public field layout: decoded as SckyzO's ibswinfo reads it
// (dword 0 [31:28] 5: present and OK, [7:4] 1: DC OK; dword 1 [3:0] 2:
// its fan OK, 3: none reported; dword 2 with [31:28] 8: [27:0] watts, no
// watts in any other shape). A supply whose dwords are all 0 is not
// reported (chassis managed).
inline constexpr int kPowerSupplies = 2;
struct PowerSupply {
  int index = 0;
  bool ok = false;
  bool dc_ok = false;
  std::optional<bool> fan_ok;   // none: not reported
  std::optional<double> watts;  // none: not reported
  bool operator==(const PowerSupply&) const = default;
};
std::vector<PowerSupply> DecodePowerSupplies(std::span<const std::uint8_t> msps);

}  // namespace ibfabric::transport
