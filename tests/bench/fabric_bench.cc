// Full-fabric sweep on the simulator, timed in the same run as
// `ibqueryerrors --data` and a one-MAD-at-a-time serial baseline, with the
// ratios and the exporter's peak RSS printed, then what crossed libibumad
// during a discovery and two sweeps, watched from outside the exporter by
// the MAD tap (tests/tools/mad_tap.cc). With --scale, the same sweep
// on growing fabrics to show the cost per port.
//
//   build/tests/fabric_bench                 # 1024 hosts, 4096 ports
//   build/tests/fabric_bench --scale         # about 2k, 8k and 18k ports
//   build/tests/fabric_bench --runs 9 --window 256

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/testbed/exporter_process.h"
#include "tests/testbed/fat_tree.h"
#include "tests/testbed/mad_tap.h"
#include "tests/testbed/sim_fabric.h"

namespace ibfabric::testbed {
namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Measure {
  std::vector<double> sweep_seconds;
  double ports = 0;
  double rss_mib = 0;
};

// Runs the exporter with `window`, waits for `runs` sweeps after the first,
// and collects each sweep's duration from its own metric.
bool MeasureExporter(const SimFabric& sim, int window, int runs, Measure* m, std::string* error) {
  auto e = ExporterProcess::Start(sim, {"--sweep.interval=100ms", "--discovery.interval=1h",
                                        "--mad.window=" + std::to_string(window), "--mad.timeout=200ms"},
                                  error);
  if (!e) return false;
  auto s = e->WaitForSweeps(1, std::chrono::seconds(300));
  for (int i = 2; s && i <= runs + 1; ++i) {
    s = e->WaitForSweeps(i, std::chrono::seconds(300));
    if (s) m->sweep_seconds.push_back(*s->Value("infiniband_exporter_sweep_duration_seconds"));
  }
  if (!s) {
    *error = "exporter did not sweep: " + e->Log();
    return false;
  }
  m->ports = *s->Value("infiniband_exporter_sweep_ports", {{"result", "ok"}});
  const std::string status = ReadFile("/proc/" + std::to_string(e->process().pid()) + "/status");
  const auto at = status.find("VmHWM:");
  if (at != std::string::npos) m->rss_mib = std::atof(status.c_str() + at + 6) / 1024.0;
  return true;
}

// The exporter at its defaults once more, under the MAD tap: what crossed
// libibumad, seen from outside, through its discovery and two sweeps.
bool Watch(const SimFabric& sim, std::string* error) {
  const std::string file = sim.dir() + "/mad_tap.log";
  auto e = ExporterProcess::Start(sim, {"--sweep.interval=100ms", "--discovery.interval=1h"}, error, {},
                                  MadTapEnv(file));
  if (!e) return false;
  const auto s = e->WaitForSweeps(2, std::chrono::seconds(300));
  if (!s) {
    *error = "exporter did not sweep under the tap: " + e->Log();
    return false;
  }
  const double discovery =
      s->Value("infiniband_exporter_collector_duration_seconds", {{"collector", "discovery"}}).value_or(0);
  e.reset();
  const MadTapReport r = ReadMadTap(file);
  if (!r.ok) {
    *error = r.error;
    return false;
  }
  std::printf("  discovery at the defaults    %8.3f s\n", discovery);
  std::printf("  from outside (umad tap): %s\n", Describe(r).c_str());
  return true;
}

int RunOne(const FatTreeSpec& spec, int runs, int window, bool compare) {
  const FatTree tree = FatTree::Generate(spec);
  SimOptions o;
  o.attach = tree.Host(1);
  o.max_nodes = 8192;
  o.max_switches = 1024;
  o.max_ports = 65536;
  o.timeout = std::chrono::seconds(600);
  std::string error;
  auto sim = SimFabric::Start(tree.NetFile(), o, &error);
  if (!sim) {
    std::fprintf(stderr, "fabric_bench: %s\n", error.c_str());
    return 1;
  }
  std::printf("fabric: %d leaves x %d hosts, %d spines, %d links per pair, radix %d: %zu nodes, %zu cables\n",
              spec.leaves, spec.hosts_per_leaf, spec.spines, spec.links_per_pair, spec.radix,
              tree.leaves().size() + tree.spines().size() + tree.hosts().size(), tree.cables().size());

  Measure fast;
  if (!MeasureExporter(*sim, window, runs, &fast, &error)) {
    std::fprintf(stderr, "fabric_bench: %s\n", error.c_str());
    return 1;
  }
  const double ours = Median(fast.sweep_seconds);
  std::printf("  exporter sweep, window %-4d  %8.3f s median of %zu  (%.0f ports, %.0f port reads/s, %.2f us/port)\n",
              window, ours, fast.sweep_seconds.size(), fast.ports, fast.ports / ours, ours / fast.ports * 1e6);
  std::printf("  exporter peak RSS            %8.1f MiB\n", fast.rss_mib);
  if (!compare) return 0;
  if (!Watch(*sim, &error)) {
    std::fprintf(stderr, "fabric_bench: %s\n", error.c_str());
    return 1;
  }

  Measure serial;
  if (!MeasureExporter(*sim, 1, std::max(1, runs / 3), &serial, &error)) {
    std::fprintf(stderr, "fabric_bench: %s\n", error.c_str());
    return 1;
  }
  const double one = Median(serial.sweep_seconds);
  std::printf("  serial baseline, window 1    %8.3f s median of %zu\n", one, serial.sweep_seconds.size());

  auto sm = sim->StartSubnetManager(&error);
  if (!sm) {
    std::fprintf(stderr, "fabric_bench: %s\n", error.c_str());
    return 1;
  }
  // ibqueryerrors now and then dies of SIGSEGV under umad2sim; such a run
  // is repeated (twice at most) and counted, not timed.
  std::vector<double> iqe;
  int crashed = 0;
  for (int i = 0, tries = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    const auto r = sim->Tool({"ibqueryerrors", "--data"}, std::chrono::minutes(10));
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    if (r.exit_code != 0 || r.out.find("Summary") == std::string::npos) {
      ++crashed;
      if (++tries > 2) {
        std::fprintf(stderr, "fabric_bench: ibqueryerrors failed (%d): %s\n", r.exit_code, r.err.c_str());
        return 1;
      }
      --i;
      continue;
    }
    tries = 0;
    iqe.push_back(t);
  }
  const double theirs = Median(iqe);
  std::printf("  ibqueryerrors --data         %8.3f s median of %zu (%d crashed runs repeated)\n", theirs,
              iqe.size(), crashed);
  std::printf("  ratio exporter / ibqueryerrors   %.3f  (target <= 0.5)\n", ours / theirs);
  std::printf("  ratio exporter / serial          %.3f  (serial is %.1fx slower)\n", ours / one, one / ours);
  return 0;
}

}  // namespace
}  // namespace ibfabric::testbed

int main(int argc, char** argv) {
  using ibfabric::testbed::FatTreeSpec;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // figures appear as they are measured
  int runs = 5, window = 128;
  bool scale = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--scale") {
      scale = true;
    } else if ((a == "--runs" || a == "--window") && i + 1 < argc) {
      (a == "--runs" ? runs : window) = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: fabric_bench [--scale] [--runs N] [--window N]\n");
      return 2;
    }
  }
  if (!scale) {
    // Issue 3's fabric: 1024 hosts, 32 leaves of 32, 16 spines, 2 links per
    // pair, 64-port switches: 4096 ports.
    FatTreeSpec s = ibfabric::testbed::Spec(32, 16, 32, 2, 64);
    return ibfabric::testbed::RunOne(s, runs, window, true);
  }
  // Full two-tier trees of radix r: r leaves of r/2 hosts, r/2 spines.
  for (int r : {32, 64, 96}) {
    FatTreeSpec s = ibfabric::testbed::Spec(r, r / 2, r / 2, 1, r);
    if (ibfabric::testbed::RunOne(s, runs, window, false) != 0) return 1;
  }
  return 0;
}
