#include "collectors/drain_collector.h"

#include <algorithm>
#include <map>
#include <set>

#include "collectors/common/iso8601.h"
#include "collectors/framework/render.h"
#include "config/slurm_names.h"
#include "config/values.h"

namespace ibfabric::collectors {

namespace {

// How long a host listed to resume stays so: a consumer polling now and
// then sees it, and the list does not grow for ever.
constexpr auto kResumeListed = std::chrono::hours(24);

// Each CA port's host: its host in fat_tree's analysis, else the first
// word of its CA's description (as the Slurm topology files name it). A CA
// gone from the fabric (its only cable down: nothing reaches it) by the
// name it was last seen with, so that its cable read down is its host's.
std::map<topology::PortRef, std::string> HostPorts(const topology::Fabric& fabric, const topology::HostAnalysis* hosts,
                                                   const NodeLabels& seen) {
  std::map<topology::PortRef, std::string> out;
  for (const topology::Node& n : fabric.nodes()) {
    if (!topology::IsHca(n)) continue;
    std::string host;
    if (hosts) {
      if (const auto it = hosts->of_ca.find(n.guid); it != hosts->of_ca.end()) host = hosts->hosts[it->second].name;
    }
    if (host.empty()) host = config::FirstWordName(n.description);
    if (host.empty()) continue;
    for (const topology::Port& p : n.ports) out[{n.guid, p.number}] = host;
  }
  for (const auto& [guid, label] : seen) {
    if (label.kind != topology::NodeKind::kCa || fabric.FindNode(guid) || config::FirstWordName(label.name).empty())
      continue;
    for (const auto& [port, port_guid] : label.port_guids) out[{guid, port}] = config::FirstWordName(label.name);
  }
  return out;
}

// The cable named from the host's end: "cn0001[1] - ib-leaf01[1]", a node
// gone from the fabric by the name it was last seen with.
std::string CableName(const topology::Fabric& fabric, const NodeLabels& seen, const topology::PortRef& mine,
                      const topology::PortRef& other) {
  const auto end = [&](const topology::PortRef& p) {
    const auto label = seen.find(p.node_guid);
    const std::string name = fabric.FindNode(p.node_guid) || label == seen.end()
                                 ? topology::NodeName(fabric, p.node_guid)
                                 : label->second.name;
    return name + "[" + std::to_string(p.port) + "]";
  };
  return end(mine) + " - " + end(other);
}

// The host ends of `cable` and their hosts (both, for a cable between two
// HCAs); none where neither end is a host's.
std::vector<std::pair<topology::PortRef, std::string>> HostEnds(const std::map<topology::PortRef, std::string>& ports,
                                                                const topology::Link& cable) {
  std::vector<std::pair<topology::PortRef, std::string>> out;
  for (const topology::PortRef& end : {cable.a, cable.b}) {
    if (const auto it = ports.find(end); it != ports.end()) out.emplace_back(end, it->second);
  }
  return out;
}

// Every host's faults now: its cables' draining alerts, and those read down.
std::map<std::string, std::vector<DrainFault>> FaultsOf(const topology::Fabric& fabric, const NodeLabels& seen,
                                                        const HealthReport& health,
                                                        const std::map<topology::PortRef, std::string>& ports) {
  std::map<std::string, std::vector<DrainFault>> out;
  for (const Alert& a : health.active) {
    if (a.cause != Cause::kBadCable && a.cause != Cause::kFlappingLink && a.cause != Cause::kDegradedLink) continue;
    for (const auto& [mine, host] : HostEnds(ports, a.cable)) {
      const topology::PortRef& other = mine == a.cable.a ? a.cable.b : a.cable.a;
      out[host].push_back(
          {IdOf(a), ToString(a.cause), ToString(a.severity), CableName(fabric, seen, mine, other), a.since});
    }
  }
  for (const CableSummary& c : health.cables) {
    if (c.up || !c.reachable) continue;  // up, or nothing of it read: no fault seen
    const std::string cause = c.disabled ? "port_disabled" : "link_down";
    const std::string id = IdOf(cause, c.cable);
    for (const auto& [mine, host] : HostEnds(ports, c.cable)) {
      const topology::PortRef& other = mine == c.cable.a ? c.cable.b : c.cable.a;
      out[host].push_back({id, cause, "critical", CableName(fabric, seen, mine, other), c.last_down});
    }
  }
  return out;
}

std::string Reason(const std::vector<DrainFault>& faults) {
  const DrainFault& first = faults.front();
  std::string out = "ibfabric: " + first.cause + " " + first.cable;
  if (first.since) out += " since " + Iso8601(*first.since);
  if (faults.size() > 1) out += " (+" + std::to_string(faults.size() - 1) + " more)";
  return out;
}

class DrainCollector final : public Collector {
 public:
  DrainCollector(DrainOptions options, std::map<std::string, std::string> names, const nlohmann::json* saved)
      : options_(options), names_(std::move(names)) {
    if (saved) Restore(*saved);
  }

