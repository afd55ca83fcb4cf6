#pragma once
// modules: the module at each end of a cable (the transceiver, or the
// connector of a copper or active cable), as the port's own device reads
// it: PDDR page 3, Module Info (register 0x5031 through AccessRegister,
// vendor GMP class 0x0A; transport/registers.h ModuleInfo), as mlxlink
// and UFM's secondary telemetry read it.
//
// Read of the ports of NVIDIA nodes (switches and HCAs) whose GeneralInfo
// says AccessRegister (the capabilities part's `vendor`), with the vendor
// MAD agent, each port whose link is up and which this exporter reads, at
// most once per `interval` (--phy.interval), spread over the sweeps as the
// fec collector's reads are (its share of the ports each sweep, the
// longest waiting first, at least 512 of those never read), in the
// sweep's one batch: one GMP per port per interval. "Unsupported" (also
// "class" or "register not supported") stops asking the port for good; no
// answer, another port's page or any other status waits for the next
// interval. Ports of SHARP Aggregation Nodes and those facing them (inside
// the switch) are not read. A reading not
// renewed within two intervals and a half minute is dropped (absent, not
// stale); a port that goes down keeps its last reading until then.
//
// Part: ModuleReadings under "modules" (Snapshot::by_collector). Metrics,
// on the port's end (guid, node, port), absent where the module does not
// report them: infiniband_port_module_info{vendor,part_number,
// serial_number,revision,type,identifier,length_meters},
// infiniband_port_module_temperature_celsius and its alarm threshold
// infiniband_port_module_temperature_high_threshold_celsius (where the
// module monitors temperature), infiniband_port_module_voltage_volts,
// infiniband_port_module_{rx,tx}_power_watts{lane} (the module's lanes
// as PDDR reports them, where it monitors them: an OSFP's eight, also on
// each port of a twin-port module, whose port-to-lane map is PMLP's, not
// read here), and the finding
// infiniband_port_module_part_differs{part_number,cables,end,
// cables_part_number}: a module whose part number differs from the one
// most modules at the same end (hca, leaf, spine, ...) of its level of
// cables (host-leaf, leaf-spine, spine-core, ...: the tiers the fat_tree
// analysis ranked) have, where one part has more than half of them.

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "collectors/framework/collector_info.h"
#include "transport/registers.h"

namespace ibfabric::collectors {

inline constexpr std::string_view kModulesCollector = "modules";

struct ModulePort {
  topology::PortRef port;
  transport::ModuleInfo info;
  std::chrono::steady_clock::time_point read_at{};
  bool operator==(const ModulePort&) const = default;
};

struct ModuleReadings {
  std::shared_ptr<const std::vector<ModulePort>> ports =
      std::make_shared<const std::vector<ModulePort>>();  // by port, plugged modules only
};

// Its declaration (name, help, factory, render, reads, flags): the registry's line.
CollectorInfo ModuleCollectorInfo();
std::unique_ptr<Collector> MakeModuleCollector(const CollectorOptions& options);
void RenderModules(const Snapshot& s, const Emit& out);
// The module at one port as the collector last read it, for /api/v1/port;
// null where it has none.
nlohmann::json ModuleJson(const Snapshot& s, const topology::PortRef& port);

}  // namespace ibfabric::collectors
