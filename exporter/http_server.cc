#include "exporter/http_server.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectors/api_json.h"
#include "exporter/gzip.h"
#include "exporter/status_assets.h"

namespace ibfabric::exporter {

namespace {

std::string OpensslError() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown TLS error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

// Accepts any client certificate: the Request/RequireAny client auth types
// ask for one without verifying it (exporter-toolkit's meaning).
int AcceptAny(int, X509_STORE_CTX*) { return 1; }

// Sets up the server's TLS context from the web config; false with *error.
bool SetupTls(const TlsConfig& tls, SSL_CTX& ctx, std::string* error) {
  SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION |
                                (tls.prefer_server_cipher_suites ? SSL_OP_CIPHER_SERVER_PREFERENCE : 0));
  if (SSL_CTX_set_min_proto_version(&ctx, tls.min_version) != 1 ||
      (tls.max_version != 0 && SSL_CTX_set_max_proto_version(&ctx, tls.max_version) != 1)) {
    *error = "TLS versions not available: " + OpensslError();
    return false;
  }
  if (SSL_CTX_use_certificate_chain_file(&ctx, tls.cert_file.c_str()) != 1) {
    *error = "cannot load cert_file " + tls.cert_file + ": " + OpensslError();
    return false;
  }
  if (SSL_CTX_use_PrivateKey_file(&ctx, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    *error = "cannot load key_file " + tls.key_file + ": " + OpensslError();
    return false;
  }
  if (SSL_CTX_check_private_key(&ctx) != 1) {
    *error = "key_file " + tls.key_file + " does not match cert_file " + tls.cert_file;
    return false;
  }
  if (!tls.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(&ctx, tls.client_ca_file.c_str(), nullptr) != 1) {
      *error = "cannot load client_ca_file " + tls.client_ca_file + ": " + OpensslError();
      return false;
    }
    SSL_CTX_set_client_CA_list(&ctx, SSL_load_client_CA_file(tls.client_ca_file.c_str()));
  }
  switch (tls.client_auth) {
    case ClientAuth::kNone: SSL_CTX_set_verify(&ctx, SSL_VERIFY_NONE, nullptr); break;
    case ClientAuth::kRequest: SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER, AcceptAny); break;
    case ClientAuth::kRequireAny:
      SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, AcceptAny);
      break;
    case ClientAuth::kVerifyIfGiven: SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER, nullptr); break;
    case ClientAuth::kRequireAndVerify:
      SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      break;
  }
  return true;
}

std::unique_ptr<httplib::Server> MakeServer(const HttpOptions& options, std::string* tls_error) {
  if (!options.web.tls) return std::make_unique<httplib::Server>();
  const TlsConfig tls = *options.web.tls;
  return std::make_unique<httplib::SSLServer>([tls, tls_error](SSL_CTX& ctx) { return SetupTls(tls, ctx, tls_error); });
}

// RFC 4648 base64 (the Basic credentials' encoding); nullopt when malformed.
std::optional<std::string> DecodeBase64(const std::string& in) {
  static constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  if (in.empty() || in.size() % 4 != 0) return std::nullopt;
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  std::size_t pad = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '=') {
      if (i + 2 < in.size() || ++pad > 2) return std::nullopt;
      continue;
    }
    if (pad > 0) return std::nullopt;
    const auto v = kAlphabet.find(in[i]);
    if (v == std::string_view::npos) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

std::string Sha256(const std::string& s) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> d{};
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d.data());
  return std::string(d.begin(), d.end());
}

// A JSON API's refusal: the status and {"error": "<one line>"}.
void JsonError(httplib::Response& res, int status, const std::string& why) {
  res.status = status;
  res.set_content(nlohmann::json{{"error", why}}.dump() + "\n", "application/json");
}

