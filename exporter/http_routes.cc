#include "exporter/http_routes.h"

#include <httplib.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectors/api/json.h"
#include "collectors/parts/partitions.h"
#include "collectors/registry.h"
#include "config/text.h"
#include "exporter/content_coding.h"
#include "exporter/gzip.h"
#include "exporter/status_assets.h"

namespace ibfabric::exporter {

namespace {

constexpr const char* kJson = "application/json";

// A JSON API's answer: the body and a newline.
void Json(httplib::Response& res, const nlohmann::json& body) { res.set_content(collectors::Dump(body) + "\n", kJson); }

// A JSON API's refusal: the status and {"error": "<one line>"}.
void JsonError(httplib::Response& res, int status, const std::string& why) {
  res.status = status;
  Json(res, nlohmann::json{{"error", why}});
}

// A JSON API's query string read by `parse` (collectors/api/json.h: false
// with a one-line reason); on a bad one, answers 400 with it and is false.
template <typename T>
bool ParseQuery(const httplib::Request& req, httplib::Response& res,
                bool (*parse)(const std::multimap<std::string, std::string>&, T*, std::string*), T* out) {
  std::string why;
  if (parse(std::multimap<std::string, std::string>(req.params.begin(), req.params.end()), out, &why)) return true;
  JsonError(res, 400, why);
  return false;
}

constexpr std::size_t kMaxHeaders = 100;
constexpr std::size_t kMaxHeaderBytes = 32 * 1024;
constexpr std::size_t kMetricsSlice = 64 * 1024;  // what one write of a scrape's body sends

// httplib adds REMOTE_ADDR to a request once its request line and headers
// parsed; a reply to one without it is httplib's own 400 or 414.
bool Parsed(const httplib::Request& req) { return req.has_header("REMOTE_ADDR"); }

// httplib keeps a connection open after a request it could not parse
// (only a parsed "Connection: close" ends it), and then reads the rest of
// that request as more requests. A body whose provider reports failure
// once it has written everything ends the connection after the reply.
void AnswerAndClose(const httplib::Request& req, httplib::Response& res) {
  // Not known to be a HEAD request (it did not parse): the body is sent,
  // which is what makes the connection end; as it is, uncompressed.
  auto& request = const_cast<httplib::Request&>(req);
  request.method = "GET";
  request.headers.erase("Accept-Encoding");
  // (500: httplib's answer when a socket number is past what select() takes.)
  auto body = std::make_shared<std::string>(res.status == 414   ? "request URI too long\n"
                                            : res.status >= 500 ? "too many connections\n"
                                                                : "bad request\n");
  res.body.clear();
  res.set_content_provider(body->size(), "text/plain",
                           [body](std::size_t offset, std::size_t, httplib::DataSink& sink) {
                             sink.write(body->data() + offset, body->size() - offset);
                             return false;
                           });
}

}  // namespace

HttpRoutes::HttpRoutes(const SnapshotHolder& holder, const HttpOptions& options, HttpStats* stats,
                       collectors::Logger* log)
    : holder_(holder), options_(options), stats_(stats), log_(log), auth_(options_.web.basic_auth_users) {}

void HttpRoutes::LogException(const std::string& path, const std::string& what) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // At most 64 texts remembered: a flood of distinct ones is logged, never held.
    if (logged_.count(what) || logged_.size() >= 64) return;
    logged_.insert(what);
  }
  if (log_) {
    log_->Error("unexpected exception answering a request",
                "path=\"" + config::Excerpt(path, 200) + "\" error=\"" + config::Excerpt(what, 400) + "\"");
  }
}

void HttpRoutes::Install(httplib::Server& server) {
  InstallChecks(server);
  InstallMetrics(server);
  InstallApi(server);
  InstallProbesAndPage(server);
}

