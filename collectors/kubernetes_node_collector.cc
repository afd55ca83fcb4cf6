#include "collectors/kubernetes_node_collector.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "collectors/common/iso8601.h"
#include "collectors/framework/render.h"
#include "collectors/parts/host.h"
#include "config/values.h"

namespace ibfabric::collectors {

namespace {

const char* const kLabels[] = {"leaf", "spine-group", "unit", "rails"};

// A drain list entry's place in the fabric's order: the oldest fault first
// (a holding host by when it came clean), then by name.
std::string RankKey(const nlohmann::json& entry) {
  const auto time = [&entry](const char* key) {
    const auto it = entry.find(key);
    return it != entry.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  std::string t = time("since");
  if (t.empty()) t = time("clean_since");
  return (t.empty() ? "~" : t) + " " + entry.value("host", "");
}

}  // namespace

NodeVerdict JudgeNode(const std::string& host, const DrainList* own, const nlohmann::json* fabric_list,
                      const KubernetesNodeOptions& options) {
  if (!own) return {"Unknown", "NotJudged", "ibfabric: no sweep has judged this host's cables yet"};
  const auto mine = std::find_if(own->hosts.begin(), own->hosts.end(), [&host](const DrainHost& h) {
    return (h.host == host || h.node == host) && h.state != DrainHost::State::kResume;
  });
  if (mine == own->hosts.end()) return {"True", "CablesClean", "ibfabric: no fault on this host's cables"};
  NodeVerdict bad{"False", mine->state == DrainHost::State::kFaulty ? "CableFault" : "HoldingAfterFault", mine->reason};
  if (!fabric_list) return bad;
  std::vector<std::string> keys;
  std::optional<std::string> my_key;
  std::size_t fabric_hosts = 0;
  try {
    if (fabric_list->is_string()) throw std::runtime_error(fabric_list->get<std::string>());
    if (!fabric_list->value("every_host", false)) {
      throw std::runtime_error(
          "its exporter does not judge every host's cables (a --scope=fabric exporter of one shard does)");
    }
    fabric_hosts = fabric_list->at("fabric_hosts").get<std::size_t>();
    for (const nlohmann::json& e : fabric_list->at("drain")) {
      keys.push_back(RankKey(e));
      if (e.value("host", "") == host || e.value("node", "") == host) my_key = keys.back();
    }
  } catch (const std::exception& e) {
    return {"Unknown", "FabricListUnavailable",
            bad.message + "; not False: the fabric's drain list, which the cap is counted on, could not be read (" +
                e.what() + ")"};
  }
  std::sort(keys.begin(), keys.end());
  // Not in the fabric's list yet: after every host it names.
  const std::size_t rank =
      my_key ? static_cast<std::size_t>(std::lower_bound(keys.begin(), keys.end(), *my_key) - keys.begin())
             : keys.size();
  const std::size_t cap = std::min<std::size_t>(static_cast<std::size_t>(std::max(options.max_hosts, 0)),
                                                fabric_hosts * static_cast<std::size_t>(options.max_percent) / 100);
  if (rank < cap) return bad;
  return {"Unknown", "CapReached",
          bad.message + "; not False: " + std::to_string(std::max(keys.size(), rank + 1)) +
              " hosts of the fabric are to be drained, at most " + std::to_string(cap) + " at once"};
}

std::string LabelValue(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
    out += ok ? c : '_';
  }
  if (out.size() > 63) out.resize(63);
  const auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  while (!out.empty() && !alnum(out.back())) out.pop_back();
  const auto first = std::find_if(out.begin(), out.end(), alnum);
  return std::string(first, out.end());
}

std::map<std::string, nlohmann::json> PlacementLabels(const nlohmann::json& placement) {
  std::map<std::string, nlohmann::json> labels;
  const auto text = [&placement](const char* key) -> nlohmann::json {
    const auto it = placement.find(key);
    if (it == placement.end() || it->is_null()) return nullptr;
    const std::string v = LabelValue(it->is_string() ? it->get<std::string>() : it->dump());
    return v.empty() ? nlohmann::json(nullptr) : nlohmann::json(v);
  };
  labels["leaf"] = text("leaf");
  labels["spine-group"] = text("spine_group");
  labels["unit"] = text("unit");
  labels["rails"] = text("rails");
  return labels;
}

namespace {

// A path's query value, percent-encoded but for unreserved characters.
std::string UrlEncoded(std::string_view text) {
  static const char* const kHex = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

// The API server: --kubernetes.api-server, else the pod's environment.
std::string ApiServer(const KubernetesNodeOptions& o) {
  if (!o.api_server.empty()) return o.api_server;
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !*host) return "";
  const std::string h = host;
  return "https://" + (h.find(':') == std::string::npos ? h : "[" + h + "]") + ":" + (port && *port ? port : "443");
}

class KubernetesNodeCollector final : public Collector {
 public:
  KubernetesNodeCollector(KubernetesNodeOptions options, HttpCall http)
      : options_(std::move(options)), http_(std::move(http)), api_server_(ApiServer(options_)) {
    state_ = std::make_shared<KubernetesNodeState>();
  }

