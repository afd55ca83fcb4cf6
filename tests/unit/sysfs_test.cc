// This host's RDMA devices from sysfs (host/sysfs.h) on fake trees laid
// out as the kernel lays them out (drivers/infiniband/core/sysfs.c, the
// PCI core's current_link_speed and _width): an mlx5 HCA with the
// driver's hw_counters on an InfiniBand port, a RoCE port, an irdma
// device without PCIe link files, a PCIe link below its maximum, a
// counter that is not a number and a missing file; then the host
// collector's series in local scope, and nothing in fabric scope.

#include "host/sysfs.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "collectors/host_collector.h"
#include "tests/unit/collector_bed.h"
#include "topology/hosts.h"

namespace ibfabric::host {
namespace {

namespace fs = std::filesystem;

class Tree {
 public:
  Tree() : root_(fs::temp_directory_path() / ("ibfabric-sysfs-" + std::to_string(::getpid()))) {
    fs::remove_all(root_);
  }
  ~Tree() { fs::remove_all(root_); }
  void File(const std::string& path, const std::string& text) {
    const fs::path p = root_ / path;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
  }
  void Link(const std::string& path, const std::string& target) {
    const fs::path p = root_ / path;
    fs::create_directories(p.parent_path());
    fs::create_directory_symlink(target, p);
  }
  std::string root() const { return root_.string(); }

  // mlx5_0: a ConnectX-7 at 0000:3b:00.0, PCIe Gen5 x16 running Gen4 x8,
  // NUMA node 1; port 1 InfiniBand, active, with counters and the
  // driver's hw_counters (one of which is no number). mlx5_1: a RoCE
  // port. irdma0: no PCIe link files, no board id.
  void Shape() {
    const std::string pci = "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0";
    File(pci + "/current_link_speed", "16.0 GT/s PCIe");
    File(pci + "/current_link_width", "8");
    File(pci + "/max_link_speed", "32.0 GT/s PCIe");
    File(pci + "/max_link_width", "16");
    File(pci + "/numa_node", "1");
    const std::string d = "class/infiniband/mlx5_0";
    Link(d + "/device", (root_ / pci).string());
    File(d + "/fw_ver", "28.39.1002");
    File(d + "/board_id", "MT_0000000834");
    File(d + "/hca_type", "MT4129");
    File(d + "/node_guid", "a088:c203:00ab:cdef");
    File(d + "/node_desc", "gpu0001 mlx5_0");
    File(d + "/ports/1/link_layer", "InfiniBand");
    File(d + "/ports/1/state", "4: ACTIVE");
    File(d + "/ports/1/phys_state", "5: LinkUp");
    File(d + "/ports/1/rate", "400 Gb/sec (4X NDR)");
    File(d + "/ports/1/lid", "0x1a");
    File(d + "/ports/1/counters/symbol_error", "3");
    File(d + "/ports/1/counters/port_xmit_data", "1000");
    File(d + "/ports/1/counters/port_rcv_data", "250");
    File(d + "/ports/1/hw_counters/out_of_buffer", "17");
    File(d + "/ports/1/hw_counters/local_ack_timeout_err", "4");
    File(d + "/ports/1/hw_counters/rnr_nak_retry_err", "0");
    File(d + "/ports/1/hw_counters/req_cqe_error", "N/A");
    File(d + "/ports/1/hw_counters/lifespan", "10");  // a setting (ms), as the kernel writes it
    const std::string roce = "class/infiniband/mlx5_1";
    File(roce + "/fw_ver", "28.39.1002");
    File(roce + "/ports/1/link_layer", "Ethernet");
    File(roce + "/ports/1/state", "4: ACTIVE");
    File(roce + "/ports/1/hw_counters/np_cnp_sent", "123");
    const std::string irdma = "class/infiniband/irdma0";
    File(irdma + "/fw_ver", "1.52");
    File(irdma + "/hca_type", "");
    File(irdma + "/ports/1/link_layer", "Ethernet");
    File(irdma + "/hw_counters/ip4RxPkts", "99");
    File(irdma + "/hw_counters/lifespan", "10");
  }

