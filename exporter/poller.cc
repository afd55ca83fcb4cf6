#include "exporter/poller.h"

#include <condition_variable>
#include <mutex>

#include "collectors/metrics.h"
#include "topology/discovery.h"
#include "topology/routing.h"

namespace ibfabric::exporter {

namespace {
double SecondsOf(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}
}  // namespace

Poller::Poller(transport::MadEngine& engine, PollerOptions options, SnapshotHolder& holder,
               Logger& log, collectors::PersistedState restored)
    : engine_(engine),
      options_(std::move(options)),
      holder_(holder),
      log_(log),
      fabric_(std::make_shared<topology::Fabric>()),
      nodes_(std::move(restored.nodes)),
      remembered_(std::move(restored.remembered)),
      link_health_({options_.alerts.window, options_.alerts.xmit_wait_tick_multiplier}),
      alerts_(options_.alerts),
      sm_monitor_(options_.subnet_managers) {
  store_.Restore(std::move(restored.ports));
  Publish();  // so /metrics answers (with restored totals, stale) before the first sweep
}

void Poller::Discover() {
  const auto start = std::chrono::steady_clock::now();
  const transport::KindCounts mads_before = engine_.stats().kinds;
  topology::DiscoverOptions discover_options;
  if (options_.scope.kind == topology::ScopeKind::kLocal) discover_options.max_hops = 1;
  topology::DiscoveryResult r = topology::Discover(engine_, discover_options);
  // The SM's bound on packet lifetimes caps how long any answer can take.
  if (r.ok) engine_.SetSubnetTimeout(transport::ExpectedTime(r.subnet_timeout));
  ++discoveries_;
  discovery_.ran = true;
  discovery_.success = r.ok;
  discovery_problems_ = r.problems;
  for (const auto& p : r.problems) log_.Warn("discovery", "problem=\"" + p + "\"");
  if (!r.ok) {
    discovery_mads_ = transport::Since(mads_before, engine_.stats().kinds);
    discovery_.duration_seconds = SecondsOf(std::chrono::steady_clock::now() - start);
    discovery_.total_seconds += discovery_.duration_seconds;
    log_.Error("discovery failed; keeping the previous fabric");
    return;
  }
  fabric_ = std::make_shared<topology::Fabric>(topology::WithNames(r.fabric, options_.names));
  const bool everything = options_.scope.everything();
  if (!everything) in_scope_ = topology::PortsInScope(*fabric_, options_.scope, r.local_node_guid);
  for (const auto& node : fabric_->nodes()) {
    nodes_[node.guid] = collectors::NodeLabel{node.kind, node.description};
    if (node.kind != topology::NodeKind::kSwitch) continue;
    for (const auto& port : node.ports) {
      const topology::PortRef ref{node.guid, port.number};
      if (port.link_up() && (everything || in_scope_.count(ref))) remembered_.insert(ref);
    }
  }
  // Fabric-wide findings come from one exporter of a sharded set, and never
  // from a local one (it sees its neighbours only).
  topology::Analysis analysis = options_.scope.reports_topology() ? topology::Analyze(*fabric_) : topology::Analysis{};
  if (options_.plan && options_.scope.reports_topology()) {
    for (auto& f : topology::DiffAgainstPlan(*fabric_, *options_.plan, analysis)) {
      if (f.kind == topology::FindingKind::kPlanRateMismatch && f.a && f.b) {
        analysis.degraded[topology::CableBetween(*f.a, *f.b)] = f.kind;
      }
      analysis.findings.push_back(std::move(f));
    }
  }
  if (options_.scope.reports_topology()) {
    // The forwarding tables, read once per discovery: routing balance,
    // unrouted destinations, down-up routes (topology/routing.h).
    const auto lft = topology::ReadForwardingTables(*fabric_, engine_);
    for (const auto& p : lft.problems) {
      log_.Warn("routing", "problem=\"" + p + "\"");
      discovery_problems_.push_back(p);
    }
    topology::AnalyzeRouting(*fabric_, lft.tables, &analysis);
    // The partitions of the CA ports and of the switch ports facing them
    // (topology/partitions.h).
    const auto pkeys = topology::ReadPartitions(*fabric_, lft.switch_info, engine_);
    for (const auto& p : pkeys.problems) {
      log_.Warn("partitions", "problem=\"" + p + "\"");
      discovery_problems_.push_back(p);
    }
    topology::AnalyzePartitions(*fabric_, pkeys.tables, options_.partition_plan ? &*options_.partition_plan : nullptr,
                                &analysis);
  }
  analysis_ = std::make_shared<topology::Analysis>(std::move(analysis));
  if (!analysis_->is_tree) log_.Warn("topology", "not_a_tree=\"" + analysis_->not_tree_reason + "\"");
  for (const auto& f : analysis_->findings) {
    log_.Info("topology finding", std::string("kind=") + topology::ToString(f.kind) + " detail=\"" + f.detail + "\"");
  }
  // What each PMA supports decides what is asked and what is exported.
  std::set<std::uint64_t> scope_nodes;
  for (const auto& ref : in_scope_) scope_nodes.insert(ref.node_guid);
  caps_ = collectors::ReadCapabilities(*fabric_, engine_, everything ? nullptr : &scope_nodes);
  discovery_mads_ = transport::Since(mads_before, engine_.stats().kinds);
  discovery_.duration_seconds = SecondsOf(std::chrono::steady_clock::now() - start);
  discovery_.total_seconds += discovery_.duration_seconds;
  log_.Info("discovery done", "switches=" + std::to_string(fabric_->switch_count()) +
                                  " hcas=" + std::to_string(fabric_->ca_count()) +
                                  " smps=" + std::to_string(r.smps) +
                                  " seconds=" + std::to_string(discovery_.duration_seconds));
}

Poller::Absorbed Poller::Absorb(const collectors::SweepResult& sweep,
                                std::chrono::system_clock::time_point wall) {
  Absorbed a;
  std::map<std::uint64_t, bool> node_ok;  // node -> any of its ports answered
  std::set<topology::PortRef> targeted;
  const std::size_t ld = collectors::Index(collectors::Counter::kLinkDowned);
  for (const auto& r : sweep.readings) {
    targeted.insert(r.target.port);
    bool& ok = node_ok[r.target.port.node_guid];
    if (!r.sample) {
      store_.MarkStale(r.target.port);
      if (known_failing_.insert(r.target.port).second) ++a.newly_failing;
      continue;
    }
    ok = true;
    known_failing_.erase(r.target.port);
    auto it = store_.ports().find(r.target.port);
    if (it != store_.ports().end() && it->second.present.test(ld) && r.sample->present.test(ld) &&
        r.sample->value[ld] != it->second.last_raw[ld]) {
      a.link_flapped = true;
    }
    store_.Update(r.target.port, *r.sample, wall);
  }
  for (const auto& [guid, ok] : node_ok) {
    collectors::NodeHealth& h = health_[guid];
    h.stale = !ok;
    if (ok) {
      h.last_success = wall;
    } else {
      ++h.failures;
    }
  }
  // Ports and nodes read before that are no target now (they vanished).
  for (const auto& [ref, totals] : store_.ports()) {
    if (!targeted.count(ref)) store_.MarkStale(ref);
  }
  for (auto& [guid, h] : health_) {
    if (!node_ok.count(guid)) h.stale = true;
  }
  return a;
}

bool Poller::Cycle() {
  const auto now = std::chrono::steady_clock::now();
  if (rediscover_ || now >= next_discovery_) {
    Discover();
    rediscover_ = !discovery_.success;
    next_discovery_ = now + options_.discovery_interval;
  }
  auto targets = collectors::SweepTargets(*fabric_, remembered_, caps_);
  auto links = collectors::LinkTargets(*fabric_);
  if (!options_.scope.everything()) {
    const auto out = [this](const auto& t) { return !in_scope_.count(t.port) && !remembered_.count(t.port); };
    std::erase_if(targets, out);
    std::erase_if(links, out);
  }
  const transport::KindCounts mads_before = engine_.stats().kinds;
  const collectors::SweepResult sweep = collectors::Sweep(targets, links, engine_);
  const auto wall = std::chrono::system_clock::now();
  const Absorbed absorbed = Absorb(sweep, wall);
  Judge(sweep, std::chrono::steady_clock::now(), wall);
  // One exporter of a set watches the SMs: the one that reports topology.
  if (options_.scope.reports_topology()) WatchSubnetManagers(std::chrono::steady_clock::now(), wall);

  ++sweeps_;
  targets_ = targets.size();
  failed_ports_ = sweep.failed_ports;
  port_counters_.ran = true;
  port_counters_.duration_seconds = sweep.duration.count();
  port_counters_.total_seconds += port_counters_.duration_seconds;
  port_counters_.success = !targets.empty() && sweep.failed_ports < targets.size();
  if (port_counters_.success) last_success_ = wall;

  // What makes the next cycle rediscover the fabric.
  if (!sweep.moved_nodes.empty()) {
    lid_moves_ += sweep.moved_nodes.size();
    log_.Warn("LIDs answer for other nodes; rediscovering",
              "nodes=" + std::to_string(sweep.moved_nodes.size()));
    rediscover_ = true;
  }
  if (absorbed.newly_failing > 0) {
    log_.Warn("sweep: ports stopped answering; rediscovering",
              "newly_failing=" + std::to_string(absorbed.newly_failing) + " failed=" +
                  std::to_string(sweep.failed_ports) + " targets=" + std::to_string(targets.size()));
    rediscover_ = true;
  }
  if (absorbed.link_flapped) {
    log_.Info("a LinkDownedCounter moved; rediscovering");
    rediscover_ = true;
  }
  if (const auto changed = collectors::CompareLinks(*fabric_, sweep.links); changed.any()) {
    log_.Info("switch ports changed state; rediscovering",
              "came_up=" + std::to_string(changed.came_up) + " went_down=" + std::to_string(changed.went_down) +
                  " retrained=" + std::to_string(changed.retrained));
    rediscover_ = true;
  }
  if (options_.clear_threshold_percent > 0) ClearSaturated(sweep);
  sweep_mads_ = transport::Since(mads_before, engine_.stats().kinds);

  log_.Debug("sweep done", "ports=" + std::to_string(targets.size()) +
                               " seconds=" + std::to_string(port_counters_.duration_seconds));
  Publish();

  // Not even the local port answered discovery: count towards transport down.
  local_down_cycles_ = discovery_.ran && !discovery_.success ? local_down_cycles_ + 1 : 0;
  if (local_down_cycles_ >= options_.transport_down_cycles && options_.on_transport_down) {
    options_.on_transport_down();
  }
  return port_counters_.success;
}

void Poller::WatchSubnetManagers(std::chrono::steady_clock::time_point now,
                                 std::chrono::system_clock::time_point wall) {
  const auto readings = collectors::ReadSubnetManagers(collectors::SmTargets(*fabric_), engine_);
  const auto before = sm_report_;
  sm_monitor_.Update(readings, *fabric_, now, wall);
  sm_report_ = std::make_shared<const collectors::SmReport>(sm_monitor_.Report());
  // Conditions as they start; a failover is one of them.
  std::set<collectors::SmCondition> had;
  if (before) {
    for (const auto& c : before->conditions) had.insert(c.condition);
  }
  for (const auto& c : sm_report_->conditions) {
    if (had.count(c.condition)) continue;
    log_.Warn("subnet manager", std::string("condition=") + collectors::ToString(c.condition) + " severity=" +
                                    collectors::ToString(c.severity) + " summary=\"" + c.summary + "\"");
  }
}

void Poller::ClearSaturated(const collectors::SweepResult& sweep) {
  std::vector<collectors::ClearRequest> reqs;
  for (const auto& r : sweep.readings) {
    if (!r.sample) continue;
    if (auto c = collectors::ClearNeeded(r.target, *r.sample, options_.clear_threshold_percent)) {
      reqs.push_back(*c);
    }
  }
  if (reqs.empty()) return;
  const auto ok = collectors::ClearCounters(reqs, engine_);
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    if (!ok[i]) continue;
    store_.NoteCleared(reqs[i].target.port, reqs[i].counters);
    ++clears_;
  }
  log_.Info("cleared counters near their maximum", "ports=" + std::to_string(reqs.size()));
}

