#include "tests/testbed/alertmanager.h"

#include "tests/testbed/exporter_process.h"

namespace ibfabric::testbed {

WebhookReceiver::WebhookReceiver() {
  server_.Post("/", [this](const httplib::Request& req, httplib::Response& res) {
    auto j = nlohmann::json::parse(req.body, nullptr, false);
    if (!j.is_discarded()) {
      std::lock_guard<std::mutex> lock(mu_);
      got_.push_back(std::move(j));
    }
    res.status = 200;
  });
  port_ = server_.bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { server_.listen_after_bind(); });
  while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

WebhookReceiver::~WebhookReceiver() {
  server_.stop();
  if (thread_.joinable()) thread_.join();
}

std::string WebhookReceiver::url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }

std::vector<nlohmann::json> WebhookReceiver::Notifications() const {
  std::lock_guard<std::mutex> lock(mu_);
  return got_;
}

std::unique_ptr<AlertmanagerServer> AlertmanagerServer::Start(const std::string& config, std::string* error) {
  std::unique_ptr<AlertmanagerServer> a(new AlertmanagerServer());
  a->dir_ = MakeTempDir("alertmanager");
  a->port_ = FreeLocalPort();
  WriteFile(a->dir_ + "/alertmanager.yml", config);
  SpawnOptions o;
  o.argv = {"prometheus-alertmanager",
            "--config.file=" + a->dir_ + "/alertmanager.yml",
            "--storage.path=" + a->dir_ + "/data",
            "--web.listen-address=127.0.0.1:" + std::to_string(a->port_),
            "--cluster.listen-address=",  // no gossip: a single instance
            "--log.level=warn"};
  o.stdout_path = a->dir_ + "/alertmanager.log";
  a->process_ = Process::Spawn(o, error);
  if (!a->process_) return nullptr;
  httplib::Client c("127.0.0.1", a->port_);
  c.set_connection_timeout(1, 0);
  const auto ready = [&c] {
    auto r = c.Get("/-/ready");
    return r && r->status == 200;
  };
  if (WaitUntilServing(ready, *a->process_, std::chrono::seconds(60), std::chrono::milliseconds(100))) return a;
  *error = "alertmanager did not become ready: " + a->Log();
  return nullptr;
}

AlertmanagerServer::~AlertmanagerServer() {
  if (process_) process_->Stop();
  RemoveTree(dir_);
}

std::string AlertmanagerServer::Log() const { return ReadFile(dir_ + "/alertmanager.log"); }

}  // namespace ibfabric::testbed