// A JSON API's query string read by `parse` (collectors/api_json.h: false
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
constexpr std::size_t kMaxBody = 64 * 1024;
constexpr std::size_t kMetricsSlice = 64 * 1024;  // what one write of a scrape's body sends

// The codings an Accept-Encoding lists: each one's name and its whole
// entry (name and parameters, e.g. "gzip;q=0.5"), blanks around trimmed.
struct Coding {
  std::string name;
  std::string entry;
};
std::vector<Coding> Codings(const std::string& accept) {
  std::vector<Coding> out;
  std::size_t start = 0;
  while (start < accept.size()) {
    std::size_t end = accept.find(',', start);
    if (end == std::string::npos) end = accept.size();
    const std::string token = accept.substr(start, end - start);
    start = end + 1;
    const auto first = token.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    const auto name_end = token.find_first_of(" \t;", first);
    out.push_back({token.substr(first, name_end == std::string::npos ? std::string::npos : name_end - first),
                   token.substr(first)});
  }
  return out;
}

// Accept-Encoding without brotli. httplib prefers brotli whenever a client
// offers it (browsers do) and compresses at quality 11: about 30 s of CPU
// for a 10 MB exposition. gzip costs ~0.1 s and is what Prometheus asks for.
std::string WithoutBrotli(const std::string& accept) {
  std::string out;
  for (const Coding& c : Codings(accept)) {
    if (c.name != "br") out += (out.empty() ? "" : ", ") + c.entry;
  }
  return out;
}

// Whether an Accept-Encoding takes gzip: a "gzip", "x-gzip" or "*" coding
// whose q is not 0 (RFC 9110 12.5.3).
bool AcceptsGzip(const std::string& accept) {
  for (const Coding& c : Codings(accept)) {
    if (c.name != "gzip" && c.name != "x-gzip" && c.name != "*") continue;
    const auto q = c.entry.find("q=");
    if (q == std::string::npos || std::strtod(c.entry.c_str() + q + 2, nullptr) > 0) return true;
  }
  return false;
}

}  // namespace

HttpServer::HttpServer(const SnapshotHolder& holder, HttpOptions options)
    : holder_(holder), options_(std::move(options)), server_(MakeServer(options_, &tls_error_)) {
  // A hash of nothing anybody knows, at the users' cost: an unknown user
  // costs as much as a known one, so timing does not tell which names exist.
  if (!options_.web.basic_auth_users.empty()) {
    const std::string& some = options_.web.basic_auth_users.begin()->second;
    decoy_hash_ = HashPassword(Sha256(some), std::stoi(some.substr(4, 2)));
  }
  Routes();
}

HttpServer::~HttpServer() { Stop(); }

bool HttpServer::Authorized(const std::string& authorization) {
  const auto& users = options_.web.basic_auth_users;
  if (users.empty()) return true;
  if (authorization.size() < 6 || authorization.compare(0, 6, "Basic ") != 0) return false;
  const std::string digest = Sha256(authorization);
  {
    std::lock_guard<std::mutex> lock(auth_mutex_);
    if (verified_.count(digest)) return true;
  }
  const auto decoded = DecodeBase64(authorization.substr(6));
  if (!decoded) return false;
  const auto colon = decoded->find(':');
  if (colon == std::string::npos) return false;
  const auto user = users.find(decoded->substr(0, colon));
  const std::string password = decoded->substr(colon + 1);
  // bcrypt per scrape would cost ~50 ms of CPU each; a credential that
  // passed once is remembered by its digest only.
  const bool ok = CheckPassword(password, user == users.end() ? decoy_hash_ : user->second) && user != users.end();
  if (ok) {
    std::lock_guard<std::mutex> lock(auth_mutex_);
    if (verified_.size() >= 64) verified_.clear();
    verified_.insert(digest);
  }
  return ok;
}