  Schedule schedule() const override { return Schedule::kSweep; }

  // Its history survives a re-exec: the hosts it listed, since when each
  // clean one is clean, and since when it judges (seconds since the epoch).
  std::optional<nlohmann::json> Saved() const override {
    nlohmann::json listed = nlohmann::json::object();
    for (const std::string& host : listed_) {
      const auto clean = clean_since_.find(host);
      listed[host] = clean == clean_since_.end() ? nlohmann::json(nullptr) : nlohmann::json(Seconds(clean->second));
    }
    return nlohmann::json{{"judging_since", judging_since_ ? nlohmann::json(Seconds(*judging_since_)) : nullptr},
                          {"listed", std::move(listed)}};
  }

  Outcome Update(const Cycle& cycle) override {
    const Snapshot& s = *cycle.parts;
    if (!s.health) return {};
    if (!judging_since_) judging_since_ = cycle.wall;
    const auto ports = HostPorts(*cycle.fabric, s.hosts.get(), *s.nodes);
    std::map<std::string, std::vector<DrainFault>> faults = FaultsOf(*cycle.fabric, *s.nodes, *s.health, ports);
    auto list = std::make_shared<DrainList>();
    list->resume_after = options_.resume_after;
    list->judging_since = *judging_since_;
    std::set<std::string> hosts;
    for (const auto& [port, host] : ports) hosts.insert(host);
    list->fabric_hosts = hosts.size();
    list->every_host = cycle.scope.everything();
    std::vector<DrainHost> resume;
    for (auto& [host, f] : faults) {
      std::sort(f.begin(), f.end(), [](const DrainFault& a, const DrainFault& b) {
        return a.severity != b.severity ? a.severity == "critical" : a.cable < b.cable;
      });
      DrainHost h{host, NodeOf(host), DrainHost::State::kFaulty, std::move(f), "", std::nullopt, std::nullopt};
      h.reason = Reason(h.faults);
      for (const DrainFault& x : h.faults) {
        if (x.since && (!h.since || *x.since < *h.since)) h.since = x.since;
      }
      clean_since_.erase(host);
      listed_.insert(host);
      list->hosts.push_back(std::move(h));
    }
    // Listed before, clean now: held, then to resume, then forgotten.
    for (auto it = listed_.begin(); it != listed_.end();) {
      if (faults.count(*it)) {
        ++it;
        continue;
      }
      const auto clean = clean_since_.emplace(*it, cycle.wall).first->second;
      DrainHost h{*it, NodeOf(*it), DrainHost::State::kHolding, {}, "", std::nullopt, clean};
      if (cycle.wall - clean < options_.resume_after) {
        h.reason =
            "ibfabric: cables clean since " + Iso8601(clean) + ", held until " + Iso8601(clean + options_.resume_after);
        list->hosts.push_back(std::move(h));
      } else if (cycle.wall - clean < options_.resume_after + kResumeListed) {
        h.state = DrainHost::State::kResume;
        h.reason = "ibfabric: cables clean since " + Iso8601(clean);
        resume.push_back(std::move(h));
      } else {
        clean_since_.erase(*it);
        it = listed_.erase(it);
        continue;
      }
      ++it;
    }
    const auto by_name = [](const DrainHost& a, const DrainHost& b) { return a.host < b.host; };
    std::sort(list->hosts.begin(), list->hosts.end(), by_name);
    std::sort(resume.begin(), resume.end(), by_name);
    list->hosts.insert(list->hosts.end(), resume.begin(), resume.end());
    list_ = std::move(list);
    return {};
  }

  void Publish(Snapshot* parts) const override { parts->by_collector.Set(kDrainCollector, list_); }

 private:
  using Wall = std::chrono::system_clock::time_point;
  static std::int64_t Seconds(Wall t) {
    return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
  }
  static Wall FromSeconds(std::int64_t s) { return Wall(std::chrono::seconds(s)); }
  // What Saved wrote; nothing of it where it cannot be read (a first start).
  void Restore(const nlohmann::json& saved) {
    try {
      std::set<std::string> listed;
      std::map<std::string, Wall> clean;
      for (const auto& [host, since] : saved.at("listed").items()) {
        listed.insert(host);
        if (!since.is_null()) clean[host] = FromSeconds(since.get<std::int64_t>());
      }
      const nlohmann::json& judging = saved.at("judging_since");
      if (!judging.is_null()) judging_since_ = FromSeconds(judging.get<std::int64_t>());
      listed_ = std::move(listed);
      clean_since_ = std::move(clean);
    } catch (const nlohmann::json::exception&) {
      judging_since_.reset();
    }
  }

  std::string NodeOf(const std::string& host) const {
    const auto it = names_.find(host);
    return it == names_.end() ? host : it->second;
  }

