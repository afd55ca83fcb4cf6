#pragma once
// The JSON API, every view in one place: the bodies of GET /api/v1/topology
// (api_topology.cc), /api/v1/alerts and /api/v1/port (api_alerts.cc) and
// /api/v1/subnet_managers (api_subnet_managers.cc). Each schema is
// documented in docs/api.md and versioned by "schema_version"; fields are
// only ever added. All of them pure: they read an immutable part of the
// Snapshot and send nothing.

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "collectors/snapshot.h"
#include "collectors/subnet_managers.h"
#include "topology/analysis.h"
#include "topology/fabric.h"
#include "topology/findings.h"

namespace ibfabric::collectors {

inline constexpr int kTopologySchemaVersion = 1;
inline constexpr int kAlertsSchemaVersion = 1;
inline constexpr int kSubnetManagersSchemaVersion = 1;

// --- GET /api/v1/topology

// One port as in nodes[].ports[]: number, LID, state, rate, remote end.
nlohmann::json PortJson(const topology::Fabric& fabric, const topology::Port& port);

// The fabric, its analysis and findings. "routing" and "partitions" are
// null where `routing` or `partitions` is (the tables were not read).
nlohmann::json TopologyJson(const topology::Fabric& fabric, const topology::Analysis& analysis,
                            const topology::RoutingAnalysis* routing = nullptr,
                            const topology::PartitionAnalysis* partitions = nullptr);

// --- GET /api/v1/alerts

// Filters from the query string: severity=warning|critical (exactly that
// severity), node=<name or GUID> (either end), state=active|cleared|all.
struct AlertFilter {
  std::optional<Severity> severity;
  std::string node;
  bool active = true;
  bool cleared = true;
};
// False with a one-line reason naming the parameter; unknown parameters are
// errors too, so a typo does not silently return everything.
bool ParseAlertFilter(const std::multimap<std::string, std::string>& params, AlertFilter* filter, std::string* error);

nlohmann::json AlertsJson(const Snapshot& snapshot, const AlertFilter& filter);

// --- GET /api/v1/port?guid=0x...&port=N: one port for a drill-down. False
// with a one-line reason naming the parameter.
bool ParsePortQuery(const std::multimap<std::string, std::string>& params, topology::PortRef* port, std::string* error);
// The port's state and rate, its counter totals (pinned ones named),
// its link's health over the window (this end and the far one), and the
// alerts on its cable; null when the snapshot knows no such port.
nlohmann::json PortDetailJson(const Snapshot& snapshot, const topology::PortRef& port);

// --- GET /api/v1/subnet_managers

// The master, the standbys, every SM seen, failovers and conditions.
nlohmann::json SubnetManagersJson(const SmReport& report, std::chrono::system_clock::time_point generated);

}  // namespace ibfabric::collectors
