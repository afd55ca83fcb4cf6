#pragma once
// A real Alertmanager (Debian's prometheus-alertmanager) on loopback and a
// webhook receiver that keeps every notification it is sent, for the
// on-call path end to end: Prometheus -> Alertmanager -> a receiver.

#include <httplib.h>

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/testbed/process.h"

namespace ibfabric::testbed {

// Listens on a free loopback port; every POST body that parses as JSON is
// kept, in arrival order. Thread-safety: Notifications() from any thread.
class WebhookReceiver {
 public:
  WebhookReceiver();
  ~WebhookReceiver();
  WebhookReceiver(const WebhookReceiver&) = delete;
  WebhookReceiver& operator=(const WebhookReceiver&) = delete;
  std::string url() const;
  std::vector<nlohmann::json> Notifications() const;

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mu_;
  std::vector<nlohmann::json> got_;
};

class AlertmanagerServer {
 public:
  // Writes `config` (alertmanager.yml text) and starts the server; waits
  // until /-/ready answers. nullptr with *error naming what failed.
  static std::unique_ptr<AlertmanagerServer> Start(const std::string& config, std::string* error);
  ~AlertmanagerServer();
  int port() const { return port_; }
  std::string Log() const;

 private:
  AlertmanagerServer() = default;
  std::string dir_;
  int port_ = 0;
  std::unique_ptr<Process> process_;
};

}  // namespace ibfabric::testbed
