#pragma once
// The handler set of the HTTP endpoint: every route, what every request
// passes through first, and what every reply gets. HttpServer
// (exporter/http_server.h) installs it on the server it listens with; the
// fuzz target (tests/fuzz/http_fuzz.cc) on one it feeds from memory.
// Handlers read the latest snapshot only; they never touch the fabric.
//
// Every request: GET and HEAD only (405 otherwise), at most 100 headers
// and 32 KiB of them (431), basic auth where the web config has users
// (401; the probes stay open), Range ignored (bodies are sent whole),
// brotli never chosen (quality 11 costs seconds of CPU).
//
// Every reply:
//  - A value taken from the request and written back (error messages,
//    search echoes) is valid UTF-8, cut on a character boundary
//    (config/text.h); every JSON body is valid UTF-8 JSON
//    (collectors::Dump).
//  - An unexpected exception in a handler is logged with its text, once per
//    distinct text, and answered 500 {"error": "internal error"}; its text
//    never reaches a header or the body.
//  - A request that could not be parsed (a bad request line or header,
//    a URI over 8 KiB) is answered and its connection closed, as is one
//    that asked for "Connection: close", error or not.
//  - Every reply with a status of 400 or more is counted (HttpStats).
//  - Its headers are among kResponseHeaders and the web config's own.

#include <array>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/log.h"
#include "exporter/basic_auth.h"
#include "exporter/fabric_set.h"
#include "exporter/http_stats.h"
#include "exporter/snapshot_holder.h"
#include "exporter/web_config.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace ibfabric::exporter {

struct HttpOptions {
  std::string host = "0.0.0.0";
  int port = 9315;  // 0: any free port (see HttpServer::bound_port())
  std::string telemetry_path = "/metrics";
  WebConfig web;     // TLS, basic auth and extra headers; default: plain HTTP, open
  int workers = 32;  // connections served at once
  // Several fabrics (exporter/fabric_set.h): the JSON routes answer for the
  // one `?fabric=NAME` names (FabricView::name: the subnet prefix, and
  // "/planeN" after it for a plane; the first when none), and
  // /api/v1/fabrics lists them; the holder given to the routes is then the
  // merged one, for /metrics and the probes. Empty: that holder is the one
  // fabric's, and `fabric` is no parameter of any route.
  std::vector<FabricView> fabrics;
};

// Every header a reply may carry, besides the web config's `headers`
// (docs/security.md "Hardening, always on"), compared without regard to case.
inline constexpr std::array<std::string_view, 13> kResponseHeaders{"Content-Type",
                                                                   "Content-Length",
                                                                   "Content-Encoding",
                                                                   "Transfer-Encoding",
                                                                   "Connection",
                                                                   "Keep-Alive",
                                                                   "Vary",
                                                                   "Allow",
                                                                   "WWW-Authenticate",
                                                                   "Cache-Control",
                                                                   "Accept-Ranges",
                                                                   "Content-Security-Policy",
                                                                   "X-Content-Type-Options"};

// Ownership: borrows the holder, the stats and the logger, which outlive
// it (stats and log may be null); copies the options. Thread-safety: Install once; the
// handlers it installs run on any thread.
class HttpRoutes {
 public:
  HttpRoutes(const SnapshotHolder& holder, const HttpOptions& options, HttpStats* stats, collectors::Logger* log);
  HttpRoutes(const HttpRoutes&) = delete;
  HttpRoutes& operator=(const HttpRoutes&) = delete;

  // Sets the server's routes and its pre-routing, post-routing, error and
  // exception handlers; the server must not outlive this.
  void Install(httplib::Server& server);

 private:
  // What every request and reply goes through (the header's list).
  void InstallChecks(httplib::Server& server);
  void InstallMetrics(httplib::Server& server);
  void InstallApi(httplib::Server& server);  // the JSON routes
  void ServeTopology(const httplib::Request& req, httplib::Response& res);
  void ServeFabrics(const httplib::Request& req, httplib::Response& res);
  void InstallProbesAndPage(httplib::Server& server);
  // The snapshot a JSON route answers from: the holder's, or with several
  // fabrics that of the one `?fabric=` names (the first when none), the
  // parameter then taken off the request (a single fabric's own name, as
  // /api/v1/fabrics gives it, is taken off too). Null after a 400 (given
  // twice) or a 404 naming the fabrics there are.
  std::shared_ptr<const collectors::Snapshot> Snap(const httplib::Request& req, httplib::Response& res);
  // A single-fabric exporter's fabric as /api/v1/fabrics names it: its
  // subnet prefix, "/planeN" after it on a plane of a multi-plane HCA.
  static std::string OwnName(const collectors::Snapshot& s);
  // Logs an unexpected exception's text the first time it is seen.
  void LogException(const std::string& path, const std::string& what);

  const SnapshotHolder& holder_;
  const HttpOptions options_;
  HttpStats* stats_;
  collectors::Logger* log_;
  BasicAuth auth_;  // the web config's users
  std::mutex mu_;
  std::set<std::string> logged_;  // exception texts already logged
};

}  // namespace ibfabric::exporter
