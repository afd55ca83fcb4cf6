#pragma once
// Whether a node's management agents answer this exporter: its SMA
// (NodeInfo by LID, an SMP) and its PMA (ClassPortInfo, a GMP). Where the
// SM set M_Key protection (IBTA 14.2.4; opensm m_key_protection_level 2),
// a Get SMP whose M_Key does not match is dropped without an answer, while
// GMPs carry no M_Key and still answer: an SMP that times out where a GMP
// to the same LID answers says the node is there and drops this
// exporter's SMPs. Reading sends MADs; the rest is plain data.

#include <cstdint>
#include <vector>

#include "transport/mad_engine.h"

namespace ibfabric::topology {

struct Access {
  std::uint16_t lid = 0;
  transport::MadOutcome smp = transport::MadOutcome::kTimeout;  // NodeInfo by LID
  transport::MadOutcome gmp = transport::MadOutcome::kTimeout;  // PMA ClassPortInfo
  std::uint64_t node_guid = 0;                                  // NodeInfo's, when the SMP answered

  // An answer with an error status is an answer: the agent is there.
  static bool Answered(transport::MadOutcome o) {
    return o == transport::MadOutcome::kOk || o == transport::MadOutcome::kRemoteError;
  }
  // The SMP timed out while the GMP to the same LID answered (an SMP the
  // local port refused to send says nothing about the node).
  bool SmpsDropped() const { return smp == transport::MadOutcome::kTimeout && Answered(gmp); }
};

// One SMP and one GMP to each LID (0 and duplicates skipped), in one
// batch; in `lids` order. Thread-safety: uses the engine exclusively.
std::vector<Access> ProbeAccess(transport::MadEngine& engine, const std::vector<std::uint16_t>& lids);

}  // namespace ibfabric::topology