std::string Poller::Describe(const topology::PortRef& port) const {
  auto it = nodes_.find(port.node_guid);
  const std::string name = it == nodes_.end() || it->second.name.empty() ? topology::FormatGuid(port.node_guid)
                                                                         : it->second.name;
  return name + "[" + std::to_string(port.port) + "]";
}

void Poller::Judge(const collectors::SweepResult& sweep, std::chrono::steady_clock::time_point now,
                   std::chrono::system_clock::time_point wall) {
  link_health_.Observe(*fabric_, analysis_.get(), store_.ports(), sweep.links, now, wall);
  auto report = std::make_shared<collectors::HealthReport>();
  report->cables = link_health_.Cables();
  alerts_.Evaluate(report->cables, analysis_.get(), wall,
                   [this](const topology::PortRef& p) { return Describe(p); });
  report->active = alerts_.Active();
  report->cleared.assign(alerts_.Cleared().begin(), alerts_.Cleared().end());
  report->raised = alerts_.Raised();
  report->window = options_.alerts.window;
  // Transitions, for the log.
  auto key = [](const collectors::Alert& a) { return std::make_pair(a.cable, a.cause); };
  std::set<std::pair<topology::Link, collectors::Cause>> before, after;
  if (health_report_) {
    for (const auto& a : health_report_->active) before.insert(key(a));
  }
  for (const auto& a : report->active) {
    after.insert(key(a));
    if (!before.count(key(a))) {
      log_.Warn("alert raised", std::string("cause=") + collectors::ToString(a.cause) + " severity=" +
                                    collectors::ToString(a.severity) + " summary=\"" + a.summary + "\"");
    }
  }
  if (health_report_) {
    for (const auto& a : health_report_->active) {
      if (!after.count(key(a))) {
        log_.Info("alert cleared", std::string("cause=") + collectors::ToString(a.cause) + " summary=\"" +
                                       a.summary + "\"");
      }
    }
  }
  health_report_ = std::move(report);
}

