#include "exporter/poller.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "collectors/metrics.h"
#include "topology/discovery.h"
#include "topology/merge.h"
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

namespace {
// Traps subscribed to (transport/attributes.h trap).
constexpr std::uint16_t kTraps[] = {transport::trap::kGidInService, transport::trap::kGidOutOfService,
                                    transport::trap::kLinkStateChange, transport::trap::kLocalChange};
// Sweeps a changed port stays watched, and how many changes at once a
// re-walk takes on before a full walk is the better deal.
constexpr int kRecentSweeps = 6;
// Sweeps in which tables that did not answer are asked again.
constexpr int kTableRetries = 6;
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

// The nodes of `fabric` in `guids`, with only the ports `keep` allows.
topology::Fabric Part(const topology::Fabric& fabric, const std::set<std::uint64_t>& guids,
                      const std::function<bool(const topology::Node&, const topology::Port&)>& keep) {
  std::vector<topology::Node> nodes;
  for (const auto& n : fabric.nodes()) {
    if (!guids.count(n.guid)) continue;
    topology::Node copy = n;
    std::erase_if(copy.ports, [&](const topology::Port& p) { return !keep(n, p); });
    nodes.push_back(std::move(copy));
  }
  return topology::Fabric(std::move(nodes));
}
}  // namespace

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
    Adopt(merged.fabric, nullptr, {}, &r.unanswered);
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
                                  " hcas=" + std::to_string(fabric_->ca_count()) +
                                  " smps=" + std::to_string(r.smps) +
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

void Poller::Adopt(const topology::Fabric& walked, const std::vector<std::uint64_t>* fresh,
                   const std::vector<std::uint64_t>& gone, const topology::Unanswered* unanswered) {
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
  // What is read per node: everything after a full walk, the new nodes'
  // after a re-walk; what gone nodes had is forgotten.
  std::set<std::uint64_t> read;
  if (fresh) {
    read.insert(fresh->begin(), fresh->end());
    const std::set<std::uint64_t> gone_set(gone.begin(), gone.end());
    for (std::uint64_t g : gone_set) {
      lft_.erase(g);
      switch_info_.erase(g);
      caps_.erase(g);
      tables_due_.erase(g);
    }
    std::erase_if(pkeys_, [&](const auto& e) { return gone_set.count(e.first.node_guid) > 0; });
  } else {
    // Everything is read again; what does not answer keeps what it had
    // (a lost MAD is no reason to forget a table), nodes gone lose theirs.
    for (const auto& node : fabric_->nodes()) read.insert(node.guid);
    const auto gone_node = [&](const auto& e) { return fabric_->FindNode(e.first) == nullptr; };
    std::erase_if(lft_, gone_node);
    std::erase_if(switch_info_, gone_node);
    std::erase_if(caps_, gone_node);
    std::erase_if(tables_due_, gone_node);
    std::erase_if(pkeys_, [&](const auto& e) { return fabric_->FindNode(e.first.node_guid) == nullptr; });
  }
  const std::vector<std::string> problems = ReadTables(read);
  if (!fresh) discovery_problems_.insert(discovery_problems_.end(), problems.begin(), problems.end());
  // A re-walk's analysis waits for the next sweep: on a large fabric it is
  // seconds of CPU, and several traps in a row need it once.
  if (fresh) {
    analysis_stale_ = true;
  } else {
    Reanalyze(/*log_findings=*/true);
  }
}

bool Poller::InScope(const topology::Node& node) const {
  if (options_.scope.everything()) return true;
  for (const auto& p : node.ports) {
    if (in_scope_.count({node.guid, p.number})) return true;
  }
  return false;
}

bool Poller::LacksTables(const topology::Node& node) const {
  const bool topology = options_.scope.reports_topology();
  if (node.kind == topology::NodeKind::kSwitch) return topology && node.lid != 0 && !lft_.count(node.guid);
  for (const auto& p : node.ports) {
    if (topology && p.lid != 0 && p.remote && !pkeys_.count({node.guid, p.number})) return true;
  }
  return InScope(node) && !caps_.count(node.guid);
}

