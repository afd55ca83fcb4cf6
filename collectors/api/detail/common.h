#pragma once
// What the API's bodies share (private to collectors/api/): a port's end
// as the bodies name it, a node's name, times, an alert as JSON, and the
// GUID parameters. Each endpoint's body is its own file (alerts.cc,
// port.cc, route.cc, node.cc); json.h declares them.

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "collectors/framework/snapshot.h"
#include "collectors/health/alerts.h"
#include "topology/fabric.h"

namespace ibfabric::collectors::api {

// Seconds since the epoch.
double Unix(std::chrono::system_clock::time_point t);
// The node's name as the snapshot labels it; "" when unknown.
std::string NameOf(const Snapshot& s, std::uint64_t guid);
// One end of a cable: node, guid, port, kind, lid.
nlohmann::json End(const Snapshot& s, const topology::PortRef& ref);
// An alert as /api/v1/alerts lists it (its id, cause, severity, ends,
// evidence, blast radius).
nlohmann::json AlertToJson(const Snapshot& s, const Alert& a);
// A node GUID parameter, hex with "0x" optional; nullopt with *error.
std::optional<std::uint64_t> ParseGuid(const std::string& v, std::string* error);
// The node GUID of `guid`: itself when it names a node, else the node
// with a port of that GUID (an HCA port's, as the metrics' `guid` label
// and so the alert rules' links carry it); itself when neither.
std::uint64_t NodeOf(const Snapshot& s, std::uint64_t guid);

}  // namespace ibfabric::collectors::api
