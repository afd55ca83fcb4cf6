#include "collectors/partitions_collector.h"

#include <algorithm>
#include <iterator>
#include <vector>

#include "collectors/framework/render.h"
#include "collectors/framework/table_retry.h"
#include "topology/partitions.h"

namespace ibfabric::collectors {
namespace {

using prometheus::MetricType;
using topology::FormatGuid;

class PartitionsCollector final : public Collector {
 public:
  PartitionsCollector(std::optional<topology::PartitionPlan> plan, bool from_sa)
      : plan_(std::move(plan)), from_sa_(from_sa) {}

  Schedule schedule() const override { return Schedule::kDiscovery; }

  Outcome Update(const Cycle& cycle) override {
    Outcome out;
    if (!cycle.scope.reports_topology()) return out;
    DropGone(cycle, &tables_, [](const topology::PortRef& r) { return r.node_guid; });
    std::erase_if(sa_ports_, [&](const topology::PortRef& r) { return !tables_.count(r); });
    // An SA that gave no records is asked again at the next full walk.
    if (cycle.trigger == Trigger::kFullWalk) sa_silent_ = false;
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
      topology::PartitionSource source;
      // The SA gives P_KeyTableRecords to trusted requests only: asked
      // with its key alone (without, every walk would add a refusal to
      // the SM's log and wait for nothing).
      if (from_sa_ && !sa_silent_ && cycle.engine->options().sa_key != 0) source.sa_lid = cycle.sa_lid;
      const auto pkeys = topology::ReadPartitions(part, info, *cycle.engine, source);
      read_any = !pkeys.tables.empty();
      out.problems.insert(out.problems.end(), pkeys.problems.begin(), pkeys.problems.end());
      NoteSa(cycle, pkeys, source.sa_lid, &out);
      for (const auto& [ref, keys] : pkeys.tables) tables_[ref] = keys;
      cycle.log->Debug("partition tables read", "ports=" + std::to_string(pkeys.tables.size()) +
                                                    " from_sa=" + std::to_string(pkeys.from_sa.size()) +
                                                    " sa_queries=" + std::to_string(pkeys.sa_queries) +
                                                    " smps=" + std::to_string(pkeys.smps));
      retry_.Note(*cycle.fabric, read, [&](const topology::Node& n) {
        if (n.kind == topology::NodeKind::kSwitch) return false;
        for (const auto& p : n.ports) {
          if (p.lid != 0 && p.remote && !tables_.count({n.guid, p.number})) return true;
        }
        return false;
      });
    }
    if (analysis_due_.Due(cycle, !read.empty())) {
      auto analysis = std::make_shared<topology::PartitionAnalysis>(
          topology::AnalyzePartitions(*cycle.fabric, tables_, plan_ ? &*plan_ : nullptr));
      analysis->from_sa = sa_ports_.size();  // each a port of tables_
      analysis_ = std::move(analysis);
      if (cycle.trigger == Trigger::kFullWalk) LogFindings(*cycle.log, analysis_->findings);
    }
    out.again = retry_.pending() || analysis_due_.pending();
    out.ok = health_.Judge(cycle, !read.empty(), read_any);
    return out;
  }

  void Publish(Snapshot* parts) const override { parts->by_collector.Set(kPartitionsCollector, analysis_); }

 private:
  // Where the tables just read came from: the ports read keep the SA as
  // their source or lose it (one that gave no table keeps its old table
  // and source); a silent or refusing SA is said once while it stays so.
  void NoteSa(const Cycle& cycle, const topology::ReadPartitionsResult& pkeys, std::uint16_t sa_lid, Outcome* out) {
    std::vector<topology::PortRef> kept;
    std::set_difference(sa_ports_.begin(), sa_ports_.end(), pkeys.tables.begin(), pkeys.tables.end(),
                        std::back_inserter(kept), Less{});
    sa_ports_.clear();
    std::merge(kept.begin(), kept.end(), pkeys.from_sa.begin(), pkeys.from_sa.end(), std::back_inserter(sa_ports_));
    if (pkeys.sa_queries > 0 && !pkeys.sa_answered) {
      sa_silent_ = true;
      const std::string why =
          "the SA at LID " + std::to_string(sa_lid) +
          (pkeys.sa_refused ? " refused P_KeyTableRecords"
                            : " gave no P_KeyTableRecords (an SA discards a request whose SM_Key is not its key: is "
                              "--ib.sa-key its sa_key?)") +
          ": every P_Key table read from its port until the next full walk";
      if (sa_said_silent_) {
        cycle.log->Debug("partition tables", "why=\"" + why + "\"");
      } else {
        out->problems.push_back(why);
      }
      sa_said_silent_ = true;
    } else if (pkeys.sa_answered) {
      sa_said_silent_ = false;
    }
  }
  // Orders ports and table entries by port.
  struct Less {
    bool operator()(const topology::PortRef& a, const topology::PartitionTables::value_type& b) const {
      return a < b.first;
    }
    bool operator()(const topology::PartitionTables::value_type& a, const topology::PortRef& b) const {
      return a.first < b;
    }
  };

