#pragma once
// Every collector by name, in the order they run and render: the factory
// that makes it, whether it is on by default, and the pure function that
// renders its metric families from a Snapshot. It sits above every
// collector (it names them all); a collector's header includes only
// collector.h, where CollectorOptions and Emit are. The exporter's
// --collector.<name> / --no-collector.<name> flags are derived from this
// list (exporter/flags.h), as node_exporter's are.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/collector.h"

namespace ibfabric::collectors {

struct CollectorInfo {
  std::string_view name;
  std::string_view help;  // one line, for --help
  bool default_on = true;
  std::function<std::unique_ptr<Collector>(const CollectorOptions&)> make;
  // Pure: the collector's families from its part of `s`; nothing when the
  // part is absent.
  void (*render)(const Snapshot& s, const Emit& out) = nullptr;
  // The collectors whose part of this cycle its Update reads (Cycle::parts):
  // they must run before it (CheckRunOrder). A part it can do without
  // when that collector is off; one of the previous cycle (port_counters
  // asks the ports of last sweep's congestion trees) is not listed.
  std::vector<std::string_view> reads = {};
  // Its Update reads the sweep's counter samples (SweepResult::SampleOf):
  // they are let go once the last collector that does has run.
  bool reads_samples = false;
  // kDiscovery: it reads tables after a full walk (thousands of MADs that
  // ibnetdiscover does not send), so it runs once the walk's first sweep
  // is published, not before: the counters of a fabric just walked are
  // served without waiting for its tables.
  bool after_publication = false;
};

// Every collector, in run order.
const std::vector<CollectorInfo>& Registry();
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
