#pragma once
// fabric_jobs: the jobs on this fabric's host ports, for the what-if of a
// fix ("wait for job 4242"). A fabric-scope exporter sees no job: the
// hosts' own exporters do (the jobs collector, local scope, one series
// infiniband_host_port_job_info per HCA port and job), and Prometheus
// scrapes them all. With --jobs.prometheus-url this collector asks that
// Prometheus for those series (GET URL/api/v1/query?query=
// infiniband_host_port_job_info, an instant query: a job that ended is gone
// from its host's next scrape) at most every --jobs.refresh (30s), in the
// background: a slow or absent Prometheus never holds a sweep up, and its
// answer is taken at the first sweep after it came. A series names its
// port by node_guid and port, the fabric's own keys, so no host-name
// mapping is needed; a job is its Slurm id (hpc_job) or its pod
// (namespace/pod). A failed read keeps the last good one and says why
// (logged once per reason in a row). Only where this exporter reports
// topology (fabric scope, shard 0). No MAD.
//
// Part: FabricJobs under "fabric_jobs" (collectors/parts/fabric_jobs.h).
// Metrics: infiniband_fabric_jobs_source_up (1 when the last read
// succeeded), infiniband_fabric_jobs (jobs holding a port of this fabric),
// infiniband_fabric_jobs_read_timestamp_seconds (the last good read).

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "collectors/framework/collector_info.h"
#include "collectors/parts/fabric_jobs.h"

namespace ibfabric::collectors {

struct FabricJobsOptions {
  std::string prometheus_url;                 // --jobs.prometheus-url, without a trailing '/'; empty: off
  std::chrono::milliseconds refresh{30'000};  // --jobs.refresh
};

// Prometheus's answer to the instant query of infiniband_host_port_job_info
// (its HTTP API: {"status":"success","data":{"resultType":"vector",
// "result":[{"metric":{...},"value":[t,"1"]}]}}): each series' port and
// job. A series without a node_guid, a port or a job is skipped; an answer
// that is not that shape is nullopt with why in `error`.
std::optional<std::map<topology::PortRef, std::set<FabricJob>>> ParseJobInfoQuery(const std::string& body,
                                                                                  std::string* error);

// Its declaration (name, help, factory, render, reads, flags): the registry's line.
CollectorInfo FabricJobsCollectorInfo();
std::unique_ptr<Collector> MakeFabricJobsCollector(const CollectorOptions& options);
void RenderFabricJobs(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
