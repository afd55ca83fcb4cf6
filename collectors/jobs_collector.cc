#include "collectors/jobs_collector.h"

#include <algorithm>
#include <deque>
#include <filesystem>

#include "collectors/framework/render.h"
#include "collectors/parts/host.h"

namespace ibfabric::collectors {
namespace {

using prometheus::MetricType;

class JobsCollector final : public Collector {
 public:
  JobsCollector(const CollectorOptions& o, PodDevices pod_devices)
      : sysfs_(o.host_sysfs),
        proc_(o.Get<JobsOptions>().proc),
        mapping_dir_(o.Get<JobsOptions>().mapping_dir),
        pod_devices_(std::move(pod_devices)) {}

  Schedule schedule() const override { return Schedule::kSweep; }

  Outcome Update(const Cycle& cycle) override {
    if (cycle.scope.kind != topology::ScopeKind::kLocal) return {};
    const auto* readings = cycle.parts->by_collector.Get<HostReadings>(kHostCollector);
    if (!readings || !readings->reading) return {};
    const host::HostReading& reading = *readings->reading;
    auto next = std::make_shared<JobReadings>();
    std::vector<host::DeviceClaim> claims;
    if (!mapping_dir_.empty()) {
      std::vector<std::string> problems;
      auto slurm = host::ReadJobMappingDir(mapping_dir_, &problems);
      // Up where the directory reads whole (a bad line or file is a
      // problem of its own, named in the log, not the source's).
      next->source_up["slurm"] = problems.empty() || !slurm.empty();
      for (const auto& p : problems) Note(cycle, p);
      claims.insert(claims.end(), slurm.begin(), slurm.end());
    }
    if (pod_devices_) {
      std::string error;
      if (auto pods = pod_devices_(&error)) {
        next->source_up["kubernetes"] = true;
        claims.insert(claims.end(), pods->begin(), pods->end());
      } else if (!error.empty()) {
        next->source_up["kubernetes"] = false;
        Note(cycle, error);
      }
    }
    const std::vector<host::Gpu> gpus = claims.empty() ? std::vector<host::Gpu>{} : host::ReadGpus(sysfs_, proc_);
    for (const host::DeviceClaim& c : claims) {
      const auto hca = host::HcaFor(c.device_id, reading, gpus, sysfs_);
      if (!hca) {
        ++next->unmatched_devices[c.holder.source];
        continue;
      }
      for (const host::HostDevice& d : reading.devices) {
        if (d.name != *hca) continue;
        for (const host::HostPort& p : d.ports) next->ports.insert({d.name, p.number, c.holder});
      }
    }
    published_ = std::move(next);
    return {};
  }

  void Publish(Snapshot* parts) const override { parts->by_collector.Set(kJobsCollector, published_); }

 private:
  // A source's trouble, logged the first time it is seen (the last 64
  // kept: not every sweep).
  void Note(const Cycle& cycle, const std::string& what) {
    if (std::find(noted_.begin(), noted_.end(), what) != noted_.end()) return;
    noted_.push_back(what);
    if (noted_.size() > 64) noted_.pop_front();
    cycle.log->Warn("job attribution", "problem=\"" + what + "\"");
  }

