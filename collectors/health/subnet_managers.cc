#include "collectors/health/subnet_managers.h"

#include <algorithm>

#include "collectors/common/iso8601.h"

namespace ibfabric::collectors {

using transport::SmState;

std::vector<SmTarget> SmTargets(const topology::Fabric& fabric) {
  std::vector<SmTarget> out;
  for (const auto& node : fabric.nodes()) {
    for (const auto& port : node.ports) {
      if (!port.is_sm) continue;
      const std::uint16_t lid = port.lid != 0 ? port.lid : node.lid;
      if (lid != 0) out.push_back({{node.guid, port.number}, lid});
    }
  }
  return out;
}

std::vector<SmTarget> UnknownSmTargets(const topology::Fabric& fabric, const std::vector<SmTarget>& known,
                                       const std::set<std::uint16_t>& lids) {
  std::set<std::uint16_t> wanted = lids;
  wanted.erase(0);
  for (const SmTarget& t : known) wanted.erase(t.lid);
  std::vector<SmTarget> out;
  if (wanted.empty()) return out;
  for (const auto& node : fabric.nodes()) {
    if (node.kind == topology::NodeKind::kSwitch) {
      if (wanted.erase(node.lid)) out.push_back({{node.guid, 0}, node.lid});
      continue;
    }
    for (const auto& port : node.ports) {
      if (port.lid != 0 && wanted.erase(port.lid)) out.push_back({{node.guid, port.number}, port.lid});
    }
  }
  std::sort(out.begin(), out.end(), [](const SmTarget& a, const SmTarget& b) { return a.lid < b.lid; });
  return out;
}

SmRound ReadSubnetManagers(const std::vector<SmTarget>& targets, std::uint16_t sa_lid, transport::MadEngine& engine) {
  std::vector<transport::MadRequest> reqs;
  reqs.reserve(targets.size() + 1);
  for (const auto& t : targets) reqs.push_back(transport::SmInfoQuery(t.lid));
  if (sa_lid != 0) reqs.push_back(transport::SmInfoRecordTableQuery(sa_lid));
  const auto results = engine.Run(reqs);
  SmRound out;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    SmReading r{targets[i], std::nullopt, results[i].outcome};
    if (results[i].outcome == transport::MadOutcome::kOk) r.info = transport::DecodeSmInfo(results[i].response);
    out.readings.push_back(r);
  }
  if (sa_lid != 0 && results.back().outcome == transport::MadOutcome::kOk) {
    out.listed.emplace();
    for (const auto& record : transport::DecodeSmInfoRecords(results.back())) out.listed->insert(record.lid);
  }
  return out;
}

const char* ToString(SmCondition c) {
  switch (c) {
    case SmCondition::kNoMaster: return "no_master";
    case SmCondition::kNoStandby: return "no_standby";
    case SmCondition::kMasterNotSweeping: return "master_not_sweeping";
    case SmCondition::kMultipleMasters: return "multiple_masters";
    case SmCondition::kFailover: return "failover";
  }
  return "no_master";
}

namespace {

// The least rise that counts as a sweep, whatever the switch count: a
// standby's poll and an operator's sminfo in one round are not one.
constexpr std::uint32_t kLeastSweepSmps = 3;
// Rounds kept per SM at most (a 100 ms sweep interval under a minute's
// stall_after would keep 600).
constexpr std::size_t kMaxRises = 256;

std::string Where(const SmStatus& s) {
  return (s.node.empty() ? topology::FormatGuid(s.port.node_guid) : s.node) + "[" + std::to_string(s.port.port) +
         "] (" + topology::FormatGuid(s.guid) + ")";
}

int Rank(const SmStatus& s) {
  if (!s.answering) return 4;
  switch (s.state) {
    case SmState::kMaster: return 0;
    case SmState::kStandby: return 1;
    case SmState::kDiscovering: return 2;
    case SmState::kNotActive: return 3;
  }
  return 4;
}

}  // namespace

std::optional<std::chrono::steady_clock::time_point> SmMonitor::LastActivity(const std::deque<Rise>& rises,
                                                                             std::uint32_t sweep_smps) {
  if (rises.empty()) return std::nullopt;
  // The readers' rate: the median round's, so that neither the rounds that
  // carried a sweep (fewer than half, or the next test holds) nor a short
  // round that missed a reader's poll set it.
  std::vector<double> rates;
  std::vector<std::uint32_t> counts;
  for (const Rise& r : rises) {
    if (r.seconds > 0) rates.push_back(r.foreign / r.seconds);
    counts.push_back(r.foreign);
  }
  // Most rounds carried a sweep's worth (the lower median): an SM sweeping
  // as often as we read.
  const std::size_t lower = (counts.size() - 1) / 2;
  std::nth_element(counts.begin(), counts.begin() + static_cast<long>(lower), counts.end());
  if (counts[lower] >= sweep_smps) return rises.back().at;
  if (rates.empty()) return std::nullopt;
  std::nth_element(rates.begin(), rates.begin() + static_cast<long>(rates.size() / 2), rates.end());
  const double readers = rates[rates.size() / 2];
  for (auto it = rises.rbegin(); it != rises.rend(); ++it) {
    if (it->foreign >= readers * it->seconds + sweep_smps) return it->at;
  }
  return std::nullopt;
}