  std::optional<topology::PartitionPlan> plan_;
  const bool from_sa_;           // --partitions.tables=sa
  bool sa_silent_ = false;       // the SA gave no records this walk
  bool sa_said_silent_ = false;  // and that was logged
  // The ports of tables_ whose table came from the SA, ascending.
  std::vector<topology::PortRef> sa_ports_;
  topology::PartitionTables tables_;
  TableRetry retry_;
  TablePhaseHealth health_;
  PendingAnalysis analysis_due_;
  std::shared_ptr<const topology::PartitionAnalysis> analysis_;
};

}  // namespace

std::unique_ptr<Collector> MakePartitionsCollector(const CollectorOptions& options) {
  return std::make_unique<PartitionsCollector>(options.Get<PartitionsOptions>().plan,
                                               options.Get<PartitionsOptions>().pkeys_from_sa);
}

void RenderPartitions(const Snapshot& s, const Emit& out) {
  const auto* partitions = s.by_collector.Get<topology::PartitionAnalysis>(kPartitionsCollector);
  if (!partitions || !s.fabric || !s.scope.reports_topology()) return;
  const topology::Fabric& f = *s.fabric;
  auto name = [&f](std::uint64_t guid) { return topology::NodeName(f, guid); };
  auto on_switch = [&f](const topology::PortRef& ref) {
    const topology::Node* n = f.FindNode(ref.node_guid);
    return n && n->kind == topology::NodeKind::kSwitch;
  };
  // A series a P_Key of a port (at 32k GPUs some 130k): each family in
  // parts, one after the other (render.h FamilyParts).
  auto keys = [&](FamilyParts& family, bool switches) {
    for (const auto& [ref, pkeys] : partitions->ports) {
      if (on_switch(ref) != switches) continue;
      for (std::uint16_t k : pkeys) {
        family.Add({{"guid", FormatGuid(ref.node_guid)},
                    {"node", name(ref.node_guid)},
                    {"port", std::to_string(ref.port)},
                    {"pkey", topology::PartitionOf(k)},
                    {"membership", topology::MembershipOf(k)}},
                   1);
      }
    }
    family.Finish();
  };
  FamilyParts member(out, "infiniband_port_partition_info",
                     "1 for each partition a CA port belongs to (its P_Key table), full or limited member",
                     MetricType::Gauge);
  keys(member, false);
  FamilyParts filter(out, "infiniband_switch_port_partition_info",
                     "1 for each P_Key in the table of a switch port facing a CA port: what partition "
                     "enforcement lets through",
                     MetricType::Gauge);
  keys(filter, true);
  FamilyParts enforcement(out, "infiniband_switch_port_partition_enforcement",
                          "1 when a switch port facing a CA port drops packets whose P_Key its table lacks "
                          "(PortInfo.PartitionEnforcementInbound/Outbound), by direction",
                          MetricType::Gauge);
  for (const auto& [ref, pkeys] : partitions->ports) {
    const topology::Port* p = f.FindPort(ref);
    if (!on_switch(ref) || !p) continue;
    for (const auto& [direction, on] : {std::pair{"inbound", p->partition_enforcement_inbound},
                                        std::pair{"outbound", p->partition_enforcement_outbound}}) {
      enforcement.Add({{"guid", FormatGuid(ref.node_guid)},
                       {"node", name(ref.node_guid)},
                       {"port", std::to_string(ref.port)},
                       {"direction", direction}},
                      on ? 1 : 0);
    }
  }
  enforcement.Finish();
  auto from = Family("infiniband_partition_tables",
                     "CA ports and switch ports facing them whose P_Key table is held, by where it was read: sa "
                     "(the SA's P_KeyTableRecords, the SM's copy) or port (its own blocks)",
                     MetricType::Gauge);
  Add(from, {{"source", "sa"}}, static_cast<double>(partitions->from_sa));
  Add(from, {{"source", "port"}}, static_cast<double>(partitions->ports.size() - partitions->from_sa));
  out(std::move(from));
}

CollectorInfo PartitionsCollectorInfo() {
  return {
      .name = kPartitionsCollector,
      .help = "P_Key tables of the CA ports and the switch ports facing them.",
      .make = MakePartitionsCollector,
      .render = RenderPartitions,
      .after_publication = true,
      .flags =
          {
              {"partitions.tables",
               "Where the P_Key tables of the CA ports and the switch ports facing them are read: sa (their "
               "P_KeyTableRecords from the SA, the subnet manager's copy of what it set, one query a CA port or "
               "switch; the SA answers only with --ib.sa-key; a port it has no record of is read itself) or switches "
               "(each port's own table: what it holds, even where it is not what the SM set).",
               "SOURCE",
               [](CollectorOptions& o, const std::string& v) {
                 return FromSaValue(v, &o.Own<PartitionsOptions>().pkeys_from_sa);
               }},
              {"partitions.plan",
               "Expected partition membership of the CA ports (YAML, see docs/api.md); ports that differ are "
               "findings.",
               "FILE",
               [](CollectorOptions& o, const std::string& v) -> std::string {
                 if (v.empty()) return "must not be empty";
                 topology::PartitionPlan plan;
                 std::string why;
                 if (!topology::LoadPartitionPlan(v, &plan, &why)) return why;
                 o.Own<PartitionsOptions>().plan = std::move(plan);
                 return "";
               },
               /*one_fabric=*/true},
          },
  };
}

}  // namespace ibfabric::collectors
