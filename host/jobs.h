#pragma once
// Which jobs hold which of this host's HCAs, as the two places clusters
// keep it say (dcgm-exporter reads the same two for GPUs):
//
// - Slurm: a mapping directory that a prolog writes and an epilog cleans
//   (deploy/slurm/): one file per device the job holds, named by the
//   device, listing the job ids that hold it, one per line.
// - Kubernetes: the kubelet's pod-resources API (pod_resources.h): each
//   pod's containers and the device ids of the resources they were given.
//
// Either names a device as its allocator knows it; DeviceClaims turn that
// into the HCAs of this host (HcaFor): an RDMA device's name (mlx5_0), a
// PCI address of an HCA or of a virtual function of one (SR-IOV: its
// physfn), or a GPU, by its index in PCI order (nvidia-smi's, CUDA's
// PCI_BUS_ID order), its UUID or its PCI address, as the InfiniBand HCA
// (a physical function) nearest it on PCIe: the one sharing the most
// bridges on the way to the root complex (same PCIe switch first, then the
// same root port, as NCCL pairs GPUs and NICs), else the only one on its
// NUMA node; else none. Pure reads of files.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "host/sysfs.h"

namespace ibfabric::host {

// Where the kubelet serves its pod-resources API (pod_resources.h).
inline constexpr const char* kKubeletPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock";

// Who holds a device: a Slurm job (hpc_job), or a Kubernetes container.
struct JobHolder {
  std::string source;  // "slurm", "kubernetes"
  std::string hpc_job;
  std::string pod_namespace, pod, container;
  std::string resource;  // the Kubernetes resource name (nvidia.com/gpu, rdma/...); empty for Slurm
  auto operator<=>(const JobHolder&) const = default;
};

// A device id a holder was given, as its allocator names it.
struct DeviceClaim {
  std::string device_id;
  JobHolder holder;
};

// Every regular file of `dir` but dot files (locks, lists being
// rewritten): its name the device, each non-empty line a job id
// (surrounding blanks dropped). A file that cannot be read or is over 64
// KiB, or a line that is not a job id (letters, digits, '_', '-', '.',
// '+'), is a problem, named (16 at most), and left out; past 4096 files
// the rest are not read. No directory yet (no job since boot): no claim,
// no problem; something else there: one problem.
std::vector<DeviceClaim> ReadJobMappingDir(const std::string& dir, std::vector<std::string>* problems);

// A GPU of the host: an NVIDIA display or 3D controller (PCI vendor 0x10de,
// class 0x03xxxx) under ROOT/bus/pci/devices, indexed in PCI address order.
struct Gpu {
  int index = 0;
  std::string pci_address;
  std::string pci_path;  // its device directory under the sysfs root, all bridges: devices/pci0000:00/.../ADDR
  std::string uuid;      // "GPU-...", from PROC/driver/nvidia/gpus/ADDR/information; empty where absent
  int numa_node = -1;
};
std::vector<Gpu> ReadGpus(const std::string& sysfs_root, const std::string& proc_root);

// The HCA (its device name in `reading`) a device id names, as said above;
// nullopt where it names nothing of this host's.
std::optional<std::string> HcaFor(const std::string& device_id, const HostReading& reading,
                                  const std::vector<Gpu>& gpus, const std::string& sysfs_root);

}  // namespace ibfabric::host
