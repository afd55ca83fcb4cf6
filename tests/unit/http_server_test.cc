// The HTTP endpoint against a hand-published snapshot, over real sockets:
// readiness, paths, TLS and basic auth from a web config, and hardening
// (methods, sizes, traversal, slow clients).

#include "exporter/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "collectors/common/log.h"
#include "exporter/gzip.h"
#include "exporter/http_routes.h"
#include "tests/testbed/certificates.h"

namespace ibfabric::exporter {
namespace {

using testbed::Certificates;

HttpOptions Options(WebConfig web = {}) {
  HttpOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.web = std::move(web);
  return o;
}

// The exposition as the poller keeps it: compressed once.
void SetExposition(collectors::Snapshot* s, const std::string& text) {
  s->exposition_gz = Gzip(text);
  s->exposition_bytes = text.size();
}

std::shared_ptr<collectors::Snapshot> Swept(const std::string& exposition) {
  auto s = std::make_shared<collectors::Snapshot>();
  s->fabric = std::make_shared<topology::Fabric>();
  SetExposition(s.get(), exposition);
  s->sweeps = 1;
  return s;
}

// A raw TCP connection, for requests no well-behaved client would send.
class RawClient {
 public:
  explicit RawClient(int port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    timeval tv{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RawClient() { close(fd_); }
  bool connected() const { return connected_; }
  bool Send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  // Everything until the server closes (or 10 s pass).
  std::string ReadAll() {
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd_, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<std::size_t>(n));
    return out;
  }
  // The first line of the answer, without waiting for the server to close.
  std::string StatusLine() {
    std::string out;
    char buf[4096];
    while (out.find("\r\n") == std::string::npos) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out.substr(0, out.find("\r\n"));
  }

 private:
  int fd_;
  bool connected_ = false;
};

TEST(HttpServerTest, ReadyOnlyAfterASweepAndUnknownPathsAre404) {
  SnapshotHolder holder;
  auto first = std::make_shared<collectors::Snapshot>();
  first->fabric = std::make_shared<topology::Fabric>();
  SetExposition(first.get(), "# nothing yet\n");
  holder.Publish(first);
  HttpServer http(holder, Options());
  std::string error;
  ASSERT_TRUE(http.Start(&error)) << error;
  httplib::Client c("127.0.0.1", http.bound_port());

  auto r = c.Get("/readyz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  r = c.Get("/api/v1/topology");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503) << "no discovery yet";
  r = c.Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);

  auto swept = std::make_shared<collectors::Snapshot>(*first);
  swept->sweeps = 1;
  SetExposition(swept.get(), "infiniband_exporter_sweeps_total 1\n");
  holder.Publish(swept);
  r = c.Get("/readyz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  r = c.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "infiniband_exporter_sweeps_total 1\n");
  r = c.Get("/no/such/path");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  http.Stop();
}

// A second server on a port in use fails to start with a one-line error
// (httplib's default SO_REUSEPORT would let both listen and split scrapes).
TEST(HttpServerTest, APortInUseIsAStartError) {
  SnapshotHolder holder;
  HttpServer first(holder, Options());
  std::string error;
  ASSERT_TRUE(first.Start(&error)) << error;
  HttpOptions o = Options();
  o.port = first.bound_port();
  HttpServer second(holder, o);
  EXPECT_FALSE(second.Start(&error));
  EXPECT_EQ(error, "cannot listen on 127.0.0.1:" + std::to_string(o.port) + " (address in use or not local?)");
  first.Stop();
}

// The web config of a TLS server with the test certificates.
WebConfig WithTls(const Certificates& certs, WebConfig web = {}) {
  web.tls.emplace();
  web.tls->cert_file = certs("server.crt");
  web.tls->key_file = certs("server.key");
  return web;
}

WebConfig WithUser(const std::string& user, const std::string& password) {
  WebConfig web;
  web.basic_auth_users[user] = HashPassword(password, 4);
  return web;
}

TEST(HttpServerTest, BasicAuthRightWrongAndUnknownUsersProbesStayOpen) {
  SnapshotHolder holder;
  holder.Publish(Swept("infiniband_exporter_sweeps_total 1\n"));
  HttpServer http(holder, Options(WithUser("prometheus", "s3cret")));
  std::string error;
  ASSERT_TRUE(http.Start(&error)) << error;
  httplib::Client c("127.0.0.1", http.bound_port());

  auto r = c.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_NE(r->get_header_value("WWW-Authenticate").find("Basic"), std::string::npos);
  EXPECT_EQ(r->body.find("sweeps_total"), std::string::npos);
  for (const auto& [user, password] : std::vector<std::pair<std::string, std::string>>{
           {"prometheus", "wrong"}, {"prometheus", "s3cret "}, {"nobody", "s3cret"}, {"prometheus", ""}}) {
    c.set_basic_auth(user, password);
    r = c.Get("/metrics");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401) << user << ":" << password;
  }
  for (const char* path : {"/api/v1/alerts", "/api/v1/topology", "/", "/no/such/path"}) {
    httplib::Client anon("127.0.0.1", http.bound_port());
    r = anon.Get(path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401) << path;
  }
  c.set_basic_auth("prometheus", "s3cret");
  for (int i = 0; i < 2; ++i) {  // the second time from the verified cache
    r = c.Get("/metrics");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "infiniband_exporter_sweeps_total 1\n");
  }
  // A malformed header is a 401, not a crash.
  for (const char* bad : {"Basic", "Basic !!!!", "Basic cHJvbWV0aGV1cw==", "Bearer abc", "Basic ====", "Basic Og=="}) {
    RawClient raw(http.bound_port());
    ASSERT_TRUE(raw.Send(std::string("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: ") + bad +
                         "\r\n\r\n"));
    EXPECT_EQ(raw.StatusLine(), "HTTP/1.1 401 Unauthorized") << bad;
  }
  httplib::Client anon("127.0.0.1", http.bound_port());
  r = anon.Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  r = anon.Get("/readyz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  http.Stop();
}

TEST(HttpServerTest, TlsServesVerifiedClientsAndRefusesPlainHttp) {
  Certificates certs;
  ASSERT_TRUE(certs.ok()) << "openssl could not make test certificates";
  SnapshotHolder holder;
  holder.Publish(Swept("infiniband_exporter_sweeps_total 1\n"));
  WebConfig web = WithTls(certs, WithUser("prometheus", "s3cret"));
  web.headers["Strict-Transport-Security"] = "max-age=60";
  HttpServer http(holder, Options(web));
  std::string error;
  ASSERT_TRUE(http.Start(&error)) << error;

  httplib::SSLClient tls("127.0.0.1", http.bound_port());
  tls.set_ca_cert_path(certs("server.crt").c_str());
  tls.enable_server_certificate_verification(true);
  tls.set_basic_auth("prometheus", "s3cret");
  auto r = tls.Get("/metrics");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "infiniband_exporter_sweeps_total 1\n");
  EXPECT_EQ(r->get_header_value("Strict-Transport-Security"), "max-age=60");
  tls.set_basic_auth("prometheus", "nope");
  r = tls.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);

