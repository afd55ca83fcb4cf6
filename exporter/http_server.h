#pragma once
// The HTTP endpoint: listens (plain or TLS, from the web config) and serves
// the handler set of exporter/http_routes.h: metrics, the JSON API, health
// probes and the status page.
//
// Hardening, whatever the web config: request lines and header lines
// capped at 8 KiB by httplib, request bodies never read (only GET and HEAD
// pass, and bodies over 64 KiB are refused anyway), no file serving (so no
// path to traverse), and a pool of worker threads with 5 s read and write
// timeouts so that a slow or stalled client holds one worker, not the
// scrape of everyone else. What each request and reply goes through is
// http_routes.h's.

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "collectors/common/log.h"
#include "exporter/http_routes.h"
#include "exporter/http_stats.h"
#include "exporter/snapshot_holder.h"

namespace httplib {
class Server;
}

namespace ibfabric::exporter {

// Ownership: borrows the holder, the stats and the logger (stats and log
// may be null). Thread-safety: Start/Stop from one thread; requests are
// served on httplib's worker threads.
class HttpServer {
 public:
  HttpServer(const SnapshotHolder& holder, HttpOptions options, HttpStats* stats = nullptr,
             collectors::Logger* log = nullptr);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving in a background thread; false with a one-line
  // reason in *error when the TLS files cannot be loaded or the address
  // cannot be bound.
  bool Start(std::string* error);
  void Stop();
  int bound_port() const { return bound_port_; }

 private:
  HttpOptions options_;
  std::string tls_error_;  // why the TLS context could not be set up; set while server_ is made
  std::unique_ptr<httplib::Server> server_;
  HttpRoutes routes_;
  std::thread thread_;
  std::atomic<bool> listen_returned_{false};  // the listening loop ended (or never began)
  int bound_port_ = 0;
};

}  // namespace ibfabric::exporter
