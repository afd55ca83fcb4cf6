#include "tests/testbed/exporter_process.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#ifndef IBFABRIC_EXPORTER_BIN
#error "IBFABRIC_EXPORTER_BIN must be defined by the build"
#endif

namespace ibfabric::testbed {

std::string ExporterBinary() { return IBFABRIC_EXPORTER_BIN; }

int FreeLocalPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

std::unique_ptr<ExporterProcess> ExporterProcess::Start(const SimFabric& sim, const std::vector<std::string>& args,
                                                        std::string* error, ClientOptions client, Env env) {
  std::unique_ptr<ExporterProcess> e(new ExporterProcess());
  e->client_ = std::move(client);
  e->dir_ = MakeTempDir("exporter");
  e->port_ = FreeLocalPort();
  SpawnOptions o;
  o.argv = {ExporterBinary(), "--web.listen-address=127.0.0.1:" + std::to_string(e->port_)};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.env = sim.ClientEnv();
  for (auto& [name, value] : env) {
    std::string& to = o.env[name];
    // A list that names umad2sim itself is the whole list (a preload that
    // must come before it); any other goes after umad2sim's.
    const bool whole = value.find(kUmad2SimPreload) != std::string::npos;
    to = name == "LD_PRELOAD" && !to.empty() && !whole ? to + " " + value : value;
  }
  // One more preload for the exporter alone, after the rest: a heap
  // profiler's, say (docs/benchmarks.md, "Memory at 32k").
  if (const char* extra = std::getenv("IBFABRIC_EXPORTER_PRELOAD"); extra != nullptr && *extra != '\0') {
    std::string& to = o.env["LD_PRELOAD"];
    to = to.empty() ? extra : to + " " + extra;
  }
  o.stdout_path = e->dir_ + "/exporter.log";
  e->process_ = Process::Spawn(o, error);
  if (!e->process_) return nullptr;
  const auto healthy = [&e] {
    int status = 0;
    e->Get("/healthz", &status);
    return status == 200;
  };
  if (WaitUntilServing(healthy, *e->process_, std::chrono::seconds(30), std::chrono::milliseconds(20))) return e;
  *error = "exporter did not come up: " + e->Log();
  return nullptr;
}

ExporterProcess::~ExporterProcess() {
  if (process_) process_->Stop();
  RemoveTestDir(dir_);
}

std::string ExporterProcess::Get(const std::string& path, int* status) const {
  httplib::Client c((client_.ca_file.empty() ? "http://" : "https://") + std::string("127.0.0.1:") +
                    std::to_string(port_));
  if (!client_.ca_file.empty()) {
    c.set_ca_cert_path(client_.ca_file.c_str());
    c.enable_server_certificate_verification(true);
  }
  if (!client_.user.empty()) c.set_basic_auth(client_.user.c_str(), client_.password.c_str());
  c.set_connection_timeout(2, 0);
  c.set_read_timeout(30, 0);
  auto res = c.Get(path);
  if (!res) {
    if (status) *status = -1;
    return "";
  }
  if (status) *status = res->status;
  return res->body;
}

Scrape ExporterProcess::ScrapeMetrics() const { return Scrape::Parse(Get("/metrics")); }

std::optional<Scrape> ExporterProcess::WaitFor(const std::function<bool(const Scrape&)>& done,
                                               std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    const std::string body = Get("/metrics", &status);
    if (status == 200) {
      Scrape s = Scrape::Parse(body);
      if (done(s)) return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return std::nullopt;
}

std::optional<Scrape> ExporterProcess::WaitForSweeps(double n, std::chrono::milliseconds timeout) const {
  return WaitFor(
      [n](const Scrape& s) {
        auto v = s.Value("infiniband_exporter_sweeps_total");
        return v && *v >= n;
      },
      timeout);
}

std::string ExporterProcess::Log() const { return ReadFile(dir_ + "/exporter.log"); }

}  // namespace ibfabric::testbed