  // A plain-HTTP client gets no HTTP answer from the TLS port.
  httplib::Client plain("127.0.0.1", http.bound_port());
  plain.set_basic_auth("prometheus", "s3cret");
  r = plain.Get("/metrics");
  EXPECT_FALSE(r && r->status == 200);
  RawClient raw(http.bound_port());
  ASSERT_TRUE(raw.Send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(raw.ReadAll().find("sweeps_total"), std::string::npos);
  // ...and the server still serves TLS afterwards.
  tls.set_basic_auth("prometheus", "s3cret");
  r = tls.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  http.Stop();
}

TEST(HttpServerTest, TlsClientCertificatesRequiredAndVerified) {
  Certificates certs;
  ASSERT_TRUE(certs.ok());
  SnapshotHolder holder;
  holder.Publish(Swept("x 1\n"));
  WebConfig web = WithTls(certs);
  web.tls->client_ca_file = certs("ca.crt");
  web.tls->client_auth = ClientAuth::kRequireAndVerify;
  HttpServer http(holder, Options(web));
  std::string error;
  ASSERT_TRUE(http.Start(&error)) << error;

  httplib::SSLClient without("127.0.0.1", http.bound_port());
  without.enable_server_certificate_verification(false);
  EXPECT_FALSE(without.Get("/metrics"));
  // Self-signed by another key: not signed by the client CA.
  httplib::SSLClient wrong("127.0.0.1", http.bound_port(), certs("server.crt"), certs("server.key"));
  wrong.enable_server_certificate_verification(false);
  EXPECT_FALSE(wrong.Get("/metrics"));
  httplib::SSLClient with("127.0.0.1", http.bound_port(), certs("client.crt"), certs("client.key"));
  with.enable_server_certificate_verification(false);
  auto r = with.Get("/metrics");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  http.Stop();
}

TEST(HttpServerTest, UnreadableCertificateIsAOneLineStartError) {
  SnapshotHolder holder;
  WebConfig web;
  web.tls.emplace();
  web.tls->cert_file = "/nonexistent/server.crt";
  web.tls->key_file = "/nonexistent/server.key";
  HttpServer http(holder, Options(web));
  std::string error;
  EXPECT_FALSE(http.Start(&error));
  EXPECT_EQ(error.rfind("invalid --web.config.file: cannot load cert_file /nonexistent/server.crt", 0), 0u) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

TEST(HttpServerTest, OnlyGetAndHeadOnKnownPathsWithinSizeLimits) {
  SnapshotHolder holder;
  holder.Publish(Swept("x 1\n"));
  HttpServer http(holder, Options());
  std::string error;
  ASSERT_TRUE(http.Start(&error)) << error;
  const int port = http.bound_port();
  auto status = [port](const std::string& request) {
    const auto start = std::chrono::steady_clock::now();
    RawClient raw(port);
    const auto took = [start] { return std::chrono::steady_clock::now() - start; };
    EXPECT_TRUE(raw.connected());
    raw.Send(request);
    std::string line = raw.StatusLine();
    EXPECT_LT(took(), std::chrono::seconds(2)) << request.substr(0, 60);
    return line;
  };
  const std::string tail = " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"}) {
    EXPECT_EQ(status(std::string(method) + " /metrics" + tail + "Content-Length: 0\r\n\r\n"),
              "HTTP/1.1 405 Method Not Allowed")
        << method;
  }
  EXPECT_EQ(status("HEAD /metrics" + tail + "\r\n"), "HTTP/1.1 200 OK");
  EXPECT_EQ(status("GET /metrics" + tail + "\r\n"), "HTTP/1.1 200 OK");
  for (const char* path : {"/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/metrics/../../etc/passwd",
                           "//etc/passwd", "/api/v1/../../../etc/passwd"}) {
    const std::string line = status(std::string("GET ") + path + tail + "\r\n");
    EXPECT_TRUE(line == "HTTP/1.1 404 Not Found" || line == "HTTP/1.1 400 Bad Request") << path << ": " << line;
  }
  std::string many;
  for (int i = 0; i < 150; ++i) many += "X-Filler-" + std::to_string(i) + ": 1\r\n";
  EXPECT_EQ(status("GET /metrics" + tail + many + "\r\n"), "HTTP/1.1 431 Request Header Fields Too Large");
  std::string wide;
  for (int i = 0; i < 6; ++i) wide += "X-Wide-" + std::to_string(i) + ": " + std::string(7000, 'a') + "\r\n";
  EXPECT_EQ(status("GET /metrics" + tail + wide + "\r\n"), "HTTP/1.1 431 Request Header Fields Too Large");
  // One header line over httplib's 8 KiB: the request is refused outright.
  EXPECT_NE(status("GET /metrics" + tail + "X-Long: " + std::string(9000, 'a') + "\r\n\r\n"), "HTTP/1.1 200 OK");
  EXPECT_EQ(status("GET /" + std::string(9000, 'a') + tail + "\r\n"), "HTTP/1.1 414 URI Too Long");
  // A body is never read: the method is refused first.
  EXPECT_EQ(status("POST /metrics" + tail + "Content-Length: 1000000\r\n\r\n"), "HTTP/1.1 405 Method Not Allowed");
  http.Stop();
}

// A server on a swept snapshot that counts its error replies.
struct Served {
  SnapshotHolder holder;
  HttpStats stats;
  HttpServer http{holder, Options(), &stats};
  bool Start() {
    holder.Publish(Swept("x 1\n"));
    std::string error;
    EXPECT_TRUE(http.Start(&error)) << error;
    return error.empty();
  }
};

// Issue 41: what a request says comes back valid UTF-8, cut whole.
TEST(HttpServerTest, BadBytesInAQueryAreQuotedBackAsValidUtf8) {
  Served served;
  ASSERT_TRUE(served.Start());
  HttpServer& http = served.http;
  HttpStats& stats = served.stats;
  httplib::Client c("127.0.0.1", http.bound_port());
  const auto refusal = [&c](const std::string& path) {
    auto r = c.Get(path);
    EXPECT_TRUE(r) << path;
    if (!r) return std::string();
    EXPECT_EQ(r->status, 400) << path;
    EXPECT_FALSE(r->has_header("EXCEPTION_WHAT")) << path;
    EXPECT_TRUE(nlohmann::json::accept(r->body)) << r->body;
    return nlohmann::json::parse(r->body).value("error", "");
  };
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(refusal("/api/v1/alerts?severity=%ff%fe"),
            "severity must be warning or critical, not '" + fffd + fffd + "'");
  EXPECT_EQ(refusal("/api/v1/alerts?x%c0%af=1"), "unknown parameter 'x" + fffd + fffd + "' (severity, node, state)");
  EXPECT_EQ(refusal("/api/v1/topology?view=" + std::string(39, 'a') + "%c3%a9b"),
            "view must be full, summary or findings, not '" + std::string(39, 'a') + "\xC3\xA9...'");
  EXPECT_EQ(refusal("/api/v1/search?limit=%ed%a0%80"),
            "limit must be a number from 1 to 200, not '" + fffd + fffd + fffd + "'");
  http.Stop();
  EXPECT_EQ(stats.Errors(), (std::map<int, std::uint64_t>{{400, 4}}));
}

// Issue 63: every JSON route refuses parameters it does not know, the
// subnet managers' too; a single-fabric exporter takes `fabric=` naming its
// own fabric (as /api/v1/fabrics names it) and answers 404 to another.
TEST(HttpServerTest, UnknownParametersAre400AndASingleFabricAnswersToItsOwnName) {
  SnapshotHolder holder;
  auto s = Swept("x 1\n");
  s->local.subnet_prefix = 0xfe80000000000000ULL;
  s->subnet_managers = std::make_shared<const collectors::SmReport>();
  holder.Publish(s);
  HttpServer http(holder, Options());
  std::string error;
  ASSERT_TRUE(http.Start(&error)) << error;
  httplib::Client c("127.0.0.1", http.bound_port());
  const auto status = [&c](const std::string& path) {
    auto r = c.Get(path);
    EXPECT_TRUE(r) << path;
    return r ? r->status : -1;
  };
  auto r = c.Get("/api/v1/fabrics");
  ASSERT_TRUE(r);
  const std::string own = nlohmann::json::parse(r->body)["fabrics"][0]["name"];
  EXPECT_EQ(own, "0xfe80000000000000");
  EXPECT_EQ(status("/api/v1/subnet_managers"), 200);
  EXPECT_EQ(status("/api/v1/subnet_managers?x=1"), 400);
  EXPECT_EQ(status("/api/v1/subnet_managers?fabric=" + own), 200);
  EXPECT_EQ(status("/api/v1/subnet_managers?fabric=" + own + "&x=1"), 400);
  EXPECT_EQ(status("/api/v1/alerts?fabric=" + own), 200);
  EXPECT_EQ(status("/api/v1/alerts?fabric=0x1"), 404);
  EXPECT_EQ(status("/api/v1/alerts?fabric=" + own + "&fabric=0x1"), 400);
  r = c.Get("/api/v1/alerts?fabric=0x1");
  ASSERT_TRUE(r);
  EXPECT_EQ(nlohmann::json::parse(r->body)["error"], "no fabric '0x1' here; there is " + own);
  http.Stop();
}

// httplib alone kept such a connection open for its keep-alive timeout and
// read the rest of the request as more requests.
TEST(HttpServerTest, AnUnparsableRequestIsAnsweredOnceAndItsConnectionClosed) {
  Served served;
  ASSERT_TRUE(served.Start());
  HttpServer& http = served.http;
  HttpStats& stats = served.stats;
  const std::vector<std::pair<std::string, std::string>> cases{
      {"GET /healthz HTTP/9\r\nConnection: close\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n", "HTTP/1.1 400 Bad Request"},
      {"GET /healthz HTTP/1.1\r\nX-Long: " + std::string(9000, 'a') + "\r\n\r\n", "HTTP/1.1 400 Bad Request"},
      {"GET /" + std::string(9000, 'a') + " HTTP/1.1\r\n\r\n", "HTTP/1.1 414 URI Too Long"},
      {"HEAD /healthz HTTP/1.1\r\nX-Long: " + std::string(9000, 'a') + "\r\n\r\n", "HTTP/1.1 400 Bad Request"},
  };
  for (const auto& [request, status] : cases) {
    const auto start = std::chrono::steady_clock::now();
    RawClient raw(http.bound_port());
    ASSERT_TRUE(raw.connected());
    raw.Send(request);
    const std::string all = raw.ReadAll();  // until the server closes
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2)) << status;
    EXPECT_EQ(all.substr(0, all.find("\r\n")), status);
    EXPECT_NE(all.find("Connection: close\r\n"), std::string::npos) << all;
    EXPECT_EQ(all.find("Keep-Alive"), std::string::npos) << all;
    EXPECT_EQ(all.find("HTTP/1.1", 1), std::string::npos) << "one reply only: " << all;
  }
  http.Stop();
  EXPECT_EQ(stats.Errors(), (std::map<int, std::uint64_t>{{400, 3}, {414, 1}}));
}

