#include "collectors/blast_radius_collector.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "collectors/common/iso8601.h"
#include "collectors/framework/render.h"
#include "collectors/parts/adaptive_routing.h"
#include "collectors/parts/fabric_jobs.h"
#include "config/values.h"
#include "topology/adaptive_routing.h"

namespace ibfabric::collectors {
namespace {

using prometheus::MetricType;

bool Hurts(Cause c) { return c == Cause::kBadCable || c == Cause::kFlappingLink || c == Cause::kCongestion; }

// A fault as the cache knows it.
using Key = std::tuple<Cause, topology::Link, std::optional<topology::PortRef>>;

class BlastRadiusCollector final : public Collector {
 public:
  Schedule schedule() const override { return Schedule::kSweep; }

  Outcome Update(const Cycle& cycle) override {
    const Snapshot& s = *cycle.parts;
    if (!cycle.scope.reports_topology() || !s.health || !s.forwarding || s.forwarding->empty() || !cycle.fabric) {
      published_.reset();
      cache_.clear();
      return {};
    }
    std::set<std::uint64_t> adaptive;
    if (const auto* ar = s.by_collector.Get<topology::AdaptiveSwitches>(kAdaptiveRoutingCollector)) {
      adaptive = topology::AdaptiveOn(*ar);
    }
    // New tables, a new graph or adaptive routing turned on or off somewhere:
    // every route (or what it is called) may differ.
    if (s.forwarding != tables_ || cycle.fabric_generation != generation_ || adaptive != adaptive_) {
      cache_.clear();
      tables_ = s.forwarding;
      generation_ = cycle.fabric_generation;
      adaptive_ = adaptive;
    }
    auto next = std::make_shared<BlastReport>();
    std::map<Key, std::shared_ptr<const BlastEntry>> kept;
    for (const Alert& a : s.health->active) {
      if (!Hurts(a.cause)) continue;
      const Key key{a.cause, a.cable, a.root};
      auto it = cache_.find(key);
      if (it == cache_.end()) {
        auto e = std::make_shared<BlastEntry>();
        e->cause = a.cause;
        e->cable = a.cable;
        e->root = a.root;
        const std::set<topology::PortRef> egress =
            a.root ? std::set<topology::PortRef>{*a.root} : std::set<topology::PortRef>{a.cable.a, a.cable.b};
        e->radius = topology::RoutesThrough(*cycle.fabric, *s.forwarding, egress);
        // Static routes where the switches they leave by route adaptively
        // (the tables are then the fallback).
        for (const auto& p : egress) e->adaptive = e->adaptive || adaptive.count(p.node_guid) > 0;
        it = cache_.emplace(key, std::move(e)).first;
      }
      next->entries.push_back(it->second);
      kept.insert(*it);
    }
    cache_ = std::move(kept);
    published_ = std::move(next);
    return {};
  }

  void Publish(Snapshot* parts) const override { parts->by_collector.Set(kBlastRadiusCollector, published_); }

