#pragma once
// subnet_managers: SMInfo (IBTA 14.2.5.13) from every port whose PortInfo
// says IsSM, each sweep: masters, standbys, whether the master keeps
// sweeping, failovers (subnet_managers.h). SMs started since the last walk
// are found within the sweep: the local port's MasterSMLID names a new
// master, and one SubnAdmGetTable(SMInfoRecord) per sweep to the master's
// SA names the SMs it knows (a new standby among them). One exporter of a
// sharded set watches them: the one that reports topology. Metrics:
// infiniband_sm_*.

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>

#include "collectors/framework/collector_info.h"
#include "collectors/health/subnet_managers.h"

namespace ibfabric::collectors {

// Its declaration (name, help, factory, render, reads, flags): the registry's line.
CollectorInfo SubnetManagersCollectorInfo();
std::unique_ptr<Collector> MakeSubnetManagersCollector(const CollectorOptions& options);
void RenderSubnetManagers(const Snapshot& s, const Emit& out);

// GET /api/v1/subnet_managers (its route): the master, the standbys, every
// SM seen, failovers and conditions.
inline constexpr int kSubnetManagersSchemaVersion = 1;
nlohmann::json SubnetManagersJson(const SmReport& report, std::chrono::system_clock::time_point generated);

}  // namespace ibfabric::collectors