void Poller::Publish() {
  auto s = std::make_shared<collectors::Snapshot>();
  s->fabric = fabric_;
  s->topology = analysis_;
  s->scope = options_.scope;
  s->subnet_managers = sm_report_;
  s->ports = store_.ports();
  s->nodes = nodes_;
  s->node_health = health_;
  s->pma = caps_;
  s->health = health_report_;
  s->mad = engine_.stats();
  s->discovery = discovery_;
  s->port_counters = port_counters_;
  s->discovery_mads = discovery_mads_;
  s->sweep_mads = sweep_mads_;
  s->sweeps = sweeps_;
  s->discoveries = discoveries_;
  s->targets = targets_;
  s->failed_ports = failed_ports_;
  s->counter_clears = clears_;
  s->lid_moves = lid_moves_;
  s->last_success = last_success_;
  s->published = std::chrono::system_clock::now();
  s->discovery_problems = discovery_problems_;
  s->exposition = collectors::RenderExposition(*s, options_.version);
  holder_.Publish(std::move(s));
}

collectors::PersistedState Poller::SaveState() const {
  return collectors::PersistedState{store_.ports(), nodes_, remembered_};
}

void Poller::Run(std::stop_token stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  while (!stop.stop_requested()) {
    const auto next = std::chrono::steady_clock::now() + options_.sweep_interval;
    Cycle();
    std::unique_lock lock(mu);
    cv.wait_until(lock, stop, next, [] { return false; });
  }
}

}  // namespace ibfabric::exporter
