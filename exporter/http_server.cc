#include "exporter/http_server.h"

#include <httplib.h>
#include <prometheus/text_serializer.h>

#include <sstream>

#include "collectors/metrics.h"

namespace ibfabric::exporter {

std::string SerializeMetrics(const collectors::Snapshot& snapshot, const std::string& version) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, collectors::RenderMetrics(snapshot, version));
  return out.str();
}

HttpServer::HttpServer(const SnapshotHolder& holder, HttpOptions options)
    : holder_(holder), options_(std::move(options)), server_(std::make_unique<httplib::Server>()) {
  Routes();
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Routes() {
  const std::string metrics_path = options_.telemetry_path;
  server_->Get(metrics_path, [this](const httplib::Request&, httplib::Response& res) {
    auto snap = holder_.Get();
    res.set_content(SerializeMetrics(*snap, options_.version),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  server_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  server_->Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    auto snap = holder_.Get();
    if (snap->sweeps == 0) {
      res.status = 503;
      res.set_content("no sweep completed yet\n", "text/plain");
      return;
    }
    res.set_content("ok\n", "text/plain");
  });
  server_->Get("/", [metrics_path](const httplib::Request&, httplib::Response& res) {
    res.set_content(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>InfiniBand fabric "
        "exporter</title></head><body><h1>InfiniBand fabric exporter</h1><ul><li><a href=\"" +
            metrics_path + "\">Metrics</a></li><li><a href=\"/healthz\">Health</a></li></ul>"
                           "</body></html>\n",
        "text/html; charset=utf-8");
  });
}

bool HttpServer::Start(std::string* error) {
  if (options_.port == 0) {
    bound_port_ = server_->bind_to_any_port(options_.host);
  } else {
    bound_port_ = server_->bind_to_port(options_.host, options_.port) ? options_.port : -1;
  }
  if (bound_port_ <= 0) {
    *error = "cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
             " (address in use or not local?)";
    return false;
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return true;
}

void HttpServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace ibfabric::exporter
