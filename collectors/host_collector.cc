#include "collectors/host_collector.h"

#include "collectors/framework/render.h"

namespace ibfabric::collectors {
namespace {

using prometheus::MetricType;

class HostCollector final : public Collector {
 public:
  explicit HostCollector(std::string root) : root_(std::move(root)) {}

  Schedule schedule() const override { return Schedule::kSweep; }

  Outcome Update(const Cycle& cycle) override {
    if (cycle.scope.kind != topology::ScopeKind::kLocal) return {};
    auto next = std::make_shared<HostReadings>();
    next->reading = std::make_shared<const host::HostReading>(host::ReadSysfs(root_));
    published_ = std::move(next);
    return {};
  }

  void Publish(Snapshot* parts) const override { parts->by_collector.Set(kHostCollector, published_); }

 private:
  std::string root_;
  std::shared_ptr<const HostReadings> published_;
};

// The kernel counts the data counters in 4-octet words.
double CounterValue(const std::string& name, std::uint64_t v) {
  return static_cast<double>(v) * (name == "port_xmit_data" || name == "port_rcv_data" ? 4 : 1);
}

}  // namespace

std::unique_ptr<Collector> MakeHostCollector(const CollectorOptions& options) {
  return std::make_unique<HostCollector>(options.host_sysfs);
}

void RenderHost(const Snapshot& s, const Emit& out) {
  const auto* readings = s.by_collector.Get<HostReadings>(kHostCollector);
  if (!readings || !readings->reading) return;
  const host::HostReading& r = *readings->reading;
  auto info = Family("infiniband_host_device_info",
                     "This host's RDMA device as its kernel shows it (sysfs): firmware, board id, type, node GUID, "
                     "its PCI function and NUMA node",
                     MetricType::Gauge);
  auto ports = Family("infiniband_host_port_info",
                      "A port of this host's RDMA device: its link layer (InfiniBand, or Ethernet for RoCE), state, "
                      "physical state and rate as the kernel shows them; its node GUID, host and the cable it is on "
                      "(as the cable alerts' `cable` label names it) where the fabric shows them",
                      MetricType::Gauge);
  auto counters = Family("infiniband_host_port_counters_total",
                         "The port's standard counters as the kernel keeps them (counters/, by their sysfs names; "
                         "port_xmit_data and port_rcv_data in bytes)",
                         MetricType::Counter);
  auto hw = Family("infiniband_host_port_hw_counters_total",
                   "The driver's counters of the port (hw_counters/, by their sysfs names: out_of_buffer, "
                   "local_ack_timeout_err, rnr_nak_retry_err, ...)",
                   MetricType::Counter);
  auto device_hw = Family("infiniband_host_device_hw_counters_total",
                          "The driver's counters of the device itself (its hw_counters/)", MetricType::Counter);
  auto speed = Family("infiniband_host_pcie_link_transfers_per_second",
                      "The device's PCIe link speed now (current_link_speed)", MetricType::Gauge);
  auto max_speed = Family("infiniband_host_pcie_link_max_transfers_per_second",
                          "The device's PCIe link speed at most (max_link_speed)", MetricType::Gauge);
  auto width = Family("infiniband_host_pcie_link_width", "The device's PCIe link lanes now (current_link_width)",
                      MetricType::Gauge);
  auto max_width = Family("infiniband_host_pcie_link_max_width",
                          "The device's PCIe link lanes at most (max_link_width)", MetricType::Gauge);
  auto degraded = Family("infiniband_host_pcie_link_degraded",
                         "1 where the device's PCIe link runs below its maximum speed or width (a x16 HCA at x8, "
                         "Gen5 at Gen3): it caps the HCA's bandwidth",
                         MetricType::Gauge);
  for (const host::HostDevice& d : r.devices) {
    Add(info,
        {{"device", d.name},
         {"firmware_version", d.fw_ver},
         {"board_id", d.board_id},
         {"hca_type", d.hca_type},
         {"node_guid",
          host::ParseSysfsGuid(d.node_guid) ? topology::FormatGuid(host::ParseSysfsGuid(d.node_guid)) : d.node_guid},
         {"pci_address", d.pci_address},
         {"numa_node", std::to_string(d.numa_node)}},
        1);
    for (const auto& [name, v] : d.hw_counters) Add(device_hw, {{"device", d.name}, {"counter", name}}, v);
    if (d.pcie) {
      const host::PcieLink& l = *d.pcie;
      const std::vector<prometheus::ClientMetric::Label> at{{"device", d.name}};
      if (l.speed_gts > 0) Add(speed, at, l.speed_gts * 1e9);
      if (l.max_speed_gts > 0) Add(max_speed, at, l.max_speed_gts * 1e9);
      if (l.width > 0) Add(width, at, l.width);
      if (l.max_width > 0) Add(max_width, at, l.max_width);
      Add(degraded, at, l.degraded() ? 1 : 0);
    }
    const std::uint64_t guid = host::ParseSysfsGuid(d.node_guid);
    const std::string host = HostOfDevice(s, d);
    for (const host::HostPort& p : d.ports) {
      const std::string port = std::to_string(p.number);
      std::string cable;
      if (guid && p.infiniband() && s.fabric && p.number < 256) {
        const topology::PortRef end{guid, static_cast<std::uint8_t>(p.number)};
        const topology::Port* fp = s.fabric->FindPort(end);
        if (fp && fp->remote) cable = CableId(topology::CableBetween(end, *fp->remote));
      }
      Add(ports,
          {{"device", d.name},
           {"port", port},
           {"node_guid", guid ? topology::FormatGuid(guid) : ""},
           {"host", host},
           {"cable", cable},
           {"link_layer", p.link_layer},
           {"state", p.state},
           {"phys_state", p.phys_state},
           {"rate", p.rate}},
          1);
      for (const auto& [name, v] : p.counters)
        Add(counters, {{"device", d.name}, {"port", port}, {"counter", name}}, CounterValue(name, v));
      for (const auto& [name, v] : p.hw_counters)
        Add(hw, {{"device", d.name}, {"port", port}, {"counter", name}}, static_cast<double>(v));
    }
  }
  for (auto* f : {&info, &ports, &counters, &hw, &device_hw, &speed, &max_speed, &width, &max_width, &degraded})
    EmitNonEmpty(out, *f);
  EmitOne(out, "infiniband_host_sysfs_problems",
          "Files of this host's RDMA devices in sysfs that could not be read or were not what the kernel writes "
          "(their values are left out)",
          MetricType::Gauge, static_cast<double>(r.problems.size()));
}

CollectorInfo HostCollectorInfo() {
  return {
      .name = "host",
      .help =
          "In local scope, this host's RDMA devices as its kernel shows them (sysfs under --host.sysfs): counters and "
          "the driver's hw_counters, firmware, link layer, the PCIe link against its maximum, NUMA node.",
      .make = MakeHostCollector,
      .render = RenderHost,
      .this_host = true,
  };
}

}  // namespace ibfabric::collectors
