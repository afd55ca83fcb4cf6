#pragma once
// One counter sweep: PortCounters and, where supported, PortCountersExtended
// from every target port, one query per port and attribute, all pipelined on
// the MAD engine; plus the ClassPortInfo reads and the opt-in clearing that
// go with it.

#include <bitset>
#include <chrono>
#include <cstdint>
#include <map>
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
  PmaCapabilities caps;
};

using CapabilityMap = std::map<std::uint64_t, PmaCapabilities>;  // node GUID -> caps

// Ports to read: every CA port discovery found, every switch port whose link
// is up, and every switch port in `remembered` (ports seen up before, so a
// link that went down keeps its series). Ports without a LID are skipped.
// Nodes missing from `caps` get unknown capabilities.
std::vector<SweepTarget> SweepTargets(const topology::Fabric& fabric,
                                      const std::set<topology::PortRef>& remembered,
                                      const CapabilityMap& caps);

// ClassPortInfo from every node's PMA (a switch's LID, a CA's first port
// with a LID). Nodes that did not answer are absent from the result.
CapabilityMap ReadCapabilities(const topology::Fabric& fabric, transport::MadEngine& engine);

struct PortReading {
  SweepTarget target;
  std::optional<PortSample> sample;  // nullopt: no trustworthy reading this sweep
  transport::MadOutcome outcome = transport::MadOutcome::kOk;
};

struct SweepResult {
  std::vector<PortReading> readings;  // in target order
  std::size_t failed_ports = 0;
  // Nodes whose LID answered NodeInfo with another GUID: the LIDs moved (an
  // SM restart, Baselid). Their readings are dropped; rediscover.
  std::set<std::uint64_t> moved_nodes;
  std::chrono::duration<double> duration{};
};

// Thread-safety: uses the engine exclusively for its duration.
SweepResult Sweep(const std::vector<SweepTarget>& targets, transport::MadEngine& engine);

// Asks every switch for PortInfo of its ports that are down in `fabric`
// (LID-routed SMPs; nothing on a fully cabled fabric) and returns how many
// have come up since: a new cable, a new node, a link back. Discovery alone
// would see them only on its next interval.
std::size_t DownPortsNowUp(const topology::Fabric& fabric, transport::MadEngine& engine);

// A PortCounters Set for the sticky counters of one port that reached
// `percent` of their field's maximum; nullopt when none did.
struct ClearRequest {
  SweepTarget target;
  std::uint16_t select = 0;   // CounterSelect
  std::uint8_t select2 = 0;   // CounterSelect2
  std::bitset<kCounterCount> counters;
};
std::optional<ClearRequest> ClearNeeded(const SweepTarget& target, const PortSample& sample,
                                        int percent);
// Sends the Sets; true at index i when requests[i] was acknowledged.
std::vector<bool> ClearCounters(const std::vector<ClearRequest>& requests,
                                transport::MadEngine& engine);

}  // namespace ibfabric::collectors