 private:
  fs::path root_;
};

TEST(HostSysfsTest, DevicesPortsCountersAndThePcieLinkAsTheKernelWritesThem) {
  Tree t;
  t.Shape();
  const HostReading r = ReadSysfs(t.root());
  ASSERT_EQ(r.devices.size(), 3u);
  const HostDevice& irdma = r.devices[0];
  const HostDevice& mlx = r.devices[1];
  const HostDevice& roce = r.devices[2];
  EXPECT_EQ(irdma.name, "irdma0");
  EXPECT_EQ(mlx.name, "mlx5_0");
  EXPECT_EQ(mlx.fw_ver, "28.39.1002");
  EXPECT_EQ(mlx.board_id, "MT_0000000834");
  EXPECT_EQ(mlx.hca_type, "MT4129");
  EXPECT_EQ(mlx.pci_address, "0000:3b:00.0");
  EXPECT_EQ(mlx.numa_node, 1);
  ASSERT_TRUE(mlx.pcie);
  EXPECT_EQ(*mlx.pcie, (PcieLink{16, 8, 32, 16}));
  EXPECT_TRUE(mlx.pcie->degraded()) << "Gen4 x8 where Gen5 x16 is possible";
  ASSERT_EQ(mlx.ports.size(), 1u);
  const HostPort& p = mlx.ports[0];
  EXPECT_EQ(p.number, 1);
  EXPECT_TRUE(p.infiniband());
  EXPECT_EQ(p.state, "ACTIVE");
  EXPECT_EQ(p.phys_state, "LinkUp");
  EXPECT_EQ(p.rate, "400 Gb/sec (4X NDR)");
  EXPECT_EQ(p.lid, 0x1a);
  EXPECT_EQ(p.counters, (std::map<std::string, std::uint64_t>{
                            {"port_rcv_data", 250}, {"port_xmit_data", 1000}, {"symbol_error", 3}}));
  EXPECT_EQ(p.hw_counters, (std::map<std::string, std::uint64_t>{
                               {"local_ack_timeout_err", 4}, {"out_of_buffer", 17}, {"rnr_nak_retry_err", 0}}))
      << "req_cqe_error is no number: left out; lifespan is a setting, no counter";
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0], "class/infiniband/mlx5_0/ports/1/hw_counters/req_cqe_error: not a number");
  EXPECT_FALSE(roce.ports.at(0).infiniband());
  EXPECT_EQ(roce.ports.at(0).lid, 0) << "a RoCE port has no LID";
  EXPECT_EQ(roce.ports.at(0).hw_counters.at("np_cnp_sent"), 123u);
  EXPECT_FALSE(roce.pcie) << "no device link";
  EXPECT_EQ(irdma.board_id, "") << "a missing file: empty, no problem";
  EXPECT_EQ(irdma.hw_counters.at("ip4RxPkts"), 99u) << "the device's own hw_counters";
  EXPECT_EQ(irdma.hw_counters.count("lifespan"), 0u) << "a setting in ms, not a counter";
  EXPECT_EQ(irdma.numa_node, -1);
}

TEST(HostSysfsTest, NoClassDirectoryIsNoDeviceAndNoProblem) {
  const HostReading r = ReadSysfs("/nonexistent/sysfs");
  EXPECT_TRUE(r.devices.empty());
  EXPECT_TRUE(r.problems.empty());
}

TEST(HostSysfsTest, PcieSpeedsAndWhatIsDegraded) {
  EXPECT_EQ(ParsePcieSpeed("16.0 GT/s PCIe"), 16);
  EXPECT_EQ(ParsePcieSpeed("2.5 GT/s"), 2.5);
  EXPECT_EQ(ParsePcieSpeed("Unknown"), 0);
  EXPECT_EQ(ParsePcieSpeed("8 Gb/s"), 0);
  EXPECT_FALSE((PcieLink{32, 16, 32, 16}).degraded());
  EXPECT_TRUE((PcieLink{8, 16, 32, 16}).degraded()) << "Gen3 speed on a Gen5 link";
  EXPECT_FALSE((PcieLink{0, 16, 32, 16}).degraded()) << "an unknown speed says nothing";
}

TEST(HostSysfsTest, NodeGuidsAsTheKernelWritesThem) {
  EXPECT_EQ(ParseSysfsGuid("0002:c903:00a1:b2c4"), 0x0002c90300a1b2c4u);
  EXPECT_EQ(ParseSysfsGuid("E41D:2D03:0060:7B01"), 0xe41d2d0300607b01u);
  EXPECT_EQ(ParseSysfsGuid("0002c90300a1b2c4"), 0u) << "not the kernel's form";
  EXPECT_EQ(ParseSysfsGuid("0002:c903:00a1:b2cg"), 0u);
  EXPECT_EQ(ParseSysfsGuid(""), 0u);
}

}  // namespace
}  // namespace ibfabric::host

