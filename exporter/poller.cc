#include "exporter/poller.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "collectors/metrics.h"
#include "topology/discovery.h"
#include "topology/merge.h"

namespace ibfabric::exporter {

namespace {
double SecondsOf(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Traps subscribed to (transport/attributes.h trap).
constexpr std::uint16_t kTraps[] = {transport::trap::kGidInService, transport::trap::kGidOutOfService,
                                    transport::trap::kLinkStateChange, transport::trap::kLocalChange};
// Sweeps a changed port stays watched, and how many changes at once a
// re-walk takes on before a full walk is the better deal.
constexpr int kRecentSweeps = 6;
constexpr std::size_t kMaxRewalk = 64;
// A re-walk whose far end did not answer is asked again this many times.
constexpr int kRewalkRetries = 5;
// Sweeps before a port that stopped answering is re-walked for that again
// (doubling while it stays silent, up to kSilentHoldMax).
constexpr std::uint64_t kSilentHold = 10;
constexpr std::uint64_t kSilentHoldMax = 640;

void AddPhase(transport::KindCounts* total, const transport::KindCounts& add) {
  for (std::size_t k = 0; k < transport::kMadKinds; ++k) (*total)[k] += add[k];
}
}  // namespace

Poller::Poller(transport::MadEngine& engine, PollerOptions options, SnapshotHolder& holder, collectors::Logger& log,
               collectors::PersistedState restored)
    : engine_(engine),
      options_(std::move(options)),
      holder_(holder),
      log_(log),
      reads_(engine),
      fabric_(std::make_shared<topology::Fabric>()),
      nodes_(std::move(restored.nodes)),
      remembered_(std::move(restored.remembered)) {
  if (!options_.collectors) {
    options_.collectors.emplace();
    std::string unused;
    collectors::EnabledCollectors({}, &*options_.collectors, &unused);
  }
  options_.collector.restored_ports = std::move(restored.ports);
  for (const auto& name : *options_.collectors) {
    const collectors::CollectorInfo* info = collectors::FindCollector(name);
    if (!info) continue;  // the flags said which exist
    collectors_.push_back({info, info->make(options_.collector)});
    collectors_.back().collector->Publish(&parts_);
  }
  options_.collector.restored_ports.clear();
  parts_.collectors = *options_.collectors;
  Publish();  // so /metrics answers (with restored totals, stale) before the first sweep
}

collectors::Cycle Poller::MakeCycle(collectors::Trigger trigger) {
  collectors::Cycle c;
  c.trigger = trigger;
  c.engine = &engine_;
  c.fabric = fabric_.get();
  c.scope = options_.scope;
  c.now = std::chrono::steady_clock::now();
  c.wall = std::chrono::system_clock::now();
  c.parts = &parts_;
  c.reads = &reads_;
  c.log = &log_;
  c.in_scope = [this](const topology::Node& n) { return InScope(n); };
  c.read_port = [this](const topology::PortRef& p) { return ReadsPort(p); };
  c.remembered = &remembered_;
  c.name_of = [this](std::uint64_t g) { return NameOf(g); };
  c.describe = [this](const topology::PortRef& p) { return Describe(p); };
  return c;
}

void Poller::RunCollector(Entry& e, const collectors::Cycle& cycle, double batch_seconds) {
  const auto start = std::chrono::steady_clock::now();
  const collectors::Outcome out = e.collector->Update(cycle);
  e.collector->Publish(&parts_);
  for (const auto& p : out.problems) log_.Warn(std::string(e.info->name), "problem=\"" + p + "\"");
  if (out.rediscover) rediscover_ = true;
  if (e.collector->schedule() == collectors::Schedule::kDiscovery) e.again = out.again;
  if (cycle.trigger == collectors::Trigger::kTrap) return;  // a re-read between sweeps is no run of its own
  collectors::PhaseHealth& run = parts_.runs[std::string(e.info->name)];
  run.ran = true;
  run.success = out.ok;
  run.duration_seconds = batch_seconds + SecondsOf(std::chrono::steady_clock::now() - start);
  run.total_seconds += run.duration_seconds;
}

void Poller::RunDiscoveryCollectors(collectors::Trigger trigger, std::set<std::uint64_t> fresh,
                                    std::set<std::uint64_t> gone) {
  const bool walked = trigger != collectors::Trigger::kSweep;
  if (trigger == collectors::Trigger::kFullWalk) {
    reads_.ForgetAll();
  } else if (trigger == collectors::Trigger::kRewalk) {
    reads_.Forget(fresh);
    reads_.Forget(gone);
  }
  collectors::Cycle cycle = MakeCycle(trigger);
  cycle.fresh = std::move(fresh);
  cycle.gone = std::move(gone);
  for (Entry& e : collectors_) {
    if (e.collector->schedule() != collectors::Schedule::kDiscovery || (!walked && !e.again)) continue;
    RunCollector(e, cycle);
  }
}

void Poller::RunSweepCollectors(collectors::Trigger trigger, const collectors::SweepResult& sweep,
                                double batch_seconds) {
  collectors::Cycle cycle = MakeCycle(trigger);
  cycle.sweep = &sweep;
  for (Entry& e : collectors_) {
    if (e.collector->schedule() != collectors::Schedule::kSweep) continue;
    // The batch's time is theirs who put reads in it.
    RunCollector(e, cycle, e.in_batch ? batch_seconds : 0);
  }
}

void Poller::RunPending() {
  const transport::KindCounts before = engine_.stats().kinds;
  RunDiscoveryCollectors(collectors::Trigger::kSweep, {}, {});
  AddPhase(&phase_mads_["rewalk"], transport::Since(before, engine_.stats().kinds));
  rewalked_ = false;
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
  for (const auto& p : r.problems) log_.Warn("discovery", "problem=\"" + p + "\"");
  if (r.ok) {
    local_guid_ = r.local_node_guid;
    local_port_ = r.local_port;
    unanswered_ = r.unanswered.size();
    topology::MergeResult merged = topology::MergeWalk(*fabric_, r, &misses_);
    if (!r.unanswered.empty()) {
      ++incomplete_walks_;
      log_.Warn("discovery missed answers; merged into the last fabric",
                "unanswered=" + std::to_string(r.unanswered.size()) + " kept_facts=" +
                    std::to_string(merged.kept.size()) + " kept_nodes=" + std::to_string(merged.kept_nodes.size()));
      for (const auto& line : merged.kept) log_.Debug("discovery kept", "what=\"" + line + "\"");
    }
    for (std::uint64_t g : merged.dropped) {
      log_.Info("node left the fabric", "guid=" + topology::FormatGuid(g) + " name=\"" + NameOf(g) + "\"");
    }
    Adopt(merged.fabric, &r.unanswered);
    // Everything is read again; what does not answer keeps what it had (a
    // lost MAD is no reason to forget a table), nodes gone lose theirs.
    std::set<std::uint64_t> all;
    for (const auto& node : fabric_->nodes()) all.insert(node.guid);
    RunDiscoveryCollectors(collectors::Trigger::kFullWalk, std::move(all), {});
    subscribe_due_ = true;
    check_all_lids_ = false;  // the walk just read every LID's owner
  } else {
    log_.Error("discovery failed; keeping the previous fabric");
  }
  discovery_mads_ = transport::Since(mads_before, engine_.stats().kinds);
  AddPhase(&phase_mads_["discovery"], discovery_mads_);
  discovery_.duration_seconds = SecondsOf(std::chrono::steady_clock::now() - start);
  discovery_.total_seconds += discovery_.duration_seconds;
  if (!r.ok) return;
  log_.Info("discovery done", "mode=full switches=" + std::to_string(fabric_->switch_count()) +
                                  " hcas=" + std::to_string(fabric_->ca_count()) + " smps=" + std::to_string(r.smps) +
                                  " seconds=" + std::to_string(discovery_.duration_seconds));
}

topology::Fabric Poller::Named(const topology::Fabric& walked, const topology::Unanswered* unanswered) const {
  if (!unanswered || unanswered->descriptions.empty()) return walked;
  std::vector<topology::Node> nodes = walked.nodes();
  for (auto& n : nodes) {
    if (!n.description.empty() || !unanswered->descriptions.count(n.guid)) continue;
    auto it = nodes_.find(n.guid);
    if (it != nodes_.end()) n.description = it->second.name;
  }
  return topology::Fabric(std::move(nodes));
}

void Poller::Adopt(const topology::Fabric& walked, const topology::Unanswered* unanswered) {
  fabric_ = std::make_shared<topology::Fabric>(topology::WithNames(Named(walked, unanswered), options_.names));
  const bool everything = options_.scope.everything();
  if (!everything) in_scope_ = topology::PortsInScope(*fabric_, options_.scope, local_guid_);
  for (const auto& node : fabric_->nodes()) {
    nodes_[node.guid] = collectors::NodeLabel{node.kind, node.description};
    if (node.kind != topology::NodeKind::kSwitch) continue;
    for (const auto& port : node.ports) {
      const topology::PortRef ref{node.guid, port.number};
      if (port.link_up() && (everything || in_scope_.count(ref))) remembered_.insert(ref);
    }
  }
}

bool Poller::ReadsPort(const topology::PortRef& port) const {
  return options_.scope.everything() || in_scope_.count(port) > 0 || remembered_.count(port) > 0;
}

bool Poller::InScope(const topology::Node& node) const {
  if (options_.scope.everything()) return true;
  for (const auto& p : node.ports) {
    if (in_scope_.count({node.guid, p.number})) return true;
  }
  return false;
}

void Poller::Rewalk(const std::vector<topology::PortChange>& changes) {
  if (changes.empty()) return;
  if (options_.scope.kind == topology::ScopeKind::kLocal) {
    // A walk of the local node's neighbours is a handful of SMPs, and a
    // re-walk would not stop at one hop.
    rediscover_ = true;
    return;
  }
  if (changes.size() > kMaxRewalk) {
    log_.Info("many ports changed at once; walking the whole fabric", "ports=" + std::to_string(changes.size()));
    rediscover_ = true;
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  const transport::KindCounts before = engine_.stats().kinds;
  topology::IncrementalResult r = topology::Rediscover(engine_, *fabric_, local_guid_, local_port_, changes);
  for (const auto& line : r.reread) log_.Info("re-walk", "what=\"" + line + "\"");
  for (const auto& c : changes) {
    if (c.port.port != 0) recent_[c.port] = kRecentSweeps;
  }
  ++rewalks_;
  if (!r.trusted) {
    log_.Warn("re-walk could not be trusted; walking the whole fabric next");
    rediscover_ = true;
  } else {
    Adopt(r.discovery.fabric, &r.discovery.unanswered);
    Retry(changes, r.retry);
    RunDiscoveryCollectors(collectors::Trigger::kRewalk, {r.new_nodes.begin(), r.new_nodes.end()},
                           {r.gone_nodes.begin(), r.gone_nodes.end()});
    rewalked_ = true;
  }
  const transport::KindCounts used = transport::Since(before, engine_.stats().kinds);
  AddPhase(&phase_mads_["rewalk"], used);
  log_.Info("discovery done", "mode=incremental changes=" + std::to_string(changes.size()) +
                                  " new_nodes=" + std::to_string(r.new_nodes.size()) +
                                  " gone_nodes=" + std::to_string(r.gone_nodes.size()) +
                                  " dr_smps=" + std::to_string(used[0].sent) +
                                  " smps=" + std::to_string(used[0].sent + used[1].sent) + " seconds=" +
                                  std::to_string(SecondsOf(std::chrono::steady_clock::now() - start)));
}

void Poller::Retry(const std::vector<topology::PortChange>& changes, const std::vector<topology::PortChange>& retry) {
  for (const auto& c : changes) {
    if (std::none_of(retry.begin(), retry.end(), [&](const auto& r) { return r.port == c.port; })) {
      retry_.erase(c.port);
    }
  }
  for (const auto& c : retry) {
    RetryState& s = retry_[c.port];
    s.change = c;
    if (++s.attempts > kRewalkRetries) {
      log_.Warn("nothing answers behind a changed port; leaving it to the rotation and the next full walk",
                "port=\"" + Describe(c.port) + "\" why=\"" + c.why + "\"");
      retry_.erase(c.port);
      continue;
    }
    s.due = sweeps_ + (1ULL << (s.attempts - 1));
  }
}

std::optional<topology::PortRef> Poller::SwitchEnd(const topology::PortRef& port) const {
  const topology::Node* n = fabric_->FindNode(port.node_guid);
  if (!n) return std::nullopt;
  if (n->kind == topology::NodeKind::kSwitch) return port;
  const topology::Port* p = n->FindPort(port.port);
  if (!p || !p->remote) return std::nullopt;
  const topology::Node* far = fabric_->FindNode(p->remote->node_guid);
  if (!far || far->kind != topology::NodeKind::kSwitch) return std::nullopt;
  return *p->remote;
}

std::set<topology::PortRef> Poller::Watched() const {
  std::set<topology::PortRef> out;
  for (const auto& [ref, left] : recent_) out.insert(ref);
  for (const auto& [ref, r] : retry_) {
    if (ref.port != 0) out.insert(ref);
  }
  // A remembered port that is down: seen as soon as it comes back.
  for (const auto& ref : remembered_) {
    const topology::Port* p = fabric_->FindPort(ref);
    if (p && !p->link_up()) out.insert(ref);
  }
  // Degraded links: a retrain back (or further down) is seen at once.
  if (parts_.topology) {
    for (const auto& [link, why] : parts_.topology->degraded) {
      for (const auto& end : {link.a, link.b}) {
        if (auto s = SwitchEnd(end)) out.insert(*s);
      }
    }
  }
  // A LinkDownedCounter pinned at its maximum cannot show a flap.
  const std::size_t ld = collectors::Index(collectors::Counter::kLinkDowned);
  for (const auto& [ref, t] : parts_.ports) {
    if (!t.Pinned(ld)) continue;
    if (auto s = SwitchEnd(ref)) out.insert(*s);
  }
  return out;
}

void Poller::Subscribe(std::chrono::steady_clock::time_point now) {
  if (!options_.subscribe_traps) return;
  // The master SM as the SM monitor sees it answer (where this exporter
  // watches the SMs), else as the local port knows it.
  std::uint16_t sm_lid = 0;
  if (parts_.subnet_managers) {
    for (const auto& sm : parts_.subnet_managers->sms) {
      if (sm.answering && sm.state == transport::SmState::kMaster) sm_lid = sm.lid;
    }
  } else {
    const topology::Port* local = fabric_->FindPort({local_guid_, local_port_});
    if (local) sm_lid = local->sm_lid;
  }
  if (sm_lid == 0) return;
  if (!subscribe_due_ && sm_lid == subscribed_sm_ && now - subscribed_at_ < options_.sweep_rotation) return;
  std::vector<transport::MadRequest> reqs;
  for (std::uint16_t t : kTraps) reqs.push_back(transport::InformInfoSubscribe(sm_lid, t));
  // Logged as it changes: accepted, or not (first time, or after it was).
  const bool first = subscriptions_.empty() || sm_lid != subscribed_sm_;
  const bool had_all = !first && std::all_of(subscriptions_.begin(), subscriptions_.end(),
                                             [](const auto& e) { return e.second; });
  const auto results = engine_.Run(reqs);
  bool all = true;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const bool ok = results[i].outcome == transport::MadOutcome::kOk;
    subscriptions_[kTraps[i]] = ok;
    all = all && ok;
  }
  if (all && !had_all) {
    log_.Info("subscribed to the SM's traps", "sm_lid=" + std::to_string(sm_lid) + " traps=64,65,128,144");
  } else if (!all && (first || had_all)) {
    log_.Warn("the SA did not accept every trap subscription; asking again each sweep, sweeps alone find changes "
              "meanwhile",
              "sm_lid=" + std::to_string(sm_lid));
  }
  subscribed_sm_ = sm_lid;
  subscribed_at_ = now;
  // An SA busy with a sweep of its own may not answer in time: ask again
  // next sweep until it has accepted every trap.
  subscribe_due_ = !all;
}

bool Poller::HandleReports() {
  const auto reports = engine_.TakeReports();
  if (reports.empty()) return false;
  const transport::KindCounts before = engine_.stats().kinds;
  std::set<topology::PortRef> ports;
  std::map<topology::PortRef, std::string> why;
  for (const auto& mad : reports) {
    const transport::Notice n = transport::DecodeNotice(mad);
    ++traps_[n.trap_number];
    const std::string trap = "trap " + std::to_string(n.trap_number);
    log_.Debug("trap", "number=" + std::to_string(n.trap_number) + " lid=" + std::to_string(n.lid) +
                           " port_guid=" + topology::FormatGuid(n.port_guid));
    for (const auto& node : fabric_->nodes()) {
      const bool by_lid = n.lid != 0 && node.lid == n.lid;
      for (const auto& p : node.ports) {
        const bool named = by_lid || (n.port_guid != 0 && node.kind != topology::NodeKind::kSwitch && p.guid == n.port_guid) ||
                           (n.lid != 0 && node.kind != topology::NodeKind::kSwitch && p.lid == n.lid);
        if (!named) continue;
        if (auto s = SwitchEnd({node.guid, p.number})) {
          ports.insert(*s);
          why.emplace(*s, trap);
        }
      }
    }
  }
  if (!ports.empty()) {
    std::vector<collectors::LinkTarget> links;
    for (const auto& t : collectors::LinkTargets(*fabric_)) {
      if (ports.count(t.port)) links.push_back(t);
    }
    collectors::SweepResult reread = collectors::Sweep({}, links, {}, engine_);
    AddPhase(&phase_mads_["trap"], transport::Since(before, engine_.stats().kinds));  // the re-walk counts apart
    // A link that went down is reported now, not at the next sweep.
    RunSweepCollectors(collectors::Trigger::kTrap, reread, 0);
    const auto changed = collectors::CompareLinks(*fabric_, reread.links);
    std::vector<topology::PortChange> changes;
    for (const auto& [ref, port] : changed.ports) changes.push_back({ref, port, why[ref]});
    Rewalk(changes);
  }
  Publish();
  return true;
}

Poller::Silence Poller::SilenceOf(const collectors::SweepResult& sweep) {
  Silence s;
  for (const auto& r : sweep.readings) {
    if (r.sample) {
      known_failing_.erase(r.target.port);
      continue;
    }
    if (known_failing_.insert(r.target.port).second) s.newly_failing.insert(r.target.port);
    if (auto end = SwitchEnd(r.target.port); end && SilenceDue(*end)) s.silent.insert(r.target.port);
  }
  return s;
}

std::set<topology::PortRef> Poller::Flapped(const collectors::SweepResult& sweep) const {
  // Against port_counters' totals as of the last sweep.
  std::set<topology::PortRef> out;
  const std::size_t ld = collectors::Index(collectors::Counter::kLinkDowned);
  for (const auto& r : sweep.readings) {
    if (!r.sample) continue;
    auto it = parts_.ports.find(r.target.port);
    if (it != parts_.ports.end() && it->second.present.test(ld) && r.sample->present.test(ld) &&
        r.sample->value[ld] != it->second.last_raw[ld]) {
      out.insert(r.target.port);
    }
  }
  return out;
}

bool Poller::Cycle() {
  const auto now = std::chrono::steady_clock::now();
  if ((rediscover_ && now >= forced_not_before_) || now >= next_discovery_) {
    Discover();
    rediscover_ = !discovery_.success;
    next_discovery_ = now + options_.discovery_interval;
    // Loss is not multiplied into walks: after a walk that missed answers
    // the next forced one waits, longer each time.
    if (discovery_.success && unanswered_ > 0) {
      const auto first = std::max<std::chrono::milliseconds>(2 * options_.sweep_interval, std::chrono::seconds(1));
      forced_backoff_ = forced_backoff_.count() == 0 ? first : std::min(2 * forced_backoff_, options_.sweep_rotation);
      forced_backoff_ = std::max(forced_backoff_, first);
    } else {
      forced_backoff_ = std::chrono::milliseconds(0);
    }
    forced_not_before_ = now + forced_backoff_;
  }
  HandleReports();  // what arrived during the walk
  // Analyses a re-walk between sweeps (a trap's) put off: before the sweep,
  // so that it watches what they say.
  if (rewalked_) RunPending();

  // One batch: the collectors' reads (counters), PortInfo of the watched
  // ports and of this sweep's slice of the rest, NodeInfo of this sweep's
  // slice of the LIDs (all after a master change).
  collectors::SweepPlan plan;
  {
    const collectors::Cycle cycle = MakeCycle(collectors::Trigger::kSweep);
    for (Entry& e : collectors_) {
      if (e.collector->schedule() != collectors::Schedule::kSweep) continue;
      const std::size_t before = plan.counters.size();
      e.collector->Plan(cycle, &plan);
      e.in_batch = plan.counters.size() > before;
    }
  }
  auto all_links = collectors::LinkTargets(*fabric_);
  std::erase_if(all_links, [this](const auto& t) { return !ReadsPort(t.port); });
  const std::uint64_t rounds = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(options_.sweep_rotation / std::max(options_.sweep_interval, std::chrono::milliseconds(1))));
  const std::set<topology::PortRef> watched = Watched();
  std::vector<collectors::LinkTarget> links;
  std::vector<collectors::LinkTarget> rest;
  for (const auto& t : all_links) (watched.count(t.port) ? links : rest).push_back(t);
  for (auto& t : collectors::RotationSlice(rest, sweeps_, rounds)) links.push_back(t);
  // The LIDs of every port the exporter reads, counters or not.
  std::vector<collectors::SweepTarget> owners = collectors::SweepTargets(*fabric_, remembered_, {});
  std::erase_if(owners, [this](const auto& t) { return !ReadsPort(t.port); });
  const auto all_checks = collectors::LidChecks(owners, all_links);
  const auto checks = check_all_lids_ ? all_checks : collectors::RotationSlice(all_checks, sweeps_, rounds);
  check_all_lids_ = false;

