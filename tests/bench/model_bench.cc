// The exporter's real discovery and sweep code on the hardware model
// (tests/model): slow switch agents with bounded queues, a lossy VL15, a
// local send rate, and a simulated opensm sharing the agents. Prints, for
// each set of assumed parameters, what the subnet manager saw without the
// exporter, with it at its defaults, and with the old engine (one window of
// 128, no per-destination limit), and how the exporter's discovery and
// sweeps compare with the model's lower bound.
//
//   build/tests/model_bench                 # the 1024-host fabric, the grid of assumed parameters
//   build/tests/model_bench --fabric 16k    # the 16k-host three-tier fabric
//   build/tests/model_bench --service 100 --queue 4 --seconds 32
//
// The lower bound of a phase is the largest of: the busiest agent's work,
// the MADs over the local send rate, and for each kind of MAD the sum of
// its round trips on an idle fabric over its window. Directed-route SMPs
// all pass the exporter's own switch, so their effective window is the
// smaller of --mad.window.dr-smp and --mad.dr-per-switch (1 at the
// defaults); the ratio to the bound with the DR window alone (4) is printed
// beside it. The old engine is measured against the defaults' bounds.

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "collectors/health/subnet_managers.h"
#include "collectors/reads/sweep.h"
#include "tests/model/hardware_model.h"
#include "tests/testbed/fat_tree.h"
#include "topology/discovery.h"
#include "topology/partitions.h"
#include "topology/routing.h"
#include "transport/mad_engine.h"

