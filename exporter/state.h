#pragma once
// What must survive a re-exec of the exporter (see exporter/recovery.h) so
// that every exported total stays continuous: the per-port totals and raw
// baselines, the node labels, the switch ports once seen up, and what each
// collector saves of its own (Collector::Saved: xmit_wait_tick's
// PortXmitWait seconds). Serialized as JSON with counters keyed by metric
// name, so a newer build can read an older file.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "collectors/framework/snapshot.h"
#include "collectors/health/counter_store.h"

namespace ibfabric::collectors {

struct PersistedState {
  PortTable ports;
  std::map<std::uint64_t, NodeLabel> nodes;
  std::set<topology::PortRef> remembered;
  std::map<std::string, nlohmann::json> collectors;  // collector name -> what it saved
};

std::string SaveState(const PersistedState& state);
// False with a one-line reason when `text` is not a state this build reads.
bool LoadState(const std::string& text, PersistedState* state, std::string* error);

}  // namespace ibfabric::collectors
