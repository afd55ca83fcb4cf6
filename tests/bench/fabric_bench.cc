// Full-fabric sweep on the simulator, timed in the same run as
// `ibqueryerrors --data` and a one-MAD-at-a-time serial baseline, with the
// ratios and the exporter's peak RSS printed, then what crossed libibumad
// during a discovery and two sweeps, watched from outside the exporter by
// the MAD tap (tests/tools/mad_tap.cc). With --scale, the same sweep
// on growing fabrics to show the cost per port. With --budget, the SMPs a
// sweep, a quiet minute and a host cable flap cost, before and now. With
// --collectors, what the routing and partitions collectors cost a discovery.
//
//   build/tests/fabric_bench                 # 1024 hosts, 4096 ports
//   build/tests/fabric_bench --scale         # about 2k, 8k and 18k ports
//   build/tests/fabric_bench --runs 9 --window 256
//   build/tests/fabric_bench --budget        # SMPs at rest and per event, 1024 hosts
//   build/tests/fabric_bench --budget --fabric 16k
//   build/tests/fabric_bench --collectors    # discovery with and without routing and partitions

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <thread>
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
  auto e = ExporterProcess::Start(sim,
                                  {"--sweep.interval=100ms", "--discovery.interval=1h",
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
  m->rss_mib = StatusMiB(e->process().pid(), "VmHWM:");
  return true;
}

// The exporter at its defaults once more, under the MAD tap: what crossed
// libibumad, seen from outside, through its discovery and two sweeps.
bool Watch(const SimFabric& sim, std::string* error) {
  const std::string file = sim.dir() + "/mad_tap.log";
  auto e =
      ExporterProcess::Start(sim, {"--sweep.interval=100ms", "--discovery.interval=1h"}, error, {}, MadTapEnv(file));
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

// The series that make the routing and partition views, as text: equal
// before and after events means the views came back the same.
std::string Views(const Scrape& s) {
  std::string out;
  for (const char* name :
       {"infiniband_routing_port_destinations", "infiniband_routing_unrouted_destinations",
        "infiniband_port_partition_info", "infiniband_switch_port_partition_info", "infiniband_topology_finding"}) {
    for (const auto& x : s.Find(name)) {
      out += name;
      for (const auto& [k, v] : x.labels) out += " " + k + "=" + v;
      out += " " + std::to_string(x.value) + "\n";
    }
  }
  return out;
}

using Counts = std::array<std::uint64_t, ibfabric::transport::kMadKinds>;
double Smps(const Counts& c) { return static_cast<double>(c[0] + c[1]); }

// What the exporter costs the fabric at rest and per event, counted outside
// the process by the MAD tap, with a resident SM: the defaults of before
// (every switch port's PortInfo and every LID's NodeInfo each sweep, a
// full walk every 5 minutes and after every change) against today's
// (rotation, traps, incremental re-walks, a full walk an hour).
bool Budget(const FatTree& tree, SimFabric& sim, int quiet_seconds, int events, std::string* error) {
  SimFabric::SmOptions sm_options;
  sm_options.attach = tree.hosts().back();       // the exporter's node takes SM-port Reports (SIM_SET_ISSM)
  sm_options.config = "ignore_other_sm TRUE\n";  // and answers no SMInfo: see tests/integration/events_test.cc
  auto sm = sim.StartSubnetManager(sm_options, error);
  if (!sm) return false;
  const double sweep = 10;  // seconds, the default
  std::printf("  SMP budget, resident opensm, sweeps every %.0f s, quiet window %d s, MAD tap:\n", sweep,
              quiet_seconds);
  struct Window {
    Clock::time_point from, to;
  };
  auto run = [&](const std::vector<std::string>& args, bool traps, const std::string& tap, Window* startup,
                 Window* quiet, std::string* views) -> std::unique_ptr<ExporterProcess> {
    Env env = MadTapEnv(tap);
    if (traps) env["SIM_SET_ISSM"] = "1";
    startup->from = Clock::now();
    auto e = ExporterProcess::Start(sim, args, error, {}, env);
    if (!e) return nullptr;
    auto s = e->WaitForSweeps(1, std::chrono::seconds(900));
    if (s && traps) {
      s = e->WaitFor(
          [](const Scrape& x) {
            return x.Value("infiniband_exporter_trap_subscribed", {{"trap", "128"}}) == 1;
          },
          std::chrono::seconds(120));
    }
    if (!s) {
      *error = "exporter did not sweep (or subscribe): " + e->Log();
      return nullptr;
    }
    // The quiet window starts on a sweep boundary.
    s = e->WaitForSweeps(*s->Value("infiniband_exporter_sweeps_total") + 1, std::chrono::seconds(120));
    startup->to = quiet->from = Clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(quiet_seconds));
    quiet->to = Clock::now();
    if (views) *views = Views(e->ScrapeMetrics());
    return e;
  };

  // Before: every port and LID each sweep, a full walk every 5 minutes.
  const std::string tap_old = sim.dir() + "/budget_old.tap";
  Window old_start, old_quiet;
  auto e = run({"--sweep.interval=10s", "--discovery.interval=5m", "--sweep.rotation=10s", "--sm.no-traps"}, false,
               tap_old, &old_start, &old_quiet, nullptr);
  if (!e) return false;
  e.reset();
  const Counts old_walk = SentBetween(tap_old, old_start.from, old_start.to);
  const Counts old_q = SentBetween(tap_old, old_quiet.from, old_quiet.to);
  const double q = std::chrono::duration<double>(old_quiet.to - old_quiet.from).count();
  const double old_minute = Smps(old_q) * 60 / q + Smps(old_walk) * 60 / 300;

  // Today's defaults.
  const std::string tap = sim.dir() + "/budget.tap";
  Window start, quiet;
  std::string views_before;
  e = run({"--sweep.interval=10s"}, true, tap, &start, &quiet, &views_before);
  if (!e) return false;
  // Host cables that go down and come back, one every 10 s, as hardware
  // shows them (LinkDownedCounter moves at both ends; ibsim never counts it).
  // Besides the tap's count, the exporter's own count of what its trap
  // re-reads and re-walks sent: the tap cannot tell those from the sweeps.
  auto event_smps = [](const Scrape& x) {
    double n = 0;
    for (const char* phase : {"trap", "rewalk"}) {
      for (const char* cls : {"dr_smp", "lid_smp"}) {
        n += x.Value("infiniband_exporter_phase_mads_total", {{"phase", phase}, {"class", cls}}).value_or(0);
      }
    }
    return n;
  };
  const Scrape before_events = e->ScrapeMetrics();
  const auto events_from = Clock::now();
  std::vector<int> hosts;
  for (int i = 0; i < events; ++i)
    hosts.push_back(2 + i * static_cast<int>(tree.hosts().size() - 2) / std::max(1, events));
  for (int h : hosts) {
    const auto next = Clock::now() + std::chrono::seconds(10);
    bool ok = true;
    sim.Console("Unlink " + std::string("\"") + tree.LeafHostPort(h).node + "\"[" +
                    std::to_string(tree.LeafHostPort(h).port) + "]",
                &ok);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    sim.Console("ReLink " + std::string("\"") + tree.LeafHostPort(h).node + "\"[" +
                    std::to_string(tree.LeafHostPort(h).port) + "]",
                &ok);
    for (const Endpoint& end : {tree.LeafHostPort(h), tree.HostPort(h)}) {
      sim.Console(
          "PerformanceSet \"" + end.node + "\"[" + std::to_string(end.port) + "] PortCounters.LinkDownedCounter=1",
          &ok);
    }
    std::this_thread::sleep_until(next);
  }
  const auto events_to = Clock::now();
  const double sweeps_in_events = *e->ScrapeMetrics().Value("infiniband_exporter_sweeps_total") -
                                  *before_events.Value("infiniband_exporter_sweeps_total");
  // Settled: every host back, every flap counted.
  auto s = e->WaitFor(
      [&](const Scrape& x) {
        return x.Value("infiniband_exporter_fabric_nodes", {{"type", "hca"}}) ==
               static_cast<double>(tree.hosts().size());
      },
      std::chrono::seconds(120));
  s = e->WaitForSweeps(*e->ScrapeMetrics().Value("infiniband_exporter_sweeps_total") + 2, std::chrono::seconds(120));
  if (!s) {
    *error = "exporter did not settle after the events: " + e->Log();
    return false;
  }
  int reported = 0;
  for (int h : hosts) {
    for (const auto& x : s->Find("infiniband_link_down_events_total")) {
      if ((x.labels.at("node") == tree.Host(h) || x.labels.at("remote_node") == tree.Host(h)) && x.value >= 1)
        ++reported;
    }
  }
  const double own_per_event = (event_smps(*s) - event_smps(before_events)) / events;
  // How long each re-walk took, from the exporter's log.
  std::vector<double> rewalk_seconds;
  {
    const std::string log = e->Log();
    for (std::size_t at = log.find("mode=incremental"); at != std::string::npos;
         at = log.find("mode=incremental", at + 1)) {
      const auto sec = log.find("seconds=", at);
      if (sec != std::string::npos) rewalk_seconds.push_back(std::atof(log.c_str() + sec + 8));
    }
  }
  const std::string views_after = Views(*s);
  const bool views_same = views_after == views_before;
  if (!views_same) {
    // What differs, a few lines each way.
    auto lines = [](const std::string& text) {
      std::set<std::string> out;
      std::istringstream in(text);
      for (std::string l; std::getline(in, l);) out.insert(l);
      return out;
    };
    const auto a = lines(views_before), b = lines(views_after);
    int shown = 0;
    for (const auto& l : a) {
      if (!b.count(l) && shown++ < 8) std::printf("    - %s\n", l.c_str());
    }
    shown = 0;
    for (const auto& l : b) {
      if (!a.count(l) && shown++ < 8) std::printf("    + %s\n", l.c_str());
    }
  }
  const double full_walks = s->Value("infiniband_exporter_discoveries_total", {{"mode", "full"}}).value_or(-1);
  e.reset();
  const Counts walk = SentBetween(tap, start.from, start.to);
  const Counts q_now = SentBetween(tap, quiet.from, quiet.to);
  const Counts ev = SentBetween(tap, events_from, events_to);
  const double qn = std::chrono::duration<double>(quiet.to - quiet.from).count();
  const double ev_seconds = std::chrono::duration<double>(events_to - events_from).count();
  const double minute = Smps(q_now) * 60 / qn + Smps(walk) * 60 / 3600;
  const double switches = static_cast<double>(tree.leaves().size() + tree.spines().size() + tree.cores().size());
  // Per event: beyond what the same time at rest costs.
  const double dr_event = (static_cast<double>(ev[0]) - q_now[0] * ev_seconds / qn) / events;

  std::printf(
      "    before: start (walk + first sweep) %.0f SMPs (%llu directed); a sweep %.0f SMPs; "
      "a quiet minute %.0f SMPs (a walk every 5 min included), %.1f per switch\n",
      Smps(old_walk), static_cast<unsigned long long>(old_walk[0]), Smps(old_q) * sweep / q, old_minute,
      old_minute / switches);
  std::printf(
      "    now:    start %.0f SMPs (%llu directed); a sweep %.0f SMPs; a quiet minute %.0f SMPs "
      "(a walk an hour included), %.1f per switch: %.3f of before (target <= 0.25)\n",
      Smps(walk), static_cast<unsigned long long>(walk[0]), Smps(q_now) * sweep / qn, minute, minute / switches,
      minute / old_minute);
  std::printf(
      "    events: %d host cables down and up, one every 10 s: %.1f directed-route SMPs per event (tap; "
      "target <= 500, a walk is %llu), %.1f SMPs per event in trap re-reads and re-walks (exporter's count); "
      "%d of %d flaps reported; full walks %.0f; %.0f sweeps in %.0f s; re-walks took %.3f s median, %.3f s "
      "at most; routing and partition views %s\n",
      events, dr_event, static_cast<unsigned long long>(walk[0]), own_per_event, reported, events, full_walks,
      sweeps_in_events, ev_seconds, Median(rewalk_seconds),
      rewalk_seconds.empty() ? 0 : *std::max_element(rewalk_seconds.begin(), rewalk_seconds.end()),
      views_same ? "unchanged" : "CHANGED");
  return true;
}

// ibsim on `tree` with room for `nodes`, `switches` and `ports` (-N -S -P),
// clients on its first host; nullptr after printing why.
std::unique_ptr<SimFabric> StartSim(const FatTree& tree, int nodes, int switches, int ports,
                                    std::chrono::seconds timeout) {
  SimOptions o;
  o.attach = tree.Host(1);
  o.max_nodes = nodes;
  o.max_switches = switches;
  o.max_ports = ports;
  o.timeout = timeout;
  std::string error;
  auto sim = SimFabric::Start(tree.NetFile(), o, &error);
  if (!sim) std::fprintf(stderr, "fabric_bench: %s\n", error.c_str());
  return sim;
}

int RunOne(const FatTreeSpec& spec, int runs, int window, bool compare) {
  const FatTree tree = FatTree::Generate(spec);
  auto sim = StartSim(tree, 8192, 1024, 65536, std::chrono::seconds(600));
  if (!sim) return 1;
  std::string error;
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
  std::printf("  ibqueryerrors --data         %8.3f s median of %zu (%d crashed runs repeated)\n", theirs, iqe.size(),
              crashed);
  std::printf("  ratio exporter / ibqueryerrors   %.3f  (target <= 0.5)\n", ours / theirs);
  std::printf("  ratio exporter / serial          %.3f  (serial is %.1fx slower)\n", ours / one, one / ours);
  return 0;
}

// What routing and partitions cost a discovery on the 1024-host fabric
// (opensm having programmed the forwarding tables): the exporter's first
// cycle at the defaults and with --no-collector.routing
// --no-collector.partitions, its discovery's MADs by its own count and
// everything that crossed libibumad until its first sweep by the tap's.
int RunCollectors(int runs) {
  const FatTree tree = FatTree::Generate(Spec1k());
  auto sim = StartSim(tree, 8192, 1024, 65536, std::chrono::seconds(600));
  if (!sim) return 1;
  std::string error;
  auto sm = sim->StartSubnetManager(&error);
  if (!sm) {
    std::fprintf(stderr, "fabric_bench: %s\n", error.c_str());
    return 1;
  }
  std::printf("fabric: %zu switches, %zu hosts, %zu cables; opensm routed\n",
              tree.leaves().size() + tree.spines().size(), tree.hosts().size(), tree.cables().size());
  for (const bool tables : {true, false}) {
    std::vector<double> seconds, mads, tapped, smps;
    for (int i = 0; i < runs; ++i) {
      std::vector<std::string> args{"--sweep.interval=1h", "--discovery.interval=1h", "--sm.no-traps"};
      if (!tables) {
        args.push_back("--no-collector.routing");
        args.push_back("--no-collector.partitions");
      }
      const std::string tap = sim->dir() + "/collectors.tap";
      std::remove(tap.c_str());
      const auto from = Clock::now();
      auto e = ExporterProcess::Start(*sim, args, &error, {}, MadTapEnv(tap));
      if (!e) {
        std::fprintf(stderr, "fabric_bench: %s\n", error.c_str());
        return 1;
      }
      const auto s = e->WaitForSweeps(1, std::chrono::seconds(600));
      const auto to = Clock::now();
      if (!s) {
        std::fprintf(stderr, "fabric_bench: exporter did not sweep: %s\n", e->Log().c_str());
        return 1;
      }
      e.reset();
      seconds.push_back(
          s->Value("infiniband_exporter_collector_duration_seconds", {{"collector", "discovery"}}).value_or(0));
      double sent = 0, smp = 0;
      for (const auto& x : s->Find("infiniband_exporter_last_run_mads")) {
        if (x.labels.at("phase") != "discovery" || x.labels.at("outcome") != "sent") continue;
        sent += x.value;
        if (x.labels.at("class") != "gmp") smp += x.value;
      }
      mads.push_back(sent);
      smps.push_back(smp);
      const Counts c = SentBetween(tap, from, to);
      double all = 0;
      for (auto n : c) all += static_cast<double>(n);
      tapped.push_back(all);
    }
    std::printf(
        "  %-48s discovery %7.3f s median of %d, %6.0f MADs (%6.0f SMPs) by its count; "
        "%6.0f MADs crossed libibumad up to the first sweep (tap)\n",
        tables ? "defaults (routing and partitions on)" : "--no-collector.routing --no-collector.partitions",
        Median(seconds), runs, Median(mads), Median(smps), Median(tapped));
  }
  return 0;
}

// The SMP budget on the 1024-host fabric or the 16k-host three-tier one.
int RunBudget(const std::string& which, int quiet, int events) {
  const FatTree tree = FatTree::Generate(which == "16k" ? Spec16k() : Spec1k());
  auto sim = StartSim(tree, 20000, 2000, 200000, std::chrono::seconds(900));
  if (!sim) return 1;
  std::string error;
  std::printf("fabric: %zu switches, %zu hosts, %zu cables\n",
              tree.leaves().size() + tree.spines().size() + tree.cores().size(), tree.hosts().size(),
              tree.cables().size());
  if (!Budget(tree, *sim, quiet, events, &error)) {
    std::fprintf(stderr, "fabric_bench: %s\n", error.c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace ibfabric::testbed

int main(int argc, char** argv) {
  using ibfabric::testbed::FatTreeSpec;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // figures appear as they are measured
  int runs = 5, window = 128, quiet = 60, events = 10;
  bool scale = false, budget = false, collectors = false;
  std::string fabric = "1k";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--scale") {
      scale = true;
    } else if (a == "--budget") {
      budget = true;
    } else if (a == "--collectors") {
      collectors = true;
    } else if (a == "--fabric" && i + 1 < argc &&
               (std::string(argv[i + 1]) == "1k" || std::string(argv[i + 1]) == "16k")) {
      fabric = argv[++i];
    } else if ((a == "--runs" || a == "--window" || a == "--quiet" || a == "--events") && i + 1 < argc) {
      int& v = a == "--runs" ? runs : a == "--window" ? window : a == "--quiet" ? quiet : events;
      v = std::atoi(argv[++i]);
      if (v < 1) {
        std::fprintf(stderr, "fabric_bench: %s must be a positive integer\n", a.c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "usage: fabric_bench [--scale] [--runs N] [--window N] | --budget [--fabric 1k|16k] "
                   "[--quiet SECONDS] [--events N] | --collectors [--runs N]\n");
      return 2;
    }
  }
  if (budget) return ibfabric::testbed::RunBudget(fabric, quiet, events);
  if (collectors) return ibfabric::testbed::RunCollectors(runs);
  if (!scale) {
    // Issue 3's fabric: 1024 hosts, 32 leaves of 32, 16 spines, 2 links per
    // pair, 64-port switches: 4096 ports.
    return ibfabric::testbed::RunOne(ibfabric::testbed::Spec1k(), runs, window, true);
  }
  // Full two-tier trees of radix r: r leaves of r/2 hosts, r/2 spines.
  for (int r : {32, 64, 96}) {
    FatTreeSpec s = ibfabric::testbed::Spec(r, r / 2, r / 2, 1, r);
    if (ibfabric::testbed::RunOne(s, runs, window, false) != 0) return 1;
  }
  return 0;
}
