#include "tests/testbed/host_sysfs.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/testbed/process.h"

namespace ibfabric::testbed {

namespace fs = std::filesystem;

HostSysfs::HostSysfs() : base_(MakeTempDir("host-sysfs")), root_(base_ + "/sys"), proc_(base_ + "/proc") {
  fs::create_directories(root_);
  fs::create_directories(proc_);
}
HostSysfs::~HostSysfs() { RemoveTree(base_); }

void HostSysfs::Write(const std::string& path, const std::string& text) {
  const fs::path p = fs::path(root_) / path;
  fs::create_directories(p.parent_path());
  // Whole files replaced at once: a reader never sees half of one.
  const fs::path tmp = p.string() + ".tmp";
  std::ofstream(tmp) << text << "\n";
  fs::rename(tmp, p);
}

std::string HostSysfs::PciFunction(const std::string& address, const std::string& bridges, const std::string& vendor,
                                   const std::string& cls, int numa_node) {
  const std::string dir = "devices/" + bridges + "/" + address;
  Write(dir + "/vendor", vendor);
  Write(dir + "/class", cls);
  Write(dir + "/numa_node", std::to_string(numa_node));
  fs::create_directories(fs::path(root_) / "bus/pci/devices");
  fs::create_directory_symlink(fs::path(root_) / dir, fs::path(root_) / "bus/pci/devices" / address);
  return dir;
}

void HostSysfs::SetPcieLink(const std::string& pci_address, const std::string& speed, int width,
                            const std::string& bridges) {
  const std::string dir = "devices/" + bridges + "/" + pci_address;
  Write(dir + "/current_link_speed", speed);
  Write(dir + "/current_link_width", std::to_string(width));
}

void HostSysfs::AddHca(const std::string& device, std::uint64_t node_guid, const std::string& node_desc,
                       const std::string& pci_address, const std::string& bridges, int numa_node) {
  const std::string pci = PciFunction(pci_address, bridges, "0x15b3", "0x020700", numa_node);  // Mellanox, InfiniBand
  Write(pci + "/max_link_speed", "32.0 GT/s PCIe");
  Write(pci + "/max_link_width", "16");
  SetPcieLink(pci_address, "32.0 GT/s PCIe", 16, bridges);
  const std::string d = "class/infiniband/" + device;
  Write(d + "/node_guid", KernelGuid(node_guid));
  Write(d + "/node_desc", node_desc);
  Write(d + "/fw_ver", "28.39.1002");
  Write(d + "/board_id", "MT_0000000838");
  Write(d + "/hca_type", "MT4129");
  fs::create_directory_symlink(fs::path(root_) / pci, fs::path(root_) / d / "device");
  Write(d + "/ports/1/link_layer", "InfiniBand");
  Write(d + "/ports/1/rate", "400 Gb/sec (4X NDR)");
  SetPortActive(device, 1, true);
}

void HostSysfs::AddVirtualFunction(const std::string& vf_address, const std::string& pf_address,
                                   const std::string& bridges) {
  const std::string vf = PciFunction(vf_address, bridges, "0x15b3", "0x020700", 0);
  fs::create_directory_symlink(fs::path(root_) / "devices" / bridges / pf_address, fs::path(root_) / vf / "physfn");
}

void HostSysfs::AddGpu(const std::string& pci_address, const std::string& uuid, const std::string& bridges,
                       int numa_node) {
  PciFunction(pci_address, bridges, "0x10de", "0x030200", numa_node);  // NVIDIA, 3D controller
  const fs::path info = fs::path(proc_) / "driver/nvidia/gpus" / pci_address / "information";
  fs::create_directories(info.parent_path());
  std::ofstream(info) << "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 0\nGPU UUID: \t " << uuid
                      << "\nVideo BIOS: \t 96.00.99.00.01\nBus Location: \t " << pci_address << "\n";
}

void HostSysfs::SetPortActive(const std::string& device, int port, bool active) {
  const std::string p = "class/infiniband/" + device + "/ports/" + std::to_string(port);
  Write(p + "/state", active ? "4: ACTIVE" : "1: DOWN");
  Write(p + "/phys_state", active ? "5: LinkUp" : "2: Polling");
}

void HostSysfs::SetHwCounter(const std::string& device, int port, const std::string& name, std::uint64_t value) {
  Write("class/infiniband/" + device + "/ports/" + std::to_string(port) + "/hw_counters/" + name,
        std::to_string(value));
}

std::string KernelGuid(std::uint64_t guid) {
  char text[20];
  std::snprintf(text, sizeof text, "%04x:%04x:%04x:%04x", static_cast<unsigned>(guid >> 48 & 0xffff),
                static_cast<unsigned>(guid >> 32 & 0xffff), static_cast<unsigned>(guid >> 16 & 0xffff),
                static_cast<unsigned>(guid & 0xffff));
  return text;
}

}  // namespace ibfabric::testbed
