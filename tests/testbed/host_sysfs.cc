#include "tests/testbed/host_sysfs.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/testbed/process.h"

namespace ibfabric::testbed {

namespace fs = std::filesystem;

HostSysfs::HostSysfs() : root_(MakeTempDir("host-sysfs")) {}
HostSysfs::~HostSysfs() { RemoveTree(root_); }

void HostSysfs::Write(const std::string& path, const std::string& text) {
  const fs::path p = fs::path(root_) / path;
  fs::create_directories(p.parent_path());
  // Whole files replaced at once, as a reader must never see half of one.
  const fs::path tmp = p.string() + ".tmp";
  std::ofstream(tmp) << text << "\n";
  fs::rename(tmp, p);
}

namespace {
std::string PciPath(const std::string& address) { return "devices/pci0000:00/0000:00:01.0/" + address; }
}  // namespace

void HostSysfs::SetPcieLink(const std::string& pci_address, const std::string& speed, int width) {
  Write(PciPath(pci_address) + "/current_link_speed", speed);
  Write(PciPath(pci_address) + "/current_link_width", std::to_string(width));
}

void HostSysfs::AddHca(const std::string& device, std::uint64_t node_guid, const std::string& node_desc,
                       const std::string& pci_address) {
  const std::string pci = PciPath(pci_address);
  Write(pci + "/current_link_speed", "32.0 GT/s PCIe");
  Write(pci + "/current_link_width", "16");
  Write(pci + "/max_link_speed", "32.0 GT/s PCIe");
  Write(pci + "/max_link_width", "16");
  Write(pci + "/numa_node", "0");
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
