#pragma once
// Every collector, in the order they run and render: one line each, the
// declaration its own file makes (collector_info.h: its factory, render,
// reads and flags). It sits above every collector (it names them all); a
// collector's header includes the framework only. The exporter's flags
// (each collector's, and --collector.<name> / --no-collector.<name>, as
// node_exporter's) are derived from this list (exporter/flags.h).

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/framework/collector_info.h"

namespace ibfabric::collectors {

// Every collector, in run order.
const std::vector<CollectorInfo>& Registry();
// Every collector flag: the shared ones (SharedFlags), then each
// collector's in registry order.
std::vector<const CollectorFlag*> AllFlags();
// Whether every collector of `registry` runs after those it reads (and
// each it reads exists); false with "collector A reads B, which runs after
// it" (or "... which is no collector"). EnabledCollectors checks the
// registry with it, so a wrong order stops the exporter at startup.
bool CheckRunOrder(const std::vector<CollectorInfo>& registry, std::string* error);
const CollectorInfo* FindCollector(std::string_view name);

// The names of the collectors on: the defaults with `overrides` (name ->
// on) applied, in registry order. False with "unknown collector: NAME"
// when an override names none.
bool EnabledCollectors(const std::map<std::string, bool>& overrides, std::vector<std::string>* enabled,
                       std::string* error);

}  // namespace ibfabric::collectors
