#pragma once
// host: this host's RDMA devices as its kernel shows them (host/sysfs.h),
// read in local scope only (the DaemonSet or systemd unit on every host;
// a fabric or inter-switch exporter reads nothing here), at each sweep,
// from --host.sysfs (default /sys). Files only: no MAD.
//
// Part: HostReadings under "host" (Snapshot::by_collector). Metrics, each
// device by its name (`device`) and port: infiniband_host_device_info
// {device,firmware_version,board_id,hca_type,node_guid,pci_address,
// numa_node} (node_guid as the fabric's series write GUIDs),
// infiniband_host_port_info{device,port,node_guid,host,cable,link_layer,
// state,phys_state,rate} (an Ethernet/RoCE port is labelled
// so; the exporter reads no fabric through it; `cable` as CableId names
// the cable the fabric shows on the port, empty where it shows none; the
// host rules join on it and Alertmanager mutes a host's transport alerts
// under its cable's), infiniband_host_port_counters_total{device,
// port,counter} (counters/, by their sysfs names; port_xmit_data and
// port_rcv_data in bytes: the kernel's 4-octet words times 4),
// infiniband_host_port_hw_counters_total{device,port,counter} (the
// driver's hw_counters/, whatever it lists) and
// infiniband_host_device_hw_counters_total{device,counter}; the PCIe link:
// infiniband_host_pcie_link_transfers_per_second, _width, their _max_
// twins and infiniband_host_pcie_link_degraded (1 below its maximum in
// speed or width); infiniband_host_sysfs_problems (files there that could
// not be read or parsed). Absent where the kernel does not say.

#include <memory>
#include <string_view>

#include "collectors/framework/collector_info.h"
#include "collectors/parts/host.h"
#include "host/sysfs.h"
#include "topology/analysis.h"

namespace ibfabric::collectors {

// Its declaration (name, help, factory, render, reads, flags): the registry's line.
CollectorInfo HostCollectorInfo();
std::unique_ptr<Collector> MakeHostCollector(const CollectorOptions& options);
void RenderHost(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
