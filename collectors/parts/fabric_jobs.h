#pragma once
// What the fabric_jobs collector publishes (collectors/fabric_jobs_collector.h):
// the jobs on this fabric's host ports as the hosts' own exporters report
// them (infiniband_host_port_job_info, read back from Prometheus), for the
// what-if (blast_radius's /api/v1/whatif): FabricJobs under this name in
// Snapshot::by_collector.

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "topology/fabric.h"

namespace ibfabric::collectors {

inline constexpr std::string_view kFabricJobsCollector = "fabric_jobs";

// A job as its scheduler names it: a Slurm job id, or a Kubernetes pod.
struct FabricJob {
  std::string source;  // "slurm", "kubernetes"
  std::string id;      // "4242"; "team-a/train-0" (namespace/pod)
  auto operator<=>(const FabricJob&) const = default;
};

struct FabricJobs {
  // Each host port (HCA node GUID and port, as the job_info series label
  // them) and the jobs holding it. Ports of another fabric are kept too:
  // they match no port of this one.
  std::map<topology::PortRef, std::set<FabricJob>> at;
  bool known = false;                            // a read has succeeded: `at` is its answer
  std::chrono::system_clock::time_point read{};  // when `at` was read
  std::string error;                             // the last read's failure, one line; empty when it succeeded
};

}  // namespace ibfabric::collectors
