#pragma once
// The offline analysis (--analyze=FILE): a saved fabric's wiring judged as
// a live one's is (topology::AnalyzeWiring), with no InfiniBand port and
// no MAD: for captures operators keep or publish, for checking a fabric
// build before it carries jobs, and for tests that judge real captures in
// milliseconds.

#include <optional>
#include <ostream>
#include <string>

#include "topology/hosts.h"
#include "topology/node_name_map.h"
#include "topology/plan.h"

namespace ibfabric::exporter {

struct OfflineOptions {
  std::string path;  // ibnetdiscover output (topology/ibnetdiscover.h)
  bool json = false;
  const topology::NodeNameMap* names = nullptr;    // may be null
  const topology::HostPattern* pattern = nullptr;  // null: the default
  const topology::CablingPlan* plan = nullptr;     // null: none
};

// Prints to `out` the fabric's size, its tiers (or why it is not a tree),
// its hosts' layout and every finding, each marked "alert" where it would
// raise a cable alert (topology::RaisesCableAlert), "warn" where it is a
// warning only and "info" where information (topology::LevelOf); as JSON,
// the findings view of /api/v1/topology. Each line of the file passed over
// and each cable it names only half of goes to `err` ("FILE:N: why").
// Returns 0 when nothing would alert, 1 when something would, 2 (with one
// line on `err`) when the file cannot be read as a fabric.
int AnalyzeOffline(const OfflineOptions& options, std::ostream& out, std::ostream& err);

}  // namespace ibfabric::exporter