void HttpRoutes::InstallChecks(httplib::Server& server) {
  if (!options_.web.headers.empty()) {
    server.set_default_headers(httplib::Headers(options_.web.headers.begin(), options_.web.headers.end()));
  }
  server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    // httplib hands handlers a const Request it owns; what it decides on
    // when it writes any reply, refusals too, is rewritten first. Ranges
    // (parsed before routing) are not served: every body goes whole, and
    // the scrape's text is read from its start only.
    auto& request = const_cast<httplib::Request&>(req);
    request.ranges.clear();
    request.headers.erase("Range");
    if (req.has_header("Accept-Encoding")) {
      const std::string accept = WithoutBrotli(req.get_header_value("Accept-Encoding"));
      request.headers.erase("Accept-Encoding");
      if (!accept.empty()) request.headers.emplace("Accept-Encoding", accept);
    }
    if (req.method != "GET" && req.method != "HEAD") {
      res.status = 405;
      res.set_header("Allow", "GET, HEAD");
      res.set_content("method not allowed: only GET and HEAD\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    std::size_t header_bytes = 0;
    for (const auto& [k, v] : req.headers) header_bytes += k.size() + v.size() + 4;
    if (req.headers.size() > kMaxHeaders || header_bytes > kMaxHeaderBytes) {
      res.status = 431;
      res.set_content("request headers too large\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    // Probes stay open so that kubelet and systemd need no password.
    if (req.path != "/healthz" && req.path != "/readyz" && !auth_.Check(req.get_header_value("Authorization"))) {
      res.status = 401;
      res.set_header("WWW-Authenticate", "Basic realm=\"ibfabric_exporter\", charset=\"UTF-8\"");
      res.set_content("unauthorized\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Only for replies of 400 and more, before their headers are made.
  server.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
        if (Parsed(req)) return httplib::Server::HandlerResponse::Unhandled;
        AnswerAndClose(req, res);
        return httplib::Server::HandlerResponse::Handled;
      }));
  // Every reply, once its headers are made and before they are sent.
  server.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (stats_) stats_->CountReply(res.status);
    if (!Parsed(req)) {
      res.headers.erase("Keep-Alive");
      res.set_header("Connection", "close");
    }
  });
  server.set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "an exception of unknown type";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    LogException(req.path, what);
    // Whatever the handler had set goes; the web config's headers stay.
    res = httplib::Response();
    res.version = "HTTP/1.1";
    for (const auto& header : options_.web.headers) res.set_header(header.first, header.second);
    JsonError(res, 500, "internal error");
  });
}

void HttpRoutes::InstallMetrics(httplib::Server& server) {
  server.Get(options_.telemetry_path, [this](const httplib::Request& req, httplib::Response& res) {
    auto snap = holder_.Get();
    constexpr const char* kType = "text/plain; version=0.0.4; charset=utf-8";
    res.set_header("Vary", "Accept-Encoding");
    // The snapshot holds the exposition compressed once (exporter/gzip.h),
    // and the providers keep it alive. httplib would compress a chunked
    // response again for a client that accepts gzip: it must not see that
    // header once this handler has chosen.
    const bool gzip = AcceptsGzip(req.get_header_value("Accept-Encoding"));
    const_cast<httplib::Headers&>(req.headers).erase("Accept-Encoding");
    if (gzip) {
      res.set_header("Content-Encoding", "gzip");
      res.set_content_provider(
          snap->exposition_gz.size(), kType, [snap](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
            return sink.write(snap->exposition_gz.data() + offset, std::min(length, kMetricsSlice));
          });
      return;
    }
    // Plain: inflated slice by slice as it is sent, never whole.
    auto reader = std::make_shared<GunzipReader>(snap->exposition_gz);
    res.set_content_provider(
        snap->exposition_bytes, kType,
        [snap, reader, slice = std::string()](std::size_t, std::size_t, httplib::DataSink& sink) mutable {
          if (!reader->Next(&slice, kMetricsSlice)) return false;
          return sink.write(slice.data(), slice.size());
        });
  });
}

