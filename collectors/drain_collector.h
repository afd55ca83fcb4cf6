#pragma once
// drain: the hosts to keep new jobs off, and those that may have them
// again, from what link_health judged of the hosts' own cables. What a
// scheduler's drain needs (GET /api/v1/drain), consumed by the shipped
// Slurm script (deploy/slurm/ibfabric-drain), NHC check
// (deploy/nhc/ibfabric.nhc) and Kubernetes node condition; the exporter
// itself changes nothing anywhere.
//
// - A host is to be drained while a cable of one of its HCAs (host end and
//   switch end) has an active bad_cable, flapping_link or degraded_link
//   alert, or is read down (a port Disabled on purpose too): a job placed
//   there runs slower than its peers or fails. Each such fault is listed
//   with the alert's id, cause, severity, cable and since; its `reason` is
//   one line an operator would write ("ibfabric: bad_cable cn0001[1] -
//   ib-leaf01[1] since 2026-11-29T19:00:00Z"), the first fault's, with how
//   many more.
// - Once none is left the host is held (still to be drained, `holding`,
//   with when it may come back) for --drain.resume-after (default 10m): a
//   cable that cleared may go bad again. Then it is listed to resume, for a
//   day, or until a fault is back.
// - Hosts are named as the fabric names them (rdma-ndd's "%h", a CA in no
//   host by the first word of its description) and as Slurm knows them
//   (--slurm.node-name-map). Congestion, miswiring and a cable degrading
//   within its limits drain nothing: the host itself is well.
//
// Its history (the hosts it listed, since when each is clean, since when it
// judges) survives a re-exec (Collector::Saved); a restart starts afresh.
//
// Part: DrainList under "drain". Metrics: infiniband_drain_hosts{state}
// (faulty, holding, resume). Route: GET /api/v1/drain[?host=NAME].

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/framework/collector_info.h"
#include "collectors/parts/drain.h"

namespace ibfabric::collectors {

// Its flag's options (--drain.resume-after).
struct DrainOptions {
  std::chrono::milliseconds resume_after{600'000};
};

// Its declaration (name, help, factory, render, reads, flags, routes): the registry's line.
CollectorInfo DrainCollectorInfo();
std::unique_ptr<Collector> MakeDrainCollector(const CollectorOptions& options);
void RenderDrain(const Snapshot& s, const Emit& out);
// Pure: the list as GET /api/v1/drain answers it, of `host` only (its
// fabric or Slurm name) where not empty.
nlohmann::json DrainJson(const DrainList& list, const std::string& host = "");

}  // namespace ibfabric::collectors