  std::string sysfs_, proc_, mapping_dir_;
  PodDevices pod_devices_;
  std::deque<std::string> noted_;
  std::shared_ptr<const JobReadings> published_;
};

// The kubelet's pods, asked each sweep where the socket is: the default
// socket's absence is a host without Kubernetes, not a problem.
PodDevices KubeletPods(const CollectorOptions& options) {
  const std::string socket = options.Get<JobsOptions>().kubelet_socket;
  if (socket.empty() || !options.pod_resources) return nullptr;
  PodDevices ask = options.pod_resources(socket);
  const bool quiet_when_absent = socket == host::kKubeletPodResourcesSocket;
  return [ask, quiet_when_absent, socket](std::string* error) {
    // Asked even when the socket is gone, so that the client drops its
    // connection and a kubelet that comes back is reached at once.
    auto pods = ask(error);
    std::error_code ec;
    if (!pods && quiet_when_absent && !std::filesystem::exists(socket, ec)) error->clear();
    return pods;
  };
}

}  // namespace

std::unique_ptr<Collector> MakeJobsCollector(const CollectorOptions& options) {
  return std::make_unique<JobsCollector>(options, KubeletPods(options));
}

void RenderJobs(const Snapshot& s, const Emit& out) {
  const auto* jobs = s.by_collector.Get<JobReadings>(kJobsCollector);
  const auto* readings = s.by_collector.Get<HostReadings>(kHostCollector);
  if (!jobs || !readings || !readings->reading) return;
  std::map<std::string, const host::HostDevice*> devices;
  for (const host::HostDevice& d : readings->reading->devices) devices[d.name] = &d;
  auto info = Family("infiniband_host_port_job_info",
                     "1 for each job holding an HCA port of this host: a Slurm job (hpc_job) from the mapping "
                     "directory, or a Kubernetes container (namespace, pod, container) given a device that is, "
                     "or sits nearest to, the HCA",
                     MetricType::Gauge);
  for (const JobPort& j : jobs->ports) {
    const auto d = devices.find(j.device);
    const std::uint64_t guid = d == devices.end() ? 0 : host::ParseSysfsGuid(d->second->node_guid);
    Add(info,
        {{"device", j.device},
         {"port", std::to_string(j.port)},
         {"node_guid", guid ? topology::FormatGuid(guid) : ""},
         {"host", d == devices.end() ? "" : HostOfDevice(s, *d->second)},
         {"source", j.holder.source},
         {"hpc_job", j.holder.hpc_job},
         {"namespace", j.holder.pod_namespace},
         {"pod", j.holder.pod},
         {"container", j.holder.container},
         {"resource", j.holder.resource}},
        1);
  }
  EmitNonEmpty(out, info);
  auto up = Family("infiniband_host_job_source_up",
                   "1 where the source of job attribution answered this sweep (slurm: the mapping directory; "
                   "kubernetes: the kubelet's pod-resources API)",
                   MetricType::Gauge);
  for (const auto& [source, ok] : jobs->source_up) Add(up, {{"source", source}}, ok ? 1 : 0);
  EmitNonEmpty(out, up);
  auto unmatched =
      Family("infiniband_host_job_unmatched_devices",
             "Device ids held by jobs that name no HCA of this host nor a GPU near one", MetricType::Gauge);
  for (const auto& [source, ok] : jobs->source_up) {
    const auto it = jobs->unmatched_devices.find(source);
    Add(unmatched, {{"source", source}}, it == jobs->unmatched_devices.end() ? 0 : it->second);
  }
  EmitNonEmpty(out, unmatched);
}

CollectorInfo JobsCollectorInfo() {
  return {
      .name = "jobs",
      .help =
          "In local scope, which jobs hold this host's HCAs: Slurm's mapping directory (--host.job-mapping-dir) and "
          "the kubelet's pod-resources API (--host.kubelet-socket), one _info series per HCA port and job.",
      .make = MakeJobsCollector,
      .render = RenderJobs,
      .reads = {"host"},
      .this_host = true,
      .flags =
          {
              {"host.proc",
               "Where this host's /proc is, for the GPUs' UUIDs (driver/nvidia/gpus) that Kubernetes pods are "
               "given, in local scope.",
               "PATH",
               [](CollectorOptions& o, const std::string& v) { return DirectoryValue(v, &o.Own<JobsOptions>().proc); }},
              {"host.job-mapping-dir",
               "Slurm's job mapping directory, in local scope: one file per device a job holds (an RDMA device such "
               "as mlx5_0, or a GPU index as dcgm-exporter's --hpc-job-mapping-dir), listing the job ids; written by a "
               "prolog, cleaned by an epilog (deploy/slurm/); it may not be there until the first job. Default: none.",
               "DIR",
               [](CollectorOptions& o, const std::string& v) -> std::string {
                 if (v.empty()) return "must not be empty";
                 std::error_code ec;
                 if (std::filesystem::exists(v, ec) && !std::filesystem::is_directory(v, ec))
                   return "'" + v + "' is not a directory";
                 o.Own<JobsOptions>().mapping_dir = v;
                 return "";
               }},
              {"host.kubelet-socket",
               "The kubelet's pod-resources socket, in local scope: which pods hold the host's HCAs, GPUs or their "
               "virtual functions (asked each sweep where the socket is; 'none': never).",
               "PATH",
               [](CollectorOptions& o, const std::string& v) -> std::string {
                 if (v.empty()) return "must not be empty ('none' to never ask)";
                 o.Own<JobsOptions>().kubelet_socket = v == "none" ? "" : v;
                 return "";
               }},
          },
  };
}

}  // namespace ibfabric::collectors