  Schedule schedule() const override { return Schedule::kSweep; }

  Outcome Update(const Cycle& cycle) override {
    if (options_.node.empty()) return {};
    if (cycle.scope.kind != topology::ScopeKind::kLocal) {
      if (!said_scope_) {
        cycle.log->Warn("kubernetes node writes off",
                        "why=\"--kubernetes.node is for the DaemonSet's exporters (--scope=local)\"");
      }
      said_scope_ = true;
      return {};
    }
    const Snapshot& s = *cycle.parts;
    auto next = std::make_shared<KubernetesNodeState>(*state_);
    next->node = options_.node;
    next->host = HostName(s);
    next->dry_run = !options_.apply;
    if (!started_) {
      started_ = true;
      cycle.log->Info("kubernetes node writes",
                      "node=" + Quoted(options_.node) + " host=" + Quoted(next->host) + " dry_run=" +
                          (options_.apply ? "false" : "true") + " api_server=" + Quoted(api_server_) + " cap=" +
                          Quoted(options_.fabric_url.empty() ? "none: no --kubernetes.fabric-url, this host alone"
                                                             : "from " + options_.fabric_url + "/api/v1/drain"));
    }
    if (retry_at_ && cycle.now < *retry_at_) return Keep(std::move(next));
    const auto* own = s.by_collector.Get<DrainList>(kDrainCollector);
    NodeVerdict verdict = JudgeNode(next->host, own, nullptr, options_);
    if (verdict.status == "False" && !options_.fabric_url.empty()) {
      const nlohmann::json list = FetchJson(cycle, "/api/v1/drain");
      verdict = JudgeNode(next->host, own, &list, options_);
    }
    const bool place_due =
        !placed_at_ || cycle.now - *placed_at_ >= options_.heartbeat || cycle.fabric_generation != generation_;
    if (place_due && (!place_retry_at_ || cycle.now >= *place_retry_at_)) {
      if (Place(cycle, next->host, &next->labels)) {
        placed_at_ = cycle.now;
        generation_ = cycle.fabric_generation;
        place_retry_at_.reset();
      } else {
        place_retry_at_ = cycle.now + std::chrono::minutes(1);
      }
    }
    const bool heartbeat = !condition_at_ || cycle.now - *condition_at_ >= options_.heartbeat;
    bool failed = false;
    if (!next->labels.empty() && next->labels != written_labels_) {
      if (Write(cycle, "labels", "/api/v1/nodes/" + UrlEncoded(options_.node), "application/merge-patch+json",
                LabelPatch(next->labels), next.get())) {
        written_labels_ = next->labels;
      } else {
        failed = true;
      }
    }
    if (verdict != written_ || heartbeat) {
      if (verdict.status != written_.status) transition_ = cycle.wall;
      if (Write(cycle, "condition", "/api/v1/nodes/" + UrlEncoded(options_.node) + "/status",
                "application/strategic-merge-patch+json", ConditionPatch(verdict, cycle.wall), next.get())) {
        written_ = verdict;
        condition_at_ = cycle.now;
      } else {
        failed = true;
      }
    }
    next->verdict = verdict;
    if (failed) retry_at_ = cycle.now + std::chrono::minutes(1);
    return Keep(std::move(next));
  }