namespace ibfabric {
namespace {

using Clock = transport::Clock;

testbed::FatTree Fabric(const std::string& which) {
  if (which == "16k") return testbed::FatTree::Generate(testbed::Spec16k());
  if (which == "small") return testbed::FatTree::Generate(testbed::Spec(8, 4, 8, 1, 36));
  return testbed::FatTree::Generate(testbed::Spec1k());
}

struct Phase {
  double seconds = 0;
  double bound = 0;             // with the effective windows
  double bound_configured = 0;  // with the configured ones (4 DR SMPs on the wire)
  model::ExporterLoad load;
  transport::KindCounts mads{};
};

// The windows a phase is measured against, the same for every mode: the
// engine's defaults with the command line's changes.
using Windows = std::array<int, transport::kMadKinds>;
struct Yardsticks {
  Windows configured{};  // the windows per kind as configured
  // Every directed route starts at the exporter's own switch (its HCA's
  // first hop), so no more directed-route SMPs are ever on the wire than
  // one switch may carry: the smaller of the DR window and dr_per_switch.
  Windows effective{};
};

Yardsticks YardsticksOf(const transport::EngineOptions& o) {
  Yardsticks y{o.kind_window, o.kind_window};
  const std::size_t dr = static_cast<std::size_t>(transport::MadKind::kDirectedSmp);
  const int through = o.dr_per_switch > 0 ? o.dr_per_switch : o.per_destination;
  if (through > 0) y.effective[dr] = std::min(y.effective[dr], through);
  return y;
}

double Bound(const model::ExporterLoad& l, const model::ModelParams& p, const Windows& w) {
  double b = std::max(l.busiest_agent_seconds(), static_cast<double>(l.mads) / p.send_rate);
  for (std::size_t k = 0; k < transport::kMadKinds; ++k) b = std::max(b, l.unloaded_rtt_sum[k] / w[k]);
  return b;
}

// Runs `body` as one phase: model time it took, load, bound, MADs by kind.
template <typename F>
Phase Measure(model::HardwareModel& m, transport::MadEngine& e, const Yardsticks& y, F body) {
  m.ResetExporterStats();
  const auto before = e.stats().kinds;
  const auto start = m.Now();
  body();
  Phase p;
  p.seconds = std::chrono::duration<double>(m.Now() - start).count();
  p.load = m.load();
  p.bound = Bound(p.load, m.params(), y.effective);
  p.bound_configured = Bound(p.load, m.params(), y.configured);
  p.mads = transport::Since(before, e.stats().kinds);
  return p;
}

struct Outcome {
  model::SmStats sm;
  Phase discovery;  // graph and tables
  Phase graph;      // the directed-route walk alone
  Phase sweep;      // the last full sweep
  int sweeps = 0;
  std::uint64_t exporter_dropped = 0;
  int peak_queued = 0;
  int peak_per_destination = 0;
};

enum class Mode { kNone, kDefault, kLegacy };

struct Knobs {
  double seconds = 32;
  double sweep_interval = 10;  // the exporter's default --sweep.interval; 0: back to back
  int per_destination = -1;    // -1: the engine's default
  int dr_window = -1;
  int dr_per_switch = -1;
};

transport::EngineOptions WithKnobs(transport::EngineOptions o, const Knobs& knobs) {
  if (knobs.per_destination >= 0) o.per_destination = knobs.per_destination;
  if (knobs.dr_window > 0) o.kind_window[0] = knobs.dr_window;
  if (knobs.dr_per_switch >= 0) o.dr_per_switch = knobs.dr_per_switch;
  return o;
}

Outcome Run(const testbed::FatTree& tree, const model::ModelParams& params, Mode mode, const Knobs& knobs) {
  using Duration = Clock::TimePoint::duration;
  const auto secs = [](double s) { return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s)); };
  const std::string local = tree.Host(1);
  const std::string sm_host = tree.Host(static_cast<int>(tree.hosts().size()));
  // The SM comes up with a heavy sweep as the exporter starts discovering,
  // and sweeps heavily again (a fabric change) as the exporter's first
  // periodic sweep starts: the two overlap in both phases.
  model::HardwareModel m(tree, local, sm_host, params);
  const auto start = m.Now();
  const auto end = start + secs(knobs.seconds);
  const auto change_at = start + secs(knobs.sweep_interval > 0 ? knobs.sweep_interval : 2);
  Outcome out;
  if (mode == Mode::kNone) {
    m.AdvanceTo(change_at);
    m.StartHeavySweep();
    m.AdvanceTo(end);
  } else {
    const transport::EngineOptions defaults = WithKnobs(transport::EngineOptions{}, knobs);
    const Yardsticks yardsticks = YardsticksOf(defaults);
    transport::EngineOptions o =
        mode == Mode::kDefault ? defaults : transport::EngineOptions::Legacy(128, std::chrono::milliseconds(100), 2);
    o.clock = &m;
    transport::MadEngine engine(m, o);
    topology::DiscoveryResult d;
    collectors::CapabilityMap caps;
    out.graph = Measure(m, engine, yardsticks, [&] { d = topology::Discover(engine); });
    const Phase tables = Measure(m, engine, yardsticks, [&] {
      const auto si = topology::ReadSwitchInfo(d.fabric, engine);
      topology::ReadForwardingTables(d.fabric, si.switch_info, engine);
      topology::ReadPartitions(d.fabric, si.switch_info, engine);
      caps = collectors::ReadCapabilities(d.fabric, engine);
    });
    // Sequential phases: the sum of their bounds bounds the whole.
    out.discovery = tables;
    out.discovery.seconds += out.graph.seconds;
    out.discovery.bound += out.graph.bound;
    out.discovery.bound_configured += out.graph.bound_configured;
    for (std::size_t k = 0; k < transport::kMadKinds; ++k) out.discovery.mads[k] += out.graph.mads[k];
    out.peak_queued = std::max(out.graph.load.peak_queued, tables.load.peak_queued);
    const auto targets = collectors::SweepTargets(d.fabric, {}, caps);
    const auto links = collectors::LinkTargets(d.fabric);
    const auto sms = collectors::SmTargets(d.fabric);
    bool changed = false;
    auto next = knobs.sweep_interval > 0 ? change_at : m.Now();
    while (next < end) {
      m.AdvanceTo(next);
      if (!changed && m.Now() >= change_at) {
        m.StartHeavySweep();
        changed = true;
      }
      out.sweep = Measure(m, engine, yardsticks, [&] {
        collectors::Sweep(targets, links, collectors::LidChecks(targets, links), engine);
        collectors::ReadSubnetManagers(sms, sms.empty() ? 0 : sms.front().lid, engine);
      });
      ++out.sweeps;
      out.exporter_dropped += out.sweep.load.dropped;
      out.peak_queued = std::max(out.peak_queued, out.sweep.load.peak_queued);
      next = knobs.sweep_interval > 0 ? next + secs(knobs.sweep_interval) : m.Now();
    }
    out.exporter_dropped += out.graph.load.dropped + tables.load.dropped;
    out.peak_per_destination = engine.stats().peak_per_destination;
    m.AdvanceTo(end);
  }
  // Let the SM finish the sweep it is in, the same way in every mode.
  m.AdvanceTo(m.Now() + std::chrono::seconds(5));
  out.sm = m.sm();
  return out;
}

