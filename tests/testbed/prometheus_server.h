#pragma once
// A real Prometheus server (Debian's prometheus package) on loopback, for
// end-to-end tests: it scrapes exporters as configured and answers PromQL
// through its HTTP API. Stopped and its data removed with the object.

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tests/testbed/process.h"

namespace ibfabric::testbed {

class PrometheusServer {
 public:
  // Writes `config` (prometheus.yml text; relative rule file paths resolve
  // against dir()) and starts the server; waits until /-/ready answers.
  // `files` are written into dir() first (name -> content); `flags` are
  // added to its command line (e.g. --web.enable-remote-write-receiver).
  static std::unique_ptr<PrometheusServer> Start(const std::string& config,
                                                 const std::map<std::string, std::string>& files, std::string* error,
                                                 const std::vector<std::string>& flags = {});
  ~PrometheusServer();

  // An instant query; data.result, or nullopt with *error naming what failed.
  std::optional<nlohmann::json> Query(const std::string& expr, std::string* error) const;
  // GET of an API path (e.g. /api/v1/targets); the "data" member.
  std::optional<nlohmann::json> Api(const std::string& path, std::string* error) const;
  int port() const { return port_; }
  std::string Log() const;

 private:
  PrometheusServer() = default;
  std::string dir_;
  int port_ = 0;
  std::unique_ptr<Process> process_;
};

}  // namespace ibfabric::testbed
