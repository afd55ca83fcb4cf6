#include "exporter/http_server.h"

#include <httplib.h>

#include <algorithm>

#include "collectors/alerts_json.h"
#include "topology/topology_json.h"

namespace ibfabric::exporter {

HttpServer::HttpServer(const SnapshotHolder& holder, HttpOptions options)
    : holder_(holder), options_(std::move(options)), server_(std::make_unique<httplib::Server>()) {
  Routes();
}

HttpServer::~HttpServer() { Stop(); }

namespace {

// Accept-Encoding without brotli. httplib prefers brotli whenever a client
// offers it (browsers do) and compresses at quality 11: about 30 s of CPU
// for a 10 MB exposition. gzip costs ~0.1 s and is what Prometheus asks for.
std::string WithoutBrotli(const std::string& accept) {
  std::string out;
  std::size_t start = 0;
  while (start <= accept.size()) {
    std::size_t end = accept.find(',', start);
    if (end == std::string::npos) end = accept.size();
    std::string token = accept.substr(start, end - start);
    const auto first = token.find_first_not_of(' ');
    const std::string name = first == std::string::npos ? "" : token.substr(first, token.find_first_of(" ;", first) - first);
    if (!name.empty() && name != "br") out += (out.empty() ? "" : ", ") + token.substr(first);
    start = end + 1;
  }
  return out;
}

}  // namespace

void HttpServer::Routes() {
  server_->set_pre_routing_handler([](const httplib::Request& req, httplib::Response&) {
    if (req.has_header("Accept-Encoding")) {
      // httplib hands handlers a const Request it owns; the header is
      // rewritten before any encoding decision is taken on it.
      auto& headers = const_cast<httplib::Headers&>(req.headers);
      const std::string accept = WithoutBrotli(req.get_header_value("Accept-Encoding"));
      headers.erase("Accept-Encoding");
      if (!accept.empty()) headers.emplace("Accept-Encoding", accept);
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  const std::string metrics_path = options_.telemetry_path;
  server_->Get(metrics_path, [this](const httplib::Request&, httplib::Response& res) {
    auto snap = holder_.Get();
    // Streamed from the snapshot, which the provider keeps alive: no copy of
    // the exposition per scrape, and httplib compresses chunked responses on
    // the fly when the client accepts gzip (Prometheus does).
    res.set_chunked_content_provider(
        "text/plain; version=0.0.4; charset=utf-8",
        [snap, offset = std::size_t{0}](std::size_t, httplib::DataSink& sink) mutable {
          constexpr std::size_t kSlice = 64 * 1024;
          const std::string& text = snap->exposition;
          if (offset < text.size()) {
            const std::size_t n = std::min(kSlice, text.size() - offset);
            if (!sink.write(text.data() + offset, n)) return false;
            offset += n;
          }
          if (offset >= text.size()) sink.done();
          return true;
        });
  });
  server_->Get("/api/v1/topology", [this](const httplib::Request&, httplib::Response& res) {
    auto snap = holder_.Get();
    if (!snap->topology) {
      res.status = 503;
      res.set_content("{\"error\": \"no discovery has completed yet\"}\n", "application/json");
      return;
    }
    res.set_content(topology::TopologyJson(*snap->fabric, *snap->topology).dump() + "\n", "application/json");
  });
  server_->Get("/api/v1/alerts", [this](const httplib::Request& req, httplib::Response& res) {
    collectors::AlertFilter filter;
    std::string why;
    const std::multimap<std::string, std::string> params(req.params.begin(), req.params.end());
    if (!collectors::ParseAlertFilter(params, &filter, &why)) {
      res.status = 400;
      res.set_content(nlohmann::json{{"error", why}}.dump() + "\n", "application/json");
      return;
    }
    auto snap = holder_.Get();
    res.set_content(collectors::AlertsJson(*snap, filter).dump() + "\n", "application/json");
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
            metrics_path + "\">Metrics</a></li><li><a href=\"/api/v1/topology\">Topology (JSON)</a></li>"
                           "<li><a href=\"/api/v1/alerts\">Alerts (JSON)</a></li>"
                           "<li><a href=\"/healthz\">Health</a></li></ul>"
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
