#include "collectors/fabric_jobs_collector.h"

#include <future>
#include <utility>

#include "collectors/common/log.h"
#include "collectors/framework/render.h"
#include "config/values.h"

namespace ibfabric::collectors {
namespace {

constexpr const char* kQuery = "/api/v1/query?query=infiniband_host_port_job_info";

class FabricJobsCollector final : public Collector {
 public:
  FabricJobsCollector(FabricJobsOptions options, HttpCall http)
      : options_(std::move(options)), http_(std::move(http)) {}

  Schedule schedule() const override { return Schedule::kSweep; }

  Outcome Update(const Cycle& cycle) override {
    if (options_.prometheus_url.empty() || !cycle.scope.reports_topology()) return {};
    if (!published_) published_ = std::make_shared<const FabricJobs>();  // configured, not read yet
    if (pending_.valid()) {
      if (pending_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return {};
      Take(cycle, pending_.get());
    }
    if (asked_ && cycle.now < *asked_ + options_.refresh) return {};
    asked_ = cycle.now;
    if (!http_) {
      Take(cycle, {0, "", "this exporter makes no HTTP requests"});
      return {};
    }
    HttpRequest get;
    get.url = options_.prometheus_url + kQuery;
    get.timeout = std::chrono::milliseconds(5000);
    pending_ = std::async(std::launch::async, [http = http_, get] { return http(get); });
    return {};
  }

  void Publish(Snapshot* parts) const override { parts->by_collector.Set(kFabricJobsCollector, published_); }

 private:
  // An answer: the new part, or the last good one with why this one failed.
  void Take(const Cycle& cycle, const HttpAnswer& a) {
    auto next = std::make_shared<FabricJobs>(published_ ? *published_ : FabricJobs{});
    std::string error;
    if (a.status != 200) {
      error = a.status == 0 ? a.error : "status " + std::to_string(a.status);
    } else if (auto at = ParseJobInfoQuery(a.body, &error)) {
      next->at = std::move(*at);
      next->known = true;
      next->read = cycle.wall;
    }
    if (!error.empty()) {
      error = options_.prometheus_url + kQuery + ": " + error;
      if (error != next->error) cycle.log->Warn("jobs read failed", "problem=" + Quoted(error));
    }
    next->error = error;
    published_ = std::move(next);
  }

  FabricJobsOptions options_;
  HttpCall http_;
  std::optional<std::chrono::steady_clock::time_point> asked_;
  std::future<HttpAnswer> pending_;  // a read under way (its destructor waits for it: at most the timeout)
  std::shared_ptr<const FabricJobs> published_;
};

const nlohmann::json* Field(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::string Label(const nlohmann::json& metric, const char* key) {
  const nlohmann::json* v = Field(metric, key);
  return v && v->is_string() ? v->get<std::string>() : "";
}

}  // namespace

std::optional<std::map<topology::PortRef, std::set<FabricJob>>> ParseJobInfoQuery(const std::string& body,
                                                                                  std::string* error) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  const nlohmann::json* status = j.is_object() ? Field(j, "status") : nullptr;
  if (!status || *status != "success") {
    *error = j.is_object() ? "the query failed: " + Label(j, "error") : "not JSON";
    return std::nullopt;
  }
  const nlohmann::json* data = Field(j, "data");
  const nlohmann::json* result = data && data->is_object() ? Field(*data, "result") : nullptr;
  if (!result || !result->is_array() || Label(*data, "resultType") != "vector") {
    *error = "not an instant vector";
    return std::nullopt;
  }
  std::map<topology::PortRef, std::set<FabricJob>> at;
  for (const nlohmann::json& series : *result) {
    const nlohmann::json* metric = series.is_object() ? Field(series, "metric") : nullptr;
    if (!metric || !metric->is_object()) continue;
    const auto guid = topology::ParseGuid(Label(*metric, "node_guid"));
    const auto port = topology::ParsePortNumber(Label(*metric, "port"));
    FabricJob job{Label(*metric, "source"), ""};
    if (job.source == "slurm") {
      job.id = Label(*metric, "hpc_job");
    } else if (job.source == "kubernetes" && !Label(*metric, "pod").empty()) {
      job.id = Label(*metric, "namespace") + "/" + Label(*metric, "pod");
    }
    if (!guid || !port || job.id.empty()) continue;
    at[{*guid, *port}].insert(std::move(job));
  }
  return at;
}

std::unique_ptr<Collector> MakeFabricJobsCollector(const CollectorOptions& options) {
  return std::make_unique<FabricJobsCollector>(options.Get<FabricJobsOptions>(), options.http);
}

void RenderFabricJobs(const Snapshot& s, const Emit& out) {
  const auto* jobs = s.by_collector.Get<FabricJobs>(kFabricJobsCollector);
  if (!jobs) return;
  EmitOne(out, "infiniband_fabric_jobs_source_up",
          "1 when the last read of the jobs on the fabric's host ports from Prometheus (--jobs.prometheus-url) "
          "succeeded",
          prometheus::MetricType::Gauge, jobs->known && jobs->error.empty() ? 1 : 0);
  if (!jobs->known) return;
  std::set<FabricJob> all;
  for (const auto& [port, held] : jobs->at) {
    if (s.fabric && s.fabric->FindPort(port)) all.insert(held.begin(), held.end());
  }
  EmitOne(out, "infiniband_fabric_jobs", "Jobs holding a host port of this fabric, as last read",
          prometheus::MetricType::Gauge, static_cast<double>(all.size()));
  EmitOne(out, "infiniband_fabric_jobs_read_timestamp_seconds",
          "When the jobs on the fabric's host ports were last read from Prometheus", prometheus::MetricType::Gauge,
          std::chrono::duration<double>(jobs->read.time_since_epoch()).count());
}

CollectorInfo FabricJobsCollectorInfo() {
  return {
      .name = kFabricJobsCollector,
      .help =
          "The jobs on the fabric's host ports, read from Prometheus (--jobs.prometheus-url: the hosts' "
          "infiniband_host_port_job_info), for the what-if's 'wait for job X'.",
      .make = MakeFabricJobsCollector,
      .render = RenderFabricJobs,
      .flags =
          {
              {"jobs.prometheus-url",
               "The Prometheus that scrapes the hosts' exporters (http://HOST:9090): the what-if names the jobs on "
               "the hosts a fix would cut off.",
               "URL",
               [](CollectorOptions& o, const std::string& v) {
                 return config::UrlValue(v, &o.Own<FabricJobsOptions>().prometheus_url);
               }},
              {"jobs.refresh", "Read the jobs from Prometheus at most this often (default 30s).", "DURATION",
               [](CollectorOptions& o, const std::string& v) {
                 return config::DurationValue(v, std::chrono::seconds(1), &o.Own<FabricJobsOptions>().refresh);
               }},
          },
  };
}

}  // namespace ibfabric::collectors
