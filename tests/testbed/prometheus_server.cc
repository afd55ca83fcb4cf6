#include "tests/testbed/prometheus_server.h"

#include <httplib.h>

#include <thread>

#include "tests/testbed/exporter_process.h"

namespace ibfabric::testbed {

std::unique_ptr<PrometheusServer> PrometheusServer::Start(const std::string& config,
                                                          const std::map<std::string, std::string>& files,
                                                          std::string* error, const std::vector<std::string>& flags) {
  std::unique_ptr<PrometheusServer> p(new PrometheusServer());
  p->dir_ = MakeTempDir("prometheus");
  p->port_ = FreeLocalPort();
  for (const auto& [name, content] : files) WriteFile(p->dir_ + "/" + name, content);
  WriteFile(p->dir_ + "/prometheus.yml", config);
  SpawnOptions o;
  o.argv = {"prometheus", "--config.file=" + p->dir_ + "/prometheus.yml", "--storage.tsdb.path=" + p->dir_ + "/data",
            "--web.listen-address=127.0.0.1:" + std::to_string(p->port_), "--log.level=warn"};
  o.argv.insert(o.argv.end(), flags.begin(), flags.end());
  o.stdout_path = p->dir_ + "/prometheus.log";
  p->process_ = Process::Spawn(o, error);
  if (!p->process_) return nullptr;
  httplib::Client c("127.0.0.1", p->port_);
  c.set_connection_timeout(1, 0);
  const auto ready = [&c] {
    auto r = c.Get("/-/ready");
    return r && r->status == 200;
  };
  if (WaitUntilServing(ready, *p->process_, std::chrono::seconds(60), std::chrono::milliseconds(100))) return p;
  *error = "prometheus did not become ready: " + p->Log();
  return nullptr;
}

PrometheusServer::~PrometheusServer() {
  if (process_) process_->Stop();
  RemoveTree(dir_);
}

std::optional<nlohmann::json> PrometheusServer::Api(const std::string& path, std::string* error) const {
  httplib::Client c("127.0.0.1", port_);
  c.set_read_timeout(30, 0);
  auto r = c.Get(path);
  if (!r) {
    *error = "no answer from prometheus: " + httplib::to_string(r.error());
    return std::nullopt;
  }
  const auto j = nlohmann::json::parse(r->body, nullptr, false);
  if (j.is_discarded() || j.value("status", "") != "success") {
    *error = "HTTP " + std::to_string(r->status) + ": " + r->body.substr(0, 300);
    return std::nullopt;
  }
  return j["data"];
}

std::optional<nlohmann::json> PrometheusServer::Query(const std::string& expr, std::string* error) const {
  auto data = Api(httplib::append_query_params("/api/v1/query", {{"query", expr}}), error);
  if (!data) return std::nullopt;
  return (*data)["result"];
}

std::string PrometheusServer::Log() const { return ReadFile(dir_ + "/prometheus.log"); }

}  // namespace ibfabric::testbed