// An exception a handler did not expect: a generic 500 whose text is only
// in the log, once however often it happens, and counted.
TEST(HttpServerTest, AnUnexpectedExceptionIsAGeneric500LoggedOnceAndCounted) {
  SnapshotHolder holder;
  holder.Publish(Swept("x 1\n"));
  HttpStats stats;
  collectors::Logger log(collectors::LogLevel::kInfo);
  httplib::Server server;
  HttpRoutes routes(holder, Options(), &stats, &log);
  routes.Install(server);
  server.Get("/boom", [](const httplib::Request&, httplib::Response& res) {
    res.set_header("X-Half-Done", "1");
    throw std::runtime_error("secret internals: /var/lib/state 0xdeadbeef");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&server] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  httplib::Client c("127.0.0.1", port);
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    auto r = c.Get("/boom");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 500);
    EXPECT_EQ(r->body, "{\"error\":\"internal error\"}\n");
    for (const auto& [k, v] : r->headers) {
      EXPECT_EQ(v.find("secret"), std::string::npos) << k;
      EXPECT_NE(k, "EXCEPTION_WHAT");
      EXPECT_NE(k, "X-Half-Done");
    }
  }
  server.stop();
  serving.join();
  const std::string logged = ::testing::internal::GetCapturedStderr();
  std::size_t lines = 0;
  for (std::size_t at = 0; (at = logged.find("secret internals", at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, 1u) << logged;
  EXPECT_NE(logged.find("path=\"/boom\""), std::string::npos) << logged;
  EXPECT_EQ(stats.Errors(), (std::map<int, std::uint64_t>{{500, 3}}));
}

TEST(HttpServerTest, SlowClientsDoNotStallAScrape) {
  SnapshotHolder holder;
  holder.Publish(Swept(std::string(4 << 20, '#') + "\nx 1\n"));
  // With httplib's default pool (8 workers on this machine) the scrape waits
  // for the slow clients' read timeouts: this test fails.
  HttpServer http(holder, Options());
  std::string error;
  ASSERT_TRUE(http.Start(&error)) << error;
  // Twelve clients that send half a request and wait, and four that ask for
  // the 4 MiB exposition and never read it: more than httplib's default pool.
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 12; ++i) {
    slow.push_back(std::make_unique<RawClient>(http.bound_port()));
    ASSERT_TRUE(slow.back()->Send("GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: "));
  }
  for (int i = 0; i < 4; ++i) {
    slow.push_back(std::make_unique<RawClient>(http.bound_port()));
    ASSERT_TRUE(slow.back()->Send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto start = std::chrono::steady_clock::now();
  httplib::Client c("127.0.0.1", http.bound_port());
  c.set_read_timeout(3, 0);
  auto r = c.Get("/metrics");
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body.size(), (4u << 20) + 5);
  EXPECT_LT(took, std::chrono::seconds(2));
  slow.clear();
  http.Stop();
}

// The exposition is compressed once per sweep: a scrape that accepts gzip
// gets those very bytes (not compressed again), a plain one the text
// inflated as it is sent, with its length; q=0 refuses gzip; a Range gets
// the whole body; HEAD the headers.
TEST(HttpServerTest, GzipScrapesGetTheBytesCompressedOncePlainOnesTheText) {
  std::string text;
  for (int i = 0; i < 200000; ++i) text += "infiniband_port_x{guid=\"0x" + std::to_string(i) + "\",port=\"1\"} 7\n";
  SnapshotHolder holder;
  auto snap = Swept(text);
  const std::string once = snap->exposition_gz;
  ASSERT_LT(once.size(), text.size() / 4);
  holder.Publish(snap);
  HttpServer http(holder, Options());
  std::string error;
  ASSERT_TRUE(http.Start(&error)) << error;
  const auto raw = [&](const std::string& headers) {
    RawClient c(http.bound_port());
    EXPECT_TRUE(c.Send("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + headers + "\r\n"));
    const std::string all = c.ReadAll();
    const auto end = all.find("\r\n\r\n");
    return std::make_pair(all.substr(0, end), end == std::string::npos ? "" : all.substr(end + 4));
  };
  auto [head, body] = raw("Accept-Encoding: gzip\r\n");
  EXPECT_NE(head.find("Content-Encoding: gzip"), std::string::npos) << head;
  EXPECT_NE(head.find("Content-Length: " + std::to_string(once.size())), std::string::npos) << head;
  EXPECT_TRUE(body == once) << "served as compressed once, " << body.size() << " bytes";
  EXPECT_EQ(Gunzip(body), text);
  for (const char* plain : {"", "Accept-Encoding: gzip;q=0, identity\r\n", "Accept-Encoding: br\r\n"}) {
    std::tie(head, body) = raw(plain);
    EXPECT_EQ(head.find("Content-Encoding"), std::string::npos) << plain << head;
    EXPECT_NE(head.find("Content-Length: " + std::to_string(text.size())), std::string::npos) << head;
    EXPECT_TRUE(body == text) << plain << ": " << body.size() << " of " << text.size() << " bytes";
  }
  std::tie(head, body) = raw("Accept-Encoding: x-gzip, deflate\r\nRange: bytes=100-200\r\n");
  EXPECT_NE(head.find("200 OK"), std::string::npos) << head;
  EXPECT_TRUE(body == once) << "a range of the compressed bytes is not served";
  RawClient h(http.bound_port());
  ASSERT_TRUE(h.Send("HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  const std::string only = h.ReadAll();
  EXPECT_NE(only.find("Content-Length: " + std::to_string(text.size())), std::string::npos) << only;
  EXPECT_EQ(only.substr(only.find("\r\n\r\n") + 4), "");
  http.Stop();
}

// gzip round trips, a slice at a time, and refuses what is not gzip.
TEST(GzipTest, RoundTripsInSlicesAndRefusesGarbage) {
  std::string text;
  for (int i = 0; i < 100000; ++i) text += std::to_string(i * 7919 % 10007) + (i % 13 ? " " : "\n");
  GzipWriter w(Z_BEST_SPEED);
  std::ostream out(&w);
  out << text.substr(0, 1000);
  out.write(text.data() + 1000, static_cast<std::streamsize>(text.size() - 1000));
  out.flush();
  EXPECT_EQ(w.plain_bytes(), text.size());
  const std::string gz = w.Finish();
  GunzipReader r(gz);
  std::string back, slice;
  int slices = 0;
  while (r.Next(&slice, 4096)) {
    EXPECT_LE(slice.size(), 4096u);
    back += slice;
    ++slices;
  }
  EXPECT_FALSE(r.error());
  EXPECT_EQ(back, text);
  EXPECT_GT(slices, 100);
  EXPECT_EQ(Gunzip(Gzip("")), "");
  EXPECT_EQ(Gunzip("not gzip at all"), "");
  GunzipReader cut(gz.substr(0, gz.size() / 2));
  while (cut.Next(&slice, 4096)) {
  }
  EXPECT_TRUE(cut.error()) << "a member cut short";
}

}  // namespace
}  // namespace ibfabric::exporter
