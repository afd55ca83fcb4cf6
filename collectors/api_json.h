#pragma once
// Alerts as JSON: the body of GET /api/v1/alerts. Schema in docs/api.md,
// versioned by "schema_version"; fields are only ever added.

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "collectors/snapshot.h"

namespace ibfabric::collectors {

inline constexpr int kAlertsSchemaVersion = 1;

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
bool ParseAlertFilter(const std::multimap<std::string, std::string>& params, AlertFilter* filter,
                      std::string* error);

// Pure.
nlohmann::json AlertsJson(const Snapshot& snapshot, const AlertFilter& filter);

// GET /api/v1/port?guid=0x...&port=N: one port for a drill-down. False
// with a one-line reason naming the parameter.
bool ParsePortQuery(const std::multimap<std::string, std::string>& params, topology::PortRef* port,
                    std::string* error);
// Pure. The port's state and rate, its counter totals (pinned ones named),
// its link's health over the window (this end and the far one), and the
// alerts on its cable; null when the snapshot knows no such port.
nlohmann::json PortDetailJson(const Snapshot& snapshot, const topology::PortRef& port);

}  // namespace ibfabric::collectors
