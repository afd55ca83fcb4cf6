#include "exporter/flags.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>

#include "collectors/registry.h"
#include "topology/hosts.h"

namespace ibfabric::exporter {
namespace {

bool ParseInt(const std::string& s, long long lo, long long hi, long long* out) {
  long long v = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (s.empty() || ec != std::errc() || ptr != end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// host:port, [v6]:port or :port
bool ParseListen(const std::string& s, std::string* host, int* port) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos) return false;
  std::string h = s.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  long long p = 0;
  if (!ParseInt(s.substr(colon + 1), 0, 65535, &p)) return false;
  *host = h.empty() ? "0.0.0.0" : h;
  *port = static_cast<int>(p);
  return true;
}

struct Flag {
  const char* help;
  const char* placeholder;  // nullptr for boolean flags
  // Applies the value; returns an empty string or what is wrong with it.
  std::function<std::string(Config&, const std::string&)> apply;
};

std::string Duration(std::chrono::milliseconds* field, const std::string& v, std::chrono::milliseconds min) {
  std::chrono::milliseconds d;
  if (!ParseDuration(v, &d)) return "'" + v + "' is not a duration (e.g. 500ms, 10s, 5m)";
  if (d < min) return "must be at least " + std::to_string(min.count()) + "ms";
  *field = d;
  return "";
}

std::string Int(int* field, const std::string& v, long long lo, long long hi) {
  long long n = 0;
  if (!ParseInt(v, lo, hi, &n)) {
    return "'" + v + "' is not an integer in " + std::to_string(lo) + ".." + std::to_string(hi);
  }
  *field = static_cast<int>(n);
  return "";
}

// A flag whose value is a file (or device) name, stored in `field`.
std::function<std::string(Config&, const std::string&)> Path(std::string Config::*field) {
  return [field](Config& c, const std::string& v) -> std::string {
    if (v.empty()) return "must not be empty";
    c.*field = v;
    return "";
  };
}

// A flag saying where tables are read: "sa" (true in `field`) or
// "switches".
std::function<std::string(Config&, const std::string&)> FromSa(bool Config::*field) {
  return [field](Config& c, const std::string& v) -> std::string {
    if (v != "sa" && v != "switches") return "'" + v + "' is not one of sa, switches";
    c.*field = v == "sa";
    return "";
  };
}

// A flag whose value is a 64-bit key (M_Key, the SA's), stored in `field`;
// the reason never quotes the value.
std::function<std::string(Config&, const std::string&)> Key(std::optional<std::uint64_t> Config::*field) {
  return [field](Config& c, const std::string& v) -> std::string {
    std::uint64_t key = 0;
    if (!ParseKey(v, &key)) return "not one 64-bit number (0x-prefixed hex or decimal)";
    c.*field = key;
    return "";
  };
}

// A flag whose value is a directory that must be there, stored in `field`.
std::function<std::string(Config&, const std::string&)> Directory(std::string Config::*field) {
  return [field](Config& c, const std::string& v) -> std::string {
    if (v.empty()) return "must not be empty";
    std::error_code ec;
    if (!std::filesystem::is_directory(v, ec)) return "'" + v + "' is no directory";
    c.*field = v;
    return "";
  };
}

// --collector.<name> and --no-collector.<name> for every collector
// (node_exporter's convention), from the registry.
void AddCollectorFlags(std::map<std::string, Flag>* flags) {
  for (const auto& c : collectors::Registry()) {
    const std::string name(c.name);
    for (const bool on : {true, false}) {
      // No help line of their own: --help lists the collectors.
      (*flags)[(on ? "collector." : "no-collector.") + name] = {
          nullptr, nullptr, [name, on](Config& cfg, const std::string&) -> std::string {
            cfg.collectors[name] = on;
            return "";
          }};
    }
  }
}

// Long on purpose: one table, one entry per flag (its help, its value's
// name and its parser, side by side), read as a list rather than as code.
const std::map<std::string, Flag>& Flags() {
  using std::chrono::milliseconds;
  static const std::map<std::string, Flag> kFlags = [] {
    std::map<std::string, Flag> flags{
        {"web.listen-address",
         {"Address on which to expose metrics and web interface (host:port or :port).", "ADDRESS",
          [](Config& c, const std::string& v) -> std::string {
            return ParseListen(v, &c.listen_host, &c.listen_port)
                       ? ""
                       : "'" + v + "' is not host:port with a port in 0..65535";
          }}},
        {"web.telemetry-path",
         {"Path under which to expose metrics.", "PATH",
          [](Config& c, const std::string& v) -> std::string {
            if (v.empty() || v[0] != '/' || v == "/") return "must start with '/' and not be '/'";
            c.telemetry_path = v;
            return "";
          }}},
        {"web.config.file",
         {"Path to a web configuration file enabling TLS and/or basic auth (the format of "
          "Prometheus's exporter-toolkit; see docs/security.md).",
          "FILE", Path(&Config::web_config)}},
        {"ib.ca",
         {"InfiniBand device to use (default: one active port per fabric, each fabric labelled subnet_prefix when "
          "there are several). On a multi-plane HCA either the device (every plane, each labelled plane) or a port "
          "of its SMI sub-device (that plane): SMPs leave from the one with QP0, GMPs from the other.",
          "NAME", Path(&Config::ca_name)}},
        {"ib.port",
         {"Port of the device to use (default: its first active port).", "N",
          [](Config& c, const std::string& v) { return Int(&c.ca_port, v, 1, 254); }}},
        {"ib.pkey-index",
         {"P_Key index the GMPs (PMA reads, SA requests) leave on (infiniband-diags' --pkey-idx; default: "
          "the index of the full-member default P_Key 0xffff in the port's P_Key table).",
          "N", [](Config& c, const std::string& v) { return Int(&c.pkey_index, v, 0, 65535); }}},
        {"ib.m-key",
         {"M_Key to put in every SMP where the subnet manager protects ports with one (infiniband-diags' "
          "-y); prefer --ib.m-key-file, which keeps it out of process listings.",
          "KEY", Key(&Config::m_key)}},
        {"ib.m-key-file",
         {"File holding the M_Key (one 64-bit number, 0x-hex or decimal), e.g. mounted from a Kubernetes "
          "Secret.",
          "FILE", Path(&Config::m_key_file)}},
        {"ib.sa-key",
         {"The SA's key (opensm's sa_key), sent as the SM_Key of the SA requests for P_KeyTableRecords, which "
          "the SA gives trusted requests alone (--partitions.tables=sa); prefer --ib.sa-key-file. Without it the "
          "P_Key tables are read from the ports.",
          "KEY", Key(&Config::sa_key)}},
        {"ib.sa-key-file",
         {"File holding the SA's key (one 64-bit number, 0x-hex or decimal).", "FILE", Path(&Config::sa_key_file)}},
        {"ib.node-name-map",
         {"Node name map file (infiniband-diags format: GUID \"name\" per line) naming nodes in "
          "metrics and findings.",
          "FILE", Path(&Config::node_name_map)}},
        {"topology.plan",
         {"Cabling plan to compare the fabric with: ibnetdiscover output saved from the healthy "
          "fabric, or a JSON or YAML plan (see docs/api.md).",
          "FILE", Path(&Config::topology_plan)}},
        {"topology.host-pattern",
         {"Regular expression over a CA's node description (after the node-name map) whose two groups "
          "are its host's name and its device's, for grouping HCAs into hosts and checking rails "
          "(default: rdma-ndd's \"%h %d\", ^(\\S+)\\s+(\\S+)$).",
          "REGEX",
          [](Config& c, const std::string& v) -> std::string {
            topology::HostPattern p;
            std::string why;
            if (!topology::ParseHostPattern(v, &p, &why)) return why;
            c.host_pattern = v;
            return "";
          }}},
        {"host.sysfs",
         {"Where this host's sysfs is (its class/infiniband and PCI devices), for the host collector in local "
          "scope; a container mounts the host's /sys elsewhere (as node_exporter's --path.sysfs).",
          "PATH", Directory(&Config::host_sysfs)}},
        {"host.proc",
         {"Where this host's /proc is, for the GPUs' UUIDs (driver/nvidia/gpus) that Kubernetes pods are "
          "given, in local scope.",
          "PATH", Directory(&Config::host_proc)}},
        {"host.job-mapping-dir",
         {"Slurm's job mapping directory, in local scope: one file per device a job holds (an RDMA device "
          "such as mlx5_0, or a GPU index as dcgm-exporter's --hpc-job-mapping-dir), listing the job ids; "
          "written by a prolog, cleaned by an epilog (deploy/slurm/); it may not be there until the first "
          "job. Default: none.",
          "DIR",
          [](Config& c, const std::string& v) -> std::string {
            if (v.empty()) return "must not be empty";
            std::error_code ec;
            if (std::filesystem::exists(v, ec) && !std::filesystem::is_directory(v, ec))
              return "'" + v + "' is not a directory";
            c.job_mapping_dir = v;
            return "";
          }}},
        {"host.kubelet-socket",
         {"The kubelet's pod-resources socket, in local scope: which pods hold the host's HCAs, GPUs or "
          "their virtual functions (asked each sweep where the socket is; 'none': never).",
          "PATH",
          [](Config& c, const std::string& v) -> std::string {
            if (v.empty()) return "must not be empty ('none' to never ask)";
            c.kubelet_socket = v == "none" ? "" : v;
            return "";
          }}},
        {"partitions.plan",
         {"Expected partition membership of the CA ports (YAML, see docs/api.md); ports that differ are "
          "findings.",
          "FILE", Path(&Config::partition_plan)}},
        {"alerts.config",
         {"Alert thresholds, windows and hysteresis (YAML; see docs/alerts.md). Default: built-in "
          "thresholds.",
          "FILE", Path(&Config::alerts_config)}},
        {"scope",
         {"Which ports to read: fabric (every port; see --shard), local (this host's ports and the "
          "switch port at the other end of each of its cables: for a DaemonSet), inter-switch (both "
          "ends of switch-to-switch cables: with local on every host, each port is read once).",
          "SCOPE",
          [](Config& c, const std::string& v) -> std::string {
            return topology::ParseScopeKind(v, &c.scope.kind) ? ""
                                                              : "'" + v + "' is not one of fabric, local, inter-switch";
          }}},
        {"shard",
         {"Read only shard I of N of the switches (by GUID), as I/N with 0 <= I < N; N exporters with "
          "shards 0/N .. N-1/N read every switch once (fabric and inter-switch scopes).",
          "I/N",
          [](Config& c, const std::string& v) -> std::string {
            return topology::ParseShard(v, &c.scope.shard, &c.scope.shards)
                       ? ""
                       : "'" + v + "' is not I/N with 0 <= I < N <= 4096 (e.g. 0/4)";
          }}},
        {"sweep.interval",
         {"Time between counter sweeps.", "DURATION",
          [](Config& c, const std::string& v) { return Duration(&c.sweep_interval, v, milliseconds(100)); }}},
        {"discovery.interval",
         {"Time between full walks of the fabric; in between, what changed (traps, sweeps) is re-walked "
          "incrementally.",
          "DURATION",
          [](Config& c, const std::string& v) { return Duration(&c.discovery_interval, v, milliseconds(100)); }}},
        {"phy.interval",
         {"Time between reads of a port's physical-layer counters (PPCNT, else PortExtendedSpeedsCounters) and "
          "module (PDDR), and of a switch's environment registers (temperature, fans, power supplies), where the "
          "device has them; each read once in this time, spread over the sweeps.",
          "DURATION",
          [](Config& c, const std::string& v) { return Duration(&c.phy_interval, v, milliseconds(1000)); }}},
        {"routing.tables",
         {"Where the switches' forwarding tables are read: sa (each switch's LinearForwardingTableRecords from "
          "the SA, the subnet manager's copy of what it programmed, one query a switch; a switch the SA has no "
          "whole table of is read itself) or switches (every block from each switch: what the switch holds, "
          "even where it is not what the SM set).",
          "SOURCE", FromSa(&Config::tables_from_sa)}},
        {"partitions.tables",
         {"Where the P_Key tables of the CA ports and the switch ports facing them are read: sa (their "
          "P_KeyTableRecords from the SA, the subnet manager's copy of what it set, one query a CA port or switch; "
          "the SA answers only with --ib.sa-key; a port it has no record of is read itself) or switches (each "
          "port's own table: what it holds, even where it is not what the SM set).",
          "SOURCE", FromSa(&Config::pkeys_from_sa)}},
        {"sweep.rotation",
         {"Every switch port's PortInfo and every LID's owner (NodeInfo) are read again at least once in "
          "this time; ports with news (a moved LinkDownedCounter, a trap, a degraded or recently changed "
          "link) are read every sweep.",
          "DURATION",
          [](Config& c, const std::string& v) { return Duration(&c.sweep_rotation, v, milliseconds(100)); }}},
        {"sm.no-traps",
         {"Do not subscribe to the subnet manager's traps (link state changes, ports in and out of "
          "service); changes are then found by the sweeps alone.",
          nullptr,
          [](Config& c, const std::string&) -> std::string {
            c.sm_traps = false;
            return "";
          }}},
        {"ib.pkey-recheck",
         {"How often the P_Key entry GMPs leave on is read again (one sysfs file), to follow the full-member "
          "entry when the SM moves it (not with --ib.pkey-index).",
          "DURATION", [](Config& c, const std::string& v) { return Duration(&c.pkey_recheck, v, milliseconds(100)); }}},
        {"sm.stall-after",
         {"How long the master subnet manager's SMInfo.ActCount may stand still before it counts as not "
          "sweeping.",
          "DURATION",
          [](Config& c, const std::string& v) { return Duration(&c.sm_stall_after, v, milliseconds(100)); }}},
        {"mad.timeout",
         {"Shortest time to wait for a MAD response before retrying; longer when the measured round trip or "
          "the agent's declared response time says so.",
          "DURATION", [](Config& c, const std::string& v) { return Duration(&c.mad_timeout, v, milliseconds(1)); }}},
        {"mad.timeout-max",
         {"Longest time to wait for a MAD response: the ceiling of the backoff after timeouts.", "DURATION",
          [](Config& c, const std::string& v) { return Duration(&c.mad_timeout_max, v, milliseconds(1)); }}},
        {"mad.window.dr-smp",
         {"Directed-route SMPs in flight at once (each is forwarded by every switch on its route; opensm keeps 4).",
          "N", [](Config& c, const std::string& v) { return Int(&c.mad_dr_window, v, 1, 64); }}},
        {"mad.window.lid-smp",
         {"LID-routed SMPs in flight at once.", "N",
          [](Config& c, const std::string& v) { return Int(&c.mad_lid_window, v, 1, 4096); }}},
        {"mad.window.gmp",
         {"Performance-management queries in flight at once.", "N",
          [](Config& c, const std::string& v) { return Int(&c.mad_gmp_window, v, 1, 4096); }}},
        {"mad.per-destination",
         {"MADs outstanding to any one node at once.", "N",
          [](Config& c, const std::string& v) { return Int(&c.mad_per_destination, v, 1, 64); }}},
        {"mad.dr-per-switch",
         {"MADs outstanding at a switch that a directed-route SMP of ours would pass through (its firmware "
          "forwards it, beside the subnet manager's).",
          "N", [](Config& c, const std::string& v) { return Int(&c.mad_dr_per_switch, v, 1, 64); }}},
        {"mad.sa-per-destination",
         {"SA queries outstanding to the SA at once (table transfers of many RMPP segments each).", "N",
          [](Config& c, const std::string& v) { return Int(&c.mad_sa_per_destination, v, 1, 64); }}},
        {"mad.rate-limit",
         {"MADs per second at most, over all kinds (default 100000, about 40 a second a switch on a 2,500-switch "
          "fabric; 0: no limit).",
          "N",
          [](Config& c, const std::string& v) -> std::string {
            int n = 0;
            if (std::string e = Int(&n, v, 0, 10'000'000); !e.empty()) return e;
            c.mad_rate_limit = n;
            return "";
          }}},
        {"mad.retries",
         {"Retries of a MAD that got no response.", "N",
          [](Config& c, const std::string& v) { return Int(&c.mad_retries, v, 0, 20); }}},
        {"mad.window",
         {"MAD requests kept in flight at once, all kinds together.", "N",
          [](Config& c, const std::string& v) { return Int(&c.mad_window, v, 1, 4096); }}},
        {"log.level",
         {"Only log messages with the given severity or above: debug, info, warn, error.", "LEVEL",
          [](Config& c, const std::string& v) -> std::string {
            if (v != "debug" && v != "info" && v != "warn" && v != "error") {
              return "'" + v + "' is not one of debug, info, warn, error";
            }
            c.log_level = v;
            return "";
          }}},
        {"counters.groups",
         {"Per-port series to export, by group: a comma-separated list of errors, congestion, data, "
          "packets, details (PortRcvErrorDetails), state (port state and rate), lanes (the physical layer's "
          "series per lane); all; or auto, the "
          "default: all up to 20000 ports, above that errors, congestion and data (docs/scale.md).",
          "LIST",
          [](Config& c, const std::string& v) -> std::string {
            std::string why;
            return collectors::ParsePortGroups(v, &c.port_groups, &c.port_groups_auto, &why) ? "" : why;
          }}},
        {"counters.clear-threshold",
         {"Clear a port's counters on the fabric when one reaches this percent of its maximum "
          "(PortCounters, and the FEC counters read at --phy.interval; e.g. 75; 0, the default, "
          "never clears: other tools may rely on the counters).",
          "PERCENT", [](Config& c, const std::string& v) { return Int(&c.clear_threshold, v, 0, 100); }}},
        {"check",
         {"Check that the local port answers MADs, print one line and exit (0: it does).", nullptr,
          [](Config& c, const std::string&) -> std::string {
            c.check = true;
            return "";
          }}},
        {"doctor",
         {"Preflight: print what this exporter can see from here and what stops it (the local port, the P_Key "
          "index, SMPs and GMPs on a sample of nodes, traps, capabilities, the MAD load), one line each, and "
          "exit: 0 pass, 3 degraded, 1 fail.",
          nullptr,
          [](Config& c, const std::string&) -> std::string {
            c.doctor = true;
            return "";
          }}},
        {"analyze",
         {"Judge the wiring of a saved fabric instead of a live one: read FILE (ibnetdiscover output, as "
          "saved or published), print its tiers, hosts and findings, with --ib.node-name-map, "
          "--topology.plan and --topology.host-pattern as for a fabric, and exit: 0 nothing alerts, 1 a "
          "finding would alert, 2 the file is bad. No InfiniBand port is opened.",
          "FILE", Path(&Config::analyze)}},
        {"analyze.format",
         {"What --analyze prints: text (default) or json (the findings view of /api/v1/topology).", "FORMAT",
          [](Config& c, const std::string& v) -> std::string {
            if (v != "text" && v != "json") return "'" + v + "' is not one of text, json";
            c.analyze_json = v == "json";
            return "";
          }}},
        {"once",
         {"Discover and sweep once, print the metrics to standard output and exit.", nullptr,
          [](Config& c, const std::string&) -> std::string {
            c.once = true;
            return "";
          }}},
    };
    AddCollectorFlags(&flags);
    return flags;
  }();
  return kFlags;
}

}  // namespace

bool ParseKey(const std::string& text, std::uint64_t* key) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return false;
  const std::string t = text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
  const bool hex = t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X');
  const char* begin = t.data() + (hex ? 2 : 0);
  const char* end = t.data() + t.size();
  std::uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(begin, end, v, hex ? 16 : 10);
  if (begin == end || ec != std::errc() || ptr != end) return false;
  *key = v;
  return true;
}

