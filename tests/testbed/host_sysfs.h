#pragma once
// A host's sysfs (and the /proc entries the exporter reads) as the kernel
// lays them out, in a temporary directory the exporter reads through
// --host.sysfs and --host.proc: each HCA under class/infiniband/DEV, its
// `device` link to its PCI function under devices/ behind the bridges
// given (bus/pci/devices/ADDR links there too), node_guid in the kernel's
// "xxxx:xxxx:xxxx:xxxx", node_desc as rdma-ndd sets it ("host device"),
// port 1 InfiniBand and ACTIVE, and the driver's hw_counters the tests
// move; GPUs as NVIDIA's PCI functions with their UUIDs under
// proc/driver/nvidia. Removed when it goes.

#include <cstdint>
#include <string>

namespace ibfabric::testbed {

class HostSysfs {
 public:
  HostSysfs();
  ~HostSysfs();
  HostSysfs(const HostSysfs&) = delete;
  HostSysfs& operator=(const HostSysfs&) = delete;

  const std::string& root() const { return root_; }  // --host.sysfs
  const std::string& proc() const { return proc_; }  // --host.proc

  // The bridges a function sits behind, from the root complex:
  // "pci0000:00/0000:00:01.0" (a root port), "pci0000:00/0000:00:01.0/
  // 0000:01:00.0/0000:02:00.0" (a PCIe switch's ports).
  static constexpr const char* kRootPort = "pci0000:00/0000:00:01.0";

  // An mlx5 HCA at `pci_address` (0000:3b:00.0) on a Gen5 x16 link.
  void AddHca(const std::string& device, std::uint64_t node_guid, const std::string& node_desc,
              const std::string& pci_address, const std::string& bridges = kRootPort, int numa_node = 0);
  // A virtual function of the HCA at `pf_address` (SR-IOV), beside it.
  void AddVirtualFunction(const std::string& vf_address, const std::string& pf_address,
                          const std::string& bridges = kRootPort);
  // An NVIDIA GPU (a 3D controller) with its UUID ("GPU-...") as the driver
  // states it in proc/driver/nvidia/gpus/ADDR/information.
  void AddGpu(const std::string& pci_address, const std::string& uuid, const std::string& bridges = kRootPort,
              int numa_node = 0);
  // The PCI function's link now: "16.0 GT/s PCIe", 8 (its maximum stays).
  void SetPcieLink(const std::string& pci_address, const std::string& speed, int width,
                   const std::string& bridges = kRootPort);
  // "4: ACTIVE" / "1: DOWN" as the kernel writes state; phys_state to match.
  void SetPortActive(const std::string& device, int port, bool active);
  void SetHwCounter(const std::string& device, int port, const std::string& name, std::uint64_t value);
  // Writes `text` (and a newline) to ROOT/path, creating its directories,
  // the whole file at once.
  void Write(const std::string& path, const std::string& text);

 private:
  std::string PciFunction(const std::string& address, const std::string& bridges, const std::string& vendor,
                          const std::string& cls, int numa_node);
  std::string base_, root_, proc_;
};

// 0x0002c90300a1b2c4 -> "0002:c903:00a1:b2c4".
std::string KernelGuid(std::uint64_t guid);

}  // namespace ibfabric::testbed
