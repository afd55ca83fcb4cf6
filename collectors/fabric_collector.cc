#include "collectors/fabric_collector.h"

#include "collectors/render.h"

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

void RenderFabric(const Snapshot& s, const Emit& out) {
  if (!s.fabric) return;
  auto sw_info = Family("infiniband_switch_info", "InfiniBand switch information", MetricType::Gauge);
  auto hca_info = Family("infiniband_hca_info", "InfiniBand HCA information", MetricType::Gauge);
  auto sw_up =
      Family("infiniband_switch_uplink_info", "The far end of the cable on each switch port", MetricType::Gauge);
  auto hca_up = Family("infiniband_hca_uplink_info", "The far end of the cable on each HCA port", MetricType::Gauge);
  const topology::Fabric& fabric = *s.fabric;
  for (const auto& node : fabric.nodes()) {
    const bool sw = node.kind == NodeKind::kSwitch;
    const std::string guid = FormatGuid(node.guid);
    if (sw) {
      Add(sw_info, {{"guid", guid}, {"lid", std::to_string(node.lid)}, {"switch", node.description}}, 1);
    } else {
      Add(hca_info, {{"guid", guid}, {"hca", node.description}, {"lid", std::to_string(node.lid)}}, 1);
    }
    for (const auto& port : node.ports) {
      if (!port.remote) continue;
      const topology::Node* far = fabric.FindNode(port.remote->node_guid);
      const topology::Port* far_port = fabric.FindPort(*port.remote);
      Add(sw ? sw_up : hca_up,
          {{"guid", guid},
           {"port", std::to_string(port.number)},
           {Role(node.kind), node.description},
           {"uplink", far ? far->description : ""},
           {"uplink_guid", FormatGuid(port.remote->node_guid)},
           {"uplink_lid", std::to_string(far_port ? far_port->lid : 0)},
           {"uplink_port", std::to_string(port.remote->port)},
           {"uplink_type", far ? topology::ToString(far->kind) : "unknown"}},
          1);
    }
  }
  for (auto* f : {&hca_info, &hca_up, &sw_info, &sw_up}) out(std::move(*f));
}

}  // namespace ibfabric::collectors
