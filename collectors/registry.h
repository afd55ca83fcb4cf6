#pragma once
// Every collector by name, in the order they run and render: the factory
// that makes it, whether it is on by default, and the pure function that
// renders its metric families from a Snapshot. The exporter's
// --collector.<name> / --no-collector.<name> flags are derived from this
// list (exporter/flags.h), as node_exporter's are.

#include <prometheus/metric_family.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/alerts.h"
#include "collectors/collector.h"
#include "collectors/counter_store.h"
#include "collectors/subnet_managers.h"
#include "topology/hosts.h"
#include "topology/partitions.h"
#include "topology/plan.h"

namespace ibfabric::collectors {

// What the factories need; each collector takes its part.
struct CollectorOptions {
  std::optional<topology::CablingPlan> plan;              // fat_tree: every analysis is compared with it
  std::optional<topology::HostPattern> host_pattern;      // fat_tree: how CA descriptions name hosts; none: rdma-ndd's
  std::optional<topology::PartitionPlan> partition_plan;  // partitions
  AlertConfig alerts;                                     // link_health: thresholds, window, hysteresis
  SmMonitorOptions subnet_managers;                       // subnet_managers
  int clear_threshold_percent = 0;                        // port_counters: 0 never clears
  PortTable restored_ports;                               // port_counters: totals from before a re-exec
};

// Called with each metric family as soon as it is complete, or with
// consecutive parts of one (render.h FamilyParts): a family of the name of
// the one just emitted continues it.
using Emit = std::function<void(prometheus::MetricFamily&&)>;

struct CollectorInfo {
  std::string_view name;
  std::string_view help;  // one line, for --help
  bool default_on = true;
  std::function<std::unique_ptr<Collector>(const CollectorOptions&)> make;
  // Pure: the collector's families from its part of `s`; nothing when the
  // part is absent.
  void (*render)(const Snapshot& s, const Emit& out) = nullptr;
};

// Every collector, in run order.
const std::vector<CollectorInfo>& Registry();
const CollectorInfo* FindCollector(std::string_view name);

// The names of the collectors on: the defaults with `overrides` (name ->
// on) applied, in registry order. False with "unknown collector: NAME"
// when an override names none.
bool EnabledCollectors(const std::map<std::string, bool>& overrides, std::vector<std::string>* enabled,
                       std::string* error);

}  // namespace ibfabric::collectors
