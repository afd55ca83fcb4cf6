#include "collectors/fabric_collector.h"

#include "collectors/render.h"
#include "topology/link_rate.h"

namespace ibfabric::collectors {
namespace {

using prometheus::MetricType;
using topology::FormatGuid;
using topology::NodeKind;

// The fabric is the scheduler's part; nothing to read or keep.
class FabricCollector final : public Collector {
 public:
  Schedule schedule() const override { return Schedule::kDiscovery; }
  Outcome Update(const Cycle&) override { return {}; }
  void Publish(Snapshot*) const override {}
};

}  // namespace

std::unique_ptr<Collector> MakeFabricCollector(const CollectorOptions&) { return std::make_unique<FabricCollector>(); }

namespace {

// Per port, as PortInfo last read them (SckyzO/infiniband_exporter's
// names): one family at a time, built and emitted, so that memory holds a
// single family's series and not ten.
void RenderPortStates(const Snapshot& s, const Emit& out) {
  struct PerPort {
    const char* suffix;
    const char* help;
    double (*value)(const topology::Port&);
  };
  static const PerPort kFamilies[] = {
      {"port_state", "1 when the port's physical link is up (LinkUp), else 0",
       [](const topology::Port& p) -> double { return p.link_up() ? 1 : 0; }},
      {"port_link_state", "PortInfo PortState: 1 Down, 2 Init, 3 Armed, 4 Active",
       [](const topology::Port& p) -> double { return p.state; }},
      {"port_physical_state",
       "PortInfo PortPhysicalState: 1 Sleep, 2 Polling, 3 Disabled, 4 Training, 5 LinkUp, 6 LinkErrorRecovery, 7 "
       "PhyTest",
       [](const topology::Port& p) -> double { return p.phys_state; }},
      {"port_rate_bytes_per_second",
       "Data rate of the active link after line encoding (width x lane rate); 0 when down",
       [](const topology::Port& p) { return topology::ActiveGbps(p) * 1e9 / 8; }},
      {"port_raw_rate_bytes_per_second", "Signalling rate of the active link before line encoding; 0 when down",
       [](const topology::Port& p) { return topology::ActiveSignalGbps(p) * 1e9 / 8; }},
  };
  for (const bool sw : {false, true}) {
    const std::string role = sw ? "switch" : "hca";
    for (const PerPort& pp : kFamilies) {
      auto f = Family("infiniband_" + role + "_" + pp.suffix, pp.help, MetricType::Gauge);
      for (const auto& node : s.fabric->nodes()) {
        if ((node.kind == NodeKind::kSwitch) != sw) continue;
        const NodeLabel& label = LabelOf(s, node.guid);
        for (const auto& port : node.ports) {
          if (OwnsPort(s, node, port)) Add(f, PortLabels({node.guid, port.number}, label), pp.value(port));
        }
      }
      EmitNonEmpty(out, f);
    }
  }
}

}  // namespace

void RenderFabric(const Snapshot& s, const Emit& out) {
  if (!s.fabric) return;
  auto sw_info = Family("infiniband_switch_info", "InfiniBand switch information", MetricType::Gauge);
  auto hca_info =
      Family("infiniband_hca_info", "InfiniBand HCA port information (guid: the port GUID)", MetricType::Gauge);
  auto sw_up =
      Family("infiniband_switch_uplink_info", "The far end of the cable on each switch port", MetricType::Gauge);
  auto hca_up = Family("infiniband_hca_uplink_info", "The far end of the cable on each HCA port", MetricType::Gauge);
  const topology::Fabric& fabric = *s.fabric;
  auto label_of = [&](const topology::Node& n) -> const NodeLabel& { return LabelOf(s, n.guid); };
  for (const auto& node : fabric.nodes()) {
    const bool sw = node.kind == NodeKind::kSwitch;
    const NodeLabel& label = label_of(node);
    if (sw && OwnsSwitch(s, node.guid)) {
      Add(sw_info, {{"guid", FormatGuid(node.guid)}, {"lid", std::to_string(node.lid)}, {"switch", node.description}},
          1);
    }
    for (const auto& port : node.ports) {
      if (!OwnsPort(s, node, port)) continue;
      const topology::PortRef ref{node.guid, port.number};
      const std::string guid = FormatGuid(SeriesGuid(ref, label));
      if (!sw) {
        Add(hca_info,
            {{"guid", guid},
             {"hca", node.description},
             {"lid", std::to_string(port.lid)},
             {"node_guid", FormatGuid(node.guid)},
             {"port", std::to_string(port.number)}},
            1);
      }
      if (!port.remote) continue;
      const topology::Node* far = fabric.FindNode(port.remote->node_guid);
      const topology::Port* far_port = fabric.FindPort(*port.remote);
      Add(sw ? sw_up : hca_up,
          {{"guid", guid},
           {"port", std::to_string(port.number)},
           {Role(node.kind), node.description},
           {"uplink", far ? far->description : ""},
           {"uplink_guid", FormatGuid(far ? SeriesGuid(*port.remote, label_of(*far)) : port.remote->node_guid)},
           {"uplink_lid", std::to_string(far_port ? far_port->lid : 0)},
           {"uplink_port", std::to_string(port.remote->port)},
           {"uplink_type", far ? topology::ToString(far->kind) : "unknown"}},
          1);
    }
  }
  for (auto* f : {&hca_info, &hca_up, &sw_info, &sw_up}) out(std::move(*f));
  RenderPortStates(s, out);
}

}  // namespace ibfabric::collectors