  void Publish(Snapshot* parts) const override {
    if (!state_->node.empty()) parts->by_collector.Set(kKubernetesNodeCollector, state_);
  }

 private:
  Outcome Keep(std::shared_ptr<KubernetesNodeState> next) {
    state_ = std::move(next);
    return {};
  }

  // This host as the fabric names it: its HCAs' host, else the node's name.
  std::string HostName(const Snapshot& s) const {
    if (const auto* readings = s.by_collector.Get<HostReadings>(kHostCollector); readings && readings->reading) {
      for (const host::HostDevice& d : readings->reading->devices) {
        if (std::string name = HostOfDevice(s, d); !name.empty()) return name;
      }
    }
    return options_.node;
  }

  // The labels: from the fabric's placement of `host`, else its leaf as
  // this exporter's one-hop walk sees it. False: not known now (keep the last).
  bool Place(const Cycle& cycle, const std::string& host, std::map<std::string, nlohmann::json>* labels) {
    if (options_.fabric_url.empty()) {
      *labels = {
          {"leaf", LocalLeaf(*cycle.parts, host)}, {"spine-group", nullptr}, {"unit", nullptr}, {"rails", nullptr}};
      return true;
    }
    int status = 0;
    const nlohmann::json placement = FetchJson(cycle, "/api/v1/placement?host=" + UrlEncoded(host), &status);
    if (status == 404) {
      for (const char* key : kLabels) (*labels)[key] = nullptr;
      return true;
    }
    if (!placement.is_object()) return false;
    *labels = PlacementLabels(placement);
    return true;
  }

  // The switch at the other end of the first cabled port of this host's
  // first HCA (as topology.conf places a host), label-safe.
  nlohmann::json LocalLeaf(const Snapshot& s, const std::string& host) const {
    const auto* readings = s.by_collector.Get<HostReadings>(kHostCollector);
    if (!readings || !readings->reading || !s.fabric) return nullptr;
    for (const host::HostDevice& d : readings->reading->devices) {
      if (HostOfDevice(s, d) != host) continue;
      const topology::Node* n = s.fabric->FindNode(host::ParseSysfsGuid(d.node_guid));
      if (!n) continue;
      for (const topology::Port& p : n->ports) {
        if (!p.remote) continue;
        const topology::Node* far = s.fabric->FindNode(p.remote->node_guid);
        if (!far || far->kind != topology::NodeKind::kSwitch) continue;
        const std::string v = LabelValue(topology::ShortName(far->description));
        return v.empty() ? nlohmann::json(nullptr) : nlohmann::json(v);
      }
    }
    return nullptr;
  }

  // GET of the fabric-scope exporter: its JSON body, or a string saying
  // why there is none (logged, once for each reason in a row).
  nlohmann::json FetchJson(const Cycle& cycle, const std::string& path, int* status = nullptr) {
    std::string error;
    if (!http_) {
      error = "this exporter makes no HTTP requests";
    } else {
      HttpRequest get;
      get.url = options_.fabric_url + path;
      const HttpAnswer a = http_(get);
      if (status) *status = a.status;
      if (a.status == 200) {
        nlohmann::json body = nlohmann::json::parse(a.body, nullptr, false);
        if (!body.is_discarded()) return body;
        error = "not JSON";
      } else {
        error = a.status == 0 ? a.error : "status " + std::to_string(a.status);
      }
    }
    if (status && *status == 404) return nullptr;
    error = options_.fabric_url + path + ": " + error;
    if (error != fetch_error_) cycle.log->Warn("kubernetes fabric read failed", "problem=" + Quoted(error));
    fetch_error_ = error;
    return error;
  }

