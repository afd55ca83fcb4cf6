#pragma once
// The HTTP endpoint: metrics, health probes and a landing page. Handlers
// read the latest snapshot only; they never touch the fabric.

#include <memory>
#include <string>
#include <thread>

#include "exporter/snapshot_holder.h"

namespace httplib {
class Server;
}

namespace ibfabric::exporter {

struct HttpOptions {
  std::string host = "0.0.0.0";
  int port = 9315;  // 0: any free port (see bound_port())
  std::string telemetry_path = "/metrics";
};

// Ownership: borrows the holder. Thread-safety: Start/Stop from one thread;
// requests are served on httplib's worker threads.
class HttpServer {
 public:
  HttpServer(const SnapshotHolder& holder, HttpOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving in a background thread; false with a one-line
  // reason in *error when the address cannot be bound.
  bool Start(std::string* error);
  void Stop();
  int bound_port() const { return bound_port_; }

 private:
  void Routes();

  const SnapshotHolder& holder_;
  HttpOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int bound_port_ = 0;
};

}  // namespace ibfabric::exporter
