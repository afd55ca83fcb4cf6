#pragma once
// Command-line flags in the style of Prometheus exporters
// (--web.listen-address, --help, --version, ...). Both `--flag=value` and
// `--flag value` are accepted; boolean flags take no value.

#include <chrono>
#include <string>
#include <vector>

#include "topology/scope.h"
#include "transport/mad_engine.h"

namespace ibfabric::exporter {

// The engine's defaults, which the MAD flags default to.
inline const transport::EngineOptions kEngineDefaults{};

struct Config {
  std::string listen_host = "0.0.0.0";
  int listen_port = 9315;
  std::string telemetry_path = "/metrics";
  std::string web_config;  // exporter-toolkit web config (TLS, basic auth); empty: none
  std::string ca_name;  // empty: first CA with an active port
  int ca_port = 0;      // 0: first active port
  std::string node_name_map;  // infiniband-diags node-name map file; empty: none
  std::string topology_plan;  // cabling plan (ibnetdiscover output, JSON or YAML); empty: none
  std::string alerts_config;  // alert thresholds file; empty: built-in defaults
  std::string partition_plan;  // expected partition membership (YAML); empty: none
  topology::Scope scope;      // which ports this exporter reads (--scope, --shard)
  std::chrono::milliseconds sweep_interval{10'000};
  std::chrono::milliseconds discovery_interval{3'600'000};  // full walks; changes in between incrementally
  std::chrono::milliseconds sweep_rotation{300'000};  // every port's PortInfo, every LID's owner at least this often
  bool sm_traps = true;  // subscribe to the SM's traps (InformInfo)
  std::chrono::milliseconds sm_stall_after{60'000};  // master SM ActCount standing still this long: not sweeping
  // MAD limits, defaulting to the engine's own (transport/mad_engine.h
  // EngineOptions; README "Fabric-safe MAD limits").
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
  double mad_rate_limit = kEngineDefaults.rate_limit;  // MADs per second; 0: none
  std::string log_level = "info";  // debug, info, warn, error
  int clear_threshold = 0;         // percent of a counter's maximum; 0: never clear
  bool once = false;               // one discovery and sweep, metrics to stdout, exit
  bool check = false;              // does the local port answer? exit 0 or 1
};

struct ParsedFlags {
  enum class Action { kRun, kHelp, kVersion, kError } action = Action::kRun;
  Config config;
  std::string error;  // one line naming the flag and the problem, for kError
};

// Pure: parses argv[1..]. Never exits.
ParsedFlags ParseFlags(const std::vector<std::string>& args);
std::string HelpText(const std::string& program);

// Parses "10s", "500ms", "2m", "1h" into milliseconds; false when malformed.
bool ParseDuration(const std::string& text, std::chrono::milliseconds* out);

}  // namespace ibfabric::exporter