bool LoadKey(const std::string& path, std::uint64_t* key, std::string* why) {
  std::ifstream in(path);
  if (!in) {
    *why = path + ": cannot be read";
    return false;
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > 256 || !ParseKey(text, key)) {
    *why = path + ": does not hold one 64-bit key (0x-prefixed hex or decimal)";
    return false;
  }
  return true;
}

bool ParseDuration(const std::string& text, std::chrono::milliseconds* out) {
  std::size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  if (i == 0 || i > 12) return false;
  long long n = std::stoll(text.substr(0, i));
  const std::string unit = text.substr(i);
  long long ms_per = 0;
  if (unit == "ms")
    ms_per = 1;
  else if (unit == "s")
    ms_per = 1000;
  else if (unit == "m")
    ms_per = 60'000;
  else if (unit == "h")
    ms_per = 3'600'000;
  else
    return false;
  *out = std::chrono::milliseconds(n * ms_per);
  return true;
}

ParsedFlags ParseFlags(const std::vector<std::string>& args) {
  ParsedFlags r;
  const auto& flags = Flags();
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      r.action = ParsedFlags::Action::kHelp;
      return r;
    }
    if (a == "--version") {
      r.action = ParsedFlags::Action::kVersion;
      return r;
    }
    if (a.rfind("--", 0) != 0) {
      r.action = ParsedFlags::Action::kError;
      r.error = "unexpected argument '" + a + "' (flags start with --; see --help)";
      return r;
    }
    std::string name = a.substr(2);
    std::string value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    auto it = flags.find(name);
    if (it == flags.end()) {
      r.action = ParsedFlags::Action::kError;
      const auto dot = name.find('.');
      const std::string prefix = name.substr(0, dot);
      if ((prefix == "collector" || prefix == "no-collector") && dot != std::string::npos) {
        std::string known;
        for (const auto& c : collectors::Registry()) known += (known.empty() ? "" : ", ") + std::string(c.name);
        r.error = "unknown collector '" + name.substr(dot + 1) + "' in --" + name + " (collectors: " + known + ")";
      } else {
        r.error = "unknown flag --" + name + " (see --help)";
      }
      return r;
    }
    const Flag& f = it->second;
    if (f.placeholder == nullptr) {
      if (has_value) {
        r.action = ParsedFlags::Action::kError;
        r.error = "flag --" + name + " takes no value";
        return r;
      }
    } else if (!has_value) {
      if (i + 1 >= args.size()) {
        r.action = ParsedFlags::Action::kError;
        r.error = "flag --" + name + " needs a value";
        return r;
      }
      value = args[++i];
    }
    if (std::string problem = f.apply(r.config, value); !problem.empty()) {
      r.action = ParsedFlags::Action::kError;
      r.error = "invalid value for --" + name + ": " + problem;
      return r;
    }
  }
  if (r.config.mad_timeout_max < r.config.mad_timeout) {
    r.action = ParsedFlags::Action::kError;
    r.error = "--mad.timeout-max (" + std::to_string(r.config.mad_timeout_max.count()) +
              "ms) must not be below --mad.timeout (" + std::to_string(r.config.mad_timeout.count()) + "ms)";
    return r;
  }
  if (r.config.m_key && !r.config.m_key_file.empty()) {
    r.action = ParsedFlags::Action::kError;
    r.error = "give --ib.m-key or --ib.m-key-file, not both";
    return r;
  }
  if (r.config.sa_key && !r.config.sa_key_file.empty()) {
    r.action = ParsedFlags::Action::kError;
    r.error = "give --ib.sa-key or --ib.sa-key-file, not both";
    return r;
  }
  if (r.config.scope.kind == topology::ScopeKind::kLocal && r.config.scope.shards > 1) {
    r.action = ParsedFlags::Action::kError;
    r.error = "--shard applies to the fabric and inter-switch scopes, not to --scope=local";
  }
  return r;
}

std::string HelpText(const std::string& program) {
  std::string s = "usage: " + program +
                  " [<flags>]\n\n"
                  "InfiniBand fabric health exporter for Prometheus.\n\nFlags:\n";
  s += "  -h, --help                Show this help and exit.\n";
  s += "      --version             Show the version and exit.\n";
  for (const auto& [name, f] : Flags()) {
    if (f.help == nullptr) continue;  // the collectors' flags: listed below
    std::string left = "      --" + name + (f.placeholder ? std::string("=") + f.placeholder : "");
    if (left.size() < 40)
      left.resize(40, ' ');
    else
      left += "\n" + std::string(40, ' ');
    s += left + f.help + "\n";
  }
  s += "\nCollectors (--collector.NAME turns one on, --no-collector.NAME off):\n";
  for (const auto& c : collectors::Registry()) {
    std::string left = "      " + std::string(c.name) + (c.default_on ? " (on)" : " (off)");
    if (left.size() < 40) left.resize(40, ' ');
    s += left + std::string(c.help) + "\n";
  }
  return s;
}

}  // namespace ibfabric::exporter