  DrainOptions options_;
  std::map<std::string, std::string> names_;
  std::set<std::string> listed_;                                              // hosts listed faulty, not yet forgotten
  std::map<std::string, std::chrono::system_clock::time_point> clean_since_;  // of those, clean since
  std::optional<std::chrono::system_clock::time_point> judging_since_;        // its first verdicts
  std::shared_ptr<const DrainList> list_;
};

nlohmann::json Time(const std::optional<std::chrono::system_clock::time_point>& t) {
  return t ? nlohmann::json(Iso8601(*t)) : nlohmann::json(nullptr);
}

ApiReply DrainReply(const Snapshot& s, const ApiParams& params) {
  std::string host;
  for (const auto& [key, value] : params) {
    if (key != "host" || !host.empty() || value.empty()) {
      return {400, nullptr, "/api/v1/drain takes host=NAME (once) and nothing else", "", ""};
    }
    host = value;
  }
  const auto* list = s.by_collector.Get<DrainList>(kDrainCollector);
  if (!list) return {503, nullptr, "no sweep has judged the cables yet", "", ""};
  return {200, DrainJson(*list, host), "", "", ""};
}

}  // namespace

nlohmann::json DrainJson(const DrainList& list, const std::string& host) {
  nlohmann::json drain = nlohmann::json::array(), resume = nlohmann::json::array();
  for (const DrainHost& h : list.hosts) {
    if (!host.empty() && h.host != host && h.node != host) continue;
    nlohmann::json faults = nlohmann::json::array();
    for (const DrainFault& f : h.faults) {
      faults.push_back({{"alert_id", f.alert_id},
                        {"cause", f.cause},
                        {"severity", f.severity},
                        {"cable", f.cable},
                        {"since", Time(f.since)}});
    }
    nlohmann::json one{{"host", h.host}, {"node", h.node}, {"state", ToString(h.state)}, {"reason", h.reason}};
    if (h.state == DrainHost::State::kResume) {
      one["clean_since"] = Time(h.clean_since);
      resume.push_back(std::move(one));
      continue;
    }
    one["faults"] = std::move(faults);
    one["since"] = Time(h.since);
    one["clean_since"] = Time(h.clean_since);
    one["resume_at"] = h.clean_since ? Time(*h.clean_since + list.resume_after) : nlohmann::json(nullptr);
    drain.push_back(std::move(one));
  }
  return {{"resume_after_seconds", std::chrono::duration_cast<std::chrono::seconds>(list.resume_after).count()},
          {"judging_since", Iso8601(list.judging_since)},
          {"fabric_hosts", list.fabric_hosts},
          {"every_host", list.every_host},
          {"drain", std::move(drain)},
          {"resume", std::move(resume)}};
}

std::unique_ptr<Collector> MakeDrainCollector(const CollectorOptions& options) {
  const auto saved = options.restored.find(std::string(kDrainCollector));
  return std::make_unique<DrainCollector>(options.Get<DrainOptions>(), options.slurm_node_names,
                                          saved == options.restored.end() ? nullptr : &saved->second);
}

void RenderDrain(const Snapshot& s, const Emit& out) {
  const auto* list = s.by_collector.Get<DrainList>(kDrainCollector);
  if (!list) return;
  std::map<DrainHost::State, int> count{
      {DrainHost::State::kFaulty, 0}, {DrainHost::State::kHolding, 0}, {DrainHost::State::kResume, 0}};
  for (const DrainHost& h : list->hosts) ++count[h.state];
  auto family = Family("infiniband_drain_hosts",
                       "Hosts of the drain list (/api/v1/drain) by state: faulty (a fault on a cable of theirs), "
                       "holding (clean for less than --drain.resume-after), resume (clean since)",
                       prometheus::MetricType::Gauge);
  for (const auto& [state, n] : count) Add(family, {{"state", ToString(state)}}, n);
  out(std::move(family));
}

CollectorInfo DrainCollectorInfo() {
  return {
      .name = kDrainCollector,
      .help =
          "The hosts to keep new jobs off (a fault on their own cables) and those that may have them again "
          "(/api/v1/drain), for the shipped Slurm, NHC and Kubernetes consumers.",
      .make = MakeDrainCollector,
      .render = RenderDrain,
      .reads = {"link_health", "fat_tree"},
      .flags = {{"drain.resume-after",
                 "How long a host's cables must stay clean before the drain list says it may have jobs again "
                 "(default 10m).",
                 "DURATION",
                 [](CollectorOptions& o, const std::string& v) {
                   return config::DurationValue(v, std::chrono::milliseconds(0), &o.Own<DrainOptions>().resume_after);
                 }}},
      .routes = {{"/api/v1/drain", "Drain list JSON", DrainReply}},
  };
}

}  // namespace ibfabric::collectors