std::vector<std::string> Poller::ReadTables(const std::set<std::uint64_t>& read) {
  std::vector<std::string> problems;
  if (read.empty()) return problems;
  if (options_.scope.reports_topology()) {
    // The forwarding tables of these switches (all at a full walk):
    // routing balance, unrouted destinations, down-up routes
    // (topology/routing.h). A re-walk keeps the others'.
    const topology::Fabric switches = Part(*fabric_, read, [](const topology::Node&, const topology::Port&) { return true; });
    const auto lft = topology::ReadForwardingTables(switches, engine_);
    for (const auto& p : lft.problems) {
      log_.Warn("routing", "problem=\"" + p + "\"");
      problems.push_back(p);
    }
    for (const auto& [g, t] : lft.tables) lft_[g] = t;
    for (const auto& [g, i] : lft.switch_info) switch_info_[g] = i;
    // The partitions of these CA ports and of the switch ports facing them
    // (topology/partitions.h).
    std::set<std::uint64_t> with_facing = read;
    std::set<topology::PortRef> facing;
    for (const auto& node : fabric_->nodes()) {
      if (!read.count(node.guid) || node.kind == topology::NodeKind::kSwitch) continue;
      for (const auto& p : node.ports) {
        if (!p.remote) continue;
        with_facing.insert(p.remote->node_guid);
        facing.insert(*p.remote);
      }
    }
    const topology::Fabric part = Part(*fabric_, with_facing, [&](const topology::Node& n, const topology::Port& p) {
      return read.count(n.guid) > 0 || facing.count({n.guid, p.number}) > 0;
    });
    const auto pkeys = topology::ReadPartitions(part, switch_info_, engine_);
    for (const auto& p : pkeys.problems) {
      log_.Warn("partitions", "problem=\"" + p + "\"");
      problems.push_back(p);
    }
    for (const auto& [ref, keys] : pkeys.tables) pkeys_[ref] = keys;
  }
  // What each PMA supports decides what is asked and what is exported.
  std::set<std::uint64_t> caps_of;
  for (std::uint64_t g : read) {
    const topology::Node* n = fabric_->FindNode(g);
    if (n && InScope(*n)) caps_of.insert(g);
  }
  if (!caps_of.empty()) {
    for (auto& [g, c] : collectors::ReadCapabilities(*fabric_, engine_, &caps_of)) caps_[g] = c;
  }
  // What did not answer is asked again over the next sweeps (a CA port the
  // SM has not made Active, or routed to, yet); then left to the full walk.
  for (std::uint64_t g : read) {
    const topology::Node* n = fabric_->FindNode(g);
    if (n && LacksTables(*n)) {
      tables_due_.emplace(g, kTableRetries);
    } else {
      tables_due_.erase(g);
    }
  }
  return problems;
}

void Poller::Reanalyze(bool log_findings) {
  analysis_stale_ = false;
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
    topology::AnalyzeRouting(*fabric_, lft_, &analysis);
    topology::AnalyzePartitions(*fabric_, pkeys_, options_.partition_plan ? &*options_.partition_plan : nullptr,
                                &analysis);
  }
  analysis_ = std::make_shared<topology::Analysis>(std::move(analysis));
  if (!log_findings) return;
  if (!analysis_->is_tree) log_.Warn("topology", "not_a_tree=\"" + analysis_->not_tree_reason + "\"");
  for (const auto& f : analysis_->findings) {
    log_.Info("topology finding", std::string("kind=") + topology::ToString(f.kind) + " detail=\"" + f.detail + "\"");
  }
}

