// Composition root: parses flags, opens the MAD port, wires the poller, the
// snapshot holder and the HTTP server, and waits for a signal.

#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "exporter/flags.h"
#include "exporter/http_server.h"
#include "exporter/log.h"
#include "exporter/poller.h"
#include "exporter/snapshot_holder.h"
#include "transport/mad_engine.h"
#include "transport/umad_port.h"

#ifndef IBFABRIC_VERSION
#define IBFABRIC_VERSION "dev"
#endif

namespace ibfabric::exporter {
namespace {

int Main(int argc, char** argv) {
  const std::string program = argc > 0 ? argv[0] : "ibfabric_exporter";
  const ParsedFlags flags = ParseFlags(std::vector<std::string>(argv + 1, argv + argc));
  switch (flags.action) {
    case ParsedFlags::Action::kHelp:
      std::cout << HelpText(program);
      return 0;
    case ParsedFlags::Action::kVersion:
      std::cout << "ibfabric_exporter, version " << IBFABRIC_VERSION << "\n";
      return 0;
    case ParsedFlags::Action::kError:
      std::cerr << "ibfabric_exporter: " << flags.error << "\n";
      return 2;
    case ParsedFlags::Action::kRun:
      break;
  }
  const Config& cfg = flags.config;
  Logger log(Logger::LevelFrom(cfg.log_level));

  // Block the stop signals before any thread starts, so only sigwait sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::string error;
  transport::UmadPortOptions port_options;
  port_options.ca_name = cfg.ca_name;
  port_options.port = cfg.ca_port;
  port_options.kernel_timeout_ms = static_cast<int>(cfg.mad_timeout.count());
  auto port = transport::UmadPort::Open(port_options, &error);
  if (!port) {
    std::cerr << "ibfabric_exporter: " << error << "\n";
    return 1;
  }
  const auto& local = port->local();
  log.Info("opened InfiniBand port",
           "ca=" + local.ca_name + " port=" + std::to_string(local.port) +
               " lid=" + std::to_string(local.lid) + " state=" + std::to_string(local.state));

  transport::EngineOptions engine_options;
  engine_options.window = cfg.mad_window;
  engine_options.timeout = cfg.mad_timeout;
  engine_options.retries = cfg.mad_retries;
  transport::MadEngine engine(*port, engine_options);

  SnapshotHolder holder;
  Poller poller(engine, PollerOptions{cfg.sweep_interval, cfg.discovery_interval}, holder, log);

  if (cfg.once) {
    const bool ok = poller.Cycle();
    std::cout << SerializeMetrics(*holder.Get(), IBFABRIC_VERSION);
    return ok ? 0 : 1;
  }

  HttpServer http(holder, HttpOptions{cfg.listen_host, cfg.listen_port, cfg.telemetry_path,
                                      IBFABRIC_VERSION});
  if (!http.Start(&error)) {
    std::cerr << "ibfabric_exporter: " << error << "\n";
    return 1;
  }
  log.Info("listening", "address=" + cfg.listen_host + ":" + std::to_string(http.bound_port()) +
                            " telemetry_path=" + cfg.telemetry_path);

  std::jthread sweeper([&poller](std::stop_token st) { poller.Run(st); });
  int sig = 0;
  sigwait(&stop_signals, &sig);
  log.Info("stopping", "signal=" + std::to_string(sig));
  http.Stop();
  sweeper.request_stop();
  return 0;
}

}  // namespace
}  // namespace ibfabric::exporter

int main(int argc, char** argv) { return ibfabric::exporter::Main(argc, argv); }
