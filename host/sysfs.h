#pragma once
// What the kernel says of this host's RDMA devices, read from sysfs under
// a root that tests and containers set (--host.sysfs, as node_exporter's
// --path.sysfs): every device under ROOT/class/infiniband, its ports'
// standard counters (ports/N/counters/) and the driver's (ports/N/
// hw_counters/, and the device's own hw_counters/ where the driver has
// them; not hw_counters/lifespan, a setting in ms), its firmware and board id, each port's link layer, state and
// rate, and its PCI function's link (device/current_link_speed and
// _width against max_link_speed and _width) and NUMA node. Pure reads of
// files: nothing goes onto the fabric, nothing is written.
//
// A file that is missing leaves its field empty; one that is there but
// unreadable or not what the kernel writes (a counter that is no number)
// is a problem, named, and its value is left out, never guessed.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ibfabric::host {

// A PCIe link as the kernel writes it: current_link_speed "16.0 GT/s PCIe"
// (or "Unknown"), current_link_width "16", and their max_ twins.
struct PcieLink {
  double speed_gts = 0;  // 0: unknown
  int width = 0;         // 0: unknown
  double max_speed_gts = 0;
  int max_width = 0;
  // Below its maximum in speed or in width (each compared where both are
  // known): a x16 device running x8, or Gen5 at Gen3.
  bool degraded() const;
  bool operator==(const PcieLink&) const = default;
};

struct HostPort {
  int number = 0;
  std::string link_layer;                            // "InfiniBand", "Ethernet" (RoCE), ...
  std::string state;                                 // "ACTIVE" (from "4: ACTIVE")
  std::string phys_state;                            // "LinkUp" (from "5: LinkUp")
  std::string rate;                                  // "400 Gb/sec (4X NDR)"
  std::uint16_t lid = 0;                             // an InfiniBand port's LID (0: none)
  std::map<std::string, std::uint64_t> counters;     // counters/<name>, as the kernel counts them
  std::map<std::string, std::uint64_t> hw_counters;  // hw_counters/<name>
  bool infiniband() const { return link_layer == "InfiniBand"; }
};

struct HostDevice {
  std::string name;  // mlx5_0, irdma0, ...
  std::string fw_ver, board_id, hca_type, node_guid, node_desc;
  std::string pci_address;  // the `device` link's target's name: 0000:3b:00.0 (empty: none)
  // That function's directory under the root, every link followed:
  // devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0.
  std::string pci_path;
  bool virtual_function = false;                     // an SR-IOV virtual function (its PCI function has a physfn)
  std::optional<PcieLink> pcie;                      // where the device is a PCI function that says
  int numa_node = -1;                                // -1: not known (or the kernel's -1)
  std::vector<HostPort> ports;                       // by number
  std::map<std::string, std::uint64_t> hw_counters;  // the device's own hw_counters/ (some drivers)
};

struct HostReading {
  std::vector<HostDevice> devices;    // by name
  std::vector<std::string> problems;  // "class/infiniband/mlx5_0/ports/1/counters/x: not a number"
};

// Reads every device under ROOT/class/infiniband (no such directory: no
// device, no problem).
HostReading ReadSysfs(const std::string& root);

// `path` with every link followed, relative to `root` with its links
// followed ("devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0"); empty where it
// does not resolve or lies outside the root.
std::string PathUnderRoot(const std::string& root, const std::string& path);

// "16.0 GT/s PCIe", "8 GT/s", "2.5 GT/s" -> GT/s; anything else -> 0.
double ParsePcieSpeed(const std::string& text);

// A GUID as the kernel writes node_guid: four groups of four hex digits,
// "0002:c903:00a1:b2c4" -> 0x0002c90300a1b2c4; anything else -> 0.
std::uint64_t ParseSysfsGuid(const std::string& text);

}  // namespace ibfabric::host