  const transport::KindCounts mads_before = engine_.stats().kinds;
  collectors::SweepResult sweep = collectors::Sweep(plan.counters, links, checks, engine_);
  sweep_seconds_ = sweep.duration.count();
  const Silence silence = SilenceOf(sweep);
  const std::set<topology::PortRef> flapped = Flapped(sweep);
  ReadSwitchEnds(flapped, silence, all_links, &sweep);
  const std::uint64_t master_changes = parts_.subnet_managers ? parts_.subnet_managers->master_changes : 0;
  RunSweepCollectors(collectors::Trigger::kSweep, sweep, sweep_seconds_);
  if (parts_.subnet_managers && parts_.subnet_managers->master_changes != master_changes) {
    // A new master may have handed out other LIDs, and knows nothing of
    // our subscriptions.
    check_all_lids_ = true;
    subscribe_due_ = true;
  }
  sweep_mads_ = transport::Since(mads_before, engine_.stats().kinds);
  AddPhase(&phase_mads_["sweep"], sweep_mads_);
  {
    const transport::KindCounts before = engine_.stats().kinds;
    Subscribe(std::chrono::steady_clock::now());
    AddPhase(&phase_mads_["trap"], transport::Since(before, engine_.stats().kinds));
  }

  ++sweeps_;
  const bool read_any = !plan.counters.empty() && sweep.failed_ports < plan.counters.size();
  if (read_any) last_success_ = std::chrono::system_clock::now();
  for (auto it = recent_.begin(); it != recent_.end();) it = --it->second <= 0 ? recent_.erase(it) : std::next(it);