void HttpServer::Routes() {
  const int workers = options_.workers;
  server_->new_task_queue = [workers] { return new httplib::ThreadPool(static_cast<std::size_t>(workers)); };
  server_->set_read_timeout(5, 0);
  server_->set_write_timeout(5, 0);
  server_->set_keep_alive_timeout(5);
  server_->set_payload_max_length(kMaxBody);
  if (!options_.web.headers.empty()) {
    server_->set_default_headers(httplib::Headers(options_.web.headers.begin(), options_.web.headers.end()));
  }
  server_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
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
    if (req.path != "/healthz" && req.path != "/readyz" && !Authorized(req.get_header_value("Authorization"))) {
      res.status = 401;
      res.set_header("WWW-Authenticate", "Basic realm=\"ibfabric_exporter\", charset=\"UTF-8\"");
      res.set_content("unauthorized\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
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
  server_->Get(metrics_path, [this](const httplib::Request& req, httplib::Response& res) {
    auto snap = holder_.Get();
    constexpr const char* kType = "text/plain; version=0.0.4; charset=utf-8";
    res.set_header("Vary", "Accept-Encoding");
    // The snapshot holds the exposition compressed once (exporter/gzip.h),
    // and the providers keep it alive. httplib would compress a chunked
    // response again for a client that accepts gzip: it must not see that
    // header once this handler has chosen.
    const bool gzip = AcceptsGzip(req.get_header_value("Accept-Encoding"));
    // Nor serve ranges of it: the plain text is read from the start only.
    auto& headers = const_cast<httplib::Headers&>(req.headers);
    headers.erase("Accept-Encoding");
    headers.erase("Range");
    const_cast<httplib::Request&>(req).ranges.clear();  // parsed before routing
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
  server_->Get("/api/v1/topology", [this](const httplib::Request& req, httplib::Response& res) {
    collectors::TopologyQuery query;
    if (!ParseQuery(req, res, collectors::ParseTopologyQuery, &query)) return;
    auto snap = holder_.Get();
    if (!snap->topology) return JsonError(res, 503, "no discovery has completed yet");
    // Written a piece at a time as it is sent (tens of MB for a whole big
    // fabric); the writer borrows the snapshot, which the provider keeps.
    const collectors::TopologyParts parts{snap->fabric.get(),     snap->topology.get(), snap->routing.get(),
                                          snap->partitions.get(), &snap->scope,         snap->hosts.get()};
    auto writer = std::make_shared<collectors::TopologyWriter>(parts, std::move(query));
    if (!writer->error().empty()) return JsonError(res, 404, writer->error());
    res.set_chunked_content_provider(
        "application/json", [snap, writer, piece = std::string()](std::size_t, httplib::DataSink& sink) mutable {
          if (!writer->Next(&piece, kMetricsSlice)) {
            sink.done();
            return true;
          }
          return sink.write(piece.data(), piece.size());
        });
  });
  server_->Get("/api/v1/alerts", [this](const httplib::Request& req, httplib::Response& res) {
    collectors::AlertFilter filter;
    if (!ParseQuery(req, res, collectors::ParseAlertFilter, &filter)) return;
    auto snap = holder_.Get();
    res.set_content(collectors::AlertsJson(*snap, filter).dump() + "\n", "application/json");
  });
  server_->Get("/api/v1/structure", [this](const httplib::Request& req, httplib::Response& res) {
    if (!req.params.empty()) return JsonError(res, 400, "/api/v1/structure takes no parameters");
    auto snap = holder_.Get();
    if (!snap->topology) return JsonError(res, 503, "no discovery has completed yet");
    res.set_content(collectors::StructureJson(*snap->fabric, *snap->topology).dump() + "\n", "application/json");
  });
  server_->Get("/api/v1/search", [this](const httplib::Request& req, httplib::Response& res) {
    collectors::SearchQuery query;
    if (!ParseQuery(req, res, collectors::ParseSearchQuery, &query)) return;
    auto snap = holder_.Get();
    if (!snap->topology) return JsonError(res, 503, "no discovery has completed yet");
    res.set_content(collectors::SearchJson(*snap->fabric, snap->topology.get(), query, snap->hosts.get()).dump() + "\n",
                    "application/json");
  });
  server_->Get("/api/v1/node", [this](const httplib::Request& req, httplib::Response& res) {
    std::uint64_t guid = 0;
    if (!ParseQuery(req, res, collectors::ParseNodeQuery, &guid)) return;
    auto snap = holder_.Get();
    const nlohmann::json j = collectors::NodeDetailJson(*snap, guid);
    if (j.is_null()) return JsonError(res, 404, "no such node in the fabric");
    res.set_content(j.dump() + "\n", "application/json");
  });
  server_->Get("/api/v1/host", [this](const httplib::Request& req, httplib::Response& res) {
    std::string name;
    if (!ParseQuery(req, res, collectors::ParseHostQuery, &name)) return;
    auto snap = holder_.Get();
    const nlohmann::json j = collectors::HostDetailJson(*snap, name);
    if (j.is_null()) return JsonError(res, 404, "no host named '" + name.substr(0, 80) + "'");
    res.set_content(j.dump() + "\n", "application/json");
  });
  server_->Get("/api/v1/subnet_managers", [this](const httplib::Request&, httplib::Response& res) {
    auto snap = holder_.Get();
    if (!snap->subnet_managers) {
      return JsonError(res, snap->scope.reports_topology() ? 503 : 404,
                       snap->scope.reports_topology()
                           ? "no sweep has completed yet"
                           : "this exporter does not watch subnet managers (scope " +
                                 std::string(topology::ToString(snap->scope.kind)) + " or a shard other than 0)");
    }
    res.set_content(collectors::SubnetManagersJson(*snap->subnet_managers, snap->published).dump() + "\n",
                    "application/json");
  });
  server_->Get("/healthz",
               [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  server_->Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    auto snap = holder_.Get();
    if (snap->sweeps == 0) {
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
  if (auto at = html.find(marker); at != std::string::npos) html.replace(at, marker.size(), metrics_path.substr(1));
  server_->Get("/", page(std::move(html), "text/html; charset=utf-8"));
  server_->Get("/static/status.css", page(kStatusCss, "text/css; charset=utf-8"));
  server_->Get("/static/status.js", page(kStatusJs, "text/javascript; charset=utf-8"));
  server_->Get("/api/v1/port", [this](const httplib::Request& req, httplib::Response& res) {
    topology::PortRef port;
    if (!ParseQuery(req, res, collectors::ParsePortQuery, &port)) return;
    auto snap = holder_.Get();
    const nlohmann::json j = collectors::PortDetailJson(*snap, port);
    if (j.is_null()) return JsonError(res, 404, "no such port in the fabric");
    res.set_content(j.dump() + "\n", "application/json");
  });
}

bool HttpServer::Start(std::string* error) {
  if (!server_->is_valid()) {
    *error = "invalid --web.config.file: " + (tls_error_.empty() ? "cannot set up TLS" : tls_error_);
    return false;
  }
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a
  // second exporter on the same port binds too and takes half the scrapes.
  server_->set_socket_options([](socket_t sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  if (options_.port == 0) {
    bound_port_ = server_->bind_to_any_port(options_.host);
  } else {
    bound_port_ = server_->bind_to_port(options_.host, options_.port) ? options_.port : -1;
  }
  if (bound_port_ <= 0) {
    *error =
        "cannot listen on " + options_.host + ":" + std::to_string(options_.port) + " (address in use or not local?)";
    return false;
  }
  thread_ = std::thread([this] {
    server_->listen_after_bind();
    listen_returned_ = true;
  });
  // Serving once Start returns, and a Stop right after it is not lost:
  // httplib's stop() does nothing until the listening loop has begun.
  while (!server_->is_running() && !listen_returned_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return true;
}

void HttpServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace ibfabric::exporter
