#include "exporter/flags.h"

#include <charconv>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>

#include "collectors/registry.h"
#include "config/values.h"

namespace ibfabric::exporter {
namespace {

// host:port, [v6]:port or :port
bool ParseListen(const std::string& s, std::string* host, int* port) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos) return false;
  std::string h = s.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  long long p = 0;
  if (!config::ParseInt(s.substr(colon + 1), 0, 65535, &p)) return false;
  *host = h.empty() ? "0.0.0.0" : h;
  *port = static_cast<int>(p);
  return true;
}

struct Flag {
  std::string_view help;         // empty: not listed by --help on its own line
  std::string_view placeholder;  // empty: a boolean flag
  // Applies the value; returns an empty string or what is wrong with it.
  std::function<std::string(Config&, const std::string&)> apply;
};

// A flag whose value is a file (or device) name, stored in `field`.
std::function<std::string(Config&, const std::string&)> Path(std::string Config::*field) {
  return [field](Config& c, const std::string& v) -> std::string {
    if (v.empty()) return "must not be empty";
    c.*field = v;
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

// --collector.<name> and --no-collector.<name> for every collector
// (node_exporter's convention), from the registry.
void AddCollectorFlags(std::map<std::string, Flag>* flags) {
  for (const auto& c : collectors::Registry()) {
    const std::string name(c.name);
    for (const bool on : {true, false}) {
      // No help line of their own: --help lists the collectors.
      (*flags)[(on ? "collector." : "no-collector.") + name] = {
          "", "", [name, on](Config& cfg, const std::string&) -> std::string {
            cfg.collectors[name] = on;
            return "";
          }};
    }
  }
}

// Every collector's own flags and those they share (collectors::AllFlags),
// each applied to the options of the first fabric and, unless it describes
// one fabric, to the others'. A name the exporter's table has already is
// not taken (FlagsTest checks that none is).
void AddCollectorsFlags(std::map<std::string, Flag>* flags) {
  for (const collectors::CollectorFlag* f : collectors::AllFlags()) {
    flags->emplace(std::string(f->name),
                   Flag{f->help, f->placeholder, [f](Config& c, const std::string& v) -> std::string {
                          if (std::string e = f->apply(c.collector, v); !e.empty()) return e;
                          if (!f->one_fabric) return f->apply(c.other_fabrics, v);
                          c.one_fabric_flags.push_back("--" + std::string(f->name));
                          return "";
                        }});
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
          [](Config& c, const std::string& v) { return config::IntValue(v, 1, 254, &c.ca_port); }}},
        {"ib.pkey-index",
         {"P_Key index the GMPs (PMA reads, SA requests) leave on (infiniband-diags' --pkey-idx; default: "
          "the index of the full-member default P_Key 0xffff in the port's P_Key table).",
          "N", [](Config& c, const std::string& v) { return config::IntValue(v, 0, 65535, &c.pkey_index); }}},
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
          [](Config& c, const std::string& v) {
            return config::DurationValue(v, milliseconds(100), &c.sweep_interval);
          }}},
        {"discovery.interval",
         {"Time between full walks of the fabric; in between, what changed (traps, sweeps) is re-walked "
          "incrementally.",
          "DURATION",
          [](Config& c, const std::string& v) {
            return config::DurationValue(v, milliseconds(100), &c.discovery_interval);
          }}},
        {"sweep.rotation",
         {"Every switch port's PortInfo and every LID's owner (NodeInfo) are read again at least once in "
          "this time; ports with news (a moved LinkDownedCounter, a trap, a degraded or recently changed "
          "link) are read every sweep.",
          "DURATION",
          [](Config& c, const std::string& v) {
            return config::DurationValue(v, milliseconds(100), &c.sweep_rotation);
          }}},
        {"sm.no-traps",
         {"Do not subscribe to the subnet manager's traps (link state changes, ports in and out of "
          "service); changes are then found by the sweeps alone.",
          "",
          [](Config& c, const std::string&) -> std::string {
            c.sm_traps = false;
            return "";
          }}},
        {"ib.pkey-recheck",
         {"How often the P_Key entry GMPs leave on is read again (one sysfs file), to follow the full-member "
          "entry when the SM moves it (not with --ib.pkey-index).",
          "DURATION",
          [](Config& c, const std::string& v) {
            return config::DurationValue(v, milliseconds(100), &c.pkey_recheck);
          }}},
        {"mad.timeout",
         {"Shortest time to wait for a MAD response before retrying; longer when the measured round trip or "
          "the agent's declared response time says so.",
          "DURATION",
          [](Config& c, const std::string& v) { return config::DurationValue(v, milliseconds(1), &c.mad_timeout); }}},
        {"mad.timeout-max",
         {"Longest time to wait for a MAD response: the ceiling of the backoff after timeouts.", "DURATION",
          [](Config& c, const std::string& v) {
            return config::DurationValue(v, milliseconds(1), &c.mad_timeout_max);
          }}},
        {"mad.window.dr-smp",
         {"Directed-route SMPs in flight at once (each is forwarded by every switch on its route; opensm keeps 4).",
          "N", [](Config& c, const std::string& v) { return config::IntValue(v, 1, 64, &c.mad_dr_window); }}},
        {"mad.window.lid-smp",
         {"LID-routed SMPs in flight at once.", "N",
          [](Config& c, const std::string& v) { return config::IntValue(v, 1, 4096, &c.mad_lid_window); }}},
        {"mad.window.gmp",
         {"Performance-management queries in flight at once.", "N",
          [](Config& c, const std::string& v) { return config::IntValue(v, 1, 4096, &c.mad_gmp_window); }}},
        {"mad.per-destination",
         {"MADs outstanding to any one node at once.", "N",
          [](Config& c, const std::string& v) { return config::IntValue(v, 1, 64, &c.mad_per_destination); }}},
        {"mad.dr-per-switch",
         {"MADs outstanding at a switch that a directed-route SMP of ours would pass through (its firmware "
          "forwards it, beside the subnet manager's).",
          "N", [](Config& c, const std::string& v) { return config::IntValue(v, 1, 64, &c.mad_dr_per_switch); }}},
        {"mad.sa-per-destination",
         {"SA queries outstanding to the SA at once (table transfers of many RMPP segments each).", "N",
          [](Config& c, const std::string& v) { return config::IntValue(v, 1, 64, &c.mad_sa_per_destination); }}},
        {"mad.rate-limit",
         {"MADs per second at most, over all kinds (default 100000, about 40 a second a switch on a 2,500-switch "
          "fabric; 0: no limit).",
          "N",
          [](Config& c, const std::string& v) -> std::string {
            int n = 0;
            if (std::string e = config::IntValue(v, 0, 10'000'000, &n); !e.empty()) return e;
            c.mad_rate_limit = n;
            return "";
          }}},
        {"mad.retries",
         {"Retries of a MAD that got no response.", "N",
          [](Config& c, const std::string& v) { return config::IntValue(v, 0, 20, &c.mad_retries); }}},
        {"mad.window",
         {"MAD requests kept in flight at once, all kinds together.", "N",
          [](Config& c, const std::string& v) { return config::IntValue(v, 1, 4096, &c.mad_window); }}},
        {"log.level",
         {"Only log messages with the given severity or above: debug, info, warn, error.", "LEVEL",
          [](Config& c, const std::string& v) -> std::string {
            if (v != "debug" && v != "info" && v != "warn" && v != "error") {
              return "'" + v + "' is not one of debug, info, warn, error";
            }
            c.log_level = v;
            return "";
          }}},
        {"check",
         {"Check that the local port answers MADs, print one line and exit (0: it does).", "",
          [](Config& c, const std::string&) -> std::string {
            c.check = true;
            return "";
          }}},
        {"doctor",
         {"Preflight: print what this exporter can see from here and what stops it (the local port, the P_Key "
          "index, SMPs and GMPs on a sample of nodes, traps, capabilities, the MAD load), one line each, and "
          "exit: 0 pass, 3 degraded, 1 fail.",
          "",
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
         {"Discover and sweep once, print the metrics to standard output and exit.", "",
          [](Config& c, const std::string&) -> std::string {
            c.once = true;
            return "";
          }}},
    };
    AddCollectorFlags(&flags);
    AddCollectorsFlags(&flags);
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
    if (f.placeholder.empty()) {
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
    if (f.help.empty()) continue;  // --collector.NAME and --no-collector.NAME: listed below
    std::string left = "      --" + name + (f.placeholder.empty() ? "" : "=" + std::string(f.placeholder));
    if (left.size() < 40)
      left.resize(40, ' ');
    else
      left += "\n" + std::string(40, ' ');
    s += left + std::string(f.help) + "\n";
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
