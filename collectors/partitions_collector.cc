#include "collectors/partitions_collector.h"

#include "collectors/render.h"
#include "collectors/table_retry.h"
#include "topology/partitions.h"

namespace ibfabric::collectors {
namespace {

using prometheus::MetricType;
using topology::FormatGuid;

class PartitionsCollector final : public Collector {
 public:
  explicit PartitionsCollector(std::optional<topology::PartitionPlan> plan) : plan_(std::move(plan)) {}

  Schedule schedule() const override { return Schedule::kDiscovery; }

  Outcome Update(const Cycle& cycle) override {
    Outcome out;
    if (!cycle.scope.reports_topology()) return out;
    DropGone(cycle, &tables_, [](const topology::PortRef& r) { return r.node_guid; });
    const std::set<std::uint64_t> read = NodesToRead(cycle, &retry_);
    bool read_any = false;
    if (!read.empty()) {
      // The partitions of these CA ports and of the switch ports facing
      // them; the switches' SwitchInfo says how many P_Keys they hold.
      std::set<std::uint64_t> with_facing = read;
      std::set<topology::PortRef> facing;
      for (const auto& node : cycle.fabric->nodes()) {
        if (!read.count(node.guid) || node.kind == topology::NodeKind::kSwitch) continue;
        for (const auto& p : node.ports) {
          if (!p.remote) continue;
          with_facing.insert(p.remote->node_guid);
          facing.insert(*p.remote);
        }
      }
      const auto& info = cycle.reads->SwitchInfo(*cycle.fabric, &with_facing, &out.problems);
      const topology::Fabric part =
          topology::Part(*cycle.fabric, with_facing, [&](const topology::Node& n, const topology::Port& p) {
            return read.count(n.guid) > 0 || facing.count({n.guid, p.number}) > 0;
          });
      const auto pkeys = topology::ReadPartitions(part, info, *cycle.engine);
      read_any = !pkeys.tables.empty();
      out.problems.insert(out.problems.end(), pkeys.problems.begin(), pkeys.problems.end());
      for (const auto& [ref, keys] : pkeys.tables) tables_[ref] = keys;
      retry_.Note(*cycle.fabric, read, [&](const topology::Node& n) {
        if (n.kind == topology::NodeKind::kSwitch) return false;
        for (const auto& p : n.ports) {
          if (p.lid != 0 && p.remote && !tables_.count({n.guid, p.number})) return true;
        }
        return false;
      });
    }
    if (analysis_due_.Due(cycle, !read.empty())) {
      analysis_ = std::make_shared<topology::PartitionAnalysis>(
          topology::AnalyzePartitions(*cycle.fabric, tables_, plan_ ? &*plan_ : nullptr));
      if (cycle.trigger == Trigger::kFullWalk) LogFindings(*cycle.log, analysis_->findings);
    }
    out.again = retry_.pending() || analysis_due_.pending();
    out.ok = health_.Judge(cycle, !read.empty(), read_any);
    return out;
  }

  void Publish(Snapshot* parts) const override { parts->by_collector.Set("partitions", analysis_); }

 private:
  std::optional<topology::PartitionPlan> plan_;
  topology::PartitionTables tables_;
  TableRetry retry_;
  TablePhaseHealth health_;
  PendingAnalysis analysis_due_;
  std::shared_ptr<const topology::PartitionAnalysis> analysis_;
};

}  // namespace

std::unique_ptr<Collector> MakePartitionsCollector(const CollectorOptions& options) {
  return std::make_unique<PartitionsCollector>(options.partition_plan);
}

void RenderPartitions(const Snapshot& s, const Emit& out) {
  const auto* partitions = s.by_collector.Get<topology::PartitionAnalysis>("partitions");
  if (!partitions || !s.fabric || !s.scope.reports_topology()) return;
  const topology::Fabric& f = *s.fabric;
  auto name = [&f](std::uint64_t guid) { return topology::NodeName(f, guid); };
  auto member =
      Family("infiniband_port_partition_info",
             "1 for each partition a CA port belongs to (its P_Key table), full or limited member", MetricType::Gauge);
  auto filter = Family("infiniband_switch_port_partition_info",
                       "1 for each P_Key in the table of a switch port facing a CA port: what partition "
                       "enforcement lets through",
                       MetricType::Gauge);
  auto enforcement = Family("infiniband_switch_port_partition_enforcement",
                            "1 when a switch port facing a CA port drops packets whose P_Key its table lacks "
                            "(PortInfo.PartitionEnforcementInbound/Outbound), by direction",
                            MetricType::Gauge);
  for (const auto& [ref, keys] : partitions->ports) {
    const topology::Node* n = f.FindNode(ref.node_guid);
    const topology::Port* p = f.FindPort(ref);
    const bool on_switch = n && n->kind == topology::NodeKind::kSwitch;
    if (on_switch && p) {
      for (const auto& [direction, on] : {std::pair{"inbound", p->partition_enforcement_inbound},
                                          std::pair{"outbound", p->partition_enforcement_outbound}}) {
        Add(enforcement,
            {{"guid", FormatGuid(ref.node_guid)},
             {"node", name(ref.node_guid)},
             {"port", std::to_string(ref.port)},
             {"direction", direction}},
            on ? 1 : 0);
      }
    }
    for (std::uint16_t k : keys) {
      Add(on_switch ? filter : member,
          {{"guid", FormatGuid(ref.node_guid)},
           {"node", name(ref.node_guid)},
           {"port", std::to_string(ref.port)},
           {"pkey", topology::PartitionOf(k)},
           {"membership", topology::MembershipOf(k)}},
          1);
    }
  }
  EmitNonEmpty(out, member);
  EmitNonEmpty(out, filter);
  EmitNonEmpty(out, enforcement);
}

}  // namespace ibfabric::collectors
