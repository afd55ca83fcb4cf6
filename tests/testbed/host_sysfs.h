#pragma once
// A host's sysfs as the kernel lays it out for its RDMA devices, in a
// temporary directory the exporter reads through --host.sysfs: each HCA
// under class/infiniband/DEV, its `device` link to the PCI function under
// devices/, node_guid in the kernel's "xxxx:xxxx:xxxx:xxxx", node_desc as
// rdma-ndd sets it ("host device"), port 1 InfiniBand and ACTIVE, and the
// driver's hw_counters the tests move. Removed when it goes.

#include <cstdint>
#include <string>

namespace ibfabric::testbed {

class HostSysfs {
 public:
  HostSysfs();
  ~HostSysfs();
  HostSysfs(const HostSysfs&) = delete;
  HostSysfs& operator=(const HostSysfs&) = delete;

  const std::string& root() const { return root_; }

  // An mlx5 HCA at `pci_address` (0000:3b:00.0) on a Gen5 x16 link.
  void AddHca(const std::string& device, std::uint64_t node_guid, const std::string& node_desc,
              const std::string& pci_address);
  // The PCI function's link now: "16.0 GT/s PCIe", 8 (its maximum stays).
  void SetPcieLink(const std::string& pci_address, const std::string& speed, int width);
  // "4: ACTIVE" / "1: DOWN" as the kernel writes state; phys_state to match.
  void SetPortActive(const std::string& device, int port, bool active);
  void SetHwCounter(const std::string& device, int port, const std::string& name, std::uint64_t value);
  // Writes `text` (and a newline) to ROOT/path, creating its directories.
  void Write(const std::string& path, const std::string& text);

 private:
  std::string root_;
};

// 0x0002c90300a1b2c4 -> "0002:c903:00a1:b2c4".
std::string KernelGuid(std::uint64_t guid);

}  // namespace ibfabric::testbed
