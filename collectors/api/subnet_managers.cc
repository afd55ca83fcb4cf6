#include "collectors/api/json.h"
#include "collectors/common/iso8601.h"
#include "topology/fabric.h"

namespace ibfabric::collectors {
namespace {

using transport::SmState;

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
    if (s.state == SmState::kMaster && r.masters == 1) master = StatusJson(s);
    if (s.state == SmState::kStandby) standbys.push_back(StatusJson(s));
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

}  // namespace ibfabric::collectors