 private:
  std::shared_ptr<const topology::ForwardingTables> tables_;
  std::uint64_t generation_ = 0;
  std::set<std::uint64_t> adaptive_;
  std::map<Key, std::shared_ptr<const BlastEntry>> cache_;
  std::shared_ptr<const BlastReport> published_;
};

// "bad_cable ib-spine01[3] - ib-leaf02[1]"
std::string FaultName(const Snapshot& s, const BlastEntry& e) {
  const auto end = [&s](const topology::PortRef& p) {
    return LabelOf(s, p.node_guid).name + "[" + std::to_string(p.port) + "]";
  };
  return std::string(ToString(e.cause)) + " " + end(e.cable.a) + " - " + end(e.cable.b);
}

// The host of a CA, or where it is in no host (its description is not
// the host pattern's) the CA's own name.
std::string HostOrNode(const Snapshot& s, std::uint64_t ca) {
  std::string host = HostOf(s, ca);
  return host.empty() ? topology::NodeName(*s.fabric, ca) : host;
}

// The jobs a fix would touch, from the hosts' own exporters as read back
// (collectors/parts/fabric_jobs.h): each job holding a port that is cut
// (its host cut off, or left a port short) or that sends or receives a
// route that moves; and the jobs to wait for (the first kind), named.
struct JobsTouched {
  nlohmann::json listed = nlohmann::json::array();
  std::vector<std::string> wait_for;  // "job 4242 (cn0005 loses every path)"
  std::vector<std::string> moving;    // "job 5151"
};
JobsTouched TouchedJobs(const Snapshot& s, const FabricJobs& jobs, const std::set<topology::PortRef>& cut,
                        const std::set<std::string>& cut_off, const topology::BlastRadius& radius) {
  struct Hit {
    std::set<std::string> hosts, cut_off, losing, moving;
  };
  std::map<FabricJob, Hit> hits;
  for (const auto& [port, held] : jobs.at) {
    if (!s.fabric->FindPort(port)) continue;  // another fabric's
    const std::string host = HostOrNode(s, port.node_guid);
    for (const FabricJob& job : held) {
      Hit& h = hits[job];
      h.hosts.insert(host);
      if (cut.count(port)) {
        (cut_off.count(host) ? h.cut_off : h.losing).insert(host);
      } else if (radius.ports.count(port)) {
        h.moving.insert(host);
      }
    }
  }
  JobsTouched out;
  for (const auto& [job, h] : hits) {
    if (h.cut_off.empty() && h.losing.empty() && h.moving.empty()) continue;
    const std::string name = (job.source == "kubernetes" ? "pod " : "job ") + job.id;
    out.listed.push_back({{"job", job.id},
                          {"source", job.source},
                          {"hosts", h.hosts},
                          {"hosts_cut_off", h.cut_off},
                          {"hosts_losing_ports", h.losing},
                          {"hosts_whose_routes_move", h.moving}});
    if (!h.cut_off.empty()) {
      out.wait_for.push_back(name + " (" + *h.cut_off.begin() + " loses every path)");
    } else if (!h.losing.empty()) {
      out.wait_for.push_back(name + " (" + *h.losing.begin() + " loses a port)");
    } else {
      out.moving.push_back(name);
    }
  }
  return out;
}

// "a, b, c and 2 more"
std::string FirstFew(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < 3; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 3) out += " and " + std::to_string(names.size() - 3) + " more";
  return out;
}

// The verdict: wait while a host it cuts off or leaves a port short runs a
// job (or, not knowing the jobs, at all: drain first); else safe now.
std::pair<std::string, std::string> Verdict(const topology::BlastRadius& radius, const nlohmann::json& cut_off,
                                            const nlohmann::json& losing, const nlohmann::json& broken,
                                            const JobsTouched* jobs) {
  const auto number = [](std::size_t n, const char* what) { return std::to_string(n) + " " + what; };
  std::string hurt;
  if (!cut_off.empty()) {
    hurt = number(cut_off.size(), "hosts") + " lose every path (" + cut_off[0].get<std::string>() +
           (cut_off.size() > 1 ? ", ..." : "") + ")";
  } else if (!broken.empty()) {
    hurt = number(losing.size(), "hosts") + " lose a rail (" + broken[0]["rail"].get<std::string>() +
           "): a job across them runs at the pace of its slowest rail";
  } else if (!losing.empty()) {
    hurt = number(losing.size(), "hosts") + " lose a port (" + losing[0].get<std::string>() + ")";
  }
  if (jobs && !jobs->wait_for.empty()) return {"wait", "wait for " + FirstFew(jobs->wait_for) + "; " + hurt};
  if (!hurt.empty()) {
    if (!jobs) return {"wait", hurt + ": drain them first"};
    return {"safe now", hurt + " but run no job: drain them first so that none starts there"};
  }
  if (radius.routes == 0) return {"safe now", "no route between hosts crosses it"};
  std::string reason = number(radius.routes, "routes") + " between " + number(radius.ports.size(), "host ports") +
                       " move to other paths once the subnet manager routes around it";
  if (jobs && !jobs->moving.empty()) reason += " (" + FirstFew(jobs->moving) + " among them)";
  return {"safe now", reason};
}

// What taking `out` (ports: a cable's two ends, or every port of a
// switch) out of the fabric now costs, from the tables as read: the host
// routes that leave by one of them (the first `limit` listed, hop by hop),
// the host ports whose cable goes (cut off: their host loses that port, a
// rail on a rail-optimized fabric; a host that loses every port is cut
// off), the jobs on them, the leaf uplinks the routes use before and
// after, and a verdict.
nlohmann::json WhatIfJson(const Snapshot& s, const std::set<topology::PortRef>& out, std::size_t limit) {
  const topology::Fabric& f = *s.fabric;
  const topology::BlastRadius radius = topology::RoutesThrough(f, *s.forwarding, out, limit);
  nlohmann::json listed = nlohmann::json::array();
  for (const auto& [from, to] : radius.listed) {
    const topology::Port* dst = f.FindPort(to);
    nlohmann::json hops = nlohmann::json::array();
    for (const topology::PortRef& e : topology::TraceRoute(f, *s.forwarding, from, dst->lid).egress) {
      hops.push_back(topology::PortName(f, e));
    }
    listed.push_back({{"from", topology::PortName(f, from)},
                      {"to", topology::PortName(f, to)},
                      {"to_lid", dst->lid},
                      {"hops", std::move(hops)}});
  }
  // Host ports (up) whose cable goes, and each host's ports up and cut (a
  // CA in no host is a host of its own).
  std::set<topology::PortRef> cut;
  struct Count {
    int up = 0, gone = 0;
  };
  std::map<std::string, Count, decltype(&topology::NaturalLess)> hosts(&topology::NaturalLess);
  for (const topology::PortRef& h : topology::HostPorts(f)) {
    const topology::Port* p = f.FindPort(h);
    if (!p->link_up()) continue;
    Count& c = hosts[HostOrNode(s, h.node_guid)];
    ++c.up;
    if (out.count(h) || (p->remote && out.count(*p->remote))) {
      cut.insert(h);
      ++c.gone;
    }
  }
  nlohmann::json cut_off = nlohmann::json::array(), losing = nlohmann::json::array();
  std::set<std::string> cut_off_hosts;
  for (const auto& [name, c] : hosts) {
    if (c.gone > 0 && c.gone == c.up) cut_off_hosts.insert(name);
    if (c.gone > 0) (c.gone == c.up ? cut_off : losing).push_back(name);
  }
  std::map<std::string, std::set<std::string>> rails;  // rail -> servers losing it
  if (s.hosts && s.hosts->layout == topology::HostLayout::kRailOptimized) {
    for (const topology::Host& host : s.hosts->hosts) {
      for (const topology::Hca& hca : host.hcas) {
        for (const topology::HcaPort& hp : hca.ports) {
          if (hp.rail >= 0 && cut.count({hca.guid, hp.port}))
            rails[s.hosts->rails[static_cast<std::size_t>(hp.rail)]].insert(host.name);
        }
      }
    }
  }
  nlohmann::json broken = nlohmann::json::array();
  for (const auto& [rail, servers] : rails) broken.push_back({{"rail", rail}, {"hosts", servers}});
  const std::set<topology::Link> before =
      s.topology ? topology::UplinksUsed(f, *s.forwarding, *s.topology) : std::set<topology::Link>{};
  std::set<topology::Link> after;
  for (const topology::Link& l : before) {
    if (!out.count(l.a) && !out.count(l.b)) after.insert(l);
  }
  const double gbps_before = topology::UplinksGbps(f, before), gbps_after = topology::UplinksGbps(f, after);
  const auto* jobs = s.by_collector.Get<FabricJobs>(kFabricJobsCollector);
  std::optional<JobsTouched> touched;
  if (jobs && jobs->known) touched = TouchedJobs(s, *jobs, cut, cut_off_hosts, radius);
  const auto [verdict, reason] = Verdict(radius, cut_off, losing, broken, touched ? &*touched : nullptr);
  return {{"routes", radius.routes},
          {"ports", radius.ports.size()},
          {"listed", std::move(listed)},
          {"hosts_cut_off", std::move(cut_off)},
          {"hosts_losing_ports", std::move(losing)},
          {"rails_broken", std::move(broken)},
          {"jobs", touched ? std::move(touched->listed) : nlohmann::json(nullptr)},
          {"jobs_source",
           {{"known", touched.has_value()},
            {"read", touched ? Iso8601(jobs->read) : ""},
            {"error", !jobs                                 ? "no jobs source: --jobs.prometheus-url"
                      : !jobs->known && jobs->error.empty() ? "not read yet"
                                                            : jobs->error}}},
          {"uplinks",
           {{"cables_before", before.size()},
            {"cables_after", after.size()},
            {"gbps_before", gbps_before},
            {"gbps_after", gbps_after},
            {"lost_fraction", gbps_before > 0 ? 1.0 - gbps_after / gbps_before : 0.0}}},
          {"verdict", verdict},
          {"reason", reason}};
}

// GET /api/v1/whatif?cable=GUID:PORT | switch=GUID [&limit=N]: one; no
// parameters: each active alert's cable.
ApiReply WhatIfReply(const Snapshot& s, const ApiParams& params) {
  std::optional<std::string> cable, sw;
  std::size_t limit = 100;
  for (const auto& [key, value] : params) {
    if (key == "cable" && !cable && !sw) {
      cable = value;
    } else if (key == "switch" && !cable && !sw) {
      sw = value;
    } else if (key == "limit") {
      long long n = 0;
      if (!config::ParseInt(value, 0, 10000, &n)) return {400, nullptr, "limit must be 0 to 10000", "", ""};
      limit = static_cast<std::size_t>(n);
    } else {
      return {400, nullptr, "/api/v1/whatif takes cable=GUID:PORT or switch=GUID (one of them, once), and limit=N", "",
              ""};
    }
  }
  if (!s.fabric || !s.forwarding || s.forwarding->empty()) {
    return Absent(s, "no forwarding tables read yet", "reads no forwarding tables");
  }
  const topology::Fabric& f = *s.fabric;
  std::set<topology::PortRef> out;
  nlohmann::json target;
  if (cable) {
    const auto colon = cable->rfind(':');
    const auto guid = colon == std::string::npos ? std::nullopt : topology::ParseGuid(cable->substr(0, colon));
    const auto port = colon == std::string::npos ? std::nullopt : topology::ParsePortNumber(cable->substr(colon + 1));
    if (!guid || !port) return {400, nullptr, "cable must be GUID:PORT (either end)", "", ""};
    const topology::Port* p = f.FindPort({*guid, *port});
    if (!p || !p->remote) return {404, nullptr, "no cable at " + *cable + " in the fabric", "", ""};
    out = {{*guid, p->number}, *p->remote};
    target = {{"cable", topology::PortName(f, {*guid, p->number}) + " - " + topology::PortName(f, *p->remote)}};
  } else if (sw) {
    const auto guid = topology::ParseGuid(*sw);
    const topology::Node* n = guid ? f.FindNode(*guid) : nullptr;
    if (!guid) return {400, nullptr, "switch must be a switch's GUID", "", ""};
    if (!n || n->kind != topology::NodeKind::kSwitch)
      return {404, nullptr, "no switch " + *sw + " in the fabric", "", ""};
    for (const topology::Port& p : n->ports) out.insert({n->guid, p.number});
    target = {{"switch", topology::NodeName(f, n->guid)}, {"guid", topology::FormatGuid(n->guid)}};
  } else {
    nlohmann::json alerts = nlohmann::json::array();
    if (s.health) {
      for (const Alert& a : s.health->active) {
        if (a.root || a.cable.a.node_guid == 0) continue;
        nlohmann::json one = WhatIfJson(s, {a.cable.a, a.cable.b}, limit);
        one["alert_id"] = IdOf(a);
        one["cable"] = topology::PortName(f, a.cable.a) + " - " + topology::PortName(f, a.cable.b);
        alerts.push_back(std::move(one));
      }
    }
    return {200, {{"alerts", std::move(alerts)}}, "", "", ""};
  }
  nlohmann::json body = WhatIfJson(s, out, limit);
  body.update(target);
  return {200, std::move(body), "", "", ""};
}

}  // namespace