void HttpRoutes::InstallApi(httplib::Server& server) {
  server.Get("/api/v1/topology",
             [this](const httplib::Request& req, httplib::Response& res) { ServeTopology(req, res); });
  server.Get("/api/v1/alerts", [this](const httplib::Request& req, httplib::Response& res) {
    auto snap = Snap(req, res);
    if (!snap) return;
    collectors::AlertFilter filter;
    if (!ParseQuery(req, res, collectors::ParseAlertFilter, &filter)) return;
    Json(res, collectors::AlertsJson(*snap, filter));
  });
  server.Get("/api/v1/structure", [this](const httplib::Request& req, httplib::Response& res) {
    auto snap = Snap(req, res);
    if (!snap) return;
    if (!req.params.empty()) return JsonError(res, 400, "/api/v1/structure takes no parameters");
    if (!snap->topology) return JsonError(res, 503, "no discovery has completed yet");
    Json(res, collectors::StructureJson(*snap->fabric, *snap->topology, snap->hosts.get()));
  });
  server.Get("/api/v1/search", [this](const httplib::Request& req, httplib::Response& res) {
    auto snap = Snap(req, res);
    if (!snap) return;
    collectors::SearchQuery query;
    if (!ParseQuery(req, res, collectors::ParseSearchQuery, &query)) return;
    if (!snap->topology) return JsonError(res, 503, "no discovery has completed yet");
    Json(res, collectors::SearchJson(*snap->fabric, snap->topology.get(), query, snap->hosts.get()));
  });
  server.Get("/api/v1/node", [this](const httplib::Request& req, httplib::Response& res) {
    auto snap = Snap(req, res);
    if (!snap) return;
    std::uint64_t guid = 0;
    if (!ParseQuery(req, res, collectors::ParseNodeQuery, &guid)) return;
    const nlohmann::json j = collectors::NodeDetailJson(*snap, guid);
    if (j.is_null()) return JsonError(res, 404, "no such node in the fabric");
    Json(res, j);
  });
  server.Get("/api/v1/host", [this](const httplib::Request& req, httplib::Response& res) {
    auto snap = Snap(req, res);
    if (!snap) return;
    std::string name;
    if (!ParseQuery(req, res, collectors::ParseHostQuery, &name)) return;
    const nlohmann::json j = collectors::HostDetailJson(*snap, name);
    if (j.is_null()) return JsonError(res, 404, "no host named '" + config::Excerpt(name, 80) + "'");
    Json(res, j);
  });
  server.Get("/api/v1/port", [this](const httplib::Request& req, httplib::Response& res) {
    auto snap = Snap(req, res);
    if (!snap) return;
    topology::PortRef port;
    if (!ParseQuery(req, res, collectors::ParsePortQuery, &port)) return;
    const nlohmann::json j = collectors::PortDetailJson(*snap, port);
    if (j.is_null()) return JsonError(res, 404, "no such port in the fabric");
    Json(res, j);
  });
  server.Get("/api/v1/route", [this](const httplib::Request& req, httplib::Response& res) {
    auto snap = Snap(req, res);
    if (!snap) return;
    collectors::RouteQuery query;
    if (!ParseQuery(req, res, collectors::ParseRouteQuery, &query)) return;
    if (!snap->forwarding || snap->forwarding->empty()) {
      const collectors::ApiReply absent =
          collectors::Absent(*snap, "no forwarding tables read yet", "reads no forwarding tables");
      return JsonError(res, absent.status, absent.error);
    }
    const nlohmann::json j = collectors::RouteJson(*snap, query);
    if (j.is_null()) return JsonError(res, 404, "from must be a CA port of the fabric and to a port with a LID");
    Json(res, j);
  });
  // The collectors' own endpoints (CollectorInfo::routes).
  for (const collectors::CollectorInfo& c : collectors::Registry()) {
    for (const collectors::ApiRoute& route : c.routes) {
      server.Get(std::string(route.path), [this, &route](const httplib::Request& req, httplib::Response& res) {
        auto snap = Snap(req, res);
        if (!snap) return;
        const collectors::ApiReply reply =
            route.reply(*snap, collectors::ApiParams(req.params.begin(), req.params.end()));
        if (reply.status != 200) return JsonError(res, reply.status, reply.error);
        if (!reply.content_type.empty()) return res.set_content(reply.text, reply.content_type);
        Json(res, reply.body);
      });
    }
  }
  server.Get("/api/v1/collectors", [this](const httplib::Request& req, httplib::Response& res) {
    auto snap = Snap(req, res);
    if (!snap) return;
    if (!req.params.empty()) return JsonError(res, 400, "/api/v1/collectors takes no parameters");
    Json(res, collectors::CollectorsJson(*snap));
  });
  server.Get("/api/v1/fabrics",
             [this](const httplib::Request& req, httplib::Response& res) { ServeFabrics(req, res); });
}

// /api/v1/topology: written a piece at a time as it is sent (tens of MB
// for a whole big fabric); the writer borrows the snapshot, which the
// provider keeps.
void HttpRoutes::ServeTopology(const httplib::Request& req, httplib::Response& res) {
  auto snap = Snap(req, res);
  if (!snap) return;
  collectors::TopologyQuery query;
  if (!ParseQuery(req, res, collectors::ParseTopologyQuery, &query)) return;
  if (!snap->topology) return JsonError(res, 503, "no discovery has completed yet");
  const collectors::TopologyParts parts{
      snap->fabric.get(),  snap->topology.get(),
      snap->routing.get(), snap->by_collector.Get<topology::PartitionAnalysis>(collectors::kPartitionsCollector),
      &snap->scope,        snap->hosts.get()};
  auto writer = std::make_shared<collectors::TopologyWriter>(parts, std::move(query));
  if (!writer->error().empty()) return JsonError(res, 404, writer->error());
  res.set_chunked_content_provider(kJson,
                                   [snap, writer, piece = std::string()](std::size_t, httplib::DataSink& sink) mutable {
                                     if (!writer->Next(&piece, kMetricsSlice)) {
                                       sink.done();
                                       return true;
                                     }
                                     return sink.write(piece.data(), piece.size());
                                   });
}

