#include "collectors/subnet_managers_collector.h"

#include <algorithm>

#include "collectors/render.h"
#include "collectors/subnet_managers.h"

namespace ibfabric::collectors {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricType;
using topology::FormatGuid;

class SubnetManagersCollector final : public Collector {
 public:
  explicit SubnetManagersCollector(const SmMonitorOptions& options) : monitor_(options) {}

  Schedule schedule() const override { return Schedule::kSweep; }

  Outcome Update(const Cycle& cycle) override {
    if (cycle.trigger != Trigger::kSweep || !cycle.scope.reports_topology()) return {};
    const auto readings = ReadSubnetManagers(SmTargets(*cycle.fabric), *cycle.engine);
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
  SmMonitor monitor_;
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