std::vector<topology::PortRef> HurtPorts(const topology::Fabric& fabric, const BlastEntry& e) {
  // A fault at a host's own cable (or a root facing it): that host's port.
  std::vector<topology::PortRef> hosts;
  const auto ca = [&fabric](const topology::PortRef& p) {
    const topology::Node* n = fabric.FindNode(p.node_guid);
    return n && topology::IsHca(*n);
  };
  const std::vector<topology::PortRef> ends =
      e.root ? std::vector<topology::PortRef>{*e.root} : std::vector<topology::PortRef>{e.cable.a, e.cable.b};
  for (const topology::PortRef& end : ends) {
    if (ca(end)) hosts.push_back(end);
    const topology::Port* p = fabric.FindPort(end);
    if (p && p->remote && ca(*p->remote)) hosts.push_back(*p->remote);
  }
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  if (!hosts.empty()) return hosts;
  std::vector<topology::PortRef> all;
  for (const auto& [p, r] : e.radius.ports) all.push_back(p);
  return all;
}

const BlastEntry* BlastReport::Find(Cause cause, const topology::Link& cable) const {
  for (const auto& e : entries) {
    if (e->cause == cause && e->cable == cable) return e.get();
  }
  return nullptr;
}

std::unique_ptr<Collector> MakeBlastRadiusCollector(const CollectorOptions&) {
  return std::make_unique<BlastRadiusCollector>();
}