  std::string LabelPatch(const std::map<std::string, nlohmann::json>& labels) const {
    nlohmann::json l = nlohmann::json::object();
    for (const auto& [key, value] : labels) l[std::string(kNodeLabelPrefix) + key] = value;
    return nlohmann::json{{"metadata", {{"labels", std::move(l)}}}}.dump();
  }

  std::string ConditionPatch(const NodeVerdict& v, std::chrono::system_clock::time_point now) const {
    return nlohmann::json{{"status",
                           {{"conditions",
                             {{{"type", kNodeConditionType},
                               {"status", v.status},
                               {"reason", v.reason},
                               {"message", v.message},
                               {"lastHeartbeatTime", Iso8601(now)},
                               {"lastTransitionTime", Iso8601(transition_ ? *transition_ : now)}}}}}}}
        .dump();
  }

  // One PATCH, or in a dry run its log line; logged and counted. False: it failed.
  bool Write(const Cycle& cycle, const std::string& what, const std::string& path, const std::string& type,
             const std::string& body, KubernetesNodeState* state) {
    const std::string fields = "what=" + what + " node=" + Quoted(options_.node) + " path=" + Quoted(path);
    if (!options_.apply) {
      ++state->writes[{what, "dry_run"}];
      cycle.log->Info("kubernetes node write", fields + " dry_run=true body=" + Quoted(body));
      return true;
    }
    std::string error;
    if (api_server_.empty()) error = "no API server: KUBERNETES_SERVICE_HOST is unset and no --kubernetes.api-server";
    const std::string token = error.empty() ? ReadWhole(options_.credentials + "/token") : "";
    if (error.empty() && token.empty()) error = "no service account token in " + options_.credentials + "/token";
    if (error.empty()) {
      HttpRequest patch;
      patch.method = "PATCH";
      patch.url = api_server_ + path;
      patch.content_type = type;
      patch.body = body;
      patch.bearer_token = token;
      patch.ca_file = options_.credentials + "/ca.crt";
      const HttpAnswer a = http_ ? http_(patch) : HttpAnswer{0, "", "this exporter makes no HTTP requests"};
      if (a.status / 100 != 2) {
        error = a.status == 0 ? a.error : "status " + std::to_string(a.status) + ": " + a.body.substr(0, 200);
      }
    }
    if (!error.empty()) {
      ++state->writes[{what, "error"}];
      cycle.log->Warn("kubernetes node write failed", fields + " problem=" + Quoted(error));
      return false;
    }
    ++state->writes[{what, "ok"}];
    cycle.log->Info("kubernetes node write", fields + " body=" + Quoted(body));
    return true;
  }

