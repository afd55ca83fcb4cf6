#pragma once
// One counter sweep: PortCounters and PortCountersExtended from every target
// port, one query per port and attribute, all pipelined on the MAD engine.

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "collectors/counters.h"
#include "topology/fabric.h"
#include "transport/mad_engine.h"

namespace ibfabric::collectors {

struct SweepTarget {
  topology::PortRef port;
  std::uint16_t lid = 0;  // the LID whose PMA answers for this port
};

// Ports to read: every CA port discovery found, every switch port whose link
// is up, and every switch port in `remembered` (ports seen up before, so a
// link that went down keeps its series). Ports without a LID are skipped.
std::vector<SweepTarget> SweepTargets(const topology::Fabric& fabric,
                                      const std::set<topology::PortRef>& remembered);

struct PortReading {
  SweepTarget target;
  std::optional<PortSample> sample;  // nullopt: the port's PMA did not answer
  transport::MadOutcome outcome = transport::MadOutcome::kOk;
};

struct SweepResult {
  std::vector<PortReading> readings;  // in target order
  std::size_t failed_ports = 0;
  std::chrono::duration<double> duration{};
};

// Thread-safety: uses the engine exclusively for its duration.
SweepResult Sweep(const std::vector<SweepTarget>& targets, transport::MadEngine& engine);

}  // namespace ibfabric::collectors
