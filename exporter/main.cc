// Composition root: parses flags, opens the MAD port, wires the poller, the
// snapshot holder and the HTTP server, and waits for a signal.

#include <malloc.h>
#include <pthread.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "collectors/common/log.h"
#include "exporter/alert_config.h"
#include "exporter/flags.h"
#include "exporter/gzip.h"
#include "exporter/http_server.h"
#include "exporter/poller.h"
#include "exporter/recovery.h"
#include "exporter/snapshot_holder.h"
#include "exporter/web_config.h"
#include "topology/discovery.h"
#include "topology/node_name_map.h"
#include "topology/partitions.h"
#include "topology/plan.h"
#include "transport/mad_engine.h"
#include "transport/umad_port.h"

#ifndef IBFABRIC_VERSION
#define IBFABRIC_VERSION "dev"
#endif

namespace ibfabric::exporter {
namespace {

int Main(int argc, char** argv) {
  // Large buffers (an exposition is ~10 MB at 4k ports) straight from and back
  // to the kernel, and few arenas: otherwise glibc's dynamic mmap threshold
  // keeps each worker thread's freed buffers and RSS ratchets up per scrape.
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  mallopt(M_ARENA_MAX, 2);

  const std::string program = argc > 0 ? argv[0] : "ibfabric_exporter";
  const ParsedFlags flags = ParseFlags(std::vector<std::string>(argv + 1, argv + argc));
  switch (flags.action) {
    case ParsedFlags::Action::kHelp: std::cout << HelpText(program); return 0;
    case ParsedFlags::Action::kVersion:
      std::cout << "ibfabric_exporter, version " << IBFABRIC_VERSION << "\n";
      return 0;
    case ParsedFlags::Action::kError: std::cerr << "ibfabric_exporter: " << flags.error << "\n"; return 2;
    case ParsedFlags::Action::kRun: break;
  }
  const Config& cfg = flags.config;
  collectors::Logger log(collectors::Logger::LevelFrom(cfg.log_level));
  // Every configuration file is read before anything starts: a bad one is
  // one line naming the flag, the file and the line, and exit status 2.
  std::string bad_flag;
  std::string why;
  const auto load = [&](const std::string& path, const char* flag, auto&& loader, auto* out) {
    if (path.empty() || !bad_flag.empty()) return;
    if (!loader(path, out, &why)) bad_flag = flag;
  };
  topology::NodeNameMap names;
  collectors::AlertConfig alerts;
  topology::PartitionPlan partitions;
  WebConfig web;
  topology::CablingPlan cabling;
  load(cfg.node_name_map, "--ib.node-name-map", topology::LoadNodeNameMap, &names);
  load(cfg.alerts_config, "--alerts.config", LoadAlertConfig, &alerts);
  load(cfg.partition_plan, "--partitions.plan", topology::LoadPartitionPlan, &partitions);
  load(cfg.web_config, "--web.config.file", LoadWebConfig, &web);
  load(cfg.topology_plan, "--topology.plan", topology::LoadPlan, &cabling);
  if (!bad_flag.empty()) {
    std::cerr << "ibfabric_exporter: invalid " << bad_flag << ": " << why << "\n";
    return 2;
  }
  std::optional<topology::PartitionPlan> partition_plan;
  if (!cfg.partition_plan.empty()) partition_plan = std::move(partitions);
  std::optional<topology::CablingPlan> plan;
  if (!cfg.topology_plan.empty()) plan = std::move(cabling);
  std::optional<topology::HostPattern> host_pattern;
  if (!cfg.host_pattern.empty()) {
    host_pattern.emplace();
    topology::ParseHostPattern(cfg.host_pattern, &*host_pattern, &why);  // the flag checked it
  }

  // Block the stop signals (and SIGUSR1, the poller's "re-exec me") before
  // any thread starts, so only sigwait in this thread sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a vanished peer is an error value, not a death

  std::string error;
  transport::UmadPortOptions port_options;
  port_options.ca_name = cfg.ca_name;
  port_options.port = cfg.ca_port;
  // The engine's timeouts adapt up to --mad.timeout-max; the kernel must not
  // hand a send back as timed out before that.
  port_options.kernel_timeout_ms = static_cast<int>(cfg.mad_timeout_max.count());
  auto port = transport::UmadPort::Open(port_options, &error);
  if (!port) {
    std::cerr << "ibfabric_exporter: " << error << "\n";
    return 1;
  }
  const auto& local = port->local();
  log.Info("opened InfiniBand port", "ca=" + local.ca_name + " port=" + std::to_string(local.port) +
                                         " lid=" + std::to_string(local.lid) + " state=" + std::to_string(local.state));

  transport::EngineOptions engine_options;
  engine_options.window = cfg.mad_window;
  engine_options.timeout = cfg.mad_timeout;
  engine_options.timeout_max = cfg.mad_timeout_max;
  engine_options.retries = cfg.mad_retries;
  engine_options.kind_window = {cfg.mad_dr_window, cfg.mad_lid_window, cfg.mad_gmp_window};
  engine_options.per_destination = cfg.mad_per_destination;
  engine_options.dr_per_switch = cfg.mad_dr_per_switch;
  engine_options.rate_limit = cfg.mad_rate_limit;
  transport::MadEngine engine(*port, engine_options);

  if (cfg.check) {
    const std::vector<transport::MadRequest> req{transport::NodeInfoQuery(transport::MadAddress::Directed({}))};
    const auto r = engine.Run(req);
    if (r[0].outcome != transport::MadOutcome::kOk) {
      std::cout << "ibfabric_exporter: " << local.ca_name << " port " << local.port
                << " does not answer NodeInfo: " << transport::ToString(r[0].outcome) << "\n";
      return 1;
    }
    std::cout << "ok: " << local.ca_name << " port " << local.port << " lid " << local.lid << " answers\n";
    return 0;
  }

  collectors::PersistedState restored;
  if (auto state = TakeRestoredState(&error)) {
    restored = std::move(*state);
    log.Info("restored counter totals after re-exec", "ports=" + std::to_string(restored.ports.size()));
  } else if (!error.empty()) {
    log.Warn("could not restore counter totals", "error=\"" + error + "\"");
  }

  // When the local port stops answering, probe from a fresh process and,
  // once it answers there, have the main thread re-exec this program.
  const pthread_t main_thread = pthread_self();
  std::vector<std::string> port_args;
  if (!cfg.ca_name.empty()) port_args.push_back("--ib.ca=" + cfg.ca_name);
  if (cfg.ca_port != 0) port_args.push_back("--ib.port=" + std::to_string(cfg.ca_port));
  auto last_probe = std::chrono::steady_clock::time_point{};
  PollerOptions poller_options;
  poller_options.fabric.sweep_interval = cfg.sweep_interval;
  poller_options.fabric.discovery_interval = cfg.discovery_interval;
  poller_options.fabric.sweep_rotation = cfg.sweep_rotation;
  poller_options.fabric.subscribe_traps = cfg.sm_traps;
  poller_options.collector.clear_threshold_percent = cfg.clear_threshold;
  poller_options.port_groups = cfg.port_groups;
  poller_options.port_groups_auto = cfg.port_groups_auto;
  poller_options.version = IBFABRIC_VERSION;
  poller_options.fabric.names = std::move(names);
  poller_options.collector.plan = std::move(plan);
  poller_options.collector.host_pattern = std::move(host_pattern);
  poller_options.collector.partition_plan = std::move(partition_plan);
  poller_options.collector.alerts = alerts;
  poller_options.fabric.scope = cfg.scope;
  poller_options.collector.subnet_managers.stall_after = cfg.sm_stall_after;
  poller_options.collectors.emplace();
  // The names were checked by the flags; the registry's run order is
  // checked here (a collector must run after those whose parts it reads).
  if (!collectors::EnabledCollectors(cfg.collectors, &*poller_options.collectors, &error)) {
    std::cerr << "ibfabric_exporter: " << error << "\n";
    return 1;
  }
  poller_options.on_transport_down = [&]() {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_probe < std::chrono::seconds(2)) return;
    last_probe = now;
    std::string detail;
    if (ProbeLocalPort(port_args, 10'000, &detail)) {
      log.Warn("local port answers from a fresh process; re-executing", "probe=\"" + detail + "\"");
      pthread_kill(main_thread, SIGUSR1);
    } else {
      log.Warn("local port still does not answer", "probe=\"" + detail + "\"");
    }
  };

  SnapshotHolder holder;
  HttpStats http_stats;
  poller_options.http = &http_stats;
  Poller poller(engine, poller_options, holder, log, std::move(restored));

  if (cfg.once) {
    const bool ok = poller.Cycle();
    std::cout << Gunzip(holder.Get()->exposition_gz);
    return ok ? 0 : 1;
  }

  HttpOptions http_options;
  http_options.host = cfg.listen_host;
  http_options.port = cfg.listen_port;
  http_options.telemetry_path = cfg.telemetry_path;
  http_options.web = web;
  HttpServer http(holder, std::move(http_options), &http_stats, &log);
  if (!http.Start(&error)) {
    std::cerr << "ibfabric_exporter: " << error << "\n";
    return error.rfind("invalid --web.config.file", 0) == 0 ? 2 : 1;
  }
  log.Info("listening", "address=" + cfg.listen_host + ":" + std::to_string(http.bound_port()) +
                            " telemetry_path=" + cfg.telemetry_path + " tls=" + (web.tls ? "true" : "false") +
                            " basic_auth=" + (web.basic_auth_users.empty() ? "false" : "true"));

  std::jthread sweeper([&poller](std::stop_token st) { poller.Run(st); });
  int sig = 0;
  sigwait(&signals, &sig);
  http.Stop();
  sweeper.request_stop();
  sweeper.join();
  if (sig == SIGUSR1) {
    const std::string failure = ReexecWithState(argv, poller.SaveState());
    log.Error("re-exec failed", "error=\"" + failure + "\"");
    return 1;
  }
  log.Info("stopping", "signal=" + std::to_string(sig));
  return 0;
}

}  // namespace
}  // namespace ibfabric::exporter

int main(int argc, char** argv) { return ibfabric::exporter::Main(argc, argv); }
