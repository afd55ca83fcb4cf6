#include "collectors/subnet_managers_collector.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "collectors/common/iso8601.h"
#include "collectors/framework/render.h"
#include "collectors/health/subnet_managers.h"
#include "config/values.h"

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
    // SMInfo is an SMP: where the fabric drops them (M_Key), no answer
    // says no SM. What was judged is withheld until they answer again.
    if (cycle.smps_blocked) {
      if (report_ && !report_->conditions.empty()) {
        SmReport withheld = *report_;
        withheld.conditions.clear();
        report_ = std::make_shared<const SmReport>(std::move(withheld));
      }
      return {};
    }
    ++updates_;
    // SMs the last walk did not see (started since) are named by the local
    // port's MasterSMLID (a new master) and by the master's SA, asked for
    // its SMInfoRecords in the same round (a standby polls the master as
    // soon as it starts, so the SA lists it). Their ports are asked for
    // SMInfo at once, in this round or, when only the SA named them, in a
    // second one, and kept when they answer as an SM. The next walk finds
    // their IsSM ports.
    std::vector<SmTarget> targets = SmTargets(*cycle.fabric);
    const std::size_t walked = targets.size();
    for (const SmTarget& t : Unheld(*cycle.fabric, targets, {cycle.master_sm_lid})) targets.push_back(t);
    SmRound round = ReadSubnetManagers(targets, cycle.master_sm_lid, *cycle.engine);
    if (round.listed) {
      const auto more = Unheld(*cycle.fabric, targets, *round.listed);
      if (!more.empty()) {
        SmRound second = ReadSubnetManagers(more, 0, *cycle.engine);
        round.readings.insert(round.readings.end(), second.readings.begin(), second.readings.end());
      }
    }
    // A LID that did not answer as an SM is asked again after
    // kRecheckSweeps: a master that is gone, or an SM the SA still lists,
    // costs one SMInfo now and then, not one every sweep.
    std::vector<SmReading> readings(round.readings.begin(), round.readings.begin() + static_cast<long>(walked));
    for (std::size_t i = walked; i < round.readings.size(); ++i) {
      const SmReading& r = round.readings[i];
      if (r.info && r.info->state != transport::SmState::kNotActive) {
        readings.push_back(r);
        held_.erase(r.target.lid);
      } else {
        held_[r.target.lid] = updates_ + kRecheckSweeps;
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
  // UnknownSmTargets of `lids` but those held off.
  std::vector<SmTarget> Unheld(const topology::Fabric& fabric, const std::vector<SmTarget>& known,
                               const std::set<std::uint16_t>& lids) const {
    std::set<std::uint16_t> ask;
    for (std::uint16_t lid : lids) {
      const auto held = held_.find(lid);
      if (held == held_.end() || updates_ >= held->second) ask.insert(lid);
    }
    return UnknownSmTargets(fabric, known, ask);
  }

  static constexpr std::uint64_t kRecheckSweeps = 10;
  SmMonitor monitor_;
  std::uint64_t updates_ = 0;
  std::map<std::uint16_t, std::uint64_t> held_;  // LID -> the update it may be asked again
  std::shared_ptr<const SmReport> report_;
};

}  // namespace

std::unique_ptr<Collector> MakeSubnetManagersCollector(const CollectorOptions& options) {
  return std::make_unique<SubnetManagersCollector>(options.Get<SmMonitorOptions>());
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

namespace {

nlohmann::json StatusJson(const SmStatus& s) {
  return {{"guid", topology::FormatGuid(s.guid)},
          {"node", s.node},
          {"node_guid", topology::FormatGuid(s.port.node_guid)},
          {"port", s.port.port},
          {"lid", s.lid},
          {"answering", s.answering},
          {"state", transport::ToString(s.state)},
          {"priority", s.priority},
          {"act_count", s.act_count},
          {"act_count_moving", s.act_count_moving},
          {"last_answer", s.answering || s.last_answer.time_since_epoch().count() ? Iso8601(s.last_answer) : ""}};
}

}  // namespace

nlohmann::json SubnetManagersJson(const SmReport& r, std::chrono::system_clock::time_point generated) {
  nlohmann::json master = nullptr;
  nlohmann::json standbys = nlohmann::json::array();
  nlohmann::json sms = nlohmann::json::array();
  for (const SmStatus& s : r.sms) {
    sms.push_back(StatusJson(s));
    if (!s.answering) continue;
    if (s.state == transport::SmState::kMaster && r.masters == 1) master = StatusJson(s);
    if (s.state == transport::SmState::kStandby) standbys.push_back(StatusJson(s));
  }
  nlohmann::json events = nlohmann::json::array();
  for (const SmEvent& e : r.events) {
    events.push_back({{"kind", "failover"},
                      {"time", Iso8601(e.when)},
                      {"from", e.from ? StatusJson(*e.from) : nlohmann::json(nullptr)},
                      {"to", StatusJson(e.to)}});
  }
  nlohmann::json conditions = nlohmann::json::array();
  for (const SmConditionState& c : r.conditions) {
    conditions.push_back({{"condition", ToString(c.condition)},
                          {"severity", ToString(c.severity)},
                          {"since", Iso8601(c.since)},
                          {"summary", c.summary},
                          {"action", c.action}});
  }
  return {{"schema_version", kSubnetManagersSchemaVersion},
          {"generated", Iso8601(generated)},
          {"master_count", r.masters},
          {"standby_count", r.standbys},
          {"master", master},
          {"standbys", standbys},
          {"master_sweeping", r.master_sweeping},
          {"master_changes", r.master_changes},
          {"sms", sms},
          {"events", events},
          {"conditions", conditions}};
}

namespace {

// GET /api/v1/subnet_managers: no parameters; none until a sweep watched
// them, and none here where another exporter of the set watches them.
ApiReply SubnetManagersReply(const Snapshot& s, const ApiParams& params) {
  if (!params.empty()) return {400, nullptr, "/api/v1/subnet_managers takes no parameters", "", ""};
  if (!s.subnet_managers) return Absent(s, "no sweep has completed yet", "does not watch subnet managers");
  return {200, SubnetManagersJson(*s.subnet_managers, s.published), "", "", ""};
}

}  // namespace

CollectorInfo SubnetManagersCollectorInfo() {
  return {
      .name = "subnet_managers",
      .help = "SMInfo of every subnet manager: masters, standbys, sweeping, failovers.",
      .make = MakeSubnetManagersCollector,
      .render = RenderSubnetManagers,
      .flags = {{"sm.stall-after",
                 "How long the master subnet manager's SMInfo.ActCount may stand still before it counts as not "
                 "sweeping.",
                 "DURATION",
                 [](CollectorOptions& o, const std::string& v) {
                   return config::DurationValue(v, std::chrono::milliseconds(100),
                                                &o.Own<SmMonitorOptions>().stall_after);
                 }}},
      .routes = {{"/api/v1/subnet_managers", "Subnet managers JSON", SubnetManagersReply}},
  };
}

}  // namespace ibfabric::collectors
