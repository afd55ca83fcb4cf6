// libFuzzer target: the HTTP layer. An input is what a client sends on one
// connection (one or more requests: request lines, query strings, headers,
// any bytes), served by the exporter's handler set (exporter/http_routes.h)
// on an httplib server that reads it from memory, over a small fixed
// snapshot the real poller made of an in-memory fabric: no simulator, no
// socket. Every reply must hold what http_routes.h promises:
//  - its status is below 500;
//  - its headers are among kResponseHeaders (no EXCEPTION_WHAT);
//  - a JSON body is valid UTF-8 and parses as JSON;
//  - a reply that says "Connection: close" is the connection's last.
// A broken promise aborts with the reply, so libFuzzer keeps the input.
//
// Built and run by scripts/fuzz.sh; the seeds (tests/fuzz/corpus/http) are
// the hostile requests of issue 41, which integration.http sends to the
// real binary too. A crash input it ever finds is added there as
// regression-*.

#include <httplib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "collectors/common/log.h"
#include "exporter/gzip.h"
#include "exporter/http_routes.h"
#include "exporter/poller.h"
#include "exporter/snapshot_holder.h"
#include "tests/testbed/http_reply.h"
#include "tests/unit/fake_fabric.h"
#include "transport/mad_engine.h"
#include "transport/testing/fake_mad_port.h"

namespace {

using namespace ibfabric;

// A connection's bytes: the input to read, the replies written.
class MemoryStream : public httplib::Stream {
 public:
  explicit MemoryStream(std::string_view in) : in_(in) {}
  bool is_readable() const override { return at_ < in_.size(); }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, std::size_t size) override {
    const std::size_t n = std::min(size, in_.size() - at_);
    std::copy_n(in_.data() + at_, n, ptr);
    at_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, std::size_t size) override {
    out_.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 40000;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 9315;
  }
  socket_t socket() const override { return 0; }
  const std::string& out() const { return out_; }

 private:
  std::string_view in_;
  std::size_t at_ = 0;
  std::string out_;
};

// httplib's request loop, reachable: what one connection's keep-alive
// loop runs for each request. A server that never listened counts as
// shutting down, and then writes no streamed body: it is given a socket
// number as if it listened (never used as one).
struct MemoryServer : httplib::Server {
  MemoryServer() { svr_sock_ = 0; }
  using httplib::Server::process_request;
};

// Two spines, two leaves, two hosts (named as rdma-ndd names them) on each
// leaf, symbol errors rising on one host cable: a snapshot with a
// topology, hosts, counters, alerts and an exposition, as the poller
// publishes it.
struct Fixture {
  testing::FakeFabric fabric;
  transport::testing::FakeMadPort port;
  transport::MadEngine engine;
  collectors::Logger log{collectors::LogLevel::kError};
  exporter::SnapshotHolder holder;
  exporter::HttpStats stats;
  std::unique_ptr<exporter::HttpRoutes> routes;
  MemoryServer server;

  Fixture() : port(Build(), {std::chrono::microseconds(0), 0}), engine(port, testing::QuickEngine()) {
    exporter::PollerOptions o;
    o.fabric.sweep_interval = std::chrono::milliseconds(10);
    o.fabric.subscribe_traps = false;
    o.http = &stats;
    exporter::Poller poller(engine, o, holder, log);
    transport::PortCounters c;
    for (int sweep = 0; sweep < 4; ++sweep) {
      c.symbol_error = static_cast<std::uint16_t>(sweep * 500);
      fabric.SetCounters(bad_host, 1, c);
      poller.Cycle();
    }
    const auto snap = holder.Get();
    // The fixture must give the routes something to say on each.
    if (!snap->topology || !snap->hosts || snap->hosts->hosts.empty() || !snap->health ||
        snap->health->active.empty()) {
      std::fprintf(stderr, "http_fuzz: the fixture's snapshot lacks a topology, hosts or an alert\n");
      std::abort();
    }
    exporter::HttpOptions options;
    routes = std::make_unique<exporter::HttpRoutes>(holder, options, &stats, &log);
    routes->Install(server);
  }
  transport::testing::FakeMadPort::Responder Build() {
    const std::vector<int> hosts =
        testing::BuildSmallTree(fabric, [](int i) { return "cn000" + std::to_string(i + 1) + " mlx5_0"; }).hosts;
    bad_host = hosts[1];
    return fabric.Responder(hosts[0], 1);
  }
  int bad_host = 0;
};

[[noreturn]] void Broken(const std::string& what, const std::string& reply) {
  std::fprintf(stderr, "http_fuzz: %s\n--- reply ---\n%s\n---\n", what.c_str(), reply.substr(0, 2000).c_str());
  std::abort();
}

// Checks one reply; true when it says "Connection: close".
bool Check(const std::string& bytes) {
  static const std::set<std::string> documented(exporter::kResponseHeaders.begin(), exporter::kResponseHeaders.end());
  std::string error;
  const auto reply = testbed::ParseReply(bytes, &error);
  if (!reply) Broken(error, bytes);
  // brotli is never chosen (quality 11 costs seconds of CPU); a gzip body
  // is checked as the client reads it.
  const std::string coding = reply->Header("Content-Encoding").value_or("");
  if (!coding.empty() && coding != "gzip") Broken("Content-Encoding " + coding, bytes);
  std::string body = reply->body;
  if (coding == "gzip" && !body.empty()) {
    body = exporter::Gunzip(body);
    if (body.empty()) Broken("a gzip body that does not inflate", bytes);
  }
  if (const std::string broken = testbed::BrokenPromise(*reply, body, documented); !broken.empty()) {
    Broken(broken, bytes);
  }
  return reply->Header("Connection") == "close";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Fixture* fixture = new Fixture();
  MemoryStream stream(std::string_view(reinterpret_cast<const char*>(data), size));
  // As httplib's keep-alive loop: at most 5 requests, the last told to close.
  for (int count = 5; count > 0; --count) {
    const std::size_t before = stream.out().size();
    bool closed = false;
    const bool ok = fixture->server.process_request(stream, count == 1, closed, nullptr);
    const std::string reply = stream.out().substr(before);
    if (reply.empty()) break;  // nothing more was sent
    const bool says_close = Check(reply);
    if (!ok || closed || count == 1) break;  // the connection ends here
    if (says_close) Broken("the connection stays open after Connection: close", reply);
  }
  return 0;
}
