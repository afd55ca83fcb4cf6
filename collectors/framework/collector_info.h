#pragma once
// What a collector declares about itself, in its own file: its name and
// help, whether it is on by default, the factory that makes it, the pure
// function that renders its part of a Snapshot, the parts of others it
// reads, and its flags (options.h). The registry (collectors/registry.h)
// lists every collector's declaration, one line each; the exporter derives
// its flags, --help and the collectors it runs from that list alone.

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/framework/collector.h"
#include "collectors/framework/options.h"

namespace ibfabric::collectors {

// What an endpoint answers: its JSON body, or a text of a content type
// (a file another tool reads), or a status and why (one line).
struct ApiReply {
  int status = 200;
  nlohmann::json body;
  std::string error;         // status != 200: the reason
  std::string text;          // content_type not empty: the body
  std::string content_type;  // empty: `body`, as JSON
};
// The reply of an endpoint whose part is absent: where this exporter
// reports topology the part is not there yet (503, `pending`); elsewhere
// another exporter of the set has it (404, "this exporter <not_here> (scope
// K or a shard other than 0)").
ApiReply Absent(const Snapshot& s, const std::string& pending, const std::string& not_here);

// The request's parameters (?fabric= already taken by the exporter).
using ApiParams = std::multimap<std::string, std::string>;
// An endpoint a collector answers from its part of the Snapshot alone
// (pure): the exporter installs it beside its own, with the same fabric
// choice, auth, methods and error replies (exporter/http_routes.h).
struct ApiRoute {
  std::string_view path;   // "/api/v1/subnet_managers"
  std::string_view title;  // "Subnet managers JSON": the status page's link to it
  std::function<ApiReply(const Snapshot& s, const ApiParams& params)> reply;
};

struct CollectorInfo {
  std::string_view name;
  std::string_view help;  // one line, for --help
  bool default_on = true;
  std::function<std::unique_ptr<Collector>(const CollectorOptions&)> make;
  // Pure: the collector's families from its part of `s`; nothing when the
  // part is absent.
  void (*render)(const Snapshot& s, const Emit& out) = nullptr;
  // The collectors whose part of this cycle its Update reads (Cycle::parts):
  // they must run before it (CheckRunOrder). A part it can do without
  // when that collector is off; one of the previous cycle (port_counters
  // asks the ports of last sweep's congestion trees) is not listed.
  std::vector<std::string_view> reads = {};
  // Its Update reads the sweep's counter samples (SweepResult::SampleOf):
  // they are let go once the last collector that does has run.
  bool reads_samples = false;
  // kDiscovery: it reads tables after a full walk (thousands of MADs that
  // ibnetdiscover does not send), so it runs once the walk's first sweep
  // is published, not before: the counters of a fabric just walked are
  // served without waiting for its tables.
  bool after_publication = false;
  // It reads this host, not the fabric (sysfs, the jobs on it): one
  // pipeline runs it, the first, however many fabrics the host is on.
  bool this_host = false;
  // Its own flags, filling its options struct (CollectorOptions::Own).
  std::vector<CollectorFlag> flags = {};
  // The endpoints it answers (docs/api.md).
  std::vector<ApiRoute> routes = {};
};

}  // namespace ibfabric::collectors