  // What changed: LIDs that answer for other nodes make the whole view
  // suspect (the next cycle walks everything); a changed link, a flap or a
  // port that stopped answering is re-walked now.
  if (!sweep.moved_nodes.empty()) {
    lid_moves_ += sweep.moved_nodes.size();
    log_.Warn("LIDs answer for other nodes; rediscovering", "nodes=" + std::to_string(sweep.moved_nodes.size()));
    rediscover_ = true;
    check_all_lids_ = true;
  } else {
    Rewalk(ChangesOf(sweep, flapped, silence));
  }
  // Tables that did not answer and analyses a re-walk put off, once a
  // sweep whatever changed in it.
  RunPending();
  log_.Debug("sweep done", "ports=" + std::to_string(plan.counters.size()) + " port_infos=" +
                               std::to_string(links.size()) + " lid_checks=" + std::to_string(checks.size()) +
                               " seconds=" + std::to_string(sweep_seconds_));
  Publish();

  // Not even the local port answered discovery: count towards transport down.
  local_down_cycles_ = discovery_.ran && !discovery_.success ? local_down_cycles_ + 1 : 0;
  if (local_down_cycles_ >= options_.transport_down_cycles && options_.on_transport_down) {
    options_.on_transport_down();
  }
  return read_any;
}

void Poller::ReadSwitchEnds(const std::set<topology::PortRef>& flapped, const Silence& silence,
                            const std::vector<collectors::LinkTarget>& all_links, collectors::SweepResult* sweep) {
  std::set<topology::PortRef> more;
  for (const auto* set : {&flapped, &silence.silent}) {
    for (const auto& ref : *set) {
      if (auto s = SwitchEnd(ref); s && !sweep->links.count(*s)) more.insert(*s);
    }
  }
  if (more.empty()) return;
  std::vector<collectors::LinkTarget> extra;
  for (const auto& t : all_links) {
    if (more.count(t.port)) extra.push_back(t);
  }
  const auto second = collectors::Sweep({}, extra, {}, engine_);
  sweep->links.insert(second.links.begin(), second.links.end());
}

std::vector<topology::PortChange> Poller::ChangesOf(const collectors::SweepResult& sweep,
                                                    const std::set<topology::PortRef>& flapped, const Silence& silence) {
  const auto changed = collectors::CompareLinks(*fabric_, sweep.links);
  std::map<topology::PortRef, topology::PortChange> changes;
  for (const auto& [ref, port] : changed.ports) changes[ref] = {ref, port, "port state changed"};
  // A flap that is over (up again at the same rate) may have brought
  // another cable; a port that stopped answering may have another LID (not
  // every sweep: under loss it stops and starts again).
  std::set<std::uint64_t> silent_switches;
  for (const auto& [set, why] : {std::pair{&flapped, "LinkDownedCounter moved"},
                                 std::pair{&silence.silent, "stopped answering"}}) {
    const bool silent = set == &silence.silent;
    for (const auto& ref : *set) {
      const auto end = SwitchEnd(ref);
      if (!end || changes.count(*end)) continue;
      auto it = sweep.links.find(*end);
      if (it != sweep.links.end()) {
        changes[*end] = {*end, it->second, why};
        if (silent) NoteSilenceRewalk(*end);
      } else if (silent && *end == ref) {
        silent_switches.insert(ref.node_guid);  // the switch's own PortInfo did not answer either
      }
    }
  }
  // A switch nothing of which answered by LID this sweep may have another
  // LID: its port 0 is read over its directed route.
  const auto answered = [&](std::uint64_t g) {
    return std::any_of(sweep.readings.begin(), sweep.readings.end(),
                       [&](const auto& r) { return r.sample && r.target.port.node_guid == g; }) ||
           std::any_of(sweep.links.begin(), sweep.links.end(), [&](const auto& l) { return l.first.node_guid == g; });
  };
  for (std::uint64_t g : silent_switches) {
    const topology::PortRef zero{g, 0};
    if (changes.count(zero) || !SilenceDue(zero) || answered(g)) continue;
    NoteSilenceRewalk(zero);
    changes[zero] = {zero, topology::Port{}, "stopped answering by LID"};
  }
  // Re-walks whose far end did not answer, when due.
  for (auto& [ref, r] : retry_) {
    if (r.due > sweeps_ || changes.count(ref)) continue;
    if (ref.port == 0) {
      changes[ref] = r.change;
      continue;
    }
    auto it = sweep.links.find(ref);
    if (it == sweep.links.end()) {
      r.due = sweeps_ + 1;  // its PortInfo did not answer this time
      continue;
    }
    changes[ref] = {ref, it->second, r.change.why + ", asked again"};
  }
  // Holds of ports that answer again run out.
  std::erase_if(silent_rewalked_, [&](const auto& e) { return sweeps_ >= e.second.first + 2 * e.second.second; });
  std::vector<topology::PortChange> list;
  if (changes.empty()) return list;
  log_.Info("switch ports changed; re-walking them",
            "came_up=" + std::to_string(changed.came_up) + " went_down=" + std::to_string(changed.went_down) +
                " retrained=" + std::to_string(changed.retrained) + " activated=" + std::to_string(changed.activated) +
                " flapped=" + std::to_string(flapped.size()) +
                " newly_failing=" + std::to_string(silence.newly_failing.size()));
  for (auto& [ref, c] : changes) list.push_back(std::move(c));
  return list;
}

bool Poller::SilenceDue(const topology::PortRef& end) const {
  auto it = silent_rewalked_.find(end);
  return it == silent_rewalked_.end() || sweeps_ >= it->second.first + it->second.second;
}

void Poller::NoteSilenceRewalk(const topology::PortRef& end) {
  auto [it, fresh] = silent_rewalked_.try_emplace(end, sweeps_, kSilentHold);
  if (!fresh) it->second = {sweeps_, std::min(2 * it->second.second, kSilentHoldMax)};
}

std::string Poller::NameOf(std::uint64_t guid) const {
  auto it = nodes_.find(guid);
  return it == nodes_.end() || it->second.name.empty() ? topology::FormatGuid(guid) : it->second.name;
}

std::string Poller::Describe(const topology::PortRef& port) const {
  return NameOf(port.node_guid) + "[" + std::to_string(port.port) + "]";
}

void Poller::Publish() {
  auto s = std::make_shared<collectors::Snapshot>(parts_);
  s->fabric = fabric_;
  s->nodes = nodes_;
  s->scope = options_.scope;
  s->mad = engine_.stats();
  s->discovery = discovery_;
  s->sweep_seconds = sweep_seconds_;
  s->discovery_mads = discovery_mads_;
  s->sweep_mads = sweep_mads_;
  s->sweeps = sweeps_;
  s->discoveries = discoveries_;
  s->rewalks = rewalks_;
  s->phase_mads = phase_mads_;
  s->traps = traps_;
  s->trap_subscriptions = subscriptions_;
  s->lid_moves = lid_moves_;
  s->last_success = last_success_;
  s->published = std::chrono::system_clock::now();
  s->discovery_unanswered = unanswered_;
  s->incomplete_discoveries = incomplete_walks_;
  s->exposition = collectors::RenderExposition(*s, options_.version);
  holder_.Publish(std::move(s));
}

collectors::PersistedState Poller::SaveState() const {
  return collectors::PersistedState{parts_.ports, nodes_, remembered_};
}

void Poller::Run(std::stop_token stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  // Reports are waited for in slices, so a stop request is seen soon.
  constexpr auto kSlice = std::chrono::milliseconds(200);
  while (!stop.stop_requested()) {
    const auto next = std::chrono::steady_clock::now() + options_.sweep_interval;
    Cycle();
    while (!stop.stop_requested()) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= next) break;
      if (subscribed_sm_ == 0) {
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
