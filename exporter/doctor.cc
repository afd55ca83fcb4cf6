#include "exporter/doctor.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "collectors/reads/sweep.h"
#include "exporter/trap_subscription.h"
#include "exporter/walk_schedule.h"
#include "topology/adaptive_routing.h"
#include "topology/discovery.h"
#include "topology/scope.h"
#include "transport/attributes.h"

namespace ibfabric::exporter {
namespace {

using transport::MadOutcome;

constexpr std::size_t kSample = 8;  // nodes asked one SMP and one GMP

// Up to kSample nodes with a LID other than the local one, half of them
// CAs where there are (hosts are where a limited P_Key shows), each kind
// spread evenly over the fabric's order.
std::vector<DoctorFindings::Sampled> SampleOf(const topology::Fabric& fabric, std::uint64_t local_guid) {
  std::vector<const topology::Node*> switches, cas;
  for (const auto& n : fabric.nodes()) {
    if (n.guid == local_guid || n.lid == 0) continue;
    (n.kind == topology::NodeKind::kSwitch ? switches : cas).push_back(&n);
  }
  const std::size_t want_cas =
      std::min(cas.size(), std::max(kSample / 2, kSample - std::min(switches.size(), kSample)));
  const std::size_t want_switches = std::min(switches.size(), kSample - want_cas);
  std::vector<DoctorFindings::Sampled> out;
  for (const auto& [nodes, k] : {std::pair{&switches, want_switches}, std::pair{&cas, want_cas}}) {
    for (std::size_t i = 0; i < k; ++i) {
      const topology::Node* n = (*nodes)[i * nodes->size() / k];
      DoctorFindings::Sampled s;
      s.access.lid = n->lid;
      s.name = n->description.empty() ? topology::FormatGuid(n->guid) : n->description;
      out.push_back(s);
    }
  }
  return out;
}

std::string Plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The walk from this host (one hop in local scope): the fabric, and this
// host's node GUID; an empty fabric when the local SMA did not answer or
// the walk failed.
topology::Fabric ExamineWalk(transport::MadEngine& engine, const DoctorOptions& options, DoctorFindings& f,
                             std::uint64_t* local_guid) {
  topology::Fabric fabric;
  if (f.local_smp != MadOutcome::kOk) return fabric;
  const auto start = std::chrono::steady_clock::now();
  topology::DiscoverOptions walk;
  if (options.scope.kind == topology::ScopeKind::kLocal) walk.max_hops = 1;
  topology::DiscoveryResult d = topology::Discover(engine, walk);
  f.walk_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  f.walked = d.ok;
  f.walk_smps = d.smps;
  f.unanswered = d.unanswered.size();
  if (d.ok) {
    fabric = std::move(d.fabric);
    *local_guid = d.local_node_guid;
    f.switches = fabric.switch_count();
    f.cas = fabric.ca_count();
    const topology::Port* p = fabric.FindPort({d.local_node_guid, d.local_port});
    if (p && p->sm_lid != 0) f.sm_lid = p->sm_lid;
  }
  return fabric;
}

// The sample: nodes of the walk, else what is known without one; each
// asked an SMP and a GMP.
void ExamineSample(transport::MadEngine& engine, const transport::LocalPortInfo& local, const topology::Fabric& fabric,
                   std::uint64_t local_guid, DoctorFindings& f) {
  if (f.walked) {
    f.sample = SampleOf(fabric, local_guid);
  } else {
    const auto add = [&](std::uint16_t lid, const char* name) {
      DoctorFindings::Sampled s;
      s.access.lid = lid;
      s.name = name;
      f.sample.push_back(s);
    };
    if (local.lid != 0) add(local.lid, "this host");
    if (f.sm_lid != 0 && f.sm_lid != local.lid) add(f.sm_lid, "the SM");
  }
  std::vector<std::uint16_t> lids;
  for (const auto& s : f.sample) lids.push_back(s.access.lid);
  for (const topology::Access& a : topology::ProbeAccess(engine, lids)) {
    for (auto& s : f.sample) {
      if (s.access.lid == a.lid) s.access = a;
    }
  }
}

// Traps: subscribed as the run subscribes (left in place: the SA keeps
// one subscription per port and trap, which a running exporter on this
// port shares; withdrawing it would end that one's too).
void ExamineTraps(transport::MadEngine& engine, const DoctorOptions& options, DoctorFindings& f) {
  f.traps_asked = options.subscribe_traps;
  if (options.subscribe_traps && f.sm_lid != 0) {
    std::vector<transport::MadRequest> sets;
    for (std::uint16_t t : TrapSubscription::kTraps) sets.push_back(transport::InformInfoSubscribe(f.sm_lid, t));
    const auto accepted = engine.Run(sets);
    for (std::size_t i = 0; i < sets.size(); ++i) {
      f.traps[TrapSubscription::kTraps[i]] = accepted[i].outcome == MadOutcome::kOk;
    }
  }
}

// What the PMAs can do (and the switches' vendor SMPs), and what a run
// would send: a sweep's GMPs and SMPs, a full walk's tables.
void ExamineLoad(transport::MadEngine& engine, const DoctorOptions& options, const topology::Fabric& fabric,
                 std::uint64_t local_guid, DoctorFindings& f) {
  const collectors::CapabilityMap caps = collectors::ReadCapabilities(fabric, engine);
  for (const auto& n : fabric.nodes()) f.pma_asked += n.lid != 0 ? 1 : 0;
  for (const auto& [guid, c] : caps) {
    ++f.pma_answered;
    f.pma_extended += c.Extended() ? 1 : 0;
    f.pma_one_gmp += c.AdditionalExtended() ? 1 : 0;
  }
  for (const auto& n : fabric.nodes()) f.vendor_asked += topology::AsksAdaptiveRouting(n) ? 1 : 0;
  if (f.vendor_asked > 0) f.vendor_answered = topology::ReadAdaptiveRouting(fabric, engine).switches.size();

  // What a run reads: the ports in its scope (fabric_tracker.h).
  auto targets = collectors::SweepTargets(fabric, {}, caps);
  auto links = collectors::LinkTargets(fabric);
  if (!options.scope.everything()) {
    const std::set<topology::PortRef> read = topology::PortsInScope(fabric, options.scope, local_guid);
    std::erase_if(targets, [&](const auto& t) { return !read.count(t.port); });
    std::erase_if(links, [&](const auto& t) { return !read.count(t.port); });
  }
  for (const auto& t : targets) f.sweep_gmps += (!t.caps.AdditionalExtended() && t.caps.Extended()) ? 2 : 1;
  const std::size_t checks = collectors::LidChecks(targets, links).size();
  // A full walk's tables: per switch its SwitchInfo and one LFT block a
  // 64 LIDs (IBTA 14.2.5.10) up to the highest LID, and a P_Key block per
  // port (one block of 32 holds the usual table); a ClassPortInfo GMP per node.
  std::uint16_t top = 0;
  std::size_t ports = 0;
  for (const auto& n : fabric.nodes()) {
    top = std::max(top, n.lid);
    for (const auto& p : n.ports) {
      top = std::max(top, p.lid);
      ports += p.link_up() ? 1 : 0;
    }
  }
  f.table_smps = f.switches * (1 + (top + 64) / 64) + ports;
  f.walk_gmps = f.pma_asked;
  const std::size_t rounds = static_cast<std::size_t>(
      std::max<std::uint64_t>(1, SweepsPerRotation(options.sweep_interval, options.sweep_rotation)));
  f.sweep_smps = (links.size() + rounds - 1) / rounds + (checks + rounds - 1) / rounds + 1;  // and the local PortInfo
}

}  // namespace

DoctorFindings Examine(transport::MadEngine& engine, const transport::LocalPortInfo& local,
                       const DoctorOptions& options) {
  DoctorFindings f;
  f.local = local;
  f.m_key_given = options.m_key_given;
  f.agent_problems = options.agent_problems;
  f.sm_lid = local.sm_lid;
  // A port that is not Active (or has no LID yet) reaches nothing by LID:
  // only its own SMA is asked.
  const bool active = local.state == 4 && local.lid != 0;
  std::vector<transport::MadRequest> first{transport::NodeInfoQuery(transport::MadAddress::Directed({}))};
  if (active) first.push_back(transport::PerfClassPortInfoQuery(local.lid));
  const auto answers = engine.Run(first);
  f.local_smp = answers[0].outcome;
  if (active) f.local_gmp = answers[1].outcome;
  if (!active) return f;
  std::uint64_t local_guid = 0;
  const topology::Fabric fabric = ExamineWalk(engine, options, f, &local_guid);
  ExamineSample(engine, local, fabric, local_guid, f);
  ExamineTraps(engine, options, f);
  if (f.walked) ExamineLoad(engine, options, fabric, local_guid, f);
  return f;
}

namespace {

// The report's lines as they are said ("state what: text"), and the
// verdict they add up to.
class Lines {
 public:
  void Say(const char* state, const std::string& what, const std::string& text) {
    std::string line = state;
    line.resize(6, ' ');
    report_.lines.push_back(line + what + ": " + text);
    if (std::string(state) == "warn") ++warnings_;
    if (std::string(state) == "fail") failed_ = true;
  }
  // fail: 1, degraded (a warning): 3, pass: 0.
  DoctorReport Verdict() && {
    if (failed_) {
      report_.lines.push_back("fail  verdict: fail (the exporter would not see the fabric from here)");
      report_.exit_code = 1;
    } else if (warnings_ > 0) {
      report_.lines.push_back("warn  verdict: degraded (" +
                              Plural(static_cast<std::size_t>(warnings_), "warning", "warnings") + ")");
      report_.exit_code = 3;
    } else {
      report_.lines.push_back("ok    verdict: pass");
      report_.exit_code = 0;
    }
    return std::move(report_);
  }

