#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "collectors/api/detail/common.h"
#include "collectors/api/json.h"
#include "collectors/common/iso8601.h"
#include "collectors/fec_collector.h"
#include "collectors/framework/render.h"
#include "collectors/module_collector.h"
#include "config/text.h"

namespace ibfabric::collectors {
namespace {

using api::AlertToJson;
using api::End;
using api::NodeOf;
using api::ParseGuid;
using nlohmann::json;

nlohmann::json RatesJson(const Snapshot& s, const topology::PortRef& port, const EndSummary& r) {
  nlohmann::json per_second = nlohmann::json::object();
  for (std::size_t i = 0; i < kSignalCount; ++i) {
    const auto sig = static_cast<Signal>(i);
    if (r.Known(sig)) per_second[ToString(sig)] = r.PerSecond(sig);
  }
  const auto value = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json j{{"port", End(s, port)}, {"window_seconds", r.window_seconds}, {"per_second", per_second}};
  j["xmit_wait_fraction"] = value(r.xmit_wait_fraction());
  j["bit_error_rate"] = value(r.bit_error_rate());
  j["packet_drop_rate"] = value(r.packet_drop_rate());
  return j;
}

}  // namespace

bool ParsePortQuery(const std::multimap<std::string, std::string>& params, topology::PortRef* port,
                    std::string* error) {
  std::optional<std::uint64_t> guid;
  std::optional<int> number;
  for (const auto& [k, v] : params) {
    if (k == "guid" && !guid) {
      guid = ParseGuid(v, error);
      if (!guid) return false;
    } else if (k == "port" && !number) {
      const auto n = topology::ParsePortNumber(v, 0);
      if (!n) {
        *error = "port must be a port number from 0 to 254";
        return false;
      }
      number = *n;
    } else {
      *error = "unexpected parameter '" + config::Excerpt(k, 40) + "' (use guid and port, once each)";
      return false;
    }
  }
  if (!guid || !number) {
    *error = "guid and port are both required";
    return false;
  }
  *port = {*guid, static_cast<std::uint8_t>(*number)};
  return true;
}

nlohmann::json PortDetailJson(const Snapshot& s, const topology::PortRef& asked) {
  const topology::PortRef ref{NodeOf(s, asked.node_guid), asked.port};
  const topology::Port* p = s.fabric ? s.fabric->FindPort(ref) : nullptr;
  auto totals = s.ports->find(ref);
  if (!p && totals == s.ports->end()) return nullptr;
  json j{{"schema_version", kAlertsSchemaVersion}, {"end", End(s, ref)}};
  j["link"] = p ? PortJson(*s.fabric, *p) : json(nullptr);
  json counters = json::object();
  json pinned = json::array();
  if (totals != s.ports->end()) {
    const auto& specs = CounterSpecs();
    for (std::size_t i = 0; i < kCounterCount; ++i) {
      if (!totals->second.present.test(i)) continue;
      counters[specs[i].metric] = totals->second.Total(i);
      if (totals->second.Pinned(i)) pinned.push_back(specs[i].metric);
    }
    j["stale"] = totals->second.stale;
    j["last_update"] = Iso8601(totals->second.last_update);
  }
  j["counters"] = std::move(counters);
  j["pinned"] = std::move(pinned);
  j["health"] = nullptr;
  if (s.health) {
    for (const CableSummary& c : s.health->cables) {
      if (!(c.cable.a == ref || c.cable.b == ref)) continue;
      const bool at_a = c.cable.a == ref;
      const EndSummary& here = at_a ? c.a : c.b;
      const EndSummary& there = at_a ? c.b : c.a;
      j["health"] = {{"up", c.up},
                     {"active", c.active},
                     {"disabled", c.disabled},
                     {"reachable", c.reachable},
                     {"last_down_kind", c.last_down_kind ? json(ToString(*c.last_down_kind)) : json(nullptr)},
                     {"rate", c.rate},
                     {"best_rate", c.best_rate},
                     {"dropped", c.dropped},
                     {"downs_in_window", c.downs_in_window},
                     {"downs_total", c.downs_total},
                     {"this_end", RatesJson(s, ref, here)},
                     {"far_end", RatesJson(s, at_a ? c.cable.b : c.cable.a, there)}};
      break;
    }
  }
  json alerts = json::array();
  if (s.health) {
    for (const Alert& a : s.health->active) {
      if (a.cable.a == ref || a.cable.b == ref) alerts.push_back(AlertToJson(s, a));
    }
  }
  j["alerts"] = std::move(alerts);
  // Forward error correction at both ends of its cable, each as last read.
  const topology::PortRef far = p && p->remote ? *p->remote : topology::PortRef{};
  j["fec"] = {{"this_end", FecJson(s, ref)}, {"far_end", p && p->remote ? FecJson(s, far) : nlohmann::json(nullptr)}};
  // The modules at both ends, likewise.
  j["module"] = {{"this_end", ModuleJson(s, ref)},
                 {"far_end", p && p->remote ? ModuleJson(s, far) : nlohmann::json(nullptr)}};
  return j;
}

}  // namespace ibfabric::collectors
