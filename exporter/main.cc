// Composition root: parses flags, opens the MAD port, wires the poller, the
// snapshot holder and the HTTP server, and waits for a signal.

#include <malloc.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collectors/common/log.h"
#include "collectors/registry.h"
#include "exporter/doctor.h"
#include "exporter/fabric_set.h"
#include "exporter/flags.h"
#include "exporter/gzip.h"
#include "exporter/heap_trim.h"
#include "exporter/http_client.h"
#include "exporter/http_server.h"
#include "exporter/offline.h"
#include "exporter/poller.h"
#include "exporter/recovery.h"
#include "exporter/snapshot_holder.h"
#include "exporter/web_config.h"
#include "host/pod_resources.h"
#include "topology/discovery.h"
#include "topology/node_name_map.h"
#include "transport/attributes.h"
#include "transport/mad_engine.h"
#include "transport/umad_port.h"

#ifndef IBFABRIC_VERSION
#define IBFABRIC_VERSION "dev"
#endif

namespace ibfabric::exporter {
namespace {

// What the configuration files say, each read and checked before anything starts.
// (The collectors' files are read by their flags: collectors::AllFlags.)
struct Files {
  topology::NodeNameMap names;
  WebConfig web;
  std::uint64_t m_key = 0;   // --ib.m-key or its file; 0: none
  std::uint64_t sa_key = 0;  // --ib.sa-key or its file; 0: none
};

// False with "invalid --FLAG: FILE:LINE: reason" for the first bad file;
// `m_key_source` and `sa_key_source` name where the keys' files came from
// (their flags, or the credentials directory).
bool LoadFiles(const Config& cfg, const std::string& m_key_source, const std::string& sa_key_source, Files* files,
               std::string* error) {
  std::string bad_flag;
  std::string why;
  const auto load = [&](const std::string& path, const char* flag, auto&& loader, auto* out) {
    if (path.empty() || !bad_flag.empty()) return;
    if (!loader(path, out, &why)) bad_flag = flag;
  };
  files->m_key = cfg.m_key.value_or(0);
  load(cfg.m_key_file, m_key_source.c_str(), LoadKey, &files->m_key);
  files->sa_key = cfg.sa_key.value_or(0);
  load(cfg.sa_key_file, sa_key_source.c_str(), LoadKey, &files->sa_key);
  load(cfg.node_name_map, "--ib.node-name-map", topology::LoadNodeNameMap, &files->names);
  load(cfg.web_config, "--web.config.file", LoadWebConfig, &files->web);
  if (!bad_flag.empty()) {
    *error = "invalid " + bad_flag + ": " + why;
    return false;
  }
  return true;
}

// Where no flag gives a key: the file `name` (m_key, sa_key) in
// $CREDENTIALS_DIRECTORY when there is one (systemd's
// LoadCredential=m_key:FILE; the DaemonSet mounts its optional Secret
// there). None there: no key. Returns where the key's file comes from, for
// errors about it.
std::string KeyFromCredentials(const std::optional<std::uint64_t>& key, std::string* file, const std::string& name,
                               const std::string& flag) {
  const char* dir = std::getenv("CREDENTIALS_DIRECTORY");
  if (key || !file->empty() || dir == nullptr || *dir == '\0') return flag;
  const std::string path = std::string(dir) + "/" + name;
  if (access(path.c_str(), F_OK) == 0) *file = path;
  return name + " credential ($CREDENTIALS_DIRECTORY/" + name + ")";
}

transport::EngineOptions EngineOptionsFrom(const Config& cfg, const Files& files) {
  transport::EngineOptions o;
  o.m_key = files.m_key;
  o.sa_key = files.sa_key;
  o.window = cfg.mad_window;
  o.timeout = cfg.mad_timeout;
  o.timeout_max = cfg.mad_timeout_max;
  o.retries = cfg.mad_retries;
  o.kind_window = {cfg.mad_dr_window, cfg.mad_lid_window, cfg.mad_gmp_window};
  o.per_destination = cfg.mad_per_destination;
  o.dr_per_switch = cfg.mad_dr_per_switch;
  o.sa_per_destination = cfg.mad_sa_per_destination;
  o.rate_limit = cfg.mad_rate_limit;
  return o;
}

// The host's other InfiniBand ports on the fabric of `subnet_prefix` and
// `sm_lid` (transport::OtherPortsOnFabric; `read`: the ports pipelines read
// from), as the kernel lists them when called: a local-scope walk reads
// their cables by LID.
std::function<std::vector<topology::HostPort>()> HostPortsOn(std::vector<std::string> read, std::uint64_t subnet_prefix,
                                                             std::uint16_t sm_lid) {
  return [read = std::move(read), subnet_prefix, sm_lid] {
    std::string error;
    std::vector<topology::HostPort> out;
    for (const auto& p :
         transport::OtherPortsOnFabric(transport::UmadPort::List(&error), read, subnet_prefix, sm_lid)) {
      topology::HostPort h;
      h.name = p.ca + "/" + std::to_string(p.port);
      h.lid = p.lid;
      h.port = static_cast<std::uint8_t>(p.port);
      h.port_guid = p.port_guid;
      h.active = p.state == transport::kPortStateActive;
      out.push_back(std::move(h));
    }
    return out;
  };
}

// --check: whether the local port answers NodeInfo; the exit status.
int Check(transport::MadEngine& engine, const transport::LocalPortInfo& local) {
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

// The scheduler's options from the flags and the files; the collectors'
// of the first fabric read with `first_fabric` (with the plans, which
// describe one fabric).
PollerOptions PollerOptionsFrom(const Config& cfg, const Files& files, bool first_fabric) {
  PollerOptions o;
  o.fabric.sweep_interval = cfg.sweep_interval;
  o.fabric.discovery_interval = cfg.discovery_interval;
  o.fabric.sweep_rotation = cfg.sweep_rotation;
  o.fabric.subscribe_traps = cfg.sm_traps;
  o.fabric.names = files.names;
  o.fabric.scope = cfg.scope;
  o.collector = first_fabric ? cfg.collector : cfg.other_fabrics;
  // The kubelet's client (gRPC), for whichever collector asks it.
  o.collector.pod_resources = [](const std::string& socket) -> collectors::PodDevices {
    auto client = std::make_shared<host::PodResourcesClient>(socket);
    return [client](std::string* error) { return client->List(std::chrono::seconds(2), error); };
  };
  // Requests to the Kubernetes API server and the fabric-scope exporter.
  o.collector.http = HttpFetch;
  o.version = IBFABRIC_VERSION;
  return o;
}

// Serves HTTP and sweeps until a stop signal (or the poller's SIGUSR1: then
// re-executes with the counter totals); the exit status.
int Serve(const Config& cfg, const WebConfig& web, const SnapshotHolder& holder, const FabricSet* fabrics,
          HttpStats& http_stats, collectors::Logger& log, const std::vector<Poller*>& pollers, const sigset_t& signals,
          char** argv) {
  std::string error;
  HttpOptions http_options;
  http_options.host = cfg.listen_host;
  http_options.port = cfg.listen_port;
  http_options.telemetry_path = cfg.telemetry_path;
  http_options.web = web;
  if (fabrics != nullptr) http_options.fabrics = fabrics->views();
  HttpServer http(holder, std::move(http_options), &http_stats, &log);
  if (!http.Start(&error)) {
    std::cerr << "ibfabric_exporter: " << error << "\n";
    return error.rfind("invalid --web.config.file", 0) == 0 ? 2 : 1;
  }
  log.Info("listening", "address=" + cfg.listen_host + ":" + std::to_string(http.bound_port()) +
                            " telemetry_path=" + cfg.telemetry_path + " tls=" + (web.tls ? "true" : "false") +
                            " basic_auth=" + (web.basic_auth_users.empty() ? "false" : "true"));

  std::vector<std::jthread> sweepers;
  for (Poller* poller : pollers) sweepers.emplace_back([poller](std::stop_token st) { poller->Run(st); });
  int sig = 0;
  sigwait(&signals, &sig);
  http.Stop();
  for (auto& sweeper : sweepers) sweeper.request_stop();
  for (auto& sweeper : sweepers) sweeper.join();
  if (sig == SIGUSR1) {  // armed with one fabric only
    const std::string failure = ReexecWithState(argv, pollers.front()->SaveState());
    log.Error("re-exec failed", "error=\"" + failure + "\"");
    return 1;
  }
  log.Info("stopping", "signal=" + std::to_string(sig));
  return 0;
}

std::string PKeyWarning(std::uint16_t pkey);

// The local HCA ports the MADs leave from: the one --ib.ca and --ib.port
// name, else one per fabric, each plane of a multi-plane HCA a fabric of
// its own (UmadPort::Select; what is left out is logged), only the first
// for --check and --doctor. A port that does not open is an error line and
// the others go on; none: false with *error.
bool OpenPorts(const Config& cfg, collectors::Logger& log, std::vector<std::unique_ptr<transport::UmadPort>>* out,
               std::string* error) {
  transport::UmadPortOptions o;
  o.ca_name = cfg.ca_name;
  o.port = cfg.ca_port;
  o.pkey_index = cfg.pkey_index;
  // The engine's timeouts adapt up to --mad.timeout-max; the kernel must not
  // hand a send back as timed out before that.
  o.kernel_timeout_ms = static_cast<int>(cfg.mad_timeout_max.count());
  o.on_pkey_move = [&log](const std::string& line) { log.Warn(line, ""); };
  o.pkey_recheck = cfg.pkey_recheck;
  std::vector<std::string> notes;
  const std::vector<transport::ManagementPorts> fabrics = transport::UmadPort::Select(o, &notes, error);
  for (const std::string& note : notes) log.Warn(note, "");
  if (fabrics.empty()) return false;
  std::vector<std::string> failures;
  for (const transport::ManagementPorts& f : fabrics) {
    auto port = transport::UmadPort::Open(f, o, error);
    if (port) {
      out->push_back(std::move(port));
    } else {
      failures.push_back(*error);
    }
    if (!out->empty() && (cfg.check || cfg.doctor)) {
      if (fabrics.size() > 1)
        log.Warn("--check and --doctor examine the first of " + std::to_string(fabrics.size()) +
                     " fabrics; name another's port with --ib.ca and --ib.port",
                 "");
      break;
    }
  }
  if (out->empty()) {
    *error = failures.front();  // the caller says it
    return false;
  }
  for (const std::string& failure : failures) log.Error(failure, "");
  return true;
}

// One fabric's reading: the local port, its engine, the scheduler and the
// holder it publishes into.
struct Pipeline {
  std::unique_ptr<collectors::Logger> log;  // with several fabrics, one naming its subnet prefix
  std::unique_ptr<transport::UmadPort> port;
  std::unique_ptr<transport::MadEngine> engine;
  std::unique_ptr<SnapshotHolder> holder;
  std::unique_ptr<Poller> poller;
};

void LogOpened(const transport::UmadPort& port, collectors::Logger& log) {
  const auto& local = port.local();
  log.Info("opened InfiniBand port",
           "ca=" + local.ca_name + " port=" + std::to_string(local.port) +
               (local.split() ? " smi_ca=" + local.smi_ca_name + " smi_port=" + std::to_string(local.smi_port) : "") +
               (local.plane != 0 ? " plane=" + std::to_string(local.plane) : "") + " lid=" + std::to_string(local.lid) +
               " state=" + std::to_string(local.state) + " subnet_prefix=" + topology::FormatGuid(local.subnet_prefix) +
               " pkey_index=" + std::to_string(local.pkey_index) + " pkey=" + transport::FormatPKey(local.pkey));
  for (const transport::AgentProblem& p : port.problems()) log.Error(p.line, "");
  if (local.pkey != 0 && local.pkey != 0xffff)
    log.Warn(PKeyWarning(local.pkey), "pkey=" + transport::FormatPKey(local.pkey));
}

// What GMPs on `pkey` (not the full-member default P_Key) cannot reach.
std::string PKeyWarning(std::uint16_t pkey) {
  if ((pkey & 0x7fff) == 0x7fff) {
    return "GMPs leave on the limited default P_Key: the PMAs of other limited members (hosts, where the SM makes "
           "them limited) will not answer, each such read raises a Bad P_Key trap at the SM, and traps from them "
           "do not reach this exporter; switches and full members are read. Make this port a full member "
           "(opensm partitions.conf: Default=0x7fff : ALL=limited, <this port's GUID>=full;) or give "
           "--ib.pkey-index of a full entry";
  }
  return std::string(
             "GMPs leave on a P_Key of another partition than the default: nodes outside it will not "
             "answer") +
         ((pkey & 0x8000) ? "" : ", nor its other limited members") + "; give --ib.pkey-index of the entry 0xffff";
}

// The counter totals a re-exec handed over (none on a normal start).
collectors::PersistedState Restored(collectors::Logger& log) {
  std::string error;
  if (auto state = TakeRestoredState(&error)) {
    log.Info("restored counter totals after re-exec", "ports=" + std::to_string(state->ports.size()));
    return std::move(*state);
  }
  if (!error.empty()) log.Warn("could not restore counter totals", "error=\"" + error + "\"");
  return {};
}

// When the local port stops answering: probe it from a fresh process (at
// most every 2 s) and, once it answers there, have the main thread
// re-exec this program (SIGUSR1). Called from the polling thread.
std::function<void()> ReexecOncePortAnswers(const Config& cfg, collectors::Logger& log, pthread_t main_thread) {
  std::vector<std::string> port_args;
  if (!cfg.ca_name.empty()) port_args.push_back("--ib.ca=" + cfg.ca_name);
  if (cfg.ca_port != 0) port_args.push_back("--ib.port=" + std::to_string(cfg.ca_port));
  // The probe's SMP needs the key too: its file's name, or the flag as given.
  if (!cfg.m_key_file.empty()) port_args.push_back("--ib.m-key-file=" + cfg.m_key_file);
  if (cfg.m_key) port_args.push_back("--ib.m-key=" + std::to_string(*cfg.m_key));
  return [port_args, &log, main_thread, last_probe = std::chrono::steady_clock::time_point{}]() mutable {
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
}

// Blocks the stop signals (and SIGUSR1, the poller's "re-exec me") before
// any thread starts, so only sigwait in the main thread sees them.
sigset_t BlockStopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a vanished peer is an error value, not a death
  return signals;
}

// Large buffers (an exposition is ~10 MB at 4k ports) straight from and back
// to the kernel, and few arenas: otherwise glibc's dynamic mmap threshold
// keeps each worker thread's freed buffers and RSS ratchets up per scrape.
void TuneMalloc() {
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  mallopt(M_ARENA_MAX, 2);
}

// --help, --version or a bad flag: what to print, and the exit status.
int AnswerFlags(const ParsedFlags& flags, const std::string& program) {
  switch (flags.action) {
    case ParsedFlags::Action::kHelp: std::cout << HelpText(program); return 0;
    case ParsedFlags::Action::kVersion:
      std::cout << "ibfabric_exporter, version " << IBFABRIC_VERSION << "\n";
      return 0;
    case ParsedFlags::Action::kError: std::cerr << "ibfabric_exporter: " << flags.error << "\n"; return 2;
    case ParsedFlags::Action::kRun: break;
  }
  return 0;
}

// One line naming the problem on stderr; `status` back.
int Fail(const std::string& error, int status) {
  std::cerr << "ibfabric_exporter: " << error << "\n";
  return status;
}

// Settings that work but do less than they seem to (collectors::Doubts).
void WarnAboutSettings(const Config& cfg, collectors::Logger& log) {
  for (const collectors::Doubt& doubt : collectors::Doubts(cfg.collector)) log.Warn(doubt.message, doubt.fields);
}

// A port and its MAD engine for each fabric read. An M_Key is one fabric's
// secret: with several it goes to the first only (and the other planes of
// its HCA, under the same subnet prefix), never to the SMAs of another;
// likewise the SA's key, silently (its records are optional).
bool OpenPipelines(const Config& cfg, const Files& files, collectors::Logger& log, std::vector<Pipeline>* pipelines,
                   std::string* error) {
  std::vector<std::unique_ptr<transport::UmadPort>> ports;
  if (!OpenPorts(cfg, log, &ports, error)) return false;
  for (const auto& port : ports) LogOpened(*port, log);
  for (auto& port : ports) {
    Pipeline p;
    transport::EngineOptions engine_options = EngineOptionsFrom(cfg, files);
    const transport::LocalPortInfo& l = port->local();
    const bool first_fabric =
        pipelines->empty() || (l.plane != 0 && l.ca_name == pipelines->front().port->local().ca_name &&
                               l.subnet_prefix == pipelines->front().port->local().subnet_prefix);
    if (!first_fabric) engine_options.sa_key = 0;
    if (!first_fabric && engine_options.m_key != 0) {
      engine_options.m_key = 0;
      log.Warn(
          "the M_Key given is used on the first fabric only; read another M_Key-protected fabric with an "
          "exporter of its own (--ib.ca)",
          "ca=" + port->local().ca_name);
    }
    p.engine = std::make_unique<transport::MadEngine>(*port, engine_options);
    p.port = std::move(port);
    pipelines->push_back(std::move(p));
  }
  return true;
}

// --doctor: the preflight on the first port; its lines and exit status.
int Doctor(const Config& cfg, const Files& files, const Pipeline& first) {
  DoctorOptions o;
  o.sweep_interval = cfg.sweep_interval;
  o.sweep_rotation = cfg.sweep_rotation;
  o.m_key_given = files.m_key != 0;
  o.subscribe_traps = cfg.sm_traps;
  o.scope = cfg.scope;
  o.agent_problems = first.port->problems();
  const DoctorReport report = Judge(Examine(*first.engine, first.port->local(), o));
  for (const std::string& line : report.lines) std::cout << line << "\n";
  return report.exit_code;
}

// The fabrics read and how they are named. Several: each series carries
// its fabric's subnet prefix, the expositions are merged
// (exporter/fabric_set.h), and what is kept for one fabric only (a
// re-exec's totals, the plans) goes to the first.
struct Fabrics {
  std::vector<FabricView> views;   // one a pipeline
  std::unique_ptr<FabricSet> set;  // with several only
  bool several() const { return views.size() > 1; }
};
std::unique_ptr<Fabrics> NameFabrics(std::vector<Pipeline>& pipelines, const Config& cfg, collectors::Logger& log) {
  auto f = std::make_unique<Fabrics>();
  const bool several = pipelines.size() > 1;
  for (Pipeline& p : pipelines) {
    Fabrics* fabrics = f.get();
    p.holder = std::make_unique<SnapshotHolder>(several ? std::function<void()>([fabrics] { fabrics->set->Combine(); })
                                                        : std::function<void()>());
    const auto& local = p.port->local();
    f->views.push_back(
        {topology::FormatGuid(local.subnet_prefix), local.ca_name, local.port, p.holder.get(), local.plane});
  }
  if (!several) return f;
  f->set = std::make_unique<FabricSet>(f->views);
  std::string names;
  for (const FabricView& v : f->views)
    names += (names.empty() ? "" : " ") + v.name() + "=" + v.ca + "/" + std::to_string(v.port);
  log.Info("reading several fabrics, each labelled by subnet_prefix (and plane)", "fabrics=\"" + names + "\"");
  std::string plans;
  for (const std::string& flag : cfg.one_fabric_flags) plans += (plans.empty() ? "" : ",") + flag;
  if (!plans.empty())
    log.Info("what these flags describe is checked against the first fabric",
             "flags=" + plans + " subnet_prefix=" + f->views.front().subnet_prefix);
  return f;
}

// What every pipeline's poller shares.
struct Shared {
  HttpStats* http_stats;
  HeapTrimmer* trimmer;
  std::vector<std::string> read_ports;  // local scope: the ports the pipelines read from
};

// The options of pipeline `i`'s poller: the flags', its local port's, its
// fabric's labels, its collectors (the host's own devices and jobs read
// once, by the first pipeline), its trap subscription and its recovery.
bool PipelinePollerOptions(const Config& cfg, const Files& files, collectors::Logger& log, const Fabrics& fabrics,
                           Pipeline& p, std::size_t i, Shared& shared, PollerOptions* out, std::string* error) {
  const auto& local = p.port->local();
  const FabricView& view = fabrics.views[i];
  PollerOptions o = PollerOptionsFrom(cfg, files, i == 0);
  o.fabric.local_lid = local.lid;
  o.fabric.sm_lid = local.sm_lid;
  o.fabric.local = {local.ca_name,       local.port, local.smi_ca_name, local.smi_port,
                    local.subnet_prefix, {},         local.plane,       {}};
  for (const transport::AgentProblem& problem : p.port->problems())
    o.fabric.local.agents_missing.push_back(transport::AgentName(problem.mgmt_class));
  // Local scope reads the cables of the host's other ports on this fabric
  // too (an 8-rail host's other seven), by LID, as they are at each walk.
  if (cfg.scope.kind == topology::ScopeKind::kLocal)
    o.fabric.host_ports = HostPortsOn(shared.read_ports, local.subnet_prefix, local.sm_lid);
  // A plane's series name it even when it is the only one read, so that
  // they keep their identity when the others come.
  if (fabrics.several()) o.fabric_labels = {{"subnet_prefix", view.subnet_prefix}};
  if (view.plane != 0) o.fabric_labels.emplace_back("plane", std::to_string(view.plane));
  o.collectors.emplace();
  // The names were checked by the flags; the registry's run order is
  // checked here (a collector must run after those whose parts it reads).
  if (!collectors::EnabledCollectors(cfg.collectors, &*o.collectors, error)) return false;
  if (i != 0)
    std::erase_if(*o.collectors, [](const std::string& c) { return collectors::FindCollector(c)->this_host; });
  // Without a directed-route agent no walk answers however often the port
  // is re-opened: nothing to recover (its line above says why). With
  // several fabrics a re-exec would lose the others' totals: none.
  if (!fabrics.several() && p.port->Has(transport::MgmtClass::kSubnDirectRoute))
    o.on_transport_down = ReexecOncePortAnswers(cfg, log, pthread_self());
  o.http = i == 0 ? shared.http_stats : nullptr;  // the endpoint's errors once
  o.heap_trimmer = shared.trimmer;
  // The kernel gives the SA's Reports to one agent per port: where another
  // has them (another plane's pair on the same parent, or another
  // process), a subscription would bring this pipeline nothing.
  if (o.fabric.subscribe_traps && !p.port->takes_reports()) {
    o.fabric.subscribe_traps = false;
    (p.log ? *p.log : log)
        .Warn("another agent on " + local.ca_name + " port " + std::to_string(local.port) +
                  " receives the SA's Reports (another plane of this HCA, or another process): no trap "
                  "subscription here, changes are found by the sweeps",
              "");
  }
  *out = std::move(o);
  return true;
}

// A poller for each pipeline; the first gets a re-exec's totals (taken, so
// its file goes, whatever follows), unless several fabrics are read.
bool MakePollers(const Config& cfg, const Files& files, collectors::Logger& log, const Fabrics& fabrics,
                 std::vector<Pipeline>& pipelines, Shared& shared, std::vector<Poller*>* pollers, std::string* error) {
  collectors::PersistedState restored = Restored(log);
  if (fabrics.several() && !restored.ports.empty()) {
    log.Warn("counter totals handed over by a re-exec dropped: this start reads several fabrics", "");
    restored = {};
  }
  if (cfg.scope.kind == topology::ScopeKind::kLocal) {
    for (const Pipeline& q : pipelines) {
      shared.read_ports.push_back(q.port->local().ca_name + "/" + std::to_string(q.port->local().port));
      shared.read_ports.push_back(q.port->local().smi_ca_name + "/" + std::to_string(q.port->local().smi_port));
    }
  }
  for (std::size_t i = 0; i < pipelines.size(); ++i) {
    Pipeline& p = pipelines[i];
    const FabricView& view = fabrics.views[i];
    if (fabrics.several()) {
      p.log = std::make_unique<collectors::Logger>(
          collectors::Logger::LevelFrom(cfg.log_level),
          "subnet_prefix=" + view.subnet_prefix + (view.plane != 0 ? " plane=" + std::to_string(view.plane) : ""));
    }
    PollerOptions options;
    if (!PipelinePollerOptions(cfg, files, log, fabrics, p, i, shared, &options, error)) return false;
    p.poller = std::make_unique<Poller>(*p.engine, std::move(options), *p.holder, p.log ? *p.log : log,
                                        i == 0 ? std::move(restored) : collectors::PersistedState{});
    pollers->push_back(p.poller.get());
  }
  return true;
}

// --once: one discovery and sweep of each fabric, the exposition to stdout.
int Once(const std::vector<Poller*>& pollers, const SnapshotHolder& served) {
  bool ok = true;
  for (Poller* poller : pollers) ok = poller->Cycle() && ok;
  std::cout << Gunzip(served.Get()->exposition_gz);
  return ok ? 0 : 1;
}

int Main(int argc, char** argv) {
  TuneMalloc();
  const ParsedFlags flags = ParseFlags(std::vector<std::string>(argv + 1, argv + argc));
  if (flags.action != ParsedFlags::Action::kRun) return AnswerFlags(flags, argc > 0 ? argv[0] : "ibfabric_exporter");
  Config cfg = flags.config;
  const std::string m_key_source = KeyFromCredentials(cfg.m_key, &cfg.m_key_file, "m_key", "--ib.m-key-file");
  const std::string sa_key_source = KeyFromCredentials(cfg.sa_key, &cfg.sa_key_file, "sa_key", "--ib.sa-key-file");
  collectors::Logger log(collectors::Logger::LevelFrom(cfg.log_level));
  // Every configuration file is read before anything starts: a bad one is
  // one line naming the flag, the file and the line, and exit status 2.
  Files files;
  std::string error;
  if (!LoadFiles(cfg, m_key_source, sa_key_source, &files, &error)) return Fail(error, 2);
  if (!cfg.analyze.empty()) {
    const collectors::CollectorOptions& c = cfg.collector;
    return AnalyzeOffline({cfg.analyze, cfg.analyze_json, &files.names, c.host_pattern ? &*c.host_pattern : nullptr,
                           c.plan ? &*c.plan : nullptr},
                          std::cout, std::cerr);
  }
  WarnAboutSettings(cfg, log);
  const sigset_t signals = BlockStopSignals();
  std::vector<Pipeline> pipelines;
  if (!OpenPipelines(cfg, files, log, &pipelines, &error)) return Fail(error, 1);
  if (cfg.check) return Check(*pipelines.front().engine, pipelines.front().port->local());
  if (cfg.doctor) return Doctor(cfg, files, pipelines.front());
  const std::unique_ptr<Fabrics> fabrics = NameFabrics(pipelines, cfg, log);
  HttpStats http_stats;
  // At most once a sweep interval, when malloc holds 16 MiB free or more:
  // a burst of trap re-reads is one trim, and so are several pipelines.
  HeapTrimmer trimmer(cfg.sweep_interval, 16u << 20);
  Shared shared{&http_stats, &trimmer, {}};
  std::vector<Poller*> pollers;
  if (!MakePollers(cfg, files, log, *fabrics, pipelines, shared, &pollers, &error)) return Fail(error, 1);
  const SnapshotHolder& served = fabrics->several() ? fabrics->set->combined() : *pipelines.front().holder;
  if (cfg.once) return Once(pollers, served);
  return Serve(cfg, files.web, served, fabrics->set.get(), http_stats, log, pollers, signals, argv);
}

}  // namespace
}  // namespace ibfabric::exporter

int main(int argc, char** argv) { return ibfabric::exporter::Main(argc, argv); }
