#pragma once
// The nodes whose tables did not answer, asked again over the next sweeps
// (a CA port the SM has not made Active, or routed to, yet), then left to
// the next full walk. Shared by the collectors that read tables at
// discovery (capabilities, routing, partitions).

#include <cstdint>
#include <map>
#include <set>

#include "collectors/framework/collector.h"
#include "topology/fabric.h"

namespace ibfabric::collectors {

class TableRetry {
 public:
  static constexpr int kSweeps = 6;
  // After reading `read`: those `missing` says lack their table are due again.
  template <typename Missing>
  void Note(const topology::Fabric& fabric, const std::set<std::uint64_t>& read, Missing missing) {
    for (std::uint64_t g : read) {
      const topology::Node* n = fabric.FindNode(g);
      if (n && missing(*n)) {
        due_.emplace(g, kSweeps);
      } else {
        due_.erase(g);
      }
    }
  }
  // The nodes to ask again this sweep; those asked often enough, or gone, are dropped.
  std::set<std::uint64_t> Take(const topology::Fabric& fabric) {
    std::set<std::uint64_t> out;
    for (auto it = due_.begin(); it != due_.end();) {
      if (!fabric.FindNode(it->first) || it->second-- <= 0) {
        it = due_.erase(it);
        continue;
      }
      out.insert(it->first);
      ++it;
    }
    return out;
  }
  void Forget(std::uint64_t node) { due_.erase(node); }
  bool pending() const { return !due_.empty(); }

 private:
  std::map<std::uint64_t, int> due_;  // node -> sweeps left
};

// Whether a table-reading phase works, as its collector_success says: it
// fails when a full walk's run read none of the tables it asked for (the
// reads are rejected, or nothing answers), until a run reads one. One node
// that does not answer is that node's news (its counters, its own
// exporter), not the phase's: other nodes' tables read, the phase works,
// and a retry of only that node that reads nothing changes nothing.
class TablePhaseHealth {
 public:
  bool Judge(const Cycle& cycle, bool asked, bool read_any) {
    if (read_any) {
      ok_ = true;
    } else if (asked && cycle.trigger == Trigger::kFullWalk) {
      ok_ = false;
    }
    return ok_;
  }

 private:
  bool ok_ = true;
};

// The nodes a table-reading collector reads on this run: every node after
// a full walk, the re-walk's new ones, or (a sweep) those due again; the
// gone ones are forgotten.
inline std::set<std::uint64_t> NodesToRead(const Cycle& cycle, TableRetry* retry) {
  if (cycle.trigger == Trigger::kSweep || cycle.trigger == Trigger::kTrap) return retry->Take(*cycle.fabric);
  for (std::uint64_t g : cycle.gone) retry->Forget(g);
  return cycle.fresh;
}

// Whether node `guid` is gone as of this run: after a full walk, not in the
// fabric; after a re-walk, found gone by it; on any other run, never.
inline bool Gone(const Cycle& cycle, std::uint64_t guid) {
  if (cycle.trigger == Trigger::kFullWalk) return cycle.fabric->FindNode(guid) == nullptr;
  return cycle.trigger == Trigger::kRewalk && cycle.gone.count(guid) > 0;
}

// Drops the entries of `table` (keyed by node GUID, or by a PortRef) whose
// node is Gone.
template <typename Map, typename NodeOf>
void DropGone(const Cycle& cycle, Map* table, NodeOf node_of) {
  std::erase_if(*table, [&](const auto& e) { return Gone(cycle, node_of(e.first)); });
}

}  // namespace ibfabric::collectors
