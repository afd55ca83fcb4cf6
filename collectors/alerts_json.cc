#include "collectors/alerts_json.h"

#include <cerrno>
#include <cstdlib>
#include <ctime>

namespace ibfabric::collectors {
namespace {

using nlohmann::json;
using topology::FormatGuid;

std::string Iso8601(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double Unix(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

std::string NameOf(const Snapshot& s, std::uint64_t guid) {
  auto it = s.nodes.find(guid);
  return it == s.nodes.end() ? "" : it->second.name;
}

json End(const Snapshot& s, const topology::PortRef& ref) {
  json e{{"node", NameOf(s, ref.node_guid)}, {"guid", FormatGuid(ref.node_guid)}, {"port", ref.port}};
  auto it = s.nodes.find(ref.node_guid);
  e["kind"] = it == s.nodes.end() ? "unknown" : it->second.kind == topology::NodeKind::kSwitch ? "switch" : "hca";
  const topology::Port* p = s.fabric ? s.fabric->FindPort(ref) : nullptr;
  e["lid"] = p ? json(p->lid) : json(nullptr);
  return e;
}

bool Matches(const Snapshot& s, const Alert& a, const AlertFilter& f) {
  if (f.severity && a.severity != *f.severity) return false;
  if (f.node.empty()) return true;
  for (const auto& end : {a.cable.a, a.cable.b}) {
    if (NameOf(s, end.node_guid) == f.node) return true;
    char* stop = nullptr;
    errno = 0;
    const unsigned long long guid = std::strtoull(f.node.c_str(), &stop, 16);
    if (errno == 0 && stop && *stop == '\0' && f.node.size() > 2 && guid == end.node_guid) return true;
  }
  return false;
}

json AlertToJson(const Snapshot& s, const Alert& a) {
  const std::string id = std::string(ToString(a.cause)) + ":" + FormatGuid(a.cable.a.node_guid) + ":" +
                         std::to_string(a.cable.a.port) + "-" + FormatGuid(a.cable.b.node_guid) + ":" +
                         std::to_string(a.cable.b.port);
  json evidence = json::array();
  for (const Evidence& e : a.evidence) {
    json x{{"signal", e.signal}};
    x["end"] = e.end < 0 ? json("cable") : json(e.end);
    if (!e.unit.empty()) {
      x["value"] = e.value;
      x["unit"] = e.unit;
    }
    if (e.delta) x["delta"] = *e.delta;
    if (e.window_seconds > 0) x["window_seconds"] = e.window_seconds;
    if (e.threshold) x["threshold"] = *e.threshold;
    if (!e.detail.empty()) x["detail"] = e.detail;
    evidence.push_back(std::move(x));
  }
  json j{{"id", id},
         {"cause", ToString(a.cause)},
         {"severity", ToString(a.severity)},
         {"state", a.cleared ? "cleared" : "active"},
         {"summary", a.summary},
         {"action", a.action},
         {"ends", json::array({End(s, a.cable.a), End(s, a.cable.b)})},
         {"since", Iso8601(a.since)},
         {"since_unix", Unix(a.since)},
         {"last_seen", Iso8601(a.last_seen)},
         {"evidence", std::move(evidence)}};
  j["cleared"] = a.cleared ? json(Iso8601(*a.cleared)) : json(nullptr);
  return j;
}

}  // namespace

bool ParseAlertFilter(const std::multimap<std::string, std::string>& params, AlertFilter* filter,
                      std::string* error) {
  AlertFilter f;
  for (const auto& [key, value] : params) {
    if (params.count(key) > 1) {
      *error = "parameter '" + key + "' given more than once";
      return false;
    }
    if (key == "severity") {
      if (value == "warning") {
        f.severity = Severity::kWarning;
      } else if (value == "critical") {
        f.severity = Severity::kCritical;
      } else {
        *error = "severity must be warning or critical, not '" + value.substr(0, 40) + "'";
        return false;
      }
    } else if (key == "node") {
      if (value.empty()) {
        *error = "node must name a node or a GUID";
        return false;
      }
      f.node = value;
    } else if (key == "state") {
      if (value != "active" && value != "cleared" && value != "all") {
        *error = "state must be active, cleared or all, not '" + value.substr(0, 40) + "'";
        return false;
      }
      f.active = value != "cleared";
      f.cleared = value != "active";
    } else {
      *error = "unknown parameter '" + key.substr(0, 40) + "' (severity, node, state)";
      return false;
    }
  }
  *filter = f;
  return true;
}

json AlertsJson(const Snapshot& s, const AlertFilter& filter) {
  json active = json::array(), cleared = json::array();
  std::map<std::string, int> counts{{"warning", 0}, {"critical", 0}};
  if (s.health) {
    for (const Alert& a : s.health->active) {
      if (!Matches(s, a, filter)) continue;
      ++counts[ToString(a.severity)];
      if (filter.active) active.push_back(AlertToJson(s, a));
    }
    if (filter.cleared) {
      for (const Alert& a : s.health->cleared) {
        if (Matches(s, a, filter)) cleared.push_back(AlertToJson(s, a));
      }
    }
  }
  const double window = s.health ? std::chrono::duration<double>(s.health->window).count() : 0;
  return json{{"schema_version", kAlertsSchemaVersion},
              {"generated", Iso8601(s.published)},
              {"window_seconds", window},
              {"active_counts", counts},
              {"active", std::move(active)},
              {"recently_cleared", std::move(cleared)}};
}

}  // namespace ibfabric::collectors
