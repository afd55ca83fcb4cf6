#pragma once
// The real exporter binary, attached to a SimFabric, on a free local port.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tests/testbed/process.h"
#include "tests/testbed/prom_text.h"
#include "tests/testbed/sim_fabric.h"

namespace ibfabric::testbed {

// The path of the built exporter (set by CMake for the test targets).
std::string ExporterBinary();

// How the test talks to an exporter run with --web.config.file.
struct ClientOptions {
  std::string ca_file;  // non-empty: HTTPS, the server certificate checked against this
  std::string user;     // non-empty: basic auth
  std::string password;
};

class ExporterProcess {
 public:
  // Starts the exporter with `args` (a listen address is added) and waits
  // until it serves /healthz. `env` is added to the simulator's client
  // environment; an LD_PRELOAD in it goes after umad2sim's.
  static std::unique_ptr<ExporterProcess> Start(const SimFabric& sim, const std::vector<std::string>& args,
                                                std::string* error, ClientOptions client = {}, Env env = {});
  ~ExporterProcess();

  // GET `path`; the body, or empty with *status set (-1 when unreachable).
  std::string Get(const std::string& path, int* status = nullptr) const;
  Scrape ScrapeMetrics() const;
  // Waits until infiniband_exporter_sweeps_total >= n; the scrape that showed it.
  std::optional<Scrape> WaitForSweeps(double n, std::chrono::milliseconds timeout) const;
  // Scrapes until `done` holds; the scrape that satisfied it.
  std::optional<Scrape> WaitFor(const std::function<bool(const Scrape&)>& done,
                                std::chrono::milliseconds timeout) const;
  std::string Log() const;
  int port() const { return port_; }
  Process& process() { return *process_; }

 private:
  ExporterProcess() = default;
  std::string dir_;
  int port_ = 0;
  ClientOptions client_;
  std::unique_ptr<Process> process_;
};

// A TCP port on 127.0.0.1 that was free a moment ago.
int FreeLocalPort();

}  // namespace ibfabric::testbed
