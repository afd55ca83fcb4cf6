// The exporter at scale, as a new user would measure it (issue 19): on the
// simulated 16k-host three-tier fat tree (16 pods x 32 leaves x 32
// aggregation switches, 512 cores; 81920 ports) or the 1024-host fabric,
// one exporter at its defaults, and in the same run `ibnetdiscover` and
// `ibqueryerrors --data`. Prints discovery and sweep times, the exporter's
// RSS after the first sweep, after N sweeps with a plain and a gzip scrape
// between them (each read once the sweep is published: between sweeps),
// where it is (malloc's heap, other anonymous memory, files), and its peak
// (sweeps and scrapes at their highest); the exposition's size plain and compressed,
// the scrape times, /api/v1/topology's size and time, what the status
// page loads first and its first render in Chromium, bytes per port; with
// --scrapers, K concurrent gzip scrapers while sweeps run (p50/p99). The
// series are counted by group (--counters.groups; --groups LIST passes one
// to the exporter, which otherwise chooses by the fabric's size).
//
//   build/tests/scale_bench                       # 1024 hosts, 4096 ports
//   build/tests/scale_bench --fabric 16k          # 16384 hosts, 81920 ports
//   build/tests/scale_bench --fabric 32k          # 32,768 rail-optimized HCAs, 196,608 ports (rail faults planted)
//   build/tests/scale_bench --sweeps 10 --scrapers 16 --seconds 20
//   build/tests/scale_bench --fabric 16k --groups all
//   build/tests/scale_bench --fabric 16k --shard 0/4   # one exporter of four (--shard)
//   build/tests/scale_bench --fabric 16k --phy 60s     # the physical layer's MADs (below)
//   build/tests/scale_bench --fabric 16k --blast       # what tracing a fault's routes costs
//   build/tests/scale_bench --fabric 16k --tables switches  # --routing.tables and --partitions.tables (default: sa)
//   build/tests/scale_bench --fabric 16k --exporter-arg --mad.sa-per-destination=8   # any flag
//   build/tests/scale_bench --fabric 16k --sa none # no SA: opensm swept once and left (tables from switches)
//
// By default a resident opensm is the SM and the SA, as on a production
// fabric (its light sweeps run while the exporter walks); with --sa none
// it brings the subnet up once and exits, as where the SA refuses or
// limits queries or UFM's SA is loaded: the exporter reads every table
// from the switches. Either way ibnetdiscover and ibqueryerrors run in the
// same run, and the exporter's own discovery phases
// (infiniband_exporter_discovery_phase_seconds: walk, tables, analysis)
// are printed beside them.
//
// With --phy INTERVAL the fabric's switches are Quantum-2 and its hosts
// ConnectX-7 (the hardware personalities over ibsim: AccessRegister,
// PPCNT, PDDR, the switch environment, RS-FEC) and the run measures what
// the slow beat costs instead: one exporter with the fec, modules and
// switch_environment collectors off, then one with them on at
// --phy.interval=INTERVAL, past its first interval; each one's sweep time
// (median) and the MADs it sends a minute by kind and by attribute,
// counted where they cross libibumad (the MAD tap).
//
// Scrapes go over a plain socket (Connection: close) and are timed to the
// last byte; a gzip scrape is not inflated here (Prometheus does that on
// its side), so its time is the exporter's.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "collectors/reads/counters.h"
#include "tests/testbed/browser.h"
#include "tests/testbed/exporter_process.h"
#include "tests/testbed/fat_tree.h"
#include "tests/testbed/mad_tap.h"
#include "tests/testbed/personality.h"
#include "tests/testbed/process.h"
#include "tests/testbed/prom_text.h"
#include "tests/testbed/sim_fabric.h"
#include "transport/registers.h"

namespace ibfabric::testbed {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// Where a process's resident memory is, from /proc/PID/smaps: malloc's
// main heap, other anonymous mappings (its other arenas, blocks it mapped
// on their own, thread stacks), and files (the program, its libraries).
std::string RssByMapping(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps");
  double heap = 0, anon = 0, files = 0, largest_anon = 0;
  int anon_maps = 0;
  std::string line, name;
  bool header = false;
  while (std::getline(in, line)) {
    // A mapping's header: "start-end perms offset dev inode [name]".
    std::istringstream fields(line);
    std::string range, perms, offset, dev, inode;
    fields >> range >> perms >> offset >> dev >> inode;
    header = range.find('-') != std::string::npos && range.back() != ':';
    if (header) {
      name.clear();
      fields >> name;
      continue;
    }
    if (line.rfind("Rss:", 0) != 0) continue;
    const double mib = std::atof(line.c_str() + 4) / 1024;
    if (name == "[heap]") {
      heap += mib;
    } else if (name.empty() || name == "[stack]") {
      anon += mib;
      largest_anon = std::max(largest_anon, mib);
      anon_maps += mib > 0;
    } else {
      files += mib;
    }
  }
  char out[200];
  std::snprintf(out, sizeof out,
                "[heap] %.1f MiB, anonymous %.1f MiB (%d mappings, the largest %.1f MiB), files %.1f MiB", heap, anon,
                anon_maps, largest_anon, files);
  return out;
}

struct Fetch {
  bool ok = false;
  int status = 0;
  double seconds = 0;
  std::size_t body_bytes = 0;  // as sent (compressed when the server compressed it)
  bool gzip = false;           // the server answered Content-Encoding: gzip
};

// GET `path` from 127.0.0.1:`port`, timed from connect to the last byte.
Fetch Get(int port, const std::string& path, bool gzip) {
  Fetch f;
  const auto t0 = Clock::now();
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return f;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return f;
  }
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" +
                          (gzip ? "Accept-Encoding: gzip\r\n" : "") + "\r\n";
  if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return f;
  }
  std::string head;
  std::size_t total = 0;
  std::vector<char> buf(1 << 16);
  for (ssize_t n; (n = read(fd, buf.data(), buf.size())) > 0;) {
    total += static_cast<std::size_t>(n);
    if (head.size() < 4096) head.append(buf.data(), static_cast<std::size_t>(std::min<ssize_t>(n, 4096)));
  }
  close(fd);
  f.seconds = SecondsSince(t0);
  const auto end = head.find("\r\n\r\n");
  if (end == std::string::npos || std::sscanf(head.c_str(), "HTTP/1.%*d %d", &f.status) != 1) return f;
  f.ok = f.status == 200;
  f.body_bytes = total - (end + 4);
  std::string lower = head.substr(0, end);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  f.gzip = lower.find("content-encoding: gzip") != std::string::npos;
  return f;
}