void SmMonitor::Update(const std::vector<SmReading>& readings, const topology::Fabric& fabric,
                       std::chrono::steady_clock::time_point now, std::chrono::system_clock::time_point wall) {
  TakeReadings(readings, fabric, now, wall);
  std::size_t standbys = 0;
  const std::vector<const SmStatus*> masters = FollowMaster(now, wall, &standbys);
  Judge(masters, standbys, now, wall);
}

void SmMonitor::TakeReadings(const std::vector<SmReading>& readings, const topology::Fabric& fabric,
                             std::chrono::steady_clock::time_point now, std::chrono::system_clock::time_point wall) {
  const auto sweep_smps = std::max<std::uint32_t>(kLeastSweepSmps, static_cast<std::uint32_t>(fabric.switch_count()));
  std::map<topology::PortRef, std::uint64_t> by_port;
  for (const auto& [guid, t] : sms_) by_port[t.status.port] = guid;
  std::map<std::uint64_t, bool> seen;
  for (const SmReading& r : readings) {
    const topology::Node* node = fabric.FindNode(r.target.port.node_guid);
    const topology::Port* port = fabric.FindPort(r.target.port);
    std::uint64_t key = 0;
    if (r.info) {
      key = r.info->guid;
    } else if (auto it = by_port.find(r.target.port); it != by_port.end()) {
      key = it->second;
    } else {
      key = port && port->guid != 0 ? port->guid : r.target.port.node_guid;
    }
    auto [it, fresh] = sms_.try_emplace(key);
    Tracked& t = it->second;
    SmStatus& s = t.status;
    s.guid = key;
    s.port = r.target.port;
    s.node = node ? node->description : "";
    s.lid = r.target.lid;
    s.answering = r.info.has_value();
    ++t.asked;
    if (r.info) {
      // opensm's ActCount counts the SMPs it sends, replies included: each
      // of our SMInfo Gets that arrived moved it by one, other readers'
      // by theirs (see SmMonitorOptions::stall_after).
      if (!fresh) {
        const std::uint32_t delta = r.info->act_count - s.act_count;  // wraps like the 32-bit field
        const std::chrono::duration<double> dt = now - t.last_answer_steady;
        t.rises.push_back({now, delta > t.asked ? delta - t.asked : 0, dt.count()});
      }
      while (!t.rises.empty() && (now - t.rises.front().at >= options_.stall_after || t.rises.size() > kMaxRises)) {
        t.rises.pop_front();
      }
      const auto active = LastActivity(t.rises, sweep_smps);
      if (fresh || s.state != r.info->state) {
        t.last_act_change_steady = now;
        s.last_act_change = wall;
      } else if (active && *active > t.last_act_change_steady) {
        t.last_act_change_steady = *active;
        s.last_act_change = wall - std::chrono::duration_cast<std::chrono::system_clock::duration>(now - *active);
      }
      s.state = r.info->state;
      s.priority = r.info->priority;
      s.act_count = r.info->act_count;
      s.last_answer = wall;
      t.last_answer_steady = now;
      t.asked = 0;
    } else if (fresh) {
      t.last_act_change_steady = now;
    }
    seen[key] = true;
  }
  // SMs no longer behind an IsSM port (the process went away) stay listed,
  // not answering, for a while: they are the "from" of a failover.
  for (auto it = sms_.begin(); it != sms_.end();) {
    Tracked& t = it->second;
    if (!seen.count(it->first)) t.status.answering = false;
    if (!t.status.answering && now - t.last_act_change_steady > options_.failover_hold &&
        wall - t.status.last_answer > options_.failover_hold) {
      it = sms_.erase(it);
      continue;
    }
    t.status.act_count_moving = t.status.answering && now - t.last_act_change_steady < options_.stall_after;
    ++it;
  }
}

