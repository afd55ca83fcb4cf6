#include "exporter/poller.h"

#include <malloc.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <ostream>
#include <set>
#include <string_view>

#include "collectors/metrics.h"
#include "exporter/gzip.h"

namespace ibfabric::exporter {
namespace {

// What malloc has handed out and not had back (glibc's count; mallinfo2
// walks malloc's free lists, so once per figure wanted).
std::size_t HeapInUse() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

double SecondsOf(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

Poller::Poller(transport::MadEngine& engine, PollerOptions options, SnapshotHolder& holder, collectors::Logger& log,
               collectors::PersistedState restored)
    : engine_(engine),
      options_(std::move(options)),
      log_(log),
      publisher_(holder, log, options_.version, options_.fabric_labels, options_.heap_trimmer),
      tracker_(engine, options_.fabric, log, std::move(restored.nodes), std::move(restored.remembered)),
      reads_(engine) {
  if (!options_.collectors) {
    options_.collectors.emplace();
    std::string unused;
    collectors::EnabledCollectors({}, &*options_.collectors, &unused);
  }
  options_.collector.restored_ports = std::move(restored.ports);
  options_.collector.restored = std::move(restored.collectors);
  for (const auto& name : *options_.collectors) {
    const collectors::CollectorInfo* info = collectors::FindCollector(name);
    if (!info) continue;  // the flags said which exist
    collectors_.push_back({info, info->make(options_.collector)});
    collectors_.back().collector->Publish(&parts_);
  }
  options_.collector.restored_ports = {};
  options_.collector.restored = {};
  parts_.collectors = *options_.collectors;
  parts_.local = options_.fabric.local;  // which MAD agents the collectors may use
  Publish();                             // so /metrics answers (with restored totals, stale) before the first sweep
}

bool Poller::Cycle() {
  log_.Debug("cycle started", "");
  const auto now = std::chrono::steady_clock::now();
  if (tracker_.ProbeDue()) {
    // SMPs dropped where GMPs answer (M_Key): checked instead of walked.
    const transport::KindCounts before = engine_.stats().kinds;
    tracker_.ProbeSmps();
    CountMads("discovery", before);
  }
  if (tracker_.WalkDue(now)) Discover(now);
  HandleReports();  // what arrived during the walk
  // Analyses a re-walk between sweeps (a trap's) put off: before the sweep,
  // so that it watches what they say.
  if (rewalked_) RunPending();
  // The sweep's readings are let go before the publication: what the
  // rendering and the heap trim after it see is what stays between sweeps
  // (their samples went after port_counters: RunSweepCollectors).
  const bool read_any = SweepOnce();
  Publish();
  // A full walk's tables, once its counters are served (then served too).
  if (RunDeferred()) Publish();

  // Not even the local port answered discovery: count towards transport down.
  // (A local node that drops SMPs but answers GMPs is there: M_Key.)
  local_down_cycles_ = discovery_.ran && !discovery_.success && !tracker_.smps_dropped() ? local_down_cycles_ + 1 : 0;
  if (local_down_cycles_ >= options_.transport_down_cycles && options_.on_transport_down) {
    options_.on_transport_down();
  }
  return read_any;
}

bool Poller::SweepOnce() {
  // One batch: the collectors' reads (counters), the tracker's PortInfo and
  // LID checks.
  collectors::SweepPlan plan;
  const collectors::Cycle planning = MakeCycle(collectors::Trigger::kSweep);
  for (Entry& e : collectors_) {
    if (e.collector->schedule() != collectors::Schedule::kSweep) continue;
    const std::size_t before = plan.counters.size() + plan.parts.size();
    e.collector->Plan(planning, &plan);
    e.in_batch = plan.counters.size() + plan.parts.size() > before;
  }
  FabricTracker::SweepReads reads = tracker_.PlanSweep(parts_);
  const std::size_t port_infos = reads.links.size();  // the local port's is no link's
  if (auto local = tracker_.LocalTarget()) reads.links.push_back(*local);
  const transport::KindCounts mads_before = engine_.stats().kinds;
  collectors::SweepResult sweep = collectors::Sweep(plan.counters, reads.links, reads.checks, engine_, plan.parts);
  sweep_seconds_ = sweep.duration.count();
  const FabricTracker::News news = tracker_.Observe(*parts_.ports, &sweep);
  const auto master_changes = [this] { return parts_.subnet_managers ? parts_.subnet_managers->master_changes : 0; };
  const std::uint64_t masters_before = master_changes();
  RunSweepCollectors(collectors::Trigger::kSweep, sweep, sweep_seconds_);
  const auto changes = tracker_.EndSweep(sweep, news, master_changes() != masters_before);
  sweep_mads_ = CountMads("sweep", mads_before);
  const transport::KindCounts subscribing = engine_.stats().kinds;
  tracker_.Subscribe(std::chrono::steady_clock::now(), parts_);
  CountMads("trap", subscribing);

  const bool read_any = !plan.counters.empty() && sweep.failed_ports < plan.counters.size();
  if (read_any) last_success_ = std::chrono::system_clock::now();
  Rewalk(changes);
  // Tables that did not answer and analyses a re-walk put off, once a
  // sweep whatever changed in it.
  RunPending();
  log_.Debug("sweep done",
             "ports=" + std::to_string(plan.counters.size()) + " port_infos=" + std::to_string(port_infos) +
                 " lid_checks=" + std::to_string(reads.checks.size()) + " seconds=" + std::to_string(sweep_seconds_));
  return read_any;
}

void Poller::Discover(std::chrono::steady_clock::time_point now) {
  const auto start = std::chrono::steady_clock::now();
  const transport::KindCounts before = engine_.stats().kinds;
  const FabricTracker::Walked walked = tracker_.Walk(now);
  // The graph (the walk: NodeInfo, NodeDescription, PortInfo) apart from
  // the tables the collectors read after it (forwarding and P_Key tables,
  // SwitchInfo, ClassPortInfo): what ibnetdiscover does, and the rest.
  const auto graph_done = std::chrono::steady_clock::now();
  const transport::KindStats graph = transport::Total(transport::Since(before, engine_.stats().kinds));
  discovery_.ran = true;
  discovery_.success = walked.ok;
  collectors::DiscoveryPhases phases;
  phases.walk_seconds = SecondsOf(graph_done - start);
  if (walked.ok) RunDiscoveryCollectors(walked, &phases);
  discovery_mads_ = CountMads("discovery", before);
  discovery_.duration_seconds = SecondsOf(std::chrono::steady_clock::now() - start);
  discovery_.total_seconds += discovery_.duration_seconds;
  if (!walked.ok) return;
  phases.ran = true;
  discovery_phases_ = phases;
  const std::uint64_t tables_mads = transport::Total(discovery_mads_).sent - graph.sent;
  log_.Info("discovery done",
            "mode=full " + walked.summary + " seconds=" + std::to_string(discovery_.duration_seconds) +
                " graph_seconds=" + std::to_string(SecondsOf(graph_done - start)) +
                " graph_mads=" + std::to_string(graph.sent) +
                " tables_seconds=" + std::to_string(SecondsOf(std::chrono::steady_clock::now() - graph_done)) +
                " tables_mads=" + std::to_string(tables_mads) + " heap_in_use_bytes=" + std::to_string(HeapInUse()));
}

void Poller::Rewalk(const std::vector<topology::PortChange>& changes) {
  const auto start = std::chrono::steady_clock::now();
  const transport::KindCounts before = engine_.stats().kinds;
  const std::optional<FabricTracker::Walked> walked = tracker_.Rewalk(changes);
  if (!walked) return;
  if (walked->ok) {
    RunDiscoveryCollectors(*walked);
    rewalked_ = true;
  }
  const transport::KindCounts used = CountMads("rewalk", before);
  log_.Info("discovery done", "mode=incremental " + walked->summary + " dr_smps=" + std::to_string(used[0].sent) +
                                  " smps=" + std::to_string(used[0].sent + used[1].sent) +
                                  " seconds=" + std::to_string(SecondsOf(std::chrono::steady_clock::now() - start)));
}

bool Poller::HandleReports() {
  const transport::KindCounts before = engine_.stats().kinds;
  const std::optional<FabricTracker::TrapReads> trap = tracker_.TakeReports();
  if (!trap) return false;
  if (!trap->links.empty()) {
    collectors::SweepResult reread = collectors::Sweep({}, trap->links, {}, engine_);
    CountMads("trap", before);  // the re-walk counts apart
    // A link that went down is reported now, not at the next sweep.
    RunSweepCollectors(collectors::Trigger::kTrap, reread, 0);
    Rewalk(tracker_.ChangesOf(*trap, reread));
  }
  Publish();
  return true;
}

collectors::Cycle Poller::MakeCycle(collectors::Trigger trigger) {
  collectors::Cycle c;
  c.trigger = trigger;
  c.engine = &engine_;
  c.fabric = tracker_.fabric().get();
  c.fabric_generation = tracker_.fabric_generation();
  c.scope = tracker_.scope();
  c.master_sm_lid = tracker_.master_sm_lid();
  c.sa_lid = tracker_.sa_lid();
  c.reaches_fabric = tracker_.reaches_fabric();
  c.smps_blocked = tracker_.smps_blocked();
  c.now = std::chrono::steady_clock::now();
  c.wall = std::chrono::system_clock::now();
  c.parts = &parts_;
  c.reads = &reads_;
  c.log = &log_;
  c.in_scope = [this](const topology::Node& n) { return tracker_.InScope(n); };
  c.read_port = [this](const topology::PortRef& p) { return tracker_.ReadsPort(p); };
  c.remembered = &tracker_.remembered();
  c.name_of = [this](std::uint64_t g) { return tracker_.NameOf(g); };
  c.describe = [this](const topology::PortRef& p) { return tracker_.Describe(p); };
  return c;
}

collectors::Cycle Poller::CycleOf(const FabricTracker::Walked& walked) {
  collectors::Cycle cycle = MakeCycle(walked.trigger);
  cycle.fresh = walked.fresh;
  cycle.gone = walked.gone;
  return cycle;
}

void Poller::RunCollector(Entry& e, const collectors::Cycle& cycle, double batch_seconds) {
  const auto start = std::chrono::steady_clock::now();
  const collectors::Outcome out = e.collector->Update(cycle);
  e.collector->Publish(&parts_);
  for (const auto& p : out.problems) log_.Warn(std::string(e.info->name), "problem=\"" + p + "\"");
  if (out.rediscover) tracker_.WalkNext();
  if (e.collector->schedule() == collectors::Schedule::kDiscovery) e.again = out.again;
  if (cycle.trigger == collectors::Trigger::kTrap) return;  // a re-read between sweeps is no run of its own
  collectors::PhaseHealth& run = parts_.runs[std::string(e.info->name)];
  run.ran = true;
  run.success = out.ok;
  run.duration_seconds = batch_seconds + SecondsOf(std::chrono::steady_clock::now() - start);
  run.total_seconds += run.duration_seconds;
}

void Poller::RunDiscoveryCollectors(const FabricTracker::Walked& walked, collectors::DiscoveryPhases* phases) {
  if (walked.trigger == collectors::Trigger::kFullWalk) {
    reads_.ForgetAll();
  } else {
    reads_.Forget(walked.fresh);
    reads_.Forget(walked.gone);
  }
  const collectors::Cycle cycle = CycleOf(walked);
  for (Entry& e : collectors_) {
    if (e.collector->schedule() != collectors::Schedule::kDiscovery) continue;
    if (walked.trigger == collectors::Trigger::kFullWalk && e.info->after_publication) {
      e.deferred = true;
      deferred_walk_ = walked;
      continue;
    }
    if (e.deferred) continue;  // a full walk's, not run yet: it reads this fabric then
    const std::uint64_t sent = transport::Total(engine_.stats().kinds).sent;
    RunCollector(e, cycle);
    if (!phases) continue;
    // One that asked the fabric read tables; one that did not analysed.
    const double took = parts_.runs[std::string(e.info->name)].duration_seconds;
    (transport::Total(engine_.stats().kinds).sent > sent ? phases->tables_seconds : phases->analysis_seconds) += took;
  }
}

bool Poller::RunDeferred() {
  if (!deferred_walk_) return false;
  const auto start = std::chrono::steady_clock::now();
  const transport::KindCounts before = engine_.stats().kinds;
  const collectors::Cycle cycle = CycleOf(*deferred_walk_);
  for (Entry& e : collectors_) {
    if (!e.deferred) continue;
    e.deferred = false;
    RunCollector(e, cycle);
  }
  deferred_walk_.reset();
  const double took = SecondsOf(std::chrono::steady_clock::now() - start);
  discovery_phases_.tables_seconds += took;
  const transport::KindCounts used = CountMads("discovery", before);
  for (std::size_t k = 0; k < used.size(); ++k) discovery_mads_[k] += used[k];
  log_.Info("discovery tables done",
            "seconds=" + std::to_string(took) + " mads=" + std::to_string(transport::Total(used).sent));
  return true;
}

void Poller::RunPending() {
  // Their tables are SMPs; the walk after the fabric answers them again
  // runs them all (rewalked_ stays: the analyses a re-walk put off, then).
  if (tracker_.smps_blocked()) return;
  const transport::KindCounts before = engine_.stats().kinds;
  const collectors::Cycle cycle = MakeCycle(collectors::Trigger::kSweep);
  // Those that asked, and those that read the part of one that ran here
  // (it may have changed: a table that answered late).
  std::set<std::string_view> ran;
  for (Entry& e : collectors_) {
    if (e.collector->schedule() != collectors::Schedule::kDiscovery) continue;
    const bool reads_fresh =
        std::any_of(e.info->reads.begin(), e.info->reads.end(), [&](std::string_view r) { return ran.count(r) > 0; });
    if (e.deferred || (!e.again && !reads_fresh)) continue;
    RunCollector(e, cycle);
    ran.insert(e.info->name);
  }
  CountMads("rewalk", before);
  rewalked_ = false;
}

void Poller::RunSweepCollectors(collectors::Trigger trigger, collectors::SweepResult& sweep, double batch_seconds) {
  collectors::Cycle cycle = MakeCycle(trigger);
  cycle.sweep = &sweep;
  // The samples go once the last collector that reads them has run: the
  // rest add their own parts while the last snapshot still holds its own.
  auto readers =
      std::count_if(collectors_.begin(), collectors_.end(), [](const Entry& e) { return e.info->reads_samples; });
  if (readers == 0) sweep.ReleaseSamples();
  for (Entry& e : collectors_) {
    // The batch's time is theirs who put reads in it.
    if (e.collector->schedule() == collectors::Schedule::kSweep) RunCollector(e, cycle, e.in_batch ? batch_seconds : 0);
    if (e.info->reads_samples && --readers == 0) sweep.ReleaseSamples();
  }
}

transport::KindCounts Poller::CountMads(const std::string& phase, const transport::KindCounts& before) {
  const transport::KindCounts used = transport::Since(before, engine_.stats().kinds);
  transport::KindCounts& total = phase_mads_[phase];
  for (std::size_t k = 0; k < transport::kMadKinds; ++k) total[k] += used[k];
  return used;
}

void Poller::Publish() {
  auto s = std::make_shared<collectors::Snapshot>(parts_);
  tracker_.Publish(s.get());
  s->mad = engine_.stats();
  s->discovery = discovery_;
  s->discovery_phases = discovery_phases_;
  s->sweep_seconds = sweep_seconds_;
  s->discovery_mads = discovery_mads_;
  s->sweep_mads = sweep_mads_;
  s->phase_mads = phase_mads_;
  s->last_success = last_success_;
  s->published = std::chrono::system_clock::now();
  if (options_.http) s->http_errors = options_.http->Errors();
  // Of several fabrics, the one the endpoint's counts go with says them.
  s->http_known = options_.http != nullptr || options_.fabric_labels.empty();
  if (options_.collector.port_groups_auto) {
    std::size_t ports = 0;
    if (s->fabric) {
      for (const auto& n : s->fabric->nodes()) ports += n.ports.size();
    }
    s->port_groups = collectors::AutoPortGroups(ports);
  } else {
    s->port_groups = options_.collector.port_groups;
  }
  publisher_.Publish(std::move(s));
}

collectors::PersistedState Poller::SaveState() const {
  collectors::PersistedState state{*parts_.ports, tracker_.nodes(), tracker_.remembered(), {}};
  for (const auto& c : collectors_) {
    if (auto saved = c.collector->Saved()) state.collectors[std::string(c.info->name)] = std::move(*saved);
  }
  return state;
}

void Poller::Run(std::stop_token stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  // Reports are waited for in slices, so a stop request is seen soon.
  constexpr auto kSlice = std::chrono::milliseconds(200);
  while (!stop.stop_requested()) {
    const auto next = std::chrono::steady_clock::now() + options_.fabric.sweep_interval;
    Cycle();
    while (!stop.stop_requested()) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= next) break;
      if (!tracker_.subscribed()) {
        std::unique_lock lock(mu);
        cv.wait_until(lock, stop, next, [] { return false; });
        continue;
      }
      const auto slice = std::min<std::chrono::steady_clock::duration>(next - now, kSlice);
      if (engine_.WaitForReports(std::chrono::duration_cast<std::chrono::microseconds>(slice))) {
        HandleReports();
      } else if (std::chrono::steady_clock::now() < now + slice / 2) {
        // The port gave up early (an error, not a timeout): wait out the
        // slice rather than spin on it.
        std::unique_lock lock(mu);
        cv.wait_until(lock, stop, now + slice, [] { return false; });
      }
    }
  }
}

}  // namespace ibfabric::exporter