 private:
  DoctorReport report_;
  int warnings_ = 0;
  bool failed_ = false;
};

bool Active(const transport::LocalPortInfo& l) { return l.state == 4 && l.lid != 0; }
bool SmpLocal(const DoctorFindings& f) { return f.local_smp == transport::MadOutcome::kOk; }
// No SMP can be sent: the directed-route agent did not register.
bool NoSmps(const DoctorFindings& f) {
  return std::any_of(f.agent_problems.begin(), f.agent_problems.end(), [](const transport::AgentProblem& p) {
    return p.mgmt_class == transport::MgmtClass::kSubnDirectRoute;
  });
}
std::string KeyAdvice(const DoctorFindings& f) {
  return f.m_key_given ? "the M_Key given does not match the SM's: give its current one"
                       : "give the SM's M_Key with --ib.m-key-file=FILE";
}

// The local port: Active with a LID, and an SM known.
void JudgeLocalPort(const DoctorFindings& f, Lines& lines) {
  const transport::LocalPortInfo& l = f.local;
  const bool active = Active(f.local);
  const std::string where = l.ca_name + " port " + std::to_string(l.port);
  if (!active) {
    lines.Say("fail", "local port",
              where + " is not Active with a LID (state " + std::to_string(l.state) + ", LID " + std::to_string(l.lid) +
                  "): check the cable and that an SM runs");
  } else if (f.sm_lid == 0) {
    lines.Say("warn", "local port", where + ", LID " + std::to_string(l.lid) + ", no SM known (MasterSMLID 0)");
  } else {
    lines.Say("ok", "local port", where + ", LID " + std::to_string(l.lid) + ", SM at LID " + std::to_string(f.sm_lid));
  }
}

// Where SMPs and GMPs leave from, and the agents that did not register.
void JudgeManagement(const DoctorFindings& f, Lines& lines) {
  const transport::LocalPortInfo& l = f.local;
  if (l.split()) {
    lines.Say("info", "management",
              "SMPs leave from " + l.smi_ca_name + " port " + std::to_string(l.smi_port) +
                  " (the SMI sub-device sharing the port's GUID), GMPs from " + l.ca_name + " port " +
                  std::to_string(l.port));
  }
  if (l.plane != 0) {
    lines.Say("info", "planes",
              "plane " + std::to_string(l.plane) + " of " + std::to_string(l.planes) +
                  " of a multi-plane HCA; the exporter reads each plane as a fabric of its own (label plane), this "
                  "examines this one; another with --ib.ca=" +
                  l.smi_ca_name + " --ib.port=N");
  }
  for (const transport::AgentProblem& p : f.agent_problems) {
    const bool vital =
        p.mgmt_class == transport::MgmtClass::kSubnDirectRoute || p.mgmt_class == transport::MgmtClass::kPerformance;
    lines.Say(vital ? "fail" : "warn", "mad agents", p.line);
  }
}

// The P_Key GMPs leave on.
void JudgePKey(const DoctorFindings& f, Lines& lines) {
  const transport::LocalPortInfo& l = f.local;
  if (l.pkey == 0) {
    lines.Say("info", "p_key", "index " + std::to_string(l.pkey_index) + ", the port's P_Key table unknown");
  } else if (l.pkey == 0xffff) {
    lines.Say("ok", "p_key", "index " + std::to_string(l.pkey_index) + " = 0xffff, the full-member default");
  } else {
    std::string full =
        " (no entry is 0xffff: make this port a full member in the SM's partitions.conf, e.g. Default=0x7fff : "
        "ALL=limited, <this port's GUID>=full;)";
    for (std::size_t i = l.pkeys.size(); i-- > 0;) {
      if (l.pkeys[i] == 0xffff) full = " (--ib.pkey-index=" + std::to_string(i) + " is 0xffff)";
    }
    lines.Say("warn", "p_key",
              "index " + std::to_string(l.pkey_index) + " = " + transport::FormatPKey(l.pkey) +
                  ((l.pkey & 0x8000) ? ", not the default partition's: nodes outside it will not answer GMPs"
                                     : ", a limited member: the PMAs of other limited members will not answer, each "
                                       "request raises a Bad P_Key trap at the SM, and their traps do not reach "
                                       "this exporter") +
                  full);
  }
}

// SMPs: the local SMA, then M_Key.
void JudgeSmps(const DoctorFindings& f, Lines& lines) {
  const bool active = Active(f.local);
  const std::string key = KeyAdvice(f);
  if (NoSmps(f)) {
    lines.Say("fail", "smps", "none can be sent from this port (see mad agents)");
  } else if (SmpLocal(f)) {
    lines.Say("ok", "smps", std::string("this host's NodeInfo answers") + (f.m_key_given ? " (M_Key given)" : ""));
  } else if (!active) {
    lines.Say("fail", "smps",
              "this host's NodeInfo does not answer either: the HCA, its driver or umad access is at fault");
  } else if (topology::Access::Answered(f.local_gmp)) {
    lines.Say("fail", "smps",
              "this host's NodeInfo (SMP) goes unanswered while its PMA (GMP) answers: the fabric looks "
              "M_Key-protected; " +
                  key);
  } else {
    lines.Say("fail", "smps",
              "neither this host's SMA nor its PMA answers: the HCA, its driver or umad access is at fault");
  }
}

// The walk.
void JudgeWalk(const DoctorFindings& f, Lines& lines) {
  const bool active = Active(f.local);
  if (f.walked) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.2f", f.walk_seconds);
    const std::string found = Plural(f.switches, "switch", "switches") + ", " + Plural(f.cas, "CA", "CAs") + " in " +
                              seconds + " s, " + std::to_string(f.walk_smps) + " SMPs";
    if (f.unanswered == 0) {
      lines.Say("ok", "walk", found);
    } else {
      lines.Say("warn", "walk",
                found + "; " + std::to_string(f.unanswered) +
                    " facts got no answer (lost MADs, dead nodes, or nodes that drop SMPs)");
    }
  } else if (!active) {
    lines.Say("fail", "walk", "skipped: the local port is not Active");
  } else if (!SmpLocal(f)) {
    lines.Say("fail", "walk", "not possible: this host's NodeInfo does not answer");
  } else {
    lines.Say("fail", "walk", "failed after this host's NodeInfo answered (see the log)");
  }
}

// The sample: SMPs and GMPs at the same LIDs.
void JudgeSample(const DoctorFindings& f, Lines& lines) {
  const transport::LocalPortInfo& l = f.local;
  const bool active = Active(f.local);
  std::size_t smps = 0, gmps = 0;
  std::vector<std::string> dropped, no_gmp;
  for (const auto& s : f.sample) {
    const bool smp = topology::Access::Answered(s.access.smp);
    const bool gmp = topology::Access::Answered(s.access.gmp);
    smps += smp ? 1 : 0;
    gmps += gmp ? 1 : 0;
    const std::string who = s.name + " (LID " + std::to_string(s.access.lid) + ")";
    if (s.access.SmpsDropped()) dropped.push_back(who);
    if (!gmp && smp) no_gmp.push_back(who);
  }
  const std::string counts = "SMPs answer at " + std::to_string(smps) + " of " + std::to_string(f.sample.size()) +
                             ", GMPs at " + std::to_string(gmps);
  const auto first_of = [](const std::vector<std::string>& v) {
    return v.front() + (v.size() > 1 ? " and " + std::to_string(v.size() - 1) + " more" : "");
  };
  if (!active) {
    lines.Say("fail", "sample", "skipped: the local port is not Active");
  } else if (f.sample.empty()) {
    lines.Say("warn", "sample", "no node with a LID to ask");
  } else if (!dropped.empty()) {
    lines.Say("fail", "sample",
              counts + ": " + first_of(dropped) + " drop SMPs but answer GMPs: M_Key protection; " + KeyAdvice(f));
  } else if (!no_gmp.empty()) {
    const bool limited = l.pkey != 0 && (l.pkey & 0x8000) == 0;
    lines.Say("warn", "sample",
              counts + ": the PMA of " + first_of(no_gmp) + " does not answer" +
                  (limited ? " on the limited P_Key " + transport::FormatPKey(l.pkey) +
                                 ": a limited member drops it (see p_key)"
                           : " (a PMA that is down, or a P_Key it does not share)"));
  } else {
    lines.Say("ok", "sample", counts);
  }
}

// Traps.
void JudgeTraps(const DoctorFindings& f, Lines& lines) {
  const bool active = Active(f.local);
  if (!active) {
    lines.Say("fail", "traps", "skipped: the local port is not Active");
  } else if (!f.traps_asked) {
    lines.Say("info", "traps", "not asked (--sm.no-traps): changes are found by the sweeps' rotation");
  } else if (f.traps.empty()) {
    lines.Say("warn", "traps", "no SM known to ask: changes are found by the sweeps' rotation");
  } else {
    std::string accepted, refused;
    for (const auto& [trap, ok] : f.traps) {
      std::string& list = ok ? accepted : refused;
      list += (list.empty() ? "" : ", ") + std::to_string(trap);
    }
    if (refused.empty()) {
      lines.Say("ok", "traps",
                "the SA at LID " + std::to_string(f.sm_lid) + " accepts traps " + accepted +
                    " (whether it delivers them is judged while running: infiniband_exporter_traps_delivering)");
    } else {
      lines.Say("warn", "traps",
                "the SA at LID " + std::to_string(f.sm_lid) + " refuses or does not answer traps " + refused +
                    ": changes are found by the sweeps' rotation");
    }
  }
}

// What the walk found the PMAs and switches can do, and the MAD load.
void JudgeCapabilities(const DoctorFindings& f, Lines& lines) {
  if (f.walked) {
    lines.Say("info", "capabilities",
              "PortCountersExtended at " + std::to_string(f.pma_extended) + " of " + std::to_string(f.pma_answered) +
                  " PMAs (" + std::to_string(f.pma_asked) + " asked), every counter in one GMP at " +
                  std::to_string(f.pma_one_gmp) + "; vendor SMPs (AdaptiveRoutingInfo) answered by " +
                  std::to_string(f.vendor_answered) + " of " + std::to_string(f.vendor_asked) +
                  " NVIDIA switches; RS-FEC counters are not read by this version");
    if (f.vendor_asked > 0 && f.vendor_answered == 0) {
      lines.Say("warn", "vendor smps",
                "none of " + Plural(f.vendor_asked, "NVIDIA switch", "NVIDIA switches") +
                    " answers AdaptiveRoutingInfo: whether they route adaptively is unknown, and routing balance is "
                    "judged on the static tables; check that their firmware answers vendor SMPs");
    }
    lines.Say("info", "mad load",
              "a sweep: ~" + std::to_string(f.sweep_gmps) + " GMPs and ~" + std::to_string(f.sweep_smps) +
                  " SMPs; a full walk: " + std::to_string(f.walk_smps) + " SMPs for the graph, ~" +
                  std::to_string(f.table_smps) + " for the tables and " + std::to_string(f.walk_gmps) + " GMPs");
  }
}

}  // namespace

DoctorReport Judge(const DoctorFindings& f) {
  Lines lines;
  JudgeLocalPort(f, lines);
  JudgeManagement(f, lines);
  JudgePKey(f, lines);
  JudgeSmps(f, lines);
  JudgeWalk(f, lines);
  JudgeSample(f, lines);
  JudgeTraps(f, lines);
  JudgeCapabilities(f, lines);
  return std::move(lines).Verdict();
}

}  // namespace ibfabric::exporter