void Print(const char* label, const Outcome& o, bool exporter, int dr_window) {
  std::printf(
      "  %-8s SM: sent %7llu dropped %5llu timeouts %5llu failed %3llu  heavy %7.3f s  light %6.3f s (max %6.3f)",
      label, static_cast<unsigned long long>(o.sm.sent), static_cast<unsigned long long>(o.sm.dropped),
      static_cast<unsigned long long>(o.sm.timeouts), static_cast<unsigned long long>(o.sm.failed), o.sm.mean_heavy(),
      o.sm.mean_light(), o.sm.light_sweep_seconds_max);
  std::printf("\n");
  if (!exporter) return;
  auto phase = [dr_window](const char* name, const Phase& p) {
    const transport::KindStats all = transport::Total(p.mads);
    std::printf(
        "           %-9s %8.3f s  bound %8.3f s  ratio %5.2f (%5.2f to %d DR on the wire)  MADs %7llu (dr %llu, lid "
        "%llu, gmp %llu)  retries %llu  timeouts %llu\n",
        name, p.seconds, p.bound, p.bound > 0 ? p.seconds / p.bound : 0,
        p.bound_configured > 0 ? p.seconds / p.bound_configured : 0, dr_window,
        static_cast<unsigned long long>(all.sent), static_cast<unsigned long long>(p.mads[0].sent),
        static_cast<unsigned long long>(p.mads[1].sent), static_cast<unsigned long long>(p.mads[2].sent),
        static_cast<unsigned long long>(all.retries), static_cast<unsigned long long>(all.timeouts));
  };
  phase("graph", o.graph);
  phase("discovery", o.discovery);
  phase("sweep", o.sweep);
  std::printf(
      "           %d sweeps; exporter MADs dropped at agents %llu; most of ours at one agent %d; engine peak to one "
      "node %d\n",
      o.sweeps, static_cast<unsigned long long>(o.exporter_dropped), o.peak_queued, o.peak_per_destination);
}

int Main(int argc, char** argv) {
  std::string fabric = "1k";
  std::vector<int> services{20, 100, 200};
  std::vector<int> queues{2, 4, 16};
  Knobs knobs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "model_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--fabric") {
      fabric = next();
    } else if (a == "--service") {
      services = {std::stoi(next())};
    } else if (a == "--queue") {
      queues = {std::stoi(next())};
    } else if (a == "--seconds") {
      knobs.seconds = std::stod(next());
    } else if (a == "--sweep-interval") {
      knobs.sweep_interval = std::stod(next());
    } else if (a == "--per-destination") {
      knobs.per_destination = std::stoi(next());
    } else if (a == "--dr-per-switch") {
      knobs.dr_per_switch = std::stoi(next());
    } else if (a == "--dr-window") {
      knobs.dr_window = std::stoi(next());
    } else {
      std::fprintf(stderr,
                   "model_bench: unknown argument %s (--fabric 1k|16k|small, --service US, --queue N, --seconds S, "
                   "--sweep-interval S, --per-destination N, --dr-per-switch N, --dr-window N)\n",
                   a.c_str());
      return 2;
    }
  }
  const auto tree = Fabric(fabric);
  {
    model::HardwareModel probe(tree, tree.Host(1), "", {});
    std::printf("fabric %s: %zu nodes (%zu switches), %zu connected ports; %.0f s of model time per run\n",
                fabric.c_str(), probe.nodes(), probe.switches(), probe.ports(), knobs.seconds);
  }
  const model::ModelParams base;
  std::printf(
      "fixed: hca service %lld us, hca queue %d, hop %lld us, send rate %.0f/s, jitter %.0f%%; SM: window %d, timeout "
      "%lld ms, %d retries, light sweep every %lld s\n",
      static_cast<long long>(base.hca_service.count()), base.hca_queue,
      static_cast<long long>(base.hop_latency.count()), base.send_rate, base.jitter * 100, base.sm_window,
      static_cast<long long>(base.sm_timeout.count()), base.sm_retries,
      static_cast<long long>(base.sm_light_sweep_interval.count() / 1000));
  for (int service : services) {
    for (int queue : queues) {
      model::ModelParams p;
      p.switch_service = std::chrono::microseconds(service);
      p.switch_queue = queue;
      std::printf("\nswitch agent: service %d us, queue %d\n", service, queue);
      const int dr_window = WithKnobs(transport::EngineOptions{}, knobs).kind_window[0];
      Print("no exp.", Run(tree, p, Mode::kNone, knobs), false, dr_window);
      const Outcome defaults = Run(tree, p, Mode::kDefault, knobs);
      Print("default", defaults, true, dr_window);
      // The old engine's retries inflate its own load: measure it against
      // the bounds of the same work done at the defaults.
      Outcome old = Run(tree, p, Mode::kLegacy, knobs);
      for (auto [mine, theirs] :
           {std::pair{&old.graph, &defaults.graph}, std::pair{&old.discovery, &defaults.discovery},
            std::pair{&old.sweep, &defaults.sweep}}) {
        mine->bound = theirs->bound;
        mine->bound_configured = theirs->bound_configured;
      }
      Print("old", old, true, dr_window);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace ibfabric

int main(int argc, char** argv) { return ibfabric::Main(argc, argv); }