// /api/v1/fabrics: each fabric read, by the name ?fabric= takes.
void HttpRoutes::ServeFabrics(const httplib::Request& req, httplib::Response& res) {
  if (!req.params.empty()) return JsonError(res, 400, "/api/v1/fabrics takes no parameters");
  nlohmann::json list = nlohmann::json::array();
  const auto add = [&list](const collectors::Snapshot& s, const std::string& name, const std::string& subnet_prefix,
                           int plane) {
    const collectors::LocalPortSummary& l = s.local;
    list.push_back({{"name", name},
                    {"subnet_prefix", subnet_prefix},
                    {"plane", plane},
                    {"ca", l.ca},
                    {"port", l.port},
                    {"smi_ca", l.smi_ca},
                    {"smi_port", l.smi_port},
                    {"nodes", s.fabric ? s.fabric->nodes().size() : 0},
                    {"sweeps", s.sweeps}});
  };
  if (options_.fabrics.empty()) {
    const auto snap = holder_.Get();
    add(*snap, OwnName(*snap), topology::FormatGuid(snap->local.subnet_prefix), snap->local.plane);
  }
  for (const FabricView& v : options_.fabrics) {
    if (auto snap = v.holder->Get()) add(*snap, v.name(), v.subnet_prefix, v.plane);
  }
  Json(res, {{"fabrics", list}});
}

std::string HttpRoutes::OwnName(const collectors::Snapshot& s) {
  const std::string prefix = topology::FormatGuid(s.local.subnet_prefix);
  return s.local.plane == 0 ? prefix : prefix + "/plane" + std::to_string(s.local.plane);
}

std::shared_ptr<const collectors::Snapshot> HttpRoutes::Snap(const httplib::Request& req, httplib::Response& res) {
  if (req.params.count("fabric") > 1) {
    JsonError(res, 400, "fabric given more than once");
    return nullptr;
  }
  if (options_.fabrics.empty()) {
    // One fabric: `fabric` may name it, as /api/v1/fabrics does.
    auto snap = holder_.Get();
    const auto it = req.params.find("fabric");
    if (it == req.params.end()) return snap;
    if (it->second != OwnName(*snap)) {
      JsonError(res, 404, "no fabric '" + config::Excerpt(it->second, 80) + "' here; there is " + OwnName(*snap));
      return nullptr;
    }
    const_cast<httplib::Request&>(req).params.erase("fabric");
    return snap;
  }
  const FabricView* view = &options_.fabrics.front();
  if (const auto it = req.params.find("fabric"); it != req.params.end()) {
    view = nullptr;
    for (const FabricView& v : options_.fabrics) {
      if (v.name() == it->second) view = &v;
    }
    if (view == nullptr) {
      std::string names;
      for (const FabricView& v : options_.fabrics) names += (names.empty() ? "" : ", ") + v.name();
      JsonError(res, 404, "no fabric '" + config::Excerpt(it->second, 80) + "' here; there are " + names);
      return nullptr;
    }
    const_cast<httplib::Request&>(req).params.erase("fabric");
  }
  auto snap = view->holder->Get();
  if (!snap) JsonError(res, 503, "fabric " + view->name() + " has not been read yet");
  return snap;
}

void HttpRoutes::InstallProbesAndPage(httplib::Server& server) {
  server.Get("/healthz",
             [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  server.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    if (holder_.Get()->sweeps == 0) {
      res.status = 503;
      res.set_content("no sweep completed yet\n", "text/plain");
      return;
    }
    res.set_content("ok\n", "text/plain");
  });
  // The status page: three embedded files that load nothing from elsewhere,
  // which the Content-Security-Policy makes the browser enforce.
  const auto page = [](std::string body, const char* type) {
    return [body = std::move(body), type](const httplib::Request&, httplib::Response& res) {
      res.set_header("Content-Security-Policy",
                     "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
                     "base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_header("Cache-Control", "no-cache");
      res.set_content(body, type);
    };
  };
  std::string html = kStatusHtml;
  const std::string marker = "METRICS_PATH";
  if (auto at = html.find(marker); at != std::string::npos)
    html.replace(at, marker.size(), options_.telemetry_path.substr(1));
  server.Get("/", page(std::move(html), "text/html; charset=utf-8"));
  server.Get("/static/status.css", page(kStatusCss, "text/css; charset=utf-8"));
  server.Get("/static/status.js", page(kStatusJs, "text/javascript; charset=utf-8"));
}

}  // namespace ibfabric::exporter