namespace ibfabric::collectors {
namespace {

TEST(HostCollectorTest, LocalScopeExportsTheHostsDevicesFabricScopeNothing) {
  ibfabric::host::Tree t;
  t.Shape();
  CollectorOptions o;
  o.host_sysfs = t.root();
  Bed b;
  b.parts.scope.kind = topology::ScopeKind::kLocal;
  auto c = b.Make("host", o);
  b.Run(*c);
  Scrape s = b.Render();
  EXPECT_EQ(s.Value("infiniband_host_port_hw_counters_total",
                    {{"device", "mlx5_0"}, {"port", "1"}, {"counter", "out_of_buffer"}}),
            17);
  EXPECT_EQ(s.Value("infiniband_host_port_counters_total",
                    {{"device", "mlx5_0"}, {"port", "1"}, {"counter", "port_xmit_data"}}),
            4000)
      << "4-octet words as bytes";
  EXPECT_EQ(s.Value("infiniband_host_port_info", {{"device", "mlx5_1"}, {"link_layer", "Ethernet"}}), 1);
  EXPECT_EQ(s.Value("infiniband_host_pcie_link_degraded", {{"device", "mlx5_0"}}), 1);
  EXPECT_EQ(s.Value("infiniband_host_pcie_link_width", {{"device", "mlx5_0"}}), 8);
  EXPECT_EQ(s.Value("infiniband_host_pcie_link_max_transfers_per_second", {{"device", "mlx5_0"}}), 32e9);
  EXPECT_EQ(s.Value("infiniband_host_device_info", {{"device", "mlx5_0"}, {"numa_node", "1"}}), 1);
  EXPECT_EQ(s.Value("infiniband_host_device_hw_counters_total", {{"device", "irdma0"}, {"counter", "ip4RxPkts"}}), 99);
  EXPECT_EQ(s.Value("infiniband_host_sysfs_problems"), 1);
  EXPECT_TRUE(s.Find("infiniband_host_pcie_link_degraded", {{"device", "irdma0"}}).empty()) << "absent, not 0";
  EXPECT_EQ(s.Value("infiniband_host_port_info",
                    {{"device", "mlx5_0"}, {"node_guid", "0xa088c20300abcdef"}, {"host", "gpu0001"}, {"cable", ""}}),
            1)
      << "a GUID the fabric does not know: the description's host, no cable";

  // The device is the fabric's first host: its cable, named as the cable
  // alerts' label_join names it, and the fabric's name for the host.
  const std::uint64_t g = b.f.Guid(b.hosts[0]);
  char kernel[20];
  std::snprintf(kernel, sizeof kernel, "%04x:%04x:%04x:%04x", static_cast<unsigned>(g >> 48 & 0xffff),
                static_cast<unsigned>(g >> 32 & 0xffff), static_cast<unsigned>(g >> 16 & 0xffff),
                static_cast<unsigned>(g & 0xffff));
  t.File("class/infiniband/mlx5_0/node_guid", kernel);
  b.parts.hosts = std::make_shared<topology::HostAnalysis>(topology::AnalyzeHosts(b.fabric, {}));
  b.Run(*c);
  const topology::Port* hp = b.fabric.FindPort({g, 1});
  ASSERT_TRUE(hp && hp->remote);
  const topology::PortRef leaf = *hp->remote;
  const std::string cable =
      g < leaf.node_guid
          ? topology::FormatGuid(g) + "/1/" + topology::FormatGuid(leaf.node_guid) + "/" + std::to_string(leaf.port)
          : topology::FormatGuid(leaf.node_guid) + "/" + std::to_string(leaf.port) + "/" + topology::FormatGuid(g) +
                "/1";
  EXPECT_EQ(b.Render().Value("infiniband_host_port_info", {{"device", "mlx5_0"}, {"host", "cn0001"}, {"cable", cable}}),
            1);

  Bed fabric;
  auto f = fabric.Make("host", o);
  fabric.Run(*f);
  EXPECT_TRUE(fabric.Render().Find("infiniband_host_device_info").empty()) << "fabric scope reads no host";
}

}  // namespace
}  // namespace ibfabric::collectors