std::vector<const SmStatus*> SmMonitor::FollowMaster(std::chrono::steady_clock::time_point now,
                                                     std::chrono::system_clock::time_point wall,
                                                     std::size_t* standbys) {
  std::vector<const SmStatus*> masters;
  for (const auto& [guid, t] : sms_) {
    if (!t.status.answering) continue;
    if (t.status.state == SmState::kMaster) masters.push_back(&t.status);
    if (t.status.state == SmState::kStandby) ++*standbys;
  }
  if (masters.size() == 1) {
    const SmStatus& m = *masters[0];
    if (master_ && *master_ != m.guid) {
      SmEvent e{wall, std::nullopt, m};
      if (auto old = sms_.find(*master_); old != sms_.end()) e.from = old->second.status;
      events_.push_front(std::move(e));
      while (events_.size() > options_.keep_events) events_.pop_back();
      ++master_changes_;
      last_failover_steady_ = now;
    }
    master_ = m.guid;
  }
  return masters;
}

void SmMonitor::Judge(const std::vector<const SmStatus*>& masters, std::size_t standbys,
                      std::chrono::steady_clock::time_point now, std::chrono::system_clock::time_point wall) {
  std::vector<SmConditionState> conditions;
  auto hold = [&](SmCondition c, Severity severity, std::string summary, std::string action,
                  std::vector<const SmStatus*> concerned) {
    auto [it, fresh] = since_.try_emplace(c, wall);
    std::vector<topology::PortRef> ports;
    for (const SmStatus* sm : concerned) ports.push_back(sm->port);
    conditions.push_back({c, severity, it->second, std::move(summary), std::move(action), std::move(ports)});
  };
  if (masters.empty()) {
    hold(SmCondition::kNoMaster, Severity::kCritical,
         "no subnet manager answers as master (" + std::to_string(sms_.size()) +
             " SM ports known): new "
             "connections cannot be set up and the fabric is not swept",
         "Start or restart a subnet manager (systemctl status opensm on the SM hosts) and check its log.", {});
  }
  if (masters.size() > 1) {
    std::string who;
    for (const SmStatus* m : masters) who += (who.empty() ? "" : ", ") + Where(*m);
    hold(SmCondition::kMultipleMasters, Severity::kCritical,
         std::to_string(masters.size()) + " SMs claim master: " + who,
         "Stop all but one of them; look for an SM configured to ignore the others (opensm ignore_other_sm) or a "
         "fabric that was split and joined again.",
         masters);
  }
  if (!masters.empty() && standbys == 0) {
    hold(SmCondition::kNoStandby, Severity::kWarning,
         "no standby subnet manager: if the master " + Where(*masters[0]) + " fails, nothing takes over",
         "Start a standby subnet manager on a second host, with a lower priority than the master.", {masters[0]});
  }
  if (masters.size() == 1 && !masters[0]->act_count_moving) {
    hold(SmCondition::kMasterNotSweeping, Severity::kCritical,
         "master SM " + Where(*masters[0]) + " answers but its ActCount " + std::to_string(masters[0]->act_count) +
             " has not moved since " + Iso8601(masters[0]->last_act_change) + ": it stopped sweeping",
         "Check the master SM's log and configuration (sweep_interval); restart it, or fail over to the standby.",
         {masters[0]});
  }
  if (last_failover_steady_ && now - *last_failover_steady_ < options_.failover_hold && !events_.empty()) {
    const SmEvent& e = events_.front();
    hold(SmCondition::kFailover, Severity::kWarning,
         "master SM moved from " + (e.from ? Where(*e.from) : std::string("an unknown SM")) + " to " + Where(e.to) +
             " at " + Iso8601(e.when),
         "Find out why the previous master stopped (its host, its log) and bring a standby back.", {&e.to});
  }
  for (auto it = since_.begin(); it != since_.end();) {
    const bool held = std::any_of(conditions.begin(), conditions.end(),
                                  [&](const SmConditionState& c) { return c.condition == it->first; });
    it = held ? std::next(it) : since_.erase(it);
  }
  conditions_ = std::move(conditions);
}

SmReport SmMonitor::Report() const {
  SmReport r;
  for (const auto& [guid, t] : sms_) {
    r.sms.push_back(t.status);
    if (!t.status.answering) continue;
    if (t.status.state == SmState::kMaster) {
      ++r.masters;
      r.master_sweeping = t.status.act_count_moving;
    }
    if (t.status.state == SmState::kStandby) ++r.standbys;
  }
  if (r.masters != 1) r.master_sweeping = false;
  std::stable_sort(r.sms.begin(), r.sms.end(), [](const SmStatus& a, const SmStatus& b) { return Rank(a) < Rank(b); });
  r.events.assign(events_.begin(), events_.end());
  r.conditions = conditions_;
  r.master_changes = master_changes_;
  return r;
}

}  // namespace ibfabric::collectors