void RenderBlastRadius(const Snapshot& s, const Emit& out) {
  const auto* report = s.by_collector.Get<BlastReport>(kBlastRadiusCollector);
  if (!report || !s.fabric) return;
  auto routes = Family("infiniband_alert_blast_radius_routes",
                       "Routes between host ports (source and destination port pairs) that cross the alert's cable "
                       "or congestion root, traced through the switches' forwarding tables",
                       MetricType::Gauge);
  auto ports = Family("infiniband_alert_blast_radius_ports",
                      "Host ports that send or receive a route crossing the alert's cable or congestion root",
                      MetricType::Gauge);
  std::map<topology::PortRef, std::vector<std::string>> faults_of;
  for (const auto& entry : report->entries) {
    const BlastEntry& e = *entry;
    auto labels = CableLabels(s, e.cable);
    labels.insert(labels.begin(), {"cause", ToString(e.cause)});
    labels.push_back({"cable", CableId(e.cable)});
    labels.push_back({"routing", e.adaptive ? "adaptive" : "static"});
    Add(routes, labels, static_cast<double>(e.radius.routes));
    Add(ports, std::move(labels), static_cast<double>(e.radius.ports.size()));
    const std::string name = FaultName(s, e);
    for (const topology::PortRef& p : HurtPorts(*s.fabric, e)) faults_of[p].push_back(name);
  }
  EmitNonEmpty(out, routes);
  EmitNonEmpty(out, ports);
  auto per_port = Family("infiniband_blast_radius_port_faults",
                         "Faults (bad or flapping cables, congestion roots) whose routes this host port sends or "
                         "receives, named in `faults`: join infiniband_host_port_job_info on node_guid and port",
                         MetricType::Gauge);
  for (const auto& [p, names] : faults_of) {
    std::string joined;
    for (const std::string& n : names) joined += (joined.empty() ? "" : "; ") + n;
    Add(per_port,
        {{"node_guid", topology::FormatGuid(p.node_guid)},
         {"port", std::to_string(p.port)},
         {"host", HostOf(s, p.node_guid)},
         {"faults", joined}},
        static_cast<double>(names.size()));
  }
  EmitNonEmpty(out, per_port);
}

CollectorInfo BlastRadiusCollectorInfo() {
  return {
      .name = "blast_radius",
      .help =
          "For each bad or flapping cable and congestion root alerted on, the routes between host ports that cross it "
          "(from the forwarding tables) and the host ports they join.",
      .make = MakeBlastRadiusCollector,
      .render = RenderBlastRadius,
      .reads = {"adaptive_routing", "routing", "link_health"},
      .routes = {{"/api/v1/whatif", "What-if JSON", WhatIfReply}},
  };
}

}  // namespace ibfabric::collectors
