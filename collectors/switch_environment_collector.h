#pragma once
// switch_environment: each NVIDIA switch's temperature, fans and power
// supplies, and what it is (firmware, PSID, part and serial numbers,
// uptime), read in band through its registers (AccessRegister, vendor GMP
// class 0x0A; transport/registers.h), as SckyzO's ibswinfo reads them
// with mlxreg, and exported under the names of SckyzO's
// infiniband_exporter (collectors/ibswinfo.go), so that its dashboards and
// alerts work unchanged.
//
// Gated twice: only a switch whose NodeInfo.VendorID is NVIDIA's (0x02c9)
// is asked GeneralInfo (class 0x0A attribute 0x17, once, by the
// capabilities collector), and only one whose GeneralInfo says
// IsAccessRegisterGMPSupported (capability bit 20) is asked registers. Every --phy.interval, spread over the sweeps
// like the fec collector's reads: MGIR (firmware, uptime), MTMP sensor 0 (the ASIC), FORE (fans out of range), MSPS
// (power supplies), and MFSM of each fan MFCR names (MFCR and MSGI, part and serial, once). These run by themselves
// after the sweep's batch (a switch slow to answer costs the sweep's reads of its LID nothing), and not at all without
// the vendor MAD agent. "Unsupported" (MAD status 0x0C; class not supported 0x04; register not supported 0x14) is for
// good: the switch, or that register (its series then go). A switch that answers nothing is asked again the next
// interval, the wait doubling each silent round up to 16 intervals. A reading not renewed within two intervals and a
// half minute is dropped (absent, not stale). Only the exporter that owns a switch (render.h OwnsSwitch: the shard its
// GUID hashes to, never a local one) reads it.
//
// Part: SwitchEnvironments under "switch_environment". Metrics (absent,
// not 0, where a switch does not have them): infiniband_switch_hardware_info
// {guid,firmware_version,psid,part_number,serial_number,switch},
// infiniband_switch_uptime_seconds, infiniband_switch_temperature_celsius
// (the ASIC) and infiniband_switch_temperature_high_threshold_celsius
// (where the switch sets one),
// infiniband_switch_fan_rpm{fan}, infiniband_switch_fan_status_info{status}
// (OK, or ERROR when a fan is out of its range),
// infiniband_switch_power_supply_{status,dc_power_status,fan_status}_info
// {psu,status} and infiniband_switch_power_supply_watts{psu}.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "collectors/framework/collector_info.h"
#include "transport/registers.h"

namespace ibfabric::collectors {

inline constexpr std::string_view kSwitchEnvironmentCollector = "switch_environment";

// One switch as last read.
struct SwitchEnvironment {
  std::uint64_t guid = 0;
  std::optional<transport::GeneralRegister> general;                  // MGIR
  std::optional<transport::SystemInfo> system;                        // MSGI
  std::optional<transport::Temperature> asic;                         // MTMP sensor 0
  std::map<int, int> fan_rpm;                                         // MFSM per tachometer MFCR names
  std::optional<transport::FanLimits> fan_limits;                     // FORE
  std::optional<std::vector<transport::PowerSupply>> power_supplies;  // MSPS
  bool operator==(const SwitchEnvironment&) const = default;
};

struct SwitchEnvironments {
  std::map<std::uint64_t, SwitchEnvironment> switches;  // by GUID: those whose registers answered
};

// Its declaration (name, help, factory, render, reads, flags): the registry's line.
CollectorInfo SwitchEnvironmentCollectorInfo();
std::unique_ptr<Collector> MakeSwitchEnvironmentCollector(const CollectorOptions& options);
void RenderSwitchEnvironment(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
