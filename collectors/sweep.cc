#include "collectors/sweep.h"

#include "transport/attributes.h"

namespace ibfabric::collectors {

using transport::MadOutcome;

std::vector<SweepTarget> SweepTargets(const topology::Fabric& fabric,
                                      const std::set<topology::PortRef>& remembered) {
  std::vector<SweepTarget> out;
  for (const auto& node : fabric.nodes()) {
    for (const auto& port : node.ports) {
      const topology::PortRef ref{node.guid, port.number};
      const bool wanted = node.kind != topology::NodeKind::kSwitch || port.link_up() ||
                          remembered.count(ref) > 0;
      if (wanted && port.lid != 0) out.push_back({ref, port.lid});
    }
  }
  return out;
}

SweepResult Sweep(const std::vector<SweepTarget>& targets, transport::MadEngine& engine) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<transport::MadRequest> reqs;
  reqs.reserve(targets.size() * 2);
  for (const auto& t : targets) {
    reqs.push_back(transport::PortCountersQuery(t.lid, t.port.port));
    reqs.push_back(transport::PortCountersExtendedQuery(t.lid, t.port.port));
  }
  const auto results = engine.Run(reqs);

  SweepResult out;
  out.readings.reserve(targets.size());
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const auto& basic = results[2 * i];
    const auto& ext = results[2 * i + 1];
    PortReading r{targets[i], std::nullopt, basic.outcome};
    if (basic.outcome == MadOutcome::kOk) {
      const auto pc = transport::DecodePortCounters(basic.response);
      std::optional<transport::PortCountersExtended> pce;
      if (ext.outcome == MadOutcome::kOk) pce = transport::DecodePortCountersExtended(ext.response);
      // A reply for another port than asked is not this port's reading.
      if (pc.port_select != targets[i].port.port ||
          (pce && pce->port_select != targets[i].port.port)) {
        r.outcome = MadOutcome::kRemoteError;
      } else {
        PortSample s = SampleFrom(pc, pce ? &*pce : nullptr);
        if (ext.outcome == MadOutcome::kTimeout || ext.outcome == MadOutcome::kSendError) {
          // Lost, not unsupported: skip the data counters this sweep rather
          // than switch them to the 32-bit fields for one reading.
          for (Counter c : {Counter::kXmitData, Counter::kRcvData, Counter::kXmitPkts,
                            Counter::kRcvPkts}) {
            s.present.reset(Index(c));
          }
        }
        r.sample = s;
      }
    }
    if (!r.sample) ++out.failed_ports;
    out.readings.push_back(std::move(r));
  }
  out.duration = std::chrono::steady_clock::now() - start;
  return out;
}

}  // namespace ibfabric::collectors
