#pragma once
// The preflight (--doctor): what this exporter can see from where it runs
// and what stops it, in a dozen lines, before a deployment. Examine reads
// (a walk as the run would make it, one SMP and one GMP to a sample of the
// nodes, the trap subscription asked as the run asks it and left in place,
// every PMA's ClassPortInfo, NVIDIA switches' AdaptiveRoutingInfo); Judge
// turns what was read into the lines and the verdict, pure. Each line starts with its state:
//   ok    a part that works
//   warn  a part that works less than it should, with what to do
//   fail  a part that does not work, with what to do
//   info  what was found (capabilities, the MAD load)
// and the last line is the verdict: pass (exit 0), degraded (warnings:
// exit 3) or fail (exit 1).

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "topology/access.h"
#include "topology/scope.h"
#include "transport/mad_engine.h"
#include "transport/umad_port.h"

namespace ibfabric::exporter {

struct DoctorOptions {
  std::chrono::milliseconds sweep_interval{10'000};
  std::chrono::milliseconds sweep_rotation{300'000};
  bool m_key_given = false;
  bool subscribe_traps = true;
  // Which ports the run reads (--scope, --shard): the walk stops one hop
  // out in local scope (every host of a DaemonSet running it at once must
  // not walk the whole fabric), and the load counts the ports read.
  topology::Scope scope;
  // The agents the local port could not register (UmadPort::problems).
  std::vector<transport::AgentProblem> agent_problems;
};

// What Examine read.
struct DoctorFindings {
  transport::LocalPortInfo local;
  std::vector<transport::AgentProblem> agent_problems;
  bool m_key_given = false;
  // The local node's NodeInfo (a directed-route SMP of no hop, its own
  // SMA) and its PMA's ClassPortInfo (a GMP to its LID).
  transport::MadOutcome local_smp = transport::MadOutcome::kTimeout;
  transport::MadOutcome local_gmp = transport::MadOutcome::kTimeout;
  // The walk.
  bool walked = false;
  std::size_t switches = 0, cas = 0, walk_smps = 0, unanswered = 0;
  double walk_seconds = 0;
  std::uint16_t sm_lid = 0;  // the local port's MasterSMLID (the walk's, else sysfs)
  // One SMP and one GMP to each sampled LID (nodes of the walk, else the
  // local port's and the SM's), named.
  struct Sampled {
    topology::Access access;
    std::string name;
  };
  std::vector<Sampled> sample;
  // Whether traps were to be asked (not --sm.no-traps); trap -> whether
  // the SA accepted it (empty: not asked, or no SM known).
  bool traps_asked = true;
  std::map<std::uint16_t, bool> traps;
  // PMA ClassPortInfo: nodes asked, answered, with PortCountersExtended,
  // with every counter in it (CapabilityMask2 bit 1).
  std::size_t pma_asked = 0, pma_answered = 0, pma_extended = 0, pma_one_gmp = 0;
  // NVIDIA switches asked AdaptiveRoutingInfo (a vendor SMP), answered.
  std::size_t vendor_asked = 0, vendor_answered = 0;
  // The load a run would put on the fabric: per sweep; per full walk, the
  // graph's SMPs (walk_smps) and the tables' (forwarding tables, P_Key
  // tables, SwitchInfo) and GMPs (ClassPortInfo).
  std::size_t sweep_gmps = 0, sweep_smps = 0;
  std::size_t table_smps = 0, walk_gmps = 0;
};

// Thread-safety: uses the engine exclusively for its duration.
DoctorFindings Examine(transport::MadEngine& engine, const transport::LocalPortInfo& local,
                       const DoctorOptions& options);

struct DoctorReport {
  std::vector<std::string> lines;  // "ok    local port: ...", ...; the verdict last
  int exit_code = 0;               // 0 pass, 3 degraded, 1 fail
};
DoctorReport Judge(const DoctorFindings& f);

}  // namespace ibfabric::exporter
