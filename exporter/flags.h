#pragma once
// Command-line flags in the style of Prometheus exporters
// (--web.listen-address, --help, --version, ...). Both `--flag=value` and
// `--flag value` are accepted; boolean flags take no value. The
// exporter's own flags are here; each collector's come from its
// declaration (collectors/registry.h AllFlags), and fill
// Config::collector.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectors/framework/options.h"
#include "exporter/http_server.h"
#include "exporter/poller.h"
#include "topology/scope.h"
#include "transport/mad_engine.h"

namespace ibfabric::exporter {

// The defaults of the options the flags fill in: each Options struct owns
// its own, and the flags default to them.
inline const transport::EngineOptions kEngineDefaults{};
inline const PollerOptions kPollerDefaults{};
inline const HttpOptions kHttpDefaults{};

struct Config {
  std::string listen_host = kHttpDefaults.host;
  int listen_port = kHttpDefaults.port;
  std::string telemetry_path = kHttpDefaults.telemetry_path;
  std::string web_config;  // exporter-toolkit web config (TLS, basic auth); empty: none
  std::string ca_name;     // empty: first CA with an active port
  // The M_Key for every SMP (--ib.m-key), or the file that holds it
  // (--ib.m-key-file, read at start: keeps it out of process listings).
  // Secret: never logged, exported or echoed in an error.
  std::optional<std::uint64_t> m_key;
  std::string m_key_file;
  // The SA's key (SM_Key of trusted SA requests: P_KeyTableRecords), or
  // its file; secret likewise.
  std::optional<std::uint64_t> sa_key;
  std::string sa_key_file;
  int ca_port = 0;            // 0: first active port
  int pkey_index = -1;        // -1: the full-member default P_Key's (transport/umad_port.h)
  std::string node_name_map;  // infiniband-diags node-name map file; empty: none
  topology::Scope scope;      // which ports this exporter reads (--scope, --shard)
  std::chrono::milliseconds sweep_interval = kPollerDefaults.fabric.sweep_interval;
  std::chrono::milliseconds discovery_interval = kPollerDefaults.fabric.discovery_interval;  // full walks
  std::chrono::milliseconds sweep_rotation = kPollerDefaults.fabric.sweep_rotation;
  bool sm_traps = kPollerDefaults.fabric.subscribe_traps;  // subscribe to the SM's traps (InformInfo)
  std::chrono::milliseconds pkey_recheck{10'000};          // --ib.pkey-recheck
  // MAD limits, defaulting to the engine's own (transport/mad_engine.h
  // EngineOptions; docs/mad-limits.md).
  // Floor of every attempt's timeout, and ceiling of the backoff.
  std::chrono::milliseconds mad_timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(kEngineDefaults.timeout);
  std::chrono::milliseconds mad_timeout_max =
      std::chrono::duration_cast<std::chrono::milliseconds>(kEngineDefaults.timeout_max);
  int mad_retries = kEngineDefaults.retries;
  int mad_window = kEngineDefaults.window;  // all kinds together
  int mad_dr_window = kEngineDefaults.kind_window[static_cast<int>(transport::MadKind::kDirectedSmp)];
  int mad_lid_window = kEngineDefaults.kind_window[static_cast<int>(transport::MadKind::kLidSmp)];
  int mad_gmp_window = kEngineDefaults.kind_window[static_cast<int>(transport::MadKind::kGmp)];
  int mad_per_destination = kEngineDefaults.per_destination;
  int mad_dr_per_switch = kEngineDefaults.dr_per_switch;
  int mad_sa_per_destination = kEngineDefaults.sa_per_destination;
  // MADs per second at most, over all kinds (0: none): the exporter's
  // default, not the engine's (docs/mad-limits.md says what it rests on).
  double mad_rate_limit = 100'000;
  std::string log_level = "info";  // debug, info, warn, error
  // The collectors' settings from their flags (collectors::AllFlags: each
  // collector's own and those they share), for the first fabric read, and
  // for the others: without the flags that describe one fabric (the plans).
  collectors::CollectorOptions collector;
  collectors::CollectorOptions other_fabrics;
  std::vector<std::string> one_fabric_flags;  // those given ("--topology.plan"), in order
  bool once = false;                          // one discovery and sweep, metrics to stdout, exit
  bool check = false;                         // does the local port answer? exit 0 or 1
  bool doctor = false;                        // the preflight (exporter/doctor.h): exit 0 pass, 3 degraded, 1 fail
  std::string analyze;                        // --analyze: an ibnetdiscover file to judge offline (exporter/offline.h)
  bool analyze_json = false;                  // --analyze.format=json
  // --collector.NAME / --no-collector.NAME: name -> on (collectors/registry.h).
  std::map<std::string, bool> collectors;
};

struct ParsedFlags {
  enum class Action { kRun, kHelp, kVersion, kError } action = Action::kRun;
  Config config;
  std::string error;  // one line naming the flag and the problem, for kError
};

// Pure: parses argv[1..]. Never exits.
ParsedFlags ParseFlags(const std::vector<std::string>& args);
std::string HelpText(const std::string& program);

// A key (M_Key, the SA's) as a flag or its file gives it: one 64-bit number, 0x-hex or
// decimal, surrounding white space ignored; false otherwise.
bool ParseKey(const std::string& text, std::uint64_t* key);
// The key in `path`; false with a one-line reason that never quotes the
// file's contents.
bool LoadKey(const std::string& path, std::uint64_t* key, std::string* why);

}  // namespace ibfabric::exporter
