#include "collectors/fabric_collector.h"

#include "collectors/framework/render.h"
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
  if (!Has(s.port_groups, PortGroup::kState)) return;  // left out (--counters.groups)
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
      FamilyParts f(out, "infiniband_" + role + "_" + pp.suffix, pp.help, MetricType::Gauge);
      for (const auto& node : s.fabric->nodes()) {
        if (sw ? node.kind != NodeKind::kSwitch : !topology::IsHca(node)) continue;
        const NodeLabel& label = LabelOf(s, node.guid);
        for (const auto& port : node.ports) {
          if (OwnsPort(s, node, port)) f.Add(PortLabels({node.guid, port.number}, label), pp.value(port));
        }
      }
      f.Finish();
    }
  }
}

// Each SHARP Aggregation Node and the switch it is in: listed, neither a
// host nor a cable (topology/fabric.h IsAggregationNode).
void RenderAggregationNodes(const Snapshot& s, const Emit& out) {
  const topology::Fabric& fabric = *s.fabric;
  FamilyParts an(out, "infiniband_aggregation_node_info",
                 "A SHARP Aggregation Node (a CA inside a switch, no host) and the switch port it sits on",
                 MetricType::Gauge);
  for (const auto& node : fabric.nodes()) {
    if (!topology::IsAggregationNode(node)) continue;
    for (const auto& port : node.ports) {
      if (!OwnsPort(s, node, port)) continue;
      const topology::Node* sw = port.remote ? fabric.FindNode(port.remote->node_guid) : nullptr;
      an.Add({{"guid", FormatGuid(node.guid)},
              {"lid", std::to_string(port.lid)},
              {"switch", sw ? sw->description : ""},
              {"switch_guid", FormatGuid(sw ? sw->guid : 0)},
              {"switch_port", std::to_string(port.remote ? port.remote->port : 0)}},
             1);
    }
  }
  an.Finish();
}

// Each router (NodeType 3: to another subnet) and the switch port it is
// cabled to: listed, no HCA and no host.
void RenderRouters(const Snapshot& s, const Emit& out) {
  const topology::Fabric& fabric = *s.fabric;
  FamilyParts rt(out, "infiniband_router_info",
                 "An InfiniBand router port (to another subnet; no HCA, no host) and the switch port it is cabled to",
                 MetricType::Gauge);
  for (const auto& node : fabric.nodes()) {
    if (node.kind != NodeKind::kRouter) continue;
    for (const auto& port : node.ports) {
      if (!OwnsPort(s, node, port)) continue;
      const topology::Node* sw = port.remote ? fabric.FindNode(port.remote->node_guid) : nullptr;
      rt.Add({{"guid", FormatGuid(node.guid)},
              {"router", LabelOf(s, node.guid).name},
              {"port", std::to_string(port.number)},
              {"lid", std::to_string(port.lid)},
              {"switch", sw ? LabelOf(s, sw->guid).name : ""},
              {"switch_guid", FormatGuid(sw ? sw->guid : 0)},
              {"switch_port", std::to_string(port.remote ? port.remote->port : 0)}},
             1);
    }
  }
  rt.Finish();
}

}  // namespace

void RenderFabric(const Snapshot& s, const Emit& out) {
  if (!s.fabric) return;
  const topology::Fabric& fabric = *s.fabric;
  auto label_of = [&](const topology::Node& n) -> const NodeLabel& { return LabelOf(s, n.guid); };
  // Each family in a pass of its own (FamilyParts: one open at a time).
  FamilyParts hca_info(out, "infiniband_hca_info", "InfiniBand HCA port information (guid: the port GUID)",
                       MetricType::Gauge);
  for (const auto& node : fabric.nodes()) {
    if (!topology::IsHca(node)) continue;
    for (const auto& port : node.ports) {
      if (!OwnsPort(s, node, port)) continue;
      hca_info.Add({{"guid", FormatGuid(SeriesGuid({node.guid, port.number}, label_of(node)))},
                    {"hca", label_of(node).name},
                    {"lid", std::to_string(port.lid)},
                    {"node_guid", FormatGuid(node.guid)},
                    {"port", std::to_string(port.number)}},
                   1);
    }
  }
  hca_info.Finish();
  RenderAggregationNodes(s, out);
  RenderRouters(s, out);
  for (const bool sw : {false, true}) {
    if (sw) {
      FamilyParts sw_info(out, "infiniband_switch_info", "InfiniBand switch information", MetricType::Gauge);
      for (const auto& node : fabric.nodes()) {
        if (node.kind != NodeKind::kSwitch || !OwnsSwitch(s, node.guid)) continue;
        // `switch` as operators say it (topology::NodeName), the whole
        // NodeDescription beside it.
        sw_info.Add({{"description", node.description},
                     {"guid", FormatGuid(node.guid)},
                     {"lid", std::to_string(node.lid)},
                     {"switch", label_of(node).name}},
                    1);
      }
      sw_info.Finish();
    }
    FamilyParts up(out, sw ? "infiniband_switch_uplink_info" : "infiniband_hca_uplink_info",
                   sw ? "The far end of the cable on each switch port" : "The far end of the cable on each HCA port",
                   MetricType::Gauge);
    for (const auto& node : fabric.nodes()) {
      if (sw ? node.kind != NodeKind::kSwitch : !topology::IsHca(node)) continue;
      const NodeLabel& label = label_of(node);
      for (const auto& port : node.ports) {
        if (!OwnsPort(s, node, port) || !port.remote) continue;
        const topology::Node* far = fabric.FindNode(port.remote->node_guid);
        if (far && topology::IsAggregationNode(*far)) continue;  // inside the switch: no cable
        const topology::Port* far_port = fabric.FindPort(*port.remote);
        up.Add({{"guid", FormatGuid(SeriesGuid({node.guid, port.number}, label))},
                {"port", std::to_string(port.number)},
                {Role(node.kind), label.name},
                {"uplink", far ? label_of(*far).name : ""},
                {"uplink_guid", FormatGuid(far ? SeriesGuid(*port.remote, label_of(*far)) : port.remote->node_guid)},
                {"uplink_lid", std::to_string(far_port ? far_port->lid : 0)},
                {"uplink_port", std::to_string(port.remote->port)},
                {"uplink_type", far ? topology::ToString(far->kind) : "unknown"}},
               1);
      }
    }
    up.Finish();
  }
  RenderPortStates(s, out);
}

CollectorInfo FabricCollectorInfo() {
  return {
      .name = "fabric",
      .help = "Nodes and cables discovery found (infiniband_{switch,hca}_info, *_uplink_info).",
      .make = MakeFabricCollector,
      .render = RenderFabric,
  };
}

}  // namespace ibfabric::collectors
