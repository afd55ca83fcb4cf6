#pragma once
// The HTTP endpoint: metrics, health probes and a landing page. Handlers
// read the latest snapshot only; they never touch the fabric.
//
// Hardening, whatever the web config: GET and HEAD only (405 otherwise),
// request lines and header lines capped at 8 KiB by httplib, at most 100
// headers and 32 KiB of them (431), request bodies never read (only GET
// and HEAD pass, and bodies over 64 KiB are refused anyway),
// no file serving (so no path to traverse), and a pool of worker threads
// with 5 s read and write timeouts so that a slow or stalled client holds
// one worker, not the scrape of everyone else.

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "exporter/snapshot_holder.h"
#include "exporter/web_config.h"

namespace httplib {
class Server;
}

namespace ibfabric::exporter {

struct HttpOptions {
  std::string host = "0.0.0.0";
  int port = 9315;  // 0: any free port (see bound_port())
  std::string telemetry_path = "/metrics";
  WebConfig web;     // TLS, basic auth and extra headers; default: plain HTTP, open
  int workers = 32;  // connections served at once
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
  // reason in *error when the TLS files cannot be loaded or the address
  // cannot be bound.
  bool Start(std::string* error);
  void Stop();
  int bound_port() const { return bound_port_; }

 private:
  void Routes();
  // Basic auth against the web config's users; true when the request may go on.
  bool Authorized(const std::string& authorization);

  const SnapshotHolder& holder_;
  HttpOptions options_;
  std::string tls_error_;  // why the TLS context could not be set up; set while server_ is made
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> listen_returned_{false};  // the listening loop ended (or never began)
  int bound_port_ = 0;
  std::string decoy_hash_;  // checked for unknown users, so they cost as much as known ones
  std::mutex auth_mutex_;
  std::set<std::string> verified_;  // SHA-256 of Authorization values that passed bcrypt
};

}  // namespace ibfabric::exporter
