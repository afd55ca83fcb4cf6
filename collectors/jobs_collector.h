#pragma once
// jobs: which jobs hold this host's HCAs (host/jobs.h), in local scope only,
// at each sweep: a Slurm mapping directory (--host.job-mapping-dir, which a
// prolog and an epilog keep, deploy/slurm/) and the kubelet's pod-resources
// API (--host.kubelet-socket, through CollectorOptions::pod_resources,
// which the exporter connects; asked only where the socket is). Each device id a job holds
// becomes the HCA it names (an RDMA device, an HCA's or its virtual
// function's PCI address, a GPU's nearest HCA), and every port of it.
// No MAD. Reads the host collector's part of the cycle (its devices).
//
// Part: JobReadings under "jobs". Metrics: infiniband_host_port_job_info
// {device,port,node_guid,host,source,hpc_job,namespace,pod,container,
// resource} 1 per HCA port and holder (rules and dashboards join on it,
// never carried on other series; a pod or job that ends is gone from the
// next sweep); infiniband_host_job_source_up{source} (1 where the source
// answered this sweep, for each configured or present source) and
// infiniband_host_job_unmatched_devices{source} (device ids held that name
// no HCA or GPU of this host: an RDMA shared device plugin's, a GPU far
// from every HCA).

#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "collectors/framework/collector_info.h"
#include "host/jobs.h"

namespace ibfabric::collectors {

inline constexpr std::string_view kJobsCollector = "jobs";

struct JobPort {
  std::string device;
  int port = 0;
  host::JobHolder holder;
  auto operator<=>(const JobPort&) const = default;
};

struct JobReadings {
  std::set<JobPort> ports;
  std::map<std::string, bool> source_up;         // "slurm", "kubernetes"
  std::map<std::string, int> unmatched_devices;  // by source
};

// Its flags' options (the host's sysfs is the shared --host.sysfs).
struct JobsOptions {
  std::string proc = "/proc";  // --host.proc: GPUs' UUIDs under driver/nvidia
  std::string mapping_dir;     // --host.job-mapping-dir: Slurm's; empty: none
  // --host.kubelet-socket, connected through CollectorOptions::pod_resources;
  // empty: none.
  std::string kubelet_socket = host::kKubeletPodResourcesSocket;
};

// Its declaration (name, help, factory, render, reads, flags): the registry's line.
CollectorInfo JobsCollectorInfo();
std::unique_ptr<Collector> MakeJobsCollector(const CollectorOptions& options);
void RenderJobs(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
