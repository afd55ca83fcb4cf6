#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <set>

#include "collectors/api/detail/common.h"
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

using api::AlertToJson;
using api::End;
using api::NameOf;
using api::Unix;
using nlohmann::json;
using topology::FormatGuid;

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

}  // namespace

// The alert as the API lists it (api/detail/common.h).
json api::AlertToJson(const Snapshot& s, const Alert& a) {
  const std::string id = IdOf(a);
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

namespace {

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
