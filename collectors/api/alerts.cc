#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <set>

#include "collectors/api/json.h"
#include "collectors/blast_radius_collector.h"
#include "collectors/common/iso8601.h"
#include "collectors/framework/render.h"
#include "collectors/jobs_collector.h"
#include "collectors/module_collector.h"
#include "collectors/parts/fec.h"
#include "collectors/parts/host.h"
#include "config/text.h"
#include "topology/blast_radius.h"

namespace ibfabric::collectors {
namespace {

using nlohmann::json;
using topology::FormatGuid;

double Unix(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

std::string NameOf(const Snapshot& s, std::uint64_t guid) {
  auto it = s.nodes->find(guid);
  return it == s.nodes->end() ? "" : it->second.name;
}

// Where a congestion tree's paths come from: the forwarding tables, which
// are the paths unless a switch of the tree routes adaptively.
const char* PathsOf(const std::vector<std::uint64_t>& adaptive) {
  return adaptive.empty() ? "forwarding_tables" : "static_tables_adaptive_routing_on";
}

json Names(const Snapshot& s, const std::vector<std::uint64_t>& guids) {
  json out = json::array();
  for (std::uint64_t g : guids) out.push_back(NameOf(s, g));
  return out;
}

json End(const Snapshot& s, const topology::PortRef& ref) {
  json e{{"node", NameOf(s, ref.node_guid)}, {"guid", FormatGuid(ref.node_guid)}, {"port", ref.port}};
  auto it = s.nodes->find(ref.node_guid);
  e["kind"] = it == s.nodes->end() ? "unknown" : it->second.kind == topology::NodeKind::kSwitch ? "switch" : "hca";
  const topology::Port* p = s.fabric ? s.fabric->FindPort(ref) : nullptr;
  e["lid"] = p ? json(p->lid) : json(nullptr);
  return e;
}

// Whether an alert of `severity` on `ports` passes the filter: the node
// filter matches a port's node by name or GUID.
bool Matches(const Snapshot& s, Severity severity, const std::vector<topology::PortRef>& ports, const AlertFilter& f) {
  if (f.severity && severity != *f.severity) return false;
  if (f.node.empty()) return true;
  return std::any_of(ports.begin(), ports.end(), [&](const topology::PortRef& end) {
    return NamesNode(f.node, end.node_guid, NameOf(s, end.node_guid));
  });
}

bool Matches(const Snapshot& s, const Alert& a, const AlertFilter& f) {
  return Matches(s, a.severity, {a.cable.a, a.cable.b}, f);
}

// A subnet manager condition as an alert: cause "subnet_manager", `ends`
// the SM ports concerned (none for no_master), active while it holds.
json SmConditionToJson(const Snapshot& s, const SmConditionState& c) {
  json ends = json::array();
  for (const auto& port : c.sms) ends.push_back(End(s, port));
  return json{
      {"id", std::string("subnet_manager:") + ToString(c.condition)},
      {"cause", "subnet_manager"},
      {"condition", ToString(c.condition)},
      {"severity", ToString(c.severity)},
      {"state", "active"},
      {"summary", c.summary},
      {"action", c.action},
      {"ends", std::move(ends)},
      {"since", Iso8601(c.since)},
      {"since_unix", Unix(c.since)},
      {"last_seen", Iso8601(s.published)},
      {"cleared", nullptr},
      {"evidence", json::array({{{"signal", ToString(c.condition)}, {"end", "fabric"}, {"detail", c.summary}}})}};
}

// The host ports a fault's routes join (blast_radius_collector.h), most
// routes first, at most kBlastRadiusListed of them; null where this
// exporter does not trace routes or the alert is of no such cause.
constexpr std::size_t kBlastRadiusListed = 500;
json BlastRadiusJson(const Snapshot& s, const Alert& a) {
  const auto* report = s.by_collector.Get<BlastReport>(kBlastRadiusCollector);
  const BlastEntry* e = report ? report->Find(a.cause, a.cable) : nullptr;
  if (!e) return nullptr;
  // Most routes first, then by port: only the first kBlastRadiusListed sorted.
  std::vector<std::pair<topology::PortRef, topology::PortRoutes>> ports(e->radius.ports.begin(), e->radius.ports.end());
  const std::size_t listed = std::min(ports.size(), kBlastRadiusListed);
  std::partial_sort(ports.begin(), ports.begin() + static_cast<std::ptrdiff_t>(listed), ports.end(),
                    [](const auto& x, const auto& y) {
                      const std::size_t nx = x.second.sends + x.second.receives;
                      const std::size_t ny = y.second.sends + y.second.receives;
                      return nx != ny ? nx > ny : x.first < y.first;
                    });
  ports.resize(listed);
  json list = json::array();
  for (const auto& [p, r] : ports) {
    json end = End(s, p);
    if (s.hosts) {
      const std::string host = HostOf(s, p.node_guid);
      end["host"] = host.empty() ? json(nullptr) : json(host);
    }
    end["sends"] = r.sends;
    end["receives"] = r.receives;
    list.push_back(std::move(end));
  }
  return {{"routes", e->radius.routes},
          {"ports", e->radius.ports.size()},
          {"routing", e->adaptive ? "adaptive" : "static"},
          {"listed", std::move(list)}};
}

// "bad_cable:0x...:3-0x...:2": the alert's id in the API.
std::string AlertId(const Alert& a) {
  return std::string(ToString(a.cause)) + ":" + FormatGuid(a.cable.a.node_guid) + ":" + std::to_string(a.cable.a.port) +
         "-" + FormatGuid(a.cable.b.node_guid) + ":" + std::to_string(a.cable.b.port);
}

json AlertToJson(const Snapshot& s, const Alert& a) {
  const std::string id = AlertId(a);
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
  if (a.root) {
    json victims = json::array();
    for (const auto& v : a.victims) victims.push_back(End(s, v));
    j["congestion"] = {{"root", End(s, *a.root)},
                       {"victims", std::move(victims)},
                       {"depth", a.depth},
                       {"paths", PathsOf(a.adaptive_switches)},
                       {"adaptive_routing_switches", Names(s, a.adaptive_switches)}};
  }
  // How far the evidence can be trusted: the ends' nodes whose MADs needed
  // retries or went unanswered over the window.
  json troubled = json::array();
  for (const auto& end : {a.cable.a, a.cable.b}) {
    auto h = s.node_health->find(end.node_guid);
    if (h == s.node_health->end() || h->second.MadTroubleRatio() <= 0) continue;
    troubled.push_back({{"node", NameOf(s, end.node_guid)},
                        {"guid", FormatGuid(end.node_guid)},
                        {"mad_trouble_ratio", h->second.MadTroubleRatio()}});
  }
  j["confidence"] = {{"reduced", !troubled.empty()}, {"failing_mads", std::move(troubled)}};
  j["blast_radius"] = BlastRadiusJson(s, a);
  return j;
}

// A congestion tree: its root (and what is behind it), each victim with its
// hops to the root, how much of the window each port waited, and the
// ports that discarded at head of queue.
json TreeToJson(const Snapshot& s, const CongestionReport& c) {
  const topology::CongestionTree& t = c.tree;
  const auto port = [&](const topology::PortRef& p) {
    json j = End(s, p);
    auto f = c.xmit_wait_fraction.find(p);
    j["xmit_wait_fraction"] = f == c.xmit_wait_fraction.end() ? json(nullptr) : json(f->second);
    auto d = c.hoq_discards.find(p);
    j["hoq_lifetime_discards"] = d == c.hoq_discards.end() ? 0 : d->second;
    // PortXmitWait by VL since the exporter started, where the port
    // answers PortVLXmitWaitCounters: the VL that waits names the service
    // level that is congested.
    auto vl = s.vl_xmit_wait->find(p);
    if (vl != s.vl_xmit_wait->end()) j["xmit_wait_by_vl"] = vl->second.total;
    return j;
  };
  json root = port(t.root);
  const topology::Port* p = s.fabric ? s.fabric->FindPort(t.root) : nullptr;
  root["behind"] = p && p->remote ? End(s, *p->remote) : json(nullptr);
  // An HCA behind the root: the host that is not draining, where the CAs
  // are grouped into hosts (topology/hosts.h).
  if (p && p->remote) {
    const std::string host = HostOf(s, p->remote->node_guid);
    if (!host.empty()) root["behind"]["host"] = host;
  }
  json victims = json::array();
  for (const topology::PortRef& v : t.victims) {
    json j = port(v);
    j["hops"] = t.hops.at(v);
    victims.push_back(std::move(j));
  }
  json hoq = json::array();
  for (const auto& [at, n] : c.hoq_discards) hoq.push_back(End(s, at));
  return json{{"severity", ToString(c.severity)},
              {"root", std::move(root)},
              {"victims", std::move(victims)},
              {"depth", t.depth},
              {"loop", t.loop},
              {"hoq_discarding", std::move(hoq)},
              {"paths", PathsOf(c.adaptive_switches)},
              {"adaptive_routing_switches", Names(s, c.adaptive_switches)}};
}

json EventToJson(const Snapshot& s, const FabricEvent& e) {
  json j{{"kind", ToString(e.kind)},
         {"time", Iso8601(e.when)},
         {"node", NameOf(s, e.node_guid)},
         {"guid", FormatGuid(e.node_guid)},
         {"links", e.links}};
  j["cable"] = e.cable ? json::array({End(s, e.cable->a), End(s, e.cable->b)}) : json(nullptr);
  return j;
}

}  // namespace

bool ParseAlertFilter(const std::multimap<std::string, std::string>& params, AlertFilter* filter, std::string* error) {
  AlertFilter f;
  if (!EachParameterOnce(params, error)) return false;
  for (const auto& [key, value] : params) {
    if (key == "severity") {
      if (value == "warning") {
        f.severity = Severity::kWarning;
      } else if (value == "critical") {
        f.severity = Severity::kCritical;
      } else {
        *error = "severity must be warning or critical, not '" + config::Excerpt(value, 40) + "'";
        return false;
      }
    } else if (key == "node") {
      if (!ParseNodeParameter(value, &f.node, error)) return false;
    } else if (key == "state") {
      if (value != "active" && value != "cleared" && value != "all") {
        *error = "state must be active, cleared or all, not '" + config::Excerpt(value, 40) + "'";
        return false;
      }
      f.active = value != "cleared";
      f.cleared = value != "active";
    } else {
      *error = "unknown parameter '" + config::Excerpt(key, 40) + "' (severity, node, state)";
      return false;
    }
  }
  *filter = f;
  return true;
}

json AlertsJson(const Snapshot& s, const AlertFilter& filter) {
  json active = json::array(), cleared = json::array();
  std::map<std::string, int> counts{{"warning", 0}, {"critical", 0}};
  // Subnet manager conditions first: they concern the whole fabric.
  if (s.subnet_managers) {
    for (const SmConditionState& c : s.subnet_managers->conditions) {
      if (!Matches(s, c.severity, c.sms, filter)) continue;
      ++counts[ToString(c.severity)];
      if (filter.active) active.push_back(SmConditionToJson(s, c));
    }
  }
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
  // Critical before warning, each group in the order above.
  std::stable_sort(active.begin(), active.end(), [](const json& x, const json& y) {
    return x["severity"] == "critical" && y["severity"] != "critical";
  });
  const double window = s.health ? std::chrono::duration<double>(s.health->window).count() : 0;
  // Link downs that were no flap (a host reset, a switch reboot, a port
  // disabled on purpose), newest first: why no alert was raised for them.
  json events = json::array();
  if (s.health) {
    for (auto e = s.health->events.rbegin(); e != s.health->events.rend(); ++e) {
      std::vector<topology::PortRef> at{{e->node_guid, 0}};
      if (e->cable) at = {e->cable->a, e->cable->b};
      if (filter.node.empty() || Matches(s, Severity::kWarning, at, AlertFilter{std::nullopt, filter.node})) {
        events.push_back(EventToJson(s, *e));
      }
    }
  }
  // The congestion trees of the last sweep, raised or not yet.
  json trees = json::array();
  if (s.health) {
    for (const CongestionReport& c : s.health->congestion) {
      std::vector<topology::PortRef> ports{c.tree.root};
      ports.insert(ports.end(), c.tree.victims.begin(), c.tree.victims.end());
      if (Matches(s, c.severity, ports, filter)) trees.push_back(TreeToJson(s, c));
    }
  }
  // What keeps this exporter from seeing the fabric, with what to do.
  json blind = json::array();
  if (s.smps_blocked) {
    blind.push_back(
        {{"kind", "smps_blocked"},
         {"lid_count", s.smp_blocked_lids},
         {"summary",
          "The fabric drops this exporter's SMPs while answering its GMPs: it looks M_Key-protected. The fabric is "
          "not walked; the nodes already known are still read."},
         {"action", s.m_key_given
                        ? "The M_Key given does not match the SM's: give the SM's current M_Key "
                          "(--ib.m-key-file=FILE, docs/security.md#m_key)."
                        : "Give the exporter the SM's M_Key: --ib.m-key-file=FILE (docs/security.md#m_key)."}});
  }
  if (s.traps_delivering == false) {
    blind.push_back(
        {{"kind", "traps_not_delivered"},
         {"summary",
          "The SA accepted the trap subscription but sends this exporter no traps: link changes are found by the "
          "sweeps' rotation, up to --sweep.rotation later."},
         {"action",
          "The SM reports a trap only to subscribers sharing a P_Key with its source: check that the SM's "
          "partitions.conf makes the exporter's port a member of the default partition, and that no other process "
          "on its host takes the port's SA Reports (docs/mad-volume.md)."}});
  }
  return json{{"schema_version", kAlertsSchemaVersion},
              {"generated", Iso8601(s.published)},
              {"exporter_blind_spots", std::move(blind)},
              {"window_seconds", window},
              {"active_counts", counts},
              {"active", std::move(active)},
              {"recently_cleared", std::move(cleared)},
              {"events", std::move(events)},
              {"congestion_trees", std::move(trees)}};
}

}  // namespace ibfabric::collectors

namespace ibfabric::collectors {
namespace {

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

// A float's value to the digits it holds (6), not the double nearest it.
double Significant(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", static_cast<double>(v));
  return std::strtod(buf, nullptr);
}

// One port's FEC as the fec collector last read it; null where it has none.
nlohmann::json FecJson(const Snapshot& s, const topology::PortRef& port) {
  const auto* fec = s.by_collector.Get<FecReadings>(kFecCollector);
  if (!fec) return nullptr;
  // By port, as the collector publishes them.
  const auto it = std::lower_bound(fec->ports->begin(), fec->ports->end(), port,
                                   [](const FecPort& f, const topology::PortRef& p) { return f.port < p; });
  if (it == fec->ports->end() || !(it->port == port)) return nullptr;
  const FecPort& f = *it;
  const auto ratio = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json j{{"mode", f.mode_known ? transport::ToString(f.mode) : "unknown"},
                   {"source", ToString(f.counted ? f.source : FecSource::kNone)}};
  if (!f.counted) return j;
  const bool ppcnt = f.source == FecSource::kPpcnt;
  j["pinned"] = f.pinned;
  j["window_seconds"] = f.window_seconds;
  j["raw_bit_error_ratio"] = ratio(f.raw_ber);
  j["effective_bit_error_ratio"] = ratio(f.effective_ber);
  j["symbol_bit_error_ratio"] = ratio(f.symbol_ber);
  j["raw_bit_error_ratio_baseline"] = ratio(f.raw_ber_baseline);
  j["worst_lane"] = f.worst_lane >= 0 ? nlohmann::json(f.worst_lane) : nlohmann::json(nullptr);
  if (ppcnt) {
    j["received_bits"] = f.received_bits;
    j["corrected_bits"] = f.corrected_bits;
    j["effective_errors"] = f.effective_errors;
    j["symbol_errors"] = f.symbol_errors;
  } else {
    j["corrected_blocks"] = f.corrected_blocks;
    j["uncorrectable_blocks"] = f.uncorrectable_blocks;
    j["corrected_symbols"] = f.corrected_symbols;
  }
  nlohmann::json lanes = nlohmann::json::array();
  for (int lane = 0; lane < f.lanes; ++lane) {
    const auto i = static_cast<std::size_t>(lane);
    lanes.push_back({{"lane", lane},
                     {ppcnt ? "raw_errors" : "corrected_symbols", ppcnt ? f.lane_raw_errors[i] : f.lane_symbols[i]},
                     {"raw_bit_error_ratio",
                      f.raw_ber ? nlohmann::json(Significant(f.lane_raw_ber[i])) : nlohmann::json(nullptr)}});
  }
  j["lanes"] = std::move(lanes);
  return j;
}

// The module at one port as the modules collector last read it; null
// where it has none.
nlohmann::json ModuleJson(const Snapshot& s, const topology::PortRef& port) {
  const auto* modules = s.by_collector.Get<ModuleReadings>(kModulesCollector);
  if (!modules) return nullptr;
  const auto it = std::lower_bound(modules->ports->begin(), modules->ports->end(), port,
                                   [](const ModulePort& m, const topology::PortRef& p) { return m.port < p; });
  if (it == modules->ports->end() || !(it->port == port)) return nullptr;
  const transport::ModuleInfo& i = it->info;
  const auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"vendor", i.vendor_name},
          {"part_number", i.vendor_pn},
          {"serial_number", i.vendor_sn},
          {"revision", i.vendor_rev},
          {"type", transport::CableTypeName(i.cable_type)},
          {"identifier", transport::CableIdentifierName(i.cable_identifier)},
          {"length_meters", i.LengthMeters()},
          {"temperature_celsius", (i.monitors & 1) ? opt(i.temperature_celsius) : nlohmann::json(nullptr)},
          {"temperature_high_threshold_celsius",
           (i.monitors & 1) ? opt(i.temperature_high_celsius) : nlohmann::json(nullptr)}};
}

// A node GUID parameter, hex with "0x" optional; nullopt with *error.
std::optional<std::uint64_t> ParseGuid(const std::string& v, std::string* error) {
  char* stop = nullptr;
  errno = 0;
  const unsigned long long g = std::strtoull(v.c_str(), &stop, 16);
  if (v.empty() || v.size() > 18 || errno != 0 || *stop != '\0' || v[0] == '-') {
    *error = "guid must be a hexadecimal node GUID such as 0x0002c90300a1b2c3";
    return std::nullopt;
  }
  return g;
}

// The node GUID of `guid`: itself when it names a node, else the node
// with a port of that GUID (an HCA port's, as the metrics' `guid` label
// and so the alert rules' links carry it); itself when neither.
std::uint64_t NodeOf(const Snapshot& s, std::uint64_t guid) {
  if (!s.fabric || s.fabric->FindNode(guid)) return guid;
  for (const auto& [node, label] : *s.nodes) {
    for (const auto& [port, g] : label.port_guids) {
      if (g == guid) return node;
    }
  }
  return guid;
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
      char* stop = nullptr;
      const long n = std::strtol(v.c_str(), &stop, 10);
      if (v.empty() || *stop != '\0' || n < 0 || n > 254) {
        *error = "port must be a port number from 0 to 254";
        return false;
      }
      number = static_cast<int>(n);
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

bool ParseRouteQuery(const std::multimap<std::string, std::string>& params, RouteQuery* query, std::string* error) {
  // "GUID:PORT"
  const auto end = [error](const std::string& name, const std::string& v, topology::PortRef* out) {
    const auto colon = v.rfind(':');
    if (colon == std::string::npos) {
      *error = name + " must be GUID:PORT";
      return false;
    }
    const auto guid = ParseGuid(v.substr(0, colon), error);
    if (!guid) return false;
    char* stop = nullptr;
    const std::string n = v.substr(colon + 1);
    const long number = std::strtol(n.c_str(), &stop, 10);
    if (n.empty() || *stop != '\0' || number < 1 || number > 254) {
      *error = name + "'s port must be a port number from 1 to 254";
      return false;
    }
    *out = {*guid, static_cast<std::uint8_t>(number)};
    return true;
  };
  bool from = false, to = false;
  for (const auto& [k, v] : params) {
    if (k == "from" && !from) {
      if (!end("from", v, &query->from)) return false;
      from = true;
    } else if (k == "to" && !to) {
      if (!end("to", v, &query->to)) return false;
      to = true;
    } else {
      *error = "unexpected parameter '" + config::Excerpt(k, 40) + "' (use from and to, once each)";
      return false;
    }
  }
  if (!from || !to) {
    *error = "from and to are both required (GUID:PORT of two host ports)";
    return false;
  }
  return true;
}

nlohmann::json RouteJson(const Snapshot& s, const RouteQuery& q) {
  if (!s.fabric || !s.forwarding || s.forwarding->empty()) return nullptr;
  const topology::PortRef from{NodeOf(s, q.from.node_guid), q.from.port};
  const topology::PortRef to{NodeOf(s, q.to.node_guid), q.to.port};
  const topology::Port* src = s.fabric->FindPort(from);
  const topology::Port* dst = s.fabric->FindPort(to);
  const topology::Node* src_node = s.fabric->FindNode(from.node_guid);
  if (!src || !dst || !src_node || src_node->kind == topology::NodeKind::kSwitch || dst->lid == 0) return nullptr;
  const topology::Route r = topology::TraceRoute(*s.fabric, *s.forwarding, from, dst->lid);
  json hops = json::array();
  std::set<topology::PortRef> left_by;
  for (const topology::PortRef& e : r.egress) {
    json hop = End(s, e);
    const topology::Port* p = s.fabric->FindPort(e);
    hop["to"] = p && p->remote ? End(s, *p->remote) : json(nullptr);
    hops.push_back(std::move(hop));
    left_by.insert(e);
  }
  // The active alerts the route leaves by: a cable's either end, a root.
  json crossed = json::array();
  if (s.health) {
    for (const Alert& a : s.health->active) {
      const bool crosses =
          a.root ? left_by.count(*a.root) > 0 : left_by.count(a.cable.a) > 0 || left_by.count(a.cable.b) > 0;
      if (crosses) crossed.push_back(AlertId(a));
    }
  }
  return {{"from", End(s, from)},
          {"to", End(s, to)},
          {"arrives", r.arrives},
          {"hops", std::move(hops)},
          {"alerts", std::move(crossed)}};
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

bool ParseNodeQuery(const std::multimap<std::string, std::string>& params, std::uint64_t* guid, std::string* error) {
  std::optional<std::uint64_t> g;
  for (const auto& [k, v] : params) {
    if (k != "guid" || g) {
      *error = "unexpected parameter '" + config::Excerpt(k, 40) + "' (use guid, once)";
      return false;
    }
    g = ParseGuid(v, error);
    if (!g) return false;
  }
  if (!g) {
    *error = "guid is required";
    return false;
  }
  *guid = *g;
  return true;
}

nlohmann::json NodeDetailJson(const Snapshot& s, std::uint64_t asked) {
  const std::uint64_t guid = NodeOf(s, asked);
  const topology::Node* n = s.fabric ? s.fabric->FindNode(guid) : nullptr;
  if (!n) return nullptr;
  const topology::Analysis empty;
  const topology::Analysis& analysis = s.topology ? *s.topology : empty;
  json node = NodeJson(*s.fabric, analysis, *n);
  node.erase("ports");
  const topology::Pods pods = topology::FindPods(*s.fabric, analysis, s.hosts ? &s.hosts->leaf_unit : nullptr);
  if (auto p = pods.of.find(guid); p != pods.of.end()) node["pod"] = pods.names[static_cast<std::size_t>(p->second)];
  json ports = json::array();
  for (const topology::Port& p : n->ports) {
    json d = PortDetailJson(s, {guid, p.number});
    if (d.is_null()) continue;
    d.erase("schema_version");
    d.erase("alerts");
    if (const auto& remote = p.remote) {
      const auto l = analysis.degraded.find(topology::CableBetween({guid, p.number}, *remote));
      d["degraded"] = l == analysis.degraded.end() ? json(nullptr) : json(topology::ToString(l->second));
    }
    ports.push_back(std::move(d));
  }
  json alerts = json::array();
  if (s.health) {
    for (const Alert& a : s.health->active) {
      if (a.cable.a.node_guid == guid || a.cable.b.node_guid == guid) alerts.push_back(AlertToJson(s, a));
    }
  }
  json findings = json::array();
  if (s.topology) {
    for (const auto& f : topology::AllFindings(*s.topology, s.routing.get(),
                                               s.by_collector.Get<topology::PartitionAnalysis>("partitions"))) {
      if (f.node != guid && !(f.a && f.a->node_guid == guid) && !(f.b && f.b->node_guid == guid)) continue;
      json j{{"kind", topology::ToString(f.kind)}, {"detail", f.detail}};
      j["a"] = f.a ? End(s, *f.a) : json(nullptr);
      j["b"] = f.b ? End(s, *f.b) : json(nullptr);
      findings.push_back(std::move(j));
    }
  }
  return {{"schema_version", kAlertsSchemaVersion},
          {"node", std::move(node)},
          {"ports", std::move(ports)},
          {"alerts", std::move(alerts)},
          {"findings", std::move(findings)}};
}

bool ParseHostQuery(const std::multimap<std::string, std::string>& params, std::string* name, std::string* error) {
  std::optional<std::string> n;
  for (const auto& [k, v] : params) {
    if (k != "name" || n) {
      *error = "unexpected parameter '" + config::Excerpt(k, 40) + "' (use name, once)";
      return false;
    }
    if (v.empty() || v.size() > 200) {
      *error = "name must be a host's name, 1 to 200 characters";
      return false;
    }
    n = v;
  }
  if (!n) {
    *error = "name is required";
    return false;
  }
  *name = *n;
  return true;
}

namespace {

// The counters of the driver's hw_counters/ the host rules watch
// (deploy/prometheus/infiniband-rules.yml, group infiniband-host), where
// the driver has them.
constexpr const char* kTransportCounters[] = {"req_transport_retries_exceeded", "req_rnr_retries_exceeded",
                                              "local_ack_timeout_err", "rnr_nak_retry_err", "out_of_buffer"};

// What the host's kernel says of the HCA with node GUID `guid`, or null
// where this exporter does not read the host (not local scope, another host).
json KernelJson(const Snapshot& s, std::uint64_t guid) {
  const auto* readings = s.by_collector.Get<HostReadings>(kHostCollector);
  if (!readings || !readings->reading) return nullptr;
  for (const host::HostDevice& d : readings->reading->devices) {
    if (host::ParseSysfsGuid(d.node_guid) != guid) continue;
    json pcie = nullptr;
    if (d.pcie) {
      pcie = {{"transfers_per_second", d.pcie->speed_gts * 1e9},
              {"width", d.pcie->width},
              {"max_transfers_per_second", d.pcie->max_speed_gts * 1e9},
              {"max_width", d.pcie->max_width},
              {"degraded", d.pcie->degraded()}};
    }
    json ports = json::array();
    for (const host::HostPort& p : d.ports) {
      json counters = json::object();
      for (const char* c : kTransportCounters) {
        const auto it = p.hw_counters.find(c);
        if (it != p.hw_counters.end()) counters[c] = it->second;
      }
      json jobs = json::array();
      if (const auto* held = s.by_collector.Get<JobReadings>(kJobsCollector)) {
        for (const JobPort& j : held->ports) {
          if (j.device != d.name || j.port != p.number) continue;
          jobs.push_back({{"source", j.holder.source},
                          {"hpc_job", j.holder.hpc_job},
                          {"namespace", j.holder.pod_namespace},
                          {"pod", j.holder.pod},
                          {"container", j.holder.container}});
        }
      }
      ports.push_back({{"port", p.number},
                       {"link_layer", p.link_layer},
                       {"state", p.state},
                       {"transport_errors", std::move(counters)},
                       {"jobs", std::move(jobs)}});
    }
    return {{"device", d.name},
            {"firmware_version", d.fw_ver},
            {"board_id", d.board_id},
            {"pci_address", d.pci_address},
            {"numa_node", d.numa_node < 0 ? json(nullptr) : json(d.numa_node)},
            {"pcie", std::move(pcie)},
            {"ports", std::move(ports)}};
  }
  return nullptr;
}

}  // namespace

nlohmann::json HostDetailJson(const Snapshot& s, const std::string& name) {
  if (!s.hosts || !s.fabric) return nullptr;
  const topology::HostAnalysis& h = *s.hosts;
  const auto it = std::find_if(h.hosts.begin(), h.hosts.end(), [&](const topology::Host& x) { return x.name == name; });
  if (it == h.hosts.end()) return nullptr;
  const topology::Host& host = *it;
  const auto unit = [&h](int u) { return u < 0 ? json(nullptr) : json(h.units[static_cast<std::size_t>(u)]); };
  std::set<std::uint64_t> mine;
  for (const auto& x : host.hcas) mine.insert(x.guid);
  json hcas = json::array();
  for (const topology::Hca& x : host.hcas) {
    json ports = json::array();
    for (const topology::HcaPort& p : x.ports) {
      const topology::Port* port = s.fabric->FindPort({x.guid, p.port});
      const auto lu = h.leaf_unit.find(p.leaf.node_guid);
      ports.push_back({{"port", p.port},
                       {"state", port ? PortJson(*s.fabric, *port)["state"] : json(nullptr)},
                       {"rate", port ? PortJson(*s.fabric, *port)["rate"] : json(nullptr)},
                       {"leaf", End(s, p.leaf)},
                       {"rail", p.rail < 0 ? json(nullptr) : json(h.rails[static_cast<std::size_t>(p.rail)])},
                       {"rail_index", p.rail},
                       {"unit", lu == h.leaf_unit.end() ? json(nullptr) : unit(lu->second)}});
    }
    const topology::Node* n = s.fabric->FindNode(x.guid);
    hcas.push_back({{"device", x.device},
                    {"guid", FormatGuid(x.guid)},
                    {"name", n ? n->description : ""},
                    {"lid", n ? n->lid : 0},
                    {"ports", std::move(ports)},
                    {"kernel", KernelJson(s, x.guid)}});
  }
  json alerts = json::array();
  if (s.health) {
    for (const Alert& a : s.health->active) {
      if (mine.count(a.cable.a.node_guid) || mine.count(a.cable.b.node_guid)) alerts.push_back(AlertToJson(s, a));
    }
  }
  json findings = json::array();
  if (s.topology) {
    for (const auto& f : topology::AllFindings(*s.topology, s.routing.get(),
                                               s.by_collector.Get<topology::PartitionAnalysis>("partitions"))) {
      if (!mine.count(f.node) && !(f.a && mine.count(f.a->node_guid)) && !(f.b && mine.count(f.b->node_guid))) continue;
      json j{{"kind", topology::ToString(f.kind)}, {"detail", f.detail}};
      j["a"] = f.a ? End(s, *f.a) : json(nullptr);
      j["b"] = f.b ? End(s, *f.b) : json(nullptr);
      findings.push_back(std::move(j));
    }
  }
  return {{"schema_version", kTopologySchemaVersion},
          {"host", host.name},
          {"layout", topology::ToString(h.layout)},
          {"unit", unit(host.unit)},
          {"hcas", std::move(hcas)},
          {"alerts", std::move(alerts)},
          {"findings", std::move(findings)}};
}

}  // namespace ibfabric::collectors
