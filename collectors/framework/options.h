#pragma once
// What the collectors are configured with, and the flags that fill it.
//
// Each collector declares its own options struct in its header and its
// flags in its file (its CollectorInfo::flags, collector_info.h); a flag
// fills that struct in CollectorOptions (Own<T>), and the collector's
// factory reads it back (Get<T>). What several collectors share (the
// fabric's design, the alert thresholds, the physical layer's interval)
// is a member here, filled by SharedFlags(). What the process hands them
// (a re-exec's totals, a client for the kubelet) is a member too, set by
// the exporter. exporter/ builds its flags from these declarations and
// names none of them.

#include <any>
#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <typeindex>
#include <vector>

#include "collectors/health/alerts.h"
#include "collectors/health/counter_store.h"
#include "collectors/reads/counters.h"
#include "host/jobs.h"
#include "topology/hosts.h"
#include "topology/plan.h"

namespace ibfabric::collectors {

// The devices the kubelet gave each container; nullopt with a reason in
// `error` when it does not answer, with none where there is nothing to ask.
using PodDevices = std::function<std::optional<std::vector<host::DeviceClaim>>(std::string* error)>;

// One HTTP request to a service of the deployment (the Kubernetes API
// server, the fabric-scope exporter), made by the client the exporter links
// (exporter/http_client.h); tests hand a fake.
struct HttpRequest {
  std::string method = "GET";  // GET, PATCH
  std::string url;             // "https://10.96.0.1:443/api/v1/nodes/gpu01/status"
  std::string content_type;    // of `body`
  std::string body;
  std::string bearer_token;  // sent as "Authorization: Bearer ..." when not empty
  std::string ca_file;       // https: the server's certificate is checked against it (empty: the system's CAs)
  std::chrono::milliseconds timeout{5000};
};
// status 0: no answer, `error` says why in one line.
struct HttpAnswer {
  int status = 0;
  std::string body;
  std::string error;
};
using HttpCall = std::function<HttpAnswer(const HttpRequest&)>;

class CollectorOptions {
 public:
  // Shared by several collectors (SharedFlags):
  std::optional<topology::CablingPlan> plan;            // --topology.plan: fat_tree compares every analysis with it
  std::optional<topology::HostPattern> host_pattern;    // --topology.host-pattern; none: rdma-ndd's
  AlertConfig alerts;                                   // --alerts.config: thresholds, windows, hysteresis
  std::map<std::string, std::string> slurm_node_names;  // --slurm.node-name-map: fabric host -> Slurm NodeName
  std::chrono::milliseconds phy_interval{300'000};      // --phy.interval: each physical-layer read at most this often
  int clear_threshold_percent = 0;                      // --counters.clear-threshold: 0 never clears
  std::string host_sysfs = "/sys";                      // --host.sysfs: this host's sysfs root
  // --counters.groups: the per-port series groups rendered; with
  // `port_groups_auto`, as AutoPortGroups decides for the fabric's size.
  PortGroups port_groups = PortGroups().set();
  bool port_groups_auto = true;

  // Handed over by the process:
  PortTable restored_ports;  // counter totals from before a re-exec
  // Collector name -> what it saved before a re-exec (Collector::Saved).
  std::map<std::string, nlohmann::json> restored;
  // Connects to the kubelet's pod-resources socket at a path (the exporter
  // links the gRPC client); null: nothing can.
  std::function<PodDevices(const std::string& socket)> pod_resources;
  // Makes HTTP requests (the exporter links the client); null: none can be.
  HttpCall http;

  // Collector-own options: T as its flags left it; T's defaults when none
  // of them was given.
  template <class T>
  const T& Get() const {
    static const T kDefaults{};
    const auto it = own_.find(std::type_index(typeid(T)));
    return it == own_.end() ? kDefaults : *std::any_cast<T>(&it->second);
  }
  // T to change, made with its defaults the first time.
  template <class T>
  T& Own() {
    std::any& slot = own_[std::type_index(typeid(T))];
    if (!slot.has_value()) slot = T{};
    return *std::any_cast<T>(&slot);
  }

 private:
  std::map<std::type_index, std::any> own_;
};

// One flag of the collectors': --NAME=PLACEHOLDER, or --NAME when it takes
// no value.
struct CollectorFlag {
  std::string_view name;         // without "--"
  std::string_view help;         // for --help
  std::string_view placeholder;  // empty: a flag that takes no value
  // Applies the value (a file it names is read and checked here); "" or
  // what is wrong, in one line that names no flag.
  std::function<std::string(CollectorOptions&, const std::string&)> apply;
  // It describes one fabric (a plan): given to the first fabric read only.
  bool one_fabric = false;
};

// The flags of what several collectors share (the members above).
const std::vector<CollectorFlag>& SharedFlags();

// A setting that works but does less than it seems to: a warning at start
// (its message, and the values as the logger's key=value fields).
struct Doubt {
  std::string message;
  std::string fields;
};
std::vector<Doubt> Doubts(const CollectorOptions& options);

// Flag values, one way for every collector: a file's path (not empty), a
// directory that is there, "sa" or "switches" (true: sa).
std::string PathValue(const std::string& value, std::string* out);
std::string DirectoryValue(const std::string& value, std::string* out);
std::string FromSaValue(const std::string& value, bool* from_sa);

}  // namespace ibfabric::collectors