void Poller::RetryTables() {
  std::set<std::uint64_t> read;
  for (auto it = tables_due_.begin(); it != tables_due_.end();) {
    if (!fabric_->FindNode(it->first) || it->second-- <= 0) {
      it = tables_due_.erase(it);
      continue;
    }
    read.insert(it->first);
    ++it;
  }
  if (read.empty()) return;
  ReadTables(read);
  analysis_stale_ = true;
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
    Adopt(r.discovery.fabric, &r.new_nodes, r.gone_nodes, &r.discovery.unanswered);
    Retry(changes, r.retry);
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
  if (analysis_) {
    for (const auto& [link, why] : analysis_->degraded) {
      for (const auto& end : {link.a, link.b}) {
        if (auto s = SwitchEnd(end)) out.insert(*s);
      }
    }
  }
  // A LinkDownedCounter pinned at its maximum cannot show a flap.
  const std::size_t ld = collectors::Index(collectors::Counter::kLinkDowned);
  for (const auto& [ref, t] : store_.ports()) {
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
  if (sm_report_) {
    for (const auto& sm : sm_report_->sms) {
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
    const auto now = std::chrono::steady_clock::now();
    const auto wall = std::chrono::system_clock::now();
    Judge(reread, now, wall);  // a link that went down is reported now, not at the next sweep
    const auto changed = collectors::CompareLinks(*fabric_, reread.links);
    std::vector<topology::PortChange> changes;
    for (const auto& [ref, port] : changed.ports) changes.push_back({ref, port, why[ref]});
    Rewalk(changes);
  }
  Publish();
  return true;
}

Poller::Absorbed Poller::Absorb(const collectors::SweepResult& sweep,
                                std::chrono::system_clock::time_point wall) {
  Absorbed a;
  // What the MADs to each node went through, over two halves of the window.
  const auto now = std::chrono::steady_clock::now();
  if (now - mad_half_start_ >= options_.alerts.window / 2) {
    for (auto& [guid, h] : health_) {
      h.mads_before = h.mads_now;
      h.mads_now = {};
    }
    mad_half_start_ = now;
  }
  for (const auto& [guid, t] : sweep.mads) health_[guid].mads_now += t;
  std::map<std::uint64_t, bool> node_ok;  // node -> any of its ports answered
  std::set<topology::PortRef> targeted;
  const std::size_t ld = collectors::Index(collectors::Counter::kLinkDowned);
  for (const auto& r : sweep.readings) {
    targeted.insert(r.target.port);
    bool& ok = node_ok[r.target.port.node_guid];
    if (!r.sample) {
      store_.MarkStale(r.target.port);
      if (known_failing_.insert(r.target.port).second) a.newly_failing.insert(r.target.port);
      if (auto end = SwitchEnd(r.target.port); end && SilenceDue(*end)) a.silent.insert(r.target.port);
      continue;
    }
    ok = true;
    known_failing_.erase(r.target.port);
    auto it = store_.ports().find(r.target.port);
    if (it != store_.ports().end() && it->second.present.test(ld) && r.sample->present.test(ld) &&
        r.sample->value[ld] != it->second.last_raw[ld]) {
      a.flapped.insert(r.target.port);
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
  if (analysis_stale_) Reanalyze(/*log_findings=*/false);
  auto targets = collectors::SweepTargets(*fabric_, remembered_, caps_);
  auto all_links = collectors::LinkTargets(*fabric_);
  if (!options_.scope.everything()) {
    const auto out = [this](const auto& t) { return !in_scope_.count(t.port) && !remembered_.count(t.port); };
    std::erase_if(targets, out);
    std::erase_if(all_links, out);
  }
  // PortInfo of the watched ports and of this sweep's slice of the rest;
  // NodeInfo of this sweep's slice of the LIDs (all after a master change).
  const std::uint64_t rounds = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(options_.sweep_rotation / std::max(options_.sweep_interval, std::chrono::milliseconds(1))));
  const std::set<topology::PortRef> watched = Watched();
  std::vector<collectors::LinkTarget> links;
  std::vector<collectors::LinkTarget> rest;
  for (const auto& t : all_links) (watched.count(t.port) ? links : rest).push_back(t);
  for (auto& t : collectors::RotationSlice(rest, sweeps_, rounds)) links.push_back(t);
  const auto all_checks = collectors::LidChecks(targets, all_links);
  const auto checks = check_all_lids_ ? all_checks : collectors::RotationSlice(all_checks, sweeps_, rounds);
  check_all_lids_ = false;

  const transport::KindCounts mads_before = engine_.stats().kinds;
  collectors::SweepResult sweep = collectors::Sweep(targets, links, checks, engine_);
  const auto wall = std::chrono::system_clock::now();
  const Absorbed absorbed = Absorb(sweep, wall);
  ReadSwitchEnds(absorbed, all_links, &sweep);
  Judge(sweep, std::chrono::steady_clock::now(), wall);
  // One exporter of a set watches the SMs: the one that reports topology.
  if (options_.scope.reports_topology()) {
    const std::uint64_t changes_before = sm_report_ ? sm_report_->master_changes : 0;
    WatchSubnetManagers(std::chrono::steady_clock::now(), wall);
    if (sm_report_ && sm_report_->master_changes != changes_before) {
      // A new master may have handed out other LIDs, and knows nothing of
      // our subscriptions.
      check_all_lids_ = true;
      subscribe_due_ = true;
    }
  }
  if (options_.clear_threshold_percent > 0) ClearSaturated(sweep);
  sweep_mads_ = transport::Since(mads_before, engine_.stats().kinds);
  AddPhase(&phase_mads_["sweep"], sweep_mads_);
  {
    const transport::KindCounts before = engine_.stats().kinds;
    Subscribe(std::chrono::steady_clock::now());
    AddPhase(&phase_mads_["trap"], transport::Since(before, engine_.stats().kinds));
  }
  {
    const transport::KindCounts before = engine_.stats().kinds;
    RetryTables();
    AddPhase(&phase_mads_["rewalk"], transport::Since(before, engine_.stats().kinds));
  }

  ++sweeps_;
  targets_ = targets.size();
  failed_ports_ = sweep.failed_ports;
  port_counters_.ran = true;
  port_counters_.duration_seconds = sweep.duration.count();
  port_counters_.total_seconds += port_counters_.duration_seconds;
  port_counters_.success = !targets.empty() && sweep.failed_ports < targets.size();
  if (port_counters_.success) last_success_ = wall;
  for (auto it = recent_.begin(); it != recent_.end();) it = --it->second <= 0 ? recent_.erase(it) : std::next(it);

  // What changed: LIDs that answer for other nodes make the whole view
  // suspect (the next cycle walks everything); a changed link, a flap or a
  // port that stopped answering is re-walked now.
  if (!sweep.moved_nodes.empty()) {
    lid_moves_ += sweep.moved_nodes.size();
    log_.Warn("LIDs answer for other nodes; rediscovering",
              "nodes=" + std::to_string(sweep.moved_nodes.size()));
    rediscover_ = true;
    check_all_lids_ = true;
  } else {
    Rewalk(ChangesOf(sweep, absorbed));
  }

  if (analysis_stale_) Reanalyze(/*log_findings=*/false);  // once a sweep, whatever changed in it
  log_.Debug("sweep done", "ports=" + std::to_string(targets.size()) + " port_infos=" + std::to_string(links.size()) +
                               " lid_checks=" + std::to_string(checks.size()) +
                               " seconds=" + std::to_string(port_counters_.duration_seconds));
  Publish();

  // Not even the local port answered discovery: count towards transport down.
  local_down_cycles_ = discovery_.ran && !discovery_.success ? local_down_cycles_ + 1 : 0;
  if (local_down_cycles_ >= options_.transport_down_cycles && options_.on_transport_down) {
    options_.on_transport_down();
  }
  return port_counters_.success;
}

void Poller::ReadSwitchEnds(const Absorbed& absorbed, const std::vector<collectors::LinkTarget>& all_links,
                            collectors::SweepResult* sweep) {
  std::set<topology::PortRef> more;
  for (const auto* set : {&absorbed.flapped, &absorbed.silent}) {
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

std::vector<topology::PortChange> Poller::ChangesOf(const collectors::SweepResult& sweep, const Absorbed& absorbed) {
  const auto changed = collectors::CompareLinks(*fabric_, sweep.links);
  std::map<topology::PortRef, topology::PortChange> changes;
  for (const auto& [ref, port] : changed.ports) changes[ref] = {ref, port, "port state changed"};
  // A flap that is over (up again at the same rate) may have brought
  // another cable; a port that stopped answering may have another LID (not
  // every sweep: under loss it stops and starts again).
  std::set<std::uint64_t> silent_switches;
  for (const auto& [set, why] : {std::pair{&absorbed.flapped, "LinkDownedCounter moved"},
                                 std::pair{&absorbed.silent, "stopped answering"}}) {
    const bool silent = set == &absorbed.silent;
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
                " flapped=" + std::to_string(absorbed.flapped.size()) +
                " newly_failing=" + std::to_string(absorbed.newly_failing.size()));
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

std::string Poller::NameOf(std::uint64_t guid) const {
  auto it = nodes_.find(guid);
  return it == nodes_.end() || it->second.name.empty() ? topology::FormatGuid(guid) : it->second.name;
}

std::string Poller::Describe(const topology::PortRef& port) const {
  return NameOf(port.node_guid) + "[" + std::to_string(port.port) + "]";
}

void Poller::Judge(const collectors::SweepResult& sweep, std::chrono::steady_clock::time_point now,
                   std::chrono::system_clock::time_point wall) {
  link_health_.Observe(*fabric_, analysis_.get(), store_.ports(), sweep.links, now, wall,
                       /*counters_read=*/!sweep.readings.empty());
  auto report = std::make_shared<collectors::HealthReport>();
  report->cables = link_health_.Cables();
  report->events = link_health_.Events();
  report->event_counts = link_health_.EventCounts();
  // Link downs that were no flap, as they are first told apart.
  std::uint64_t events = 0;
  for (const auto& [kind, n] : report->event_counts) events += n;
  const std::size_t fresh = static_cast<std::size_t>(std::min<std::uint64_t>(events - events_logged_, report->events.size()));
  for (auto it = report->events.end() - static_cast<std::ptrdiff_t>(fresh); it != report->events.end(); ++it) {
    log_.Warn("link down explained", std::string("kind=") + collectors::ToString(it->kind) + " node=\"" +
                                         NameOf(it->node_guid) + "\" links=" + std::to_string(it->links));
  }
  events_logged_ = events;
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
  s->rewalks = rewalks_;
  s->phase_mads = phase_mads_;
  s->traps = traps_;
  s->trap_subscriptions = subscriptions_;
  s->targets = targets_;
  s->failed_ports = failed_ports_;
  s->counter_clears = clears_;
  s->lid_moves = lid_moves_;
  s->last_success = last_success_;
  s->published = std::chrono::system_clock::now();
  s->discovery_problems = discovery_problems_;
  s->discovery_unanswered = unanswered_;
  s->incomplete_discoveries = incomplete_walks_;
  s->exposition = collectors::RenderExposition(*s, options_.version);
  holder_.Publish(std::move(s));
}

collectors::PersistedState Poller::SaveState() const {
  return collectors::PersistedState{store_.ports(), nodes_, remembered_};
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
