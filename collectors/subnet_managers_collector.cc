#include "collectors/subnet_managers_collector.h"

#include <algorithm>
#include <optional>

#include "collectors/render.h"
#include "collectors/subnet_managers.h"

namespace ibfabric::collectors {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricType;
using topology::FormatGuid;

// The port at `lid` when no known SM has it: a switch's port 0 or a CA
// port; nullopt when `lid` is 0, known, or nobody's.
std::optional<SmTarget> LateMaster(const topology::Fabric& fabric, const std::vector<SmTarget>& known,
                                   std::uint16_t lid) {
  if (lid == 0) return std::nullopt;
  for (const SmTarget& t : known) {
    if (t.lid == lid) return std::nullopt;
  }
  for (const auto& node : fabric.nodes()) {
    if (node.kind == topology::NodeKind::kSwitch && node.lid == lid) return SmTarget{{node.guid, 0}, lid};
    for (const auto& port : node.ports) {
      if (node.kind != topology::NodeKind::kSwitch && port.lid == lid) return SmTarget{{node.guid, port.number}, lid};
    }
  }
  return std::nullopt;
}

class SubnetManagersCollector final : public Collector {
 public:
  explicit SubnetManagersCollector(const SmMonitorOptions& options) : monitor_(options) {}

  Schedule schedule() const override { return Schedule::kSweep; }

  Outcome Update(const Cycle& cycle) override {
    if (cycle.trigger != Trigger::kSweep || !cycle.scope.reports_topology()) return {};
    auto targets = SmTargets(*cycle.fabric);
    // A master the last walk did not see (it started since): the local
    // port's MasterSMLID names it; asked too, and kept when it answers as
    // an SM. The next walk finds its IsSM port.
    // A LID that did not answer as an SM is asked again after
    // kRecheckSweeps (or at once when the MasterSMLID changes): a master
    // that is gone costs one SMInfo now and then, not one every sweep.
    ++updates_;
    const bool held_off = cycle.master_sm_lid == rejected_lid_ && updates_ < recheck_at_;
    const std::optional<SmTarget> late =
        held_off ? std::nullopt : LateMaster(*cycle.fabric, targets, cycle.master_sm_lid);
    if (late) targets.push_back(*late);
    auto readings = ReadSubnetManagers(targets, *cycle.engine);
    if (late) {
      const SmReading& r = readings.back();
      if (!r.info || r.info->state == transport::SmState::kNotActive) {
        readings.pop_back();
        rejected_lid_ = late->lid;
        recheck_at_ = updates_ + kRecheckSweeps;
      }
    }
    const auto before = report_;
    monitor_.Update(readings, *cycle.fabric, cycle.now, cycle.wall);
    report_ = std::make_shared<const SmReport>(monitor_.Report());
    // Conditions as they start; a failover is one of them.
    std::set<SmCondition> had;
    if (before) {
      for (const auto& c : before->conditions) had.insert(c.condition);
    }
    for (const auto& c : report_->conditions) {
      if (had.count(c.condition)) continue;
      cycle.log->Warn("subnet manager", std::string("condition=") + ToString(c.condition) +
                                            " severity=" + ToString(c.severity) + " summary=\"" + c.summary + "\"");
    }
    return {};
  }

  void Publish(Snapshot* parts) const override { parts->subnet_managers = report_; }

 private:
  static constexpr std::uint64_t kRecheckSweeps = 10;
  SmMonitor monitor_;
  std::uint64_t updates_ = 0;
  std::uint16_t rejected_lid_ = 0;
  std::uint64_t recheck_at_ = 0;
  std::shared_ptr<const SmReport> report_;
};

}  // namespace

std::unique_ptr<Collector> MakeSubnetManagersCollector(const CollectorOptions& options) {
  return std::make_unique<SubnetManagersCollector>(options.subnet_managers);
}

void RenderSubnetManagers(const Snapshot& s, const Emit& out) {
  if (!s.subnet_managers || !s.fabric) return;
  const SmReport& r = *s.subnet_managers;
  auto info = Family("infiniband_sm_info", "A subnet manager found behind an IsSM port", MetricType::Gauge);
  auto state =
      Family("infiniband_sm_state", "1 for the state the SM answered in SMInfo (not_answering when it did not answer)",
             MetricType::Gauge);
  auto priority = Family("infiniband_sm_priority", "SMInfo.Priority of the SM (0-15)", MetricType::Gauge);
  auto act = Family("infiniband_sm_activity_count",
                    "SMInfo.ActCount: moves while the SM sends SMPs; a master's that stops means it stopped sweeping",
                    MetricType::Gauge);
  for (const SmStatus& sm : r.sms) {
    const std::vector<ClientMetric::Label> labels{
        {"guid", FormatGuid(sm.guid)}, {"node", sm.node}, {"port", std::to_string(sm.port.port)}};
    auto with_lid = labels;
    with_lid.push_back({"lid", std::to_string(sm.lid)});
    with_lid.push_back({"node_guid", FormatGuid(sm.port.node_guid)});
    Add(info, with_lid, 1);
    const std::string now = sm.answering ? transport::ToString(sm.state) : "not_answering";
    for (const char* st : {"master", "standby", "discovering", "not_active", "not_answering"}) {
      auto with_state = labels;
      with_state.push_back({"state", st});
      Add(state, with_state, now == st ? 1 : 0);
    }
    Add(priority, labels, sm.priority);
    if (sm.answering) Add(act, labels, sm.act_count);
  }
  for (auto* f : {&info, &state, &priority, &act}) EmitNonEmpty(out, *f);
  EmitOne(out, "infiniband_sm_masters", "Subnet managers answering as master (1 is healthy)", MetricType::Gauge,
          static_cast<double>(r.masters));
  EmitOne(out, "infiniband_sm_standbys", "Subnet managers answering as standby", MetricType::Gauge,
          static_cast<double>(r.standbys));
  EmitOne(out, "infiniband_sm_master_sweeping",
          "1 while the single master SM's ActCount keeps moving (see --sm.stall-after)", MetricType::Gauge,
          r.master_sweeping ? 1 : 0);
  EmitOne(out, "infiniband_sm_master_changes_total", "Times another SM became master (failovers) since start",
          MetricType::Counter, static_cast<double>(r.master_changes));
  auto conditions = Family("infiniband_sm_condition",
                           "1 while a subnet manager condition holds: no_master, no_standby, master_not_sweeping, "
                           "multiple_masters, failover (recent)",
                           MetricType::Gauge);
  for (SmCondition c : {SmCondition::kNoMaster, SmCondition::kNoStandby, SmCondition::kMasterNotSweeping,
                        SmCondition::kMultipleMasters, SmCondition::kFailover}) {
    const bool held = std::any_of(r.conditions.begin(), r.conditions.end(),
                                  [c](const SmConditionState& x) { return x.condition == c; });
    Add(conditions, {{"condition", ToString(c)}}, held ? 1 : 0);
  }
  out(std::move(conditions));
}

}  // namespace ibfabric::collectors
