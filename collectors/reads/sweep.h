#pragma once
// One counter sweep: PortCounters and, where supported, PortCountersExtended
// from every target port, one query per port and attribute, all pipelined on
// the MAD engine; plus the ClassPortInfo reads and the opt-in clearing that
// go with it.

#include <array>
#include <bitset>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "collectors/reads/batch.h"
#include "collectors/reads/counters.h"
#include "collectors/reads/detail/packed_samples.h"
#include "topology/fabric.h"
#include "transport/mad_engine.h"

namespace ibfabric::collectors {

struct SweepTarget {
  topology::PortRef port;
  std::uint16_t lid = 0;  // the LID whose PMA answers for this port
  PmaCapabilities caps;
  // Optional attributes to ask too (port_counters decides when):
  bool rcv_error_details = false;     // PortRcvErrorDetails
  bool xmit_discard_details = false;  // PortXmitDiscardDetails
  bool vl_xmit_wait = false;          // PortVLXmitWaitCounters
};

using CapabilityMap = std::map<std::uint64_t, PmaCapabilities>;  // node GUID -> caps

// Ports to read: every CA port discovery found, every switch port whose link
// is up, and every switch port in `remembered` (ports seen up before, so a
// link that went down keeps its series). Ports without a LID are skipped.
// Nodes missing from `caps` get unknown capabilities.
std::vector<SweepTarget> SweepTargets(const topology::Fabric& fabric, const std::set<topology::PortRef>& remembered,
                                      const CapabilityMap& caps);

// ClassPortInfo from every node's PMA (a switch's LID, a CA's first port
// with a LID), or only from the nodes in `only` when it is given. Nodes
// that did not answer are absent from the result. Each answer's
// RespTimeValue is handed to the engine (MadEngine::SetResponseTime), so
// queries to a PMA that declares itself slow wait long enough.
CapabilityMap ReadCapabilities(const topology::Fabric& fabric, transport::MadEngine& engine,
                               const std::set<std::uint64_t>* only = nullptr);

// A switch port whose PortInfo every sweep reads (LID-routed SMP): the
// state, width and speed of its link, so that flaps and retrains are seen
// between discoveries. Switch ends cover every link but CA-to-CA ones.
struct LinkTarget {
  topology::PortRef port;
  std::uint16_t lid = 0;
  topology::ExtSpeeds speeds;  // which extended speed fields the switch's capability masks allow
  topology::MlnxSpeeds mlnx;   // what the last walk's ExtendedPortInfo said (FDR10), kept while it runs QDR
  // The exporter's own port: read with a directed-route SMP of no hop, which
  // its own HCA's SMA answers whatever the link does (on hardware a
  // LID-routed SMP to its own LID needs the port Active), so that its own
  // cable is seen down. Its answer is its own whatever LID moved.
  bool local = false;
};
// Every port of every switch with a LID, cabled or not (a new cable shows up).
std::vector<LinkTarget> LinkTargets(const topology::Fabric& fabric);

// A LID and the node that should answer at it. PMA replies carry no GUID,
// so a LID-routed NodeInfo is how a LID that now belongs to another node
// (an SM restart, a Baselid) is caught.
struct LidCheck {
  std::uint16_t lid = 0;
  std::uint64_t guid = 0;
};
// Every LID of `targets` and `links` once, ascending.
std::vector<LidCheck> LidChecks(const std::vector<SweepTarget>& targets, const std::vector<LinkTarget>& links);

// The part of `all` that sweep number `round` reads so that every element
// is read once every `rounds` sweeps (consecutive slices, wrapping).
template <typename T>
std::vector<T> RotationSlice(const std::vector<T>& all, std::uint64_t round, std::uint64_t rounds) {
  std::vector<T> out;
  if (all.empty()) return out;
  if (rounds <= 1) return all;
  const std::size_t per = (all.size() + rounds - 1) / rounds;
  const std::size_t start = static_cast<std::size_t>((round % rounds) * per % all.size());
  for (std::size_t i = 0; i < per && i < all.size(); ++i) out.push_back(all[(start + i) % all.size()]);
  return out;
}

// When some MADs were under way: from the first one sent to the last
// outcome (both the epoch while none was sent).
struct MadSpan {
  std::chrono::steady_clock::time_point first{};
  std::chrono::steady_clock::time_point last{};
  // Takes in one MAD's (transport::MadResult first_sent, done), or another span's.
  void Add(std::chrono::steady_clock::time_point sent, std::chrono::steady_clock::time_point done);
  // 0 while nothing was sent.
  double seconds() const;
};

// What became of a query of an optional attribute (PortRcvErrorDetails,
// PortXmitDiscardDetails, PortVLXmitWaitCounters).
enum class DetailsRead : std::uint8_t {
  kNotAsked,
  kRead,         // in the sample
  kUnsupported,  // answered "unsupported attribute" (0x000C): the PMA lacks it
  kLost,         // no answer, or another error status (Busy past its retries, ...)
};

struct PortReading {
  SweepTarget target;
  // Where its counters are in SweepResult::samples; kNone: no trustworthy
  // reading this sweep.
  PackedSamples::Handle sample = PackedSamples::kNone;
  bool answered() const { return sample != PackedSamples::kNone; }
  transport::MadOutcome outcome = transport::MadOutcome::kOk;
  DetailsRead details = DetailsRead::kNotAsked;  // PortRcvErrorDetails
  DetailsRead discard_details = DetailsRead::kNotAsked;
  DetailsRead vl_wait = DetailsRead::kNotAsked;
  // How its counter reads went, in treydock/infiniband_exporter's terms: an
  // error (a non-zero MAD status where the PMA should answer) and a timeout
  // (no answer after every retry), and when they started and ended.
  bool error = false;
  bool timeout = false;
  MadSpan span{};
};

// What a batch's SMPs to one LID came to: one answered (an error status is
// an answer); else every one timed out; else the local port refused some.
enum class SmpOutcome : std::uint8_t { kTimedOut, kRefused, kAnswered };
// Folds one SMP's outcome into its LID's.
void NoteSmp(std::map<std::uint16_t, SmpOutcome>* smps, std::uint16_t lid, transport::MadOutcome outcome);

struct SweepResult {
  std::vector<PortReading> readings;  // in target order
  // The counters of the readings that answered, packed. They go once the
  // collectors that read them have (ReleaseSamples), before the others
  // judge the sweep: link health makes its report while the published one
  // and two port tables are held.
  PackedSamples samples;
  // The counters of a reading that answered; nullopt where it did not, and
  // once they were let go.
  std::optional<PortSample> SampleOf(const PortReading& r) const { return samples.Get(r.sample); }
  void ReleaseSamples() { samples.Clear(); }
  std::map<std::uint64_t, MadTally> mads;  // per node: every request of this sweep to it
  std::size_t failed_ports = 0;
  // Nodes whose LID answered NodeInfo with another GUID: the LIDs moved (an
  // SM restart, Baselid). Their readings are dropped; rediscover.
  std::set<std::uint64_t> moved_nodes;
  // PortInfo of the link targets that answered (state, width, speed only).
  std::map<topology::PortRef, topology::Port> links;
  // What the SMPs of the batch (PortInfo, NodeInfo LID checks) to each LID
  // came to: with the PMA readings, the evidence of SMPs dropped where
  // GMPs answer (topology/access.h).
  std::map<std::uint16_t, SmpOutcome> smps;
  // PortVLXmitWaitCounters of the ports asked for it that answered: the
  // raw 16-bit readings by VL.
  std::map<topology::PortRef, std::array<std::uint16_t, transport::kVlCount>> vl_xmit_wait;
  std::chrono::duration<double> duration{};
};

// Reads counters of `targets`, PortInfo of `links`, NodeInfo of the
// `checks` and the requests of the `own` parts (the collectors' own reads,
// batch.h), all in one pipelined batch. Readings from a LID that answered
// for another node are dropped (and the own parts told, to drop theirs).
// Thread-safety: uses the engine exclusively for its duration.
SweepResult Sweep(const std::vector<SweepTarget>& targets, const std::vector<LinkTarget>& links,
                  const std::vector<LidCheck>& checks, transport::MadEngine& engine,
                  const std::vector<BatchPart*>& own = {});
// Every LID of the targets checked.
inline SweepResult Sweep(const std::vector<SweepTarget>& targets, transport::MadEngine& engine) {
  return Sweep(targets, {}, LidChecks(targets, {}), engine);
}

// How the links read in a sweep differ from the discovered fabric: ports
// down there and up now (a new cable, a link back), the reverse, and links
// up in both that run at another width or speed or in another state now.
// Each is worth re-walking (topology/discovery.h Rediscover).
struct LinkChanges {
  std::size_t came_up = 0;
  std::size_t went_down = 0;
  std::size_t retrained = 0;
  std::size_t activated = 0;  // up in both, but the SM brought it Active (or took it back) since
  // Every port counted above, with what it reads now.
  std::map<topology::PortRef, topology::Port> ports;
  bool any() const { return !ports.empty(); }
};
LinkChanges CompareLinks(const topology::Fabric& fabric, const std::map<topology::PortRef, topology::Port>& links);

// A PortCounters Set for the sticky counters of one port that reached
// `percent` of their field's maximum; nullopt when none did.
struct ClearRequest {
  SweepTarget target;
  std::uint16_t select = 0;  // CounterSelect
  std::uint8_t select2 = 0;  // CounterSelect2
  std::bitset<kCounterCount> counters;
};
std::optional<ClearRequest> ClearNeeded(const SweepTarget& target, const PortSample& sample, int percent);
// Sends the Sets; true at index i when requests[i] was acknowledged.
std::vector<bool> ClearCounters(const std::vector<ClearRequest>& requests, transport::MadEngine& engine);

}  // namespace ibfabric::collectors
