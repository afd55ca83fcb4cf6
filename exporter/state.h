#pragma once
// What must survive a re-exec of the exporter (see exporter/recovery.h) so
// that every exported total stays continuous: the per-port totals and raw
// baselines, the ports' PortXmitWait seconds, the node labels, and the
// switch ports once seen up. Serialized
// as JSON with counters keyed by metric name, so a newer build can read an
// older file.

#include <cstdint>
#include <map>
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
  std::vector<PortWait> waits;  // sorted by port (xmit_wait_tick)
};

std::string SaveState(const PersistedState& state);
// False with a one-line reason when `text` is not a state this build reads.
bool LoadState(const std::string& text, PersistedState* state, std::string* error);

}  // namespace ibfabric::collectors