// What the exporter's debug log says of its sweeps ("sweep done ports=N
// ... seconds=S") and full walks ("discovery done mode=full ...
// seconds=S"): watched there, not by scraping, so that the only scrapes
// are the measured ones (at 16k hosts a scrape is hundreds of MB).
struct LogView {
  std::vector<double> sweep_seconds;
  double ports = 0;
  double discovery_seconds = -1;
  // After the last publication ("published ... heap_in_use_bytes=N
  // heap_free_bytes=M"): what malloc hands out and holds free.
  double heap_in_use = -1, heap_free = -1;
  std::vector<double> trim_seconds;  // each publication's malloc_trim
  double heap_after_discovery = -1;
  std::size_t published_sweeps = 0;  // sweeps whose publication ("published", after "sweep done") is logged
  std::size_t started_sweeps = 0;    // "cycle started": a cycle is a sweep (and a walk when one is due)
  // The first full walk's graph (what ibnetdiscover reads) and tables apart.
  double graph_seconds = -1, graph_mads = -1, tables_seconds = -1,
         tables_mads = -1;  // "discovery done ... heap_in_use_bytes=N", the first full walk's
};
LogView ReadLog(const ExporterProcess& e) {
  LogView v;
  const std::string log = e.Log();
  std::size_t at = 0;
  for (std::size_t end; (end = log.find('\n', at)) != std::string::npos; at = end + 1) {
    const std::string line = log.substr(at, end - at);
    const auto value = [&line](const char* key) {
      const auto k = line.find(key);
      return k == std::string::npos ? -1.0 : std::atof(line.c_str() + k + std::strlen(key));
    };
    if (line.find("msg=\"cycle started\"") != std::string::npos) {
      ++v.started_sweeps;
    } else if (line.find("msg=\"sweep done\"") != std::string::npos) {
      v.sweep_seconds.push_back(value(" seconds="));
      v.ports = value(" ports=");
    } else if (line.find("msg=\"published\"") != std::string::npos) {
      v.published_sweeps = v.sweep_seconds.size();
      v.heap_in_use = value(" heap_in_use_bytes=");
      v.heap_free = value(" heap_free_bytes=");
      if (const double t = value(" trim_seconds="); t >= 0) v.trim_seconds.push_back(t);
    } else if (line.find("msg=\"discovery done\" mode=full") != std::string::npos && v.discovery_seconds < 0) {
      v.discovery_seconds = value(" seconds=");
      v.heap_after_discovery = value(" heap_in_use_bytes=");
      v.graph_seconds = value(" graph_seconds=");
      v.graph_mads = value(" graph_mads=");
      v.tables_seconds = value(" tables_seconds=");
      v.tables_mads = value(" tables_mads=");
    }
  }
  return v;
}
bool WaitForSweeps(ExporterProcess& e, std::size_t n, std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  // Sweep n is logged before it is published (rendered, compressed): wait
  // for that too, so that what is measured next is between sweeps.
  while (ReadLog(e).published_sweeps < n) {
    if (Clock::now() > deadline || !e.process().Running()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// Runs a tool attached to the fabric and times it; -1 when it failed.
double TimeTool(const SimFabric& sim, const std::vector<std::string>& argv, const char* must_print) {
  for (int attempt = 0; attempt < 3; ++attempt) {  // ibqueryerrors now and then dies under umad2sim
    const auto t0 = Clock::now();
    const auto r = sim.Tool(argv, std::chrono::minutes(10));
    const double t = SecondsSince(t0);
    if (r.exit_code == 0 && r.out.find(must_print) != std::string::npos) return t;
  }
  return -1;
}

// The group of a per-port family (collectors/reads/counters.h PortGroup), or
// "other" for what no group holds.
std::string GroupOfFamily(const std::string& family) {
  for (const char* role : {"switch", "hca"}) {
    const std::string prefix = std::string("infiniband_") + role + "_port_";
    if (family.rfind(prefix, 0) != 0) continue;
    const std::string rest = family.substr(prefix.size());
    for (const auto& spec : collectors::CounterSpecs()) {
      if (rest == std::string(spec.metric) + "_total") return collectors::ToString(collectors::GroupOf(spec.id));
    }
    for (const char* state :
         {"state", "link_state", "physical_state", "rate_bytes_per_second", "raw_rate_bytes_per_second"}) {
      if (rest == state) return collectors::ToString(collectors::PortGroup::kState);
    }
  }
  return "other";
}

// The physical layer's cost (--phy): an exporter with its collectors off,
// then one with them on, each measured over `window` once its reads are
// steady (the on one past its first interval, which reads every port).
int PhysicalLayerLoad(const SimFabric& sim, const HardwareFabric& hw, const std::string& interval,
                      std::chrono::seconds first, std::chrono::seconds window) {
  struct Pass {
    const char* name;
    std::vector<std::string> args;
  };
  const std::vector<Pass> passes{
      {"off", {"--no-collector.fec", "--no-collector.modules", "--no-collector.switch_environment"}},
      {"on", {"--phy.interval=" + interval}},
  };
  for (const Pass& pass : passes) {
    const std::string tap = sim.dir() + "/phy-" + pass.name + ".tap";
    Env env = hw.PreloadEnv();
    const Env t = MadTapEnv(tap);
    env["LD_PRELOAD"] = t.at("LD_PRELOAD") + " " + env["LD_PRELOAD"];
    env["MAD_TAP_FILE"] = t.at("MAD_TAP_FILE");
    std::vector<std::string> args{"--sweep.interval=5s", "--log.level=debug"};
    args.insert(args.end(), pass.args.begin(), pass.args.end());
    std::string error;
    auto e = ExporterProcess::Start(sim, args, &error, {}, env);
    if (!e || !WaitForSweeps(*e, 1, std::chrono::seconds(600))) {
      std::fprintf(stderr, "scale_bench: %s %s\n", error.c_str(), e ? e->Log().c_str() : "");
      return 1;
    }
    std::this_thread::sleep_for(std::string(pass.name) == "on" ? first : std::chrono::seconds(10));
    const std::size_t before = ReadLog(*e).sweep_seconds.size();
    const auto from = Clock::now();
    std::this_thread::sleep_for(window);
    const auto to = Clock::now();
    const LogView v = ReadLog(*e);
    // The exposition then: its series, and those of the physical layer's
    // families (FEC, PPCNT, modules, the switch environment).
    const Fetch gz = Get(e->port(), "/metrics", true);
    long series = 0, phy_series = 0;
    {
      const std::string text = e->Get("/metrics");
      for (std::size_t at = 0; at < text.size();) {
        const std::size_t end = std::min(text.find('\n', at), text.size());
        if (text[at] != '#') {
          ++series;
          const std::string name = text.substr(at, text.find_first_of("{ ", at) - at);
          for (const char* f : {"_fec_", "_phy_", "_raw_errors", "_module_", "bit_error_ratio", "infiniband_switch_fan",
                                "infiniband_switch_power", "infiniband_switch_temperature", "infiniband_switch_uptime",
                                "infiniband_switch_hardware", "access_register"}) {
            if (name.find(f) != std::string::npos) {
              ++phy_series;
              break;
            }
          }
        }
        at = end + 1;
      }
    }
    e.reset();
    const std::vector<double> sweeps(v.sweep_seconds.begin() + static_cast<std::ptrdiff_t>(before),
                                     v.sweep_seconds.end());
    const double minutes = std::chrono::duration<double>(to - from).count() / 60;
    const auto kinds = SentBetween(tap, from, to);
    std::printf(
        "phy %s: sweep %.2f s median of %zu in %.0f s; %ld series (%ld of the physical layer), %.1f MB gzip; "
        "MADs a minute:",
        pass.name, Percentile(sweeps, 0.5), sweeps.size(), minutes * 60, series, phy_series, gz.body_bytes / 1e6);
    for (std::size_t k = 0; k < kinds.size(); ++k) {
      std::printf(" %s %.0f", transport::ToString(static_cast<transport::MadKind>(k)), kinds[k] / minutes);
    }
    using transport::MgmtClass;
    const auto per_minute = [&](std::uint64_t n) { return static_cast<double>(n) / minutes; };
    std::printf(
        "\n  of them: PPCNT %.0f, PDDR %.0f, other registers (switch environment) %.0f, GeneralInfo %.0f, "
        "PortExtendedSpeedsCounters %.0f, PortInfoExtended %.0f\n",
        per_minute(SentOfRegister(tap, transport::reg::kPpcnt, 0, from, to)),
        per_minute(SentOfRegister(tap, transport::reg::kPddr, 0, from, to)),
        per_minute(SentOfAttribute(tap, MgmtClass::kVendorNvidia, transport::vs_attr::kAccessRegister, 0, from, to) -
                   SentOfRegister(tap, transport::reg::kPpcnt, 0, from, to) -
                   SentOfRegister(tap, transport::reg::kPddr, 0, from, to)),
        per_minute(SentOfAttribute(tap, MgmtClass::kVendorNvidia, transport::vs_attr::kGeneralInfo, 0, from, to)),
        per_minute(SentOfAttribute(tap, MgmtClass::kPerformance, transport::pma_attr::kPortExtendedSpeedsCounters, 0,
                                   from, to)),
        per_minute(
            SentOfAttribute(tap, MgmtClass::kSubnLidRouted, transport::smp_attr::kPortInfoExtended, 0, from, to)));
  }
  return 0;
}

// What a fault's blast radius costs (--blast): one exporter with a short
// alert window; a bad cable planted in turn between an aggregation switch
// and a core (where there are pods), between a leaf and an aggregation
// switch, and at a host, each left in place; for each, once its alert
// carries its blast radius: the routes and host ports it hurts, the
// blast_radius collector's time for it (its seconds_total over the sweeps
// until then: the trace, once, then cached), the per-port series, and
// /api/v1/alerts's size and time.
int BlastRadiusCost(SimFabric& sim, const FatTree& tree) {
  const std::string alerts = sim.dir() + "/blast-alerts.yaml";
  WriteFile(alerts,
            "window: 10s\nraise_after: 1\nclear_after: 1\nbad_cable:\n"
            "  symbol_errors_per_second: {warning: 1, critical: 20}\n");
  std::string error;
  // opensm's routes in the switches' tables, as the exporter reads them.
  const auto t0 = Clock::now();
  auto sm = sim.StartSubnetManager(&error);
  if (!sm) {
    std::fprintf(stderr, "scale_bench: %s\n", error.c_str());
    return 1;
  }
  std::printf("opensm resident and routing in %.1f s\n", SecondsSince(t0));
  auto e = ExporterProcess::Start(sim, {"--sweep.interval=5s", "--alerts.config=" + alerts}, &error);
  if (!e || !e->WaitForSweeps(2, std::chrono::seconds(600))) {
    std::fprintf(stderr, "scale_bench: %s %s\n", error.c_str(), e ? e->Log().c_str() : "");
    return 1;
  }
  const auto collector_seconds = [&] {
    return Scrape::Parse(e->Get("/metrics"))
        .Value("infiniband_exporter_collector_seconds_total", {{"collector", "blast_radius"}})
        .value_or(0);
  };
  struct Fault {
    const char* what;
    Endpoint at;
  };
  std::vector<Fault> faults;
  if (tree.pods() > 0) faults.push_back({"aggregation-core cable", tree.SpineUplink(1, 1)});
  faults.push_back({"leaf-aggregation cable", tree.LeafUplink(1, 1)});
  faults.push_back({"host cable", tree.LeafHostPort(1)});
  for (const Fault& f : faults) {
    const double before = collector_seconds();
    std::atomic<bool> stop{false};
    std::thread ramp([&] {
      for (unsigned long long v = 1000; !stop; v += 1000) {
        bool ok = false;
        const std::string said = sim.Console("PerformanceSet \"" + f.at.node + "\"[" + std::to_string(f.at.port) +
                                                 "] PortCounters.SymbolErrorCounter=" + std::to_string(v % 60000),
                                             &ok);
        if (!ok && v == 1000) std::fprintf(stderr, "scale_bench: ibsim said: %s\n", said.c_str());
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    });
    nlohmann::json radius;
    const auto start = Clock::now();
    while (radius.is_null() && SecondsSince(start) < 300) {
      const auto a = nlohmann::json::parse(e->Get("/api/v1/alerts?state=active"), nullptr, false);
      for (const auto& x : a.is_discarded() ? nlohmann::json::array() : a["active"]) {
        if (x["cause"] != "bad_cable" || x["blast_radius"].is_null()) continue;
        for (const auto& end : x["ends"]) {
          if (end["node"] == f.at.node && end["port"] == f.at.port) radius = x["blast_radius"];
        }
      }
      if (radius.is_null()) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    stop = true;
    ramp.join();
    if (radius.is_null()) {
      std::fprintf(stderr, "scale_bench: no blast radius for the %s at %s[%d]\n", f.what, f.at.node.c_str(), f.at.port);
      return 1;
    }
    const double traced = collector_seconds() - before;
    const Fetch api = Get(e->port(), "/api/v1/alerts", false);
    const std::string text = e->Get("/metrics");
    long per_port = 0;
    for (std::size_t at = text.find("\ninfiniband_blast_radius_port_faults{"); at != std::string::npos;
         at = text.find("\ninfiniband_blast_radius_port_faults{", at + 1))
      ++per_port;
    std::printf(
        "blast radius of the %s at %s[%d]: %lld routes between %lld host ports; traced in %.3f s (the collector's "
        "seconds over its sweeps); %ld per-port fault series in all; /api/v1/alerts %.1f KiB in %.3f s\n",
        f.what, f.at.node.c_str(), f.at.port, radius["routes"].get<long long>(), radius["ports"].get<long long>(),
        traced, per_port, static_cast<double>(api.body_bytes) / 1024, api.seconds);
  }
  return 0;
}

// User and system CPU seconds of process `pid` so far (/proc/PID/stat).
double CpuSeconds(pid_t pid) {
  std::istringstream in(ReadFile("/proc/" + std::to_string(pid) + "/stat"));
  std::string field;
  double ticks = 0;
  for (int i = 1; i <= 15 && in >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::strtod(field.c_str(), nullptr);  // utime, stime
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

int Run(const std::string& fabric, int sweeps, int scrapers, int seconds, const std::string& groups,
        const std::string& shard, const std::string& phy, bool blast, const std::string& tables,
        const std::vector<std::string>& extra, bool no_sa) {
  const bool rails = fabric == "32k";
  const bool big = fabric == "16k" || rails;
  FatTreeSpec spec = rails ? Spec32kRails() : big ? Spec16k() : Spec1k();
  // At 32k, rail faults as the rails issue plants them: a swapped pair
  // (gpu0005's mlx5_1 and mlx5_2) and two HCAs of two servers swapped
  // across rails (gpu0039's mlx5_3 and gpu0040's mlx5_4), each on the
  // other's leaf: wrong-rail HCAs (the leaves have no spare port to move
  // one to).
  if (rails) {
    const FatTree plain = FatTree::Generate(spec);
    spec.swaps = {{plain.RailHca(1, 5, 2), plain.RailHca(1, 5, 3)}, {plain.RailHca(2, 7, 4), plain.RailHca(2, 8, 5)}};
  }
  const FatTree tree = FatTree::Generate(spec);
  SimOptions o;
  o.attach = tree.Host(1);
  o.max_nodes = rails ? 40000 : 20000;
  o.max_switches = rails ? 3000 : 2000;
  o.max_ports = rails ? 250000 : 200000;
  o.linear_cap = rails ? 49152 : 0;  // 35,328 LIDs: above ibsim's 30,720
  o.timeout = std::chrono::seconds(900);
  // The resident SM below brings the subnet up (the main run); the other
  // runs sweep once at start.
  o.sweep_once = !phy.empty() || blast || no_sa;
  std::string error;
  auto t0 = Clock::now();
  auto sim = SimFabric::Start(tree.NetFile(), o, &error);
  if (!sim) {
    std::fprintf(stderr, "scale_bench: %s\n", error.c_str());
    return 1;
  }
  const std::size_t switches = tree.leaves().size() + tree.spines().size() + tree.cores().size();
  std::printf("fabric %s: %zu switches, %zu hosts, %zu cables; ibsim%s up in %.1f s\n", fabric.c_str(), switches,
              tree.hosts().size(), tree.cables().size(), o.sweep_once ? " + opensm -o" : "", SecondsSince(t0));
  if (!phy.empty()) {
    std::vector<PersonalityRule> rules;
    if (!ParsePersonalityFile("ib-*  quantum-2\ncn*  connectx-7\n", &rules, &error)) return 1;
    auto hw = HardwareFabric::Make(tree.NetFile(), rules, sim->dir(), &error);
    if (!hw || !hw->ResolveLids(*sim, &error)) {
      std::fprintf(stderr, "scale_bench: %s\n", error.c_str());
      return 1;
    }
    std::printf("personalities: switches Quantum-2, hosts ConnectX-7; --phy.interval=%s\n", phy.c_str());
    const long secs = std::strtol(phy.c_str(), nullptr, 10) * (phy.back() == 'm' ? 60 : 1);
    return PhysicalLayerLoad(*sim, *hw, phy, std::chrono::seconds(secs + 30), std::chrono::seconds(2 * secs));
  }

  if (blast) return BlastRadiusCost(*sim, tree);

  // A resident SM and SA, as on a production fabric: the exporter reads
  // the forwarding tables from the SA, ibqueryerrors its nodes. Without
  // (--sa none), the subnet opensm -o brought up, and no SA.
  t0 = Clock::now();
  std::unique_ptr<Process> sm;
  if (!no_sa) {
    sm = sim->StartSubnetManager(&error);
    if (!sm) {
      std::fprintf(stderr, "scale_bench: %s\n", error.c_str());
      return 1;
    }
    std::printf("opensm resident (SM and SA) in %.1f s\n", SecondsSince(t0));
  } else {
    std::printf("no SA: opensm swept once and exited\n");
  }

  // The exporter at its defaults but for the sweep interval (sweeps one
  // after the other, scraped between them) and a debug log to watch them.
  // At 32k GPUs a cycle (the sweep, the collectors, rendering 4.7 million
  // series) takes 8-15 s on 2 cores (6.2 s sweeps on 2026-11-29), at 16k
  // 4-6 s: 25 s and 10 s leave time between sweeps, where the RSS is read
  // (at 15 s and 5 s a loaded machine left none).
  const char* interval = rails ? "25s" : big ? "10s" : "1s";
  std::vector<std::string> args{"--sweep.interval=" + std::string(interval), "--log.level=debug"};
  if (!groups.empty()) args.push_back("--counters.groups=" + groups);
  if (!shard.empty()) args.push_back("--shard=" + shard);
  // The tables from the SA (the default), P_Key tables too: with its key
  // (opensm's default sa_key, 1), as a site reading them from the SM gives.
  if (!tables.empty()) {
    args.push_back("--routing.tables=" + tables);
    args.push_back("--partitions.tables=" + tables);
  }
  if (tables != "switches" && !no_sa) args.push_back("--ib.sa-key=1");
  args.insert(args.end(), extra.begin(), extra.end());
  const std::string rmpp_stats = sim->dir() + "/exporter-rmpp.txt";
  const double sm_cpu0 = sm ? CpuSeconds(sm->pid()) : 0, sim_cpu0 = CpuSeconds(sim->ibsim_pid());
  auto e = ExporterProcess::Start(*sim, args, &error, {}, {{"RMPP_STATS", rmpp_stats}});
  if (!e) {
    std::fprintf(stderr, "scale_bench: %s\n", error.c_str());
    return 1;
  }
  const pid_t pid = e->process().pid();
  if (!WaitForSweeps(*e, 1, std::chrono::seconds(600))) {
    std::fprintf(stderr, "scale_bench: no sweep: %s\n", e->Log().c_str());
    return 1;
  }
  LogView v = ReadLog(*e);
  std::printf("CPU over the exporter's discovery and first sweep: opensm %.2f s, ibsim %.2f s, exporter %.2f s\n",
              sm ? CpuSeconds(sm->pid()) - sm_cpu0 : 0, CpuSeconds(sim->ibsim_pid()) - sim_cpu0, CpuSeconds(pid));
  const double ports = v.ports;
  if (rails) {
    // The rail findings: exactly the planted ones, each with both ends.
    std::map<std::string, std::set<std::string>> found, want;
    const auto str = [](const Endpoint& end) { return end.node + "[" + std::to_string(end.port) + "]"; };
    for (const auto& [a, b] : spec.swaps) {
      const char* kind =
          a.node.substr(0, a.node.find(' ')) == b.node.substr(0, b.node.find(' ')) ? "rail_swapped" : "rail_wrong_leaf";
      for (const Endpoint& end : {a, b}) want[kind].insert(str(end) + " - " + str(*tree.Peer(end)));
    }
    const auto t0f = Clock::now();
    const auto t = nlohmann::json::parse(e->Get("/api/v1/topology?view=findings"), nullptr, false);
    const double took = SecondsSince(t0f);
    const bool whole = t.is_object() && t.contains("findings") && t["findings"].is_array() && t.contains("hosts") &&
                       t["hosts"].contains("layout") && t["hosts"].contains("hosts");
    std::size_t all = 0;
    for (const auto& f : whole ? t["findings"] : nlohmann::json::array()) {
      ++all;
      const std::string kind = f["kind"];
      if (kind.rfind("rail_", 0) != 0) continue;
      found[kind].insert(f["a"]["name"].get<std::string>() + "[" + std::to_string(f["a"]["port"].get<int>()) + "] - " +
                         f["b"]["name"].get<std::string>() + "[" + std::to_string(f["b"]["port"].get<int>()) + "]");
    }
    std::printf("rail findings: %s (%zu findings in all; layout %s, %s hosts; findings view %.2f s)\n",
                found == want ? "exactly the planted swapped pair and wrong-rail HCAs" : "NOT the planted ones", all,
                whole ? t["hosts"]["layout"].dump().c_str() : "?", whole ? t["hosts"]["hosts"].dump().c_str() : "?",
                took);
    if (found != want) {
      for (const auto& [k, cables] : found) {
        for (const auto& x : cables) std::printf("  found %s %s\n", k.c_str(), x.c_str());
      }
    }
  }
  std::printf("exporter: discovery %.2f s (heap then %.1f MiB), first sweep %.2f s over %.0f ports; RSS %.1f MiB\n",
              v.discovery_seconds, v.heap_after_discovery / 1048576, v.sweep_seconds.front(), ports,
              StatusMiB(pid, "VmRSS:"));

  std::vector<double> plain_s, gzip_s;
  std::size_t plain_bytes = 0, gzip_bytes = 0;
  bool compressed = true;
  // The RSS once each sweep is published and scraped, kept when no sweep
  // had started by then (a cycle as long as the interval leaves no time
  // between sweeps).
  double rss = -1;
  std::string rss_by_mapping;
  int between = 0;
  for (int i = 2; i <= sweeps + 1; ++i) {
    if (!WaitForSweeps(*e, static_cast<std::size_t>(i), std::chrono::seconds(300))) {
      std::fprintf(stderr, "scale_bench: sweep %d did not come: %s\n", i, e->Log().c_str());
      return 1;
    }
    const Fetch p = Get(e->port(), "/metrics", false);
    const Fetch g = Get(e->port(), "/metrics", true);
    if (!p.ok || !g.ok) {
      std::fprintf(stderr, "scale_bench: scrape failed (%d, %d)\n", p.status, g.status);
      return 1;
    }
    plain_s.push_back(p.seconds);
    gzip_s.push_back(g.seconds);
    plain_bytes = p.body_bytes;
    gzip_bytes = g.body_bytes;
    compressed = compressed && g.gzip;
    const double now = StatusMiB(pid, "VmRSS:");
    const std::string mapping = RssByMapping(pid);
    if (ReadLog(*e).started_sweeps == static_cast<std::size_t>(i)) {  // no cycle under way
      rss = now;
      rss_by_mapping = mapping;
      ++between;
    }
  }
  const double peak = StatusMiB(pid, "VmHWM:");
  v = ReadLog(*e);
  const std::vector<double> sweep_s(v.sweep_seconds.begin() + 1, v.sweep_seconds.end());
  // Series: the exposition's lines that are not comments (one more
  // scrape, after the RSS figures).
  long series = 0;
  std::map<std::string, long> by_group;
  {
    const std::string text = e->Get("/metrics");
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t end = std::min(text.find('\n', at), text.size());
      if (text[at] != '#') {
        ++series;
        ++by_group[GroupOfFamily(text.substr(at, text.find_first_of("{ ", at) - at))];
      }
      at = end + 1;
    }
  }
  std::printf("sweeps: %.2f s median of %zu (%.2f us per port)\n", Percentile(sweep_s, 0.5), sweep_s.size(),
              Percentile(sweep_s, 0.5) / ports * 1e6);
  std::printf("exposition: %.1f MB plain, %.2f MB gzip%s; %ld series\n", plain_bytes / 1e6, gzip_bytes / 1e6,
              compressed ? "" : " (NOT compressed)", series);
  std::printf("series by group (--counters.groups%s):",
              groups.empty() ? ", the exporter's choice" : ("=" + groups).c_str());
  for (const auto& [group, n] : by_group) std::printf(" %s %ld (%.1f per port)", group.c_str(), n, n / ports);
  std::printf("\n");
  std::printf("scrape: plain %.3f s median, %.3f s max; gzip %.3f s median, %.3f s max (of %zu each)\n",
              Percentile(plain_s, 0.5), Percentile(plain_s, 1), Percentile(gzip_s, 0.5), Percentile(gzip_s, 1),
              plain_s.size());
  std::printf(
      "RSS after %d sweeps with scrapes: %.1f MiB (%.0f bytes per port; the last of %d read between sweeps%s); "
      "peak %.1f MiB\n",
      sweeps, rss, rss * 1048576 / ports, between, between == 0 ? ": NONE, the next sweep had always started" : "",
      peak);
  std::printf("heap after the last publication: %.1f MiB in use (%.0f bytes per port), %.1f MiB free in malloc\n",
              v.heap_in_use / 1048576, v.heap_in_use / ports, v.heap_free / 1048576);
  if (!v.trim_seconds.empty()) {
    std::printf("malloc_trim after each publication: %.3f s median, %.3f s max (of %zu)\n",
                Percentile(v.trim_seconds, 0.5), Percentile(v.trim_seconds, 1), v.trim_seconds.size());
  }
  std::printf("RSS by mapping then: %s\n", rss_by_mapping.c_str());
  const Fetch topo = Get(e->port(), "/api/v1/topology", false);
  std::printf("/api/v1/topology: %.1f MB in %.3f s\n", topo.body_bytes / 1e6, topo.seconds);
  // What the status page loads first, and its first render in Chromium
  // (navigation to the problem lines and the matrices drawn).
  const Fetch structure = Get(e->port(), "/api/v1/structure", false);
  const Fetch findings = Get(e->port(), "/api/v1/topology?view=findings", false);
  const Fetch alerts = Get(e->port(), "/api/v1/alerts?state=active", false);
  std::printf(
      "status page loads: /api/v1/structure %.0f kB in %.3f s, findings %.0f kB in %.3f s, alerts %.0f kB in %.3f s\n",
      structure.body_bytes / 1e3, structure.seconds, findings.body_bytes / 1e3, findings.seconds,
      alerts.body_bytes / 1e3, alerts.seconds);
  if (auto browser = Browser::Start(&error)) {
    std::vector<double> renders;
    for (int i = 0; i < 3; ++i) {
      if (!browser->Navigate("http://127.0.0.1:" + std::to_string(e->port()) + "/", &error) ||
          !browser->WaitFor("return !!document.body.dataset.firstRender && document.body.dataset.loaded === 'true';",
                            std::chrono::seconds(60), &error)) {
        break;
      }
      const auto ms = browser->Execute("return Number(document.body.dataset.firstRender);", &error);
      if (ms) renders.push_back(ms->get<double>());
    }
    const auto cells = browser->Execute("return document.querySelectorAll('td.cell').length;", &error);
    if (renders.empty()) {
      std::printf("status page: no render in Chromium: %s\n", error.c_str());
    } else {
      std::printf(
          "status page: first render %.0f ms median of %zu in Chromium (navigation to problems and matrices; %d "
          "cells)\n",
          Percentile(renders, 0.5), renders.size(), cells ? cells->get<int>() : -1);
    }
  } else {
    std::printf("status page: no Chromium (%s)\n", error.c_str());
  }

  if (scrapers > 0) {
    std::vector<double> lat;
    std::mutex mu;
    std::atomic<bool> stop{false};
    std::atomic<int> failed{0};
    std::vector<std::thread> threads;
    const std::size_t sweeps_before = ReadLog(*e).sweep_seconds.size();
    for (int k = 0; k < scrapers; ++k) {
      threads.emplace_back([&] {
        while (!stop) {
          const Fetch f = Get(e->port(), "/metrics", true);
          if (!f.ok) ++failed;
          const std::lock_guard<std::mutex> lock(mu);
          lat.push_back(f.seconds);
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    stop = true;
    for (auto& t : threads) t.join();
    const std::size_t swept = ReadLog(*e).sweep_seconds.size() - sweeps_before;
    std::printf(
        "%d concurrent gzip scrapers for %d s (%zu sweeps meanwhile): %zu scrapes, %d failed; p50 %.1f ms, "
        "p99 %.1f ms, max %.1f ms; peak RSS now %.1f MiB\n",
        scrapers, seconds, swept, lat.size(), failed.load(), Percentile(lat, 0.5) * 1e3, Percentile(lat, 0.99) * 1e3,
        Percentile(lat, 1) * 1e3, StatusMiB(pid, "VmHWM:"));
  }
  const std::string last = e->Get("/metrics");
  double discovery = -1, walk = -1;  // the exporter's own: before its first sweep, and the walk
  // Time to end the cycle under way (9 s at 32k GPUs) and exit: librmpp
  // writes its counts at exit.
  e->process().Stop(std::chrono::seconds(30));
  e.reset();
  {
    const Scrape s = Scrape::Parse(last);
    const std::string rmpp = ReadFile(rmpp_stats);  // none without the SA
    const auto sent = [&s](const char* kind) {
      return s
          .Value("infiniband_exporter_last_run_mads", {{"phase", "discovery"}, {"class", kind}, {"outcome", "sent"}})
          .value_or(-1);
    };
    std::printf(
        "last full walk's MADs: %.0f DR SMPs, %.0f LID SMPs, %.0f GMPs; forwarding tables from the SA %.0f, from "
        "switches %.0f; P_Key tables from the SA %.0f, from ports %.0f; RMPP at the exporter (whole run): %s",
        sent("dr_smp"), sent("lid_smp"), sent("gmp"),
        s.Value("infiniband_routing_tables", {{"source", "sa"}}).value_or(-1),
        s.Value("infiniband_routing_tables", {{"source", "switch"}}).value_or(-1),
        s.Value("infiniband_partition_tables", {{"source", "sa"}}).value_or(-1),
        s.Value("infiniband_partition_tables", {{"source", "port"}}).value_or(-1),
        rmpp.empty() ? "none\n" : rmpp.c_str());
    // Waits on lost answers: the walk's retries and requests that timed out.
    double retried = 0, timed_out = 0;
    for (const auto& x : s.Find("infiniband_exporter_last_run_mads", {{"phase", "discovery"}})) {
      if (x.labels.at("outcome") == "retried") retried += x.value;
      if (x.labels.at("outcome") == "timed_out") timed_out += x.value;
    }
    std::printf("last full walk's retries %.0f, requests timed out %.0f\n", retried, timed_out);
    const auto phase = [&s](const char* p) {
      return s.Value("infiniband_exporter_discovery_phase_seconds", {{"phase", p}}).value_or(-1);
    };
    discovery = s.Value("infiniband_exporter_collector_duration_seconds", {{"collector", "discovery"}}).value_or(-1);
    walk = phase("walk");
    std::printf(
        "exporter's discovery phases (last full walk): walk %.2f s, tables %.2f s (after the first publication but "
        "ClassPortInfo), analysis %.2f s; discovery before its first sweep %.2f s\n",
        walk, phase("tables"), phase("analysis"), discovery);
    std::printf("discovery collectors' time (seconds since start):");
    for (const char* c : {"capabilities", "adaptive_routing", "routing", "partitions", "fat_tree", "fabric"}) {
      std::printf(" %s %.2f", c,
                  s.Value("infiniband_exporter_collector_seconds_total", {{"collector", c}}).value_or(-1));
    }
    std::printf("\n");
  }

  // The tools, in the same run: ibnetdiscover reads the graph only;
  // ibqueryerrors asks the SA for the nodes (the resident SM).
  const double ind = TimeTool(*sim, {"ibnetdiscover"}, "Switch");
  std::printf("discovery / ibnetdiscover %.2f (walk / ibnetdiscover %.2f)\n", ind > 0 ? discovery / ind : 0,
              ind > 0 ? walk / ind : 0);
  // Without the SA its SL query (a PathRecord GetTable) fails: --skip-sl
  // reads the same counters on SL 0, as an operator without the SA would.
  const std::vector<std::string> iqe_argv = no_sa ? std::vector<std::string>{"ibqueryerrors", "--skip-sl", "--data"}
                                                  : std::vector<std::string>{"ibqueryerrors", "--data"};
  const double iqe = TimeTool(*sim, iqe_argv, "Summary");
  std::printf("ibnetdiscover %.2f s; ibqueryerrors%s --data %.2f s; sweep / ibqueryerrors %.2f\n", ind,
              no_sa ? " --skip-sl" : "", iqe, iqe > 0 ? Percentile(sweep_s, 0.5) / iqe : 0);
  std::printf(
      "discovery: graph %.2f s (%.0f MADs; / ibnetdiscover %.2f), then the tables %.2f s (%.0f MADs); %.2f s in "
      "all\n",
      v.graph_seconds, v.graph_mads, ind > 0 ? v.graph_seconds / ind : 0, v.tables_seconds, v.tables_mads,
      v.discovery_seconds);
  return 0;
}

}  // namespace
}  // namespace ibfabric::testbed

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // figures appear as they are measured
  std::string fabric = "1k";
  int sweeps = 10, scrapers = 0, seconds = 20;
  std::string groups, shard, phy, tables;
  std::vector<std::string> extra;
  bool blast = false, no_sa = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--fabric" && i + 1 < argc &&
        (std::string(argv[i + 1]) == "1k" || std::string(argv[i + 1]) == "16k" || std::string(argv[i + 1]) == "32k")) {
      fabric = argv[++i];
    } else if (a == "--groups" && i + 1 < argc) {
      groups = argv[++i];
    } else if (a == "--shard" && i + 1 < argc) {
      shard = argv[++i];
    } else if (a == "--exporter-arg" && i + 1 < argc) {
      extra.push_back(argv[++i]);
    } else if (a == "--tables" && i + 1 < argc) {
      tables = argv[++i];
    } else if (a == "--blast") {
      blast = true;
    } else if (a == "--sa" && i + 1 < argc &&
               (std::string(argv[i + 1]) == "none" || std::string(argv[i + 1]) == "resident")) {
      no_sa = std::string(argv[++i]) == "none";
    } else if (a == "--phy" && i + 1 < argc) {
      phy = argv[++i];
      char* end = nullptr;
      const long n = std::strtol(phy.c_str(), &end, 10);
      if (n < 1 || (std::string(end) != "s" && std::string(end) != "m")) {
        std::fprintf(stderr, "scale_bench: --phy wants an interval such as 60s or 5m, not '%s'\n", phy.c_str());
        return 2;
      }
    } else if ((a == "--sweeps" || a == "--scrapers" || a == "--seconds") && i + 1 < argc) {
      int& v = a == "--sweeps" ? sweeps : a == "--scrapers" ? scrapers : seconds;
      char* end = nullptr;
      const long n = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || n < (a == "--scrapers" ? 0 : 1) || n > 10000) {
        std::fprintf(stderr, "scale_bench: invalid value for %s: '%s'\n", a.c_str(), argv[i]);
        return 2;
      }
      v = static_cast<int>(n);
    } else {
      std::fprintf(
          stderr,
          "usage: scale_bench [--fabric 1k|16k|32k] [--sweeps N] [--scrapers K] [--seconds S] [--groups LIST] "
          "[--shard I/N] [--tables sa|switches] [--sa resident|none] [--exporter-arg FLAG]... [--phy INTERVAL] "
          "[--blast]\n");
      return 2;
    }
  }
  return ibfabric::testbed::Run(fabric, sweeps, scrapers, seconds, groups, shard, phy, blast, tables, extra, no_sa);
}