  KubernetesNodeOptions options_;
  HttpCall http_;
  std::string api_server_;
  bool said_scope_ = false, started_ = false;
  NodeVerdict written_;                                   // the condition last written (or logged in a dry run)
  std::map<std::string, nlohmann::json> written_labels_;  // the labels so
  std::optional<std::chrono::system_clock::time_point> transition_;
  std::optional<std::chrono::steady_clock::time_point> condition_at_, placed_at_, retry_at_, place_retry_at_;
  std::uint64_t generation_ = 0;
  std::string fetch_error_;
  std::shared_ptr<const KubernetesNodeState> state_;
};

}  // namespace

std::unique_ptr<Collector> MakeKubernetesNodeCollector(const CollectorOptions& options) {
  return std::make_unique<KubernetesNodeCollector>(options.Get<KubernetesNodeOptions>(), options.http);
}

void RenderKubernetesNode(const Snapshot& s, const Emit& out) {
  const auto* state = s.by_collector.Get<KubernetesNodeState>(kKubernetesNodeCollector);
  if (!state || state->verdict.status.empty()) return;
  auto condition = Family("infiniband_kubernetes_node_condition",
                          "The InfinibandFabricHealthy condition this exporter last wrote to its Kubernetes node "
                          "(or would, in a dry run): 1 for its status",
                          prometheus::MetricType::Gauge);
  for (const char* status : {"True", "False", "Unknown"}) {
    Add(condition, {{"status", status}}, state->verdict.status == status ? 1 : 0);
  }
  out(std::move(condition));
  auto writes = Family("infiniband_kubernetes_node_writes_total",
                       "Writes to this exporter's Kubernetes node (what: condition, labels) by result (ok, error, "
                       "dry_run: logged, not sent)",
                       prometheus::MetricType::Counter);
  for (const auto& [key, n] : state->writes) {
    Add(writes, {{"what", key.first}, {"result", key.second}}, static_cast<double>(n));
  }
  out(std::move(writes));
}

CollectorInfo KubernetesNodeCollectorInfo() {
  const auto text = [](std::string KubernetesNodeOptions::*member) {
    return [member](CollectorOptions& o, const std::string& v) -> std::string {
      if (v.empty()) return "must not be empty";
      o.Own<KubernetesNodeOptions>().*member = v;
      return "";
    };
  };
  const auto url = [](std::string KubernetesNodeOptions::*member) {
    return [member](CollectorOptions& o, const std::string& v) {
      return config::UrlValue(v, &(o.Own<KubernetesNodeOptions>().*member));
    };
  };
  return {
      .name = kKubernetesNodeCollector,
      .help =
          "This host's InfinibandFabricHealthy condition and ibfabric.io/ placement labels on its Kubernetes node "
          "(the DaemonSet's exporters; off until --kubernetes.node, a dry run until --kubernetes.apply).",
      .make = MakeKubernetesNodeCollector,
      .render = RenderKubernetesNode,
      .reads = {"drain", "host"},
      .this_host = true,
      .flags =
          {
              {"kubernetes.node",
               "The Kubernetes node this exporter runs on (the DaemonSet: spec.nodeName); turns on the node's "
               "condition and labels (local scope).",
               "NAME", text(&KubernetesNodeOptions::node)},
              {"kubernetes.apply",
               "Write the node's condition and labels; without it each write is logged and counted, not sent.", "",
               [](CollectorOptions& o, const std::string&) {
                 o.Own<KubernetesNodeOptions>().apply = true;
                 return std::string();
               }},
              {"kubernetes.api-server",
               "The API server (default https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT).", "URL",
               url(&KubernetesNodeOptions::api_server)},
              {"kubernetes.credentials",
               "The folder of the service account's token and ca.crt (default "
               "/var/run/secrets/kubernetes.io/serviceaccount).",
               "DIR", text(&KubernetesNodeOptions::credentials)},
              {"kubernetes.fabric-url",
               "The fabric-scope exporter (http://HOST:PORT): its drain list caps how many nodes are False at "
               "once, its placement gives the labels.",
               "URL", url(&KubernetesNodeOptions::fabric_url)},
              {"kubernetes.max-unhealthy", "At most this many nodes of the fabric False at once (default 4).", "N",
               [](CollectorOptions& o, const std::string& v) {
                 return config::IntValue(v, 0, 1'000'000, &o.Own<KubernetesNodeOptions>().max_hosts);
               }},
              {"kubernetes.max-unhealthy-percent",
               "At most this percent of the fabric's hosts False at once, rounded down (default 10).", "P",
               [](CollectorOptions& o, const std::string& v) {
                 return config::IntValue(v, 0, 100, &o.Own<KubernetesNodeOptions>().max_percent);
               }},
              {"kubernetes.heartbeat", "Write the condition again at least this often (default 5m).", "DURATION",
               [](CollectorOptions& o, const std::string& v) {
                 return config::DurationValue(v, std::chrono::seconds(10), &o.Own<KubernetesNodeOptions>().heartbeat);
               }},
          },
  };
}

}  // namespace ibfabric::collectors
