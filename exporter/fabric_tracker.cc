#include "exporter/fabric_tracker.h"

#include <algorithm>
#include <limits>

#include "collectors/health/counter_store.h"
#include "topology/access.h"
#include "topology/merge.h"

namespace ibfabric::exporter {

namespace {
// Sweeps a changed port stays watched, and how many changes at once a
// re-walk takes on before a full walk is the better deal.
constexpr int kRecentSweeps = 6;
constexpr std::size_t kMaxRewalk = 64;
}  // namespace

FabricTracker::FabricTracker(transport::MadEngine& engine, TrackerOptions options, collectors::Logger& log,
                             std::map<std::uint64_t, collectors::NodeLabel> nodes,
                             std::set<topology::PortRef> remembered)
    : engine_(engine),
      options_(std::move(options)),
      log_(log),
      fabric_(std::make_shared<topology::Fabric>()),
      nodes_(std::make_shared<const collectors::NodeLabels>(std::move(nodes))),
      remembered_(std::move(remembered)),
      schedule_(options_.discovery_interval, options_.sweep_interval, options_.sweep_rotation),
      traps_(engine, log, options_.sweep_rotation, SweepsPerRotation(options_.sweep_interval, options_.sweep_rotation)),
      smp_watch_(SweepsPerRotation(options_.sweep_interval, options_.sweep_rotation)) {
  UpdateReadPorts();
}

void FabricTracker::UpdateReadPorts() {
  if (options_.scope.everything()) return;
  auto read = std::make_shared<std::set<topology::PortRef>>(in_scope_);
  read->insert(remembered_.begin(), remembered_.end());
  read_ports_ = std::move(read);
}

// --- walks ---------------------------------------------------------------

bool FabricTracker::WalkDue(std::chrono::steady_clock::time_point now) const {
  return !smp_watch_.diagnosed() && schedule_.Due(now);
}

FabricTracker::Walked FabricTracker::Walk(std::chrono::steady_clock::time_point now) {
  topology::DiscoverOptions discover_options;
  if (options_.scope.kind == topology::ScopeKind::kLocal) {
    discover_options.max_hops = 1;
    if (options_.host_ports) discover_options.host_ports = HostPortsNow();
    discover_options.sa_lid = sa_lid_ != 0 ? sa_lid_ : options_.sm_lid;
  }
  topology::DiscoveryResult r = topology::Discover(engine_, discover_options);
  // The SM's bound on packet lifetimes caps how long any answer can take.
  if (r.ok) engine_.SetSubnetTimeout(transport::ExpectedTime(r.subnet_timeout));
  ++walks_;
  for (const auto& p : r.problems) log_.Warn("discovery", "problem=\"" + p + "\"");
  Walked w;
  w.ok = r.ok;
  // Loss is not multiplied into walks: after a walk that missed answers the
  // next forced one waits, longer each time.
  schedule_.Walked(now, r.ok, !r.unanswered.empty());
  if (!r.ok || !r.unanswered.behind.empty()) ProbeMissed(r);
  if (!r.ok) {
    log_.Error("discovery failed; keeping the previous fabric");
    return w;
  }
  local_guid_ = r.local_node_guid;
  local_port_ = r.local_port;
  unanswered_ = r.unanswered.size();
  host_port_guids_ = r.host_port_guids;
  host_far_ends_ = r.host_far_ends;
  host_ports_unread_ = r.host_ports_unread;
  // While LIDs are seen dropping SMPs and answering GMPs (suspected or
  // diagnosed M_Key), a node the walk missed is kept however many walks
  // miss it: what drops SMPs is still there.
  topology::MergeResult merged =
      topology::MergeWalk(*fabric_, r, &misses_, smp_watch_.blocked().empty() ? 3 : std::numeric_limits<int>::max());
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
  for (const auto& node : fabric_->nodes()) w.fresh.insert(node.guid);
  traps_.Due();
  check_all_lids_ = false;  // the walk just read every LID's owner
  w.summary = "switches=" + std::to_string(fabric_->switch_count()) + " hcas=" + std::to_string(fabric_->ca_count()) +
              " smps=" + std::to_string(r.smps);
  return w;
}

std::optional<FabricTracker::Walked> FabricTracker::Rewalk(const std::vector<topology::PortChange>& changes) {
  if (changes.empty() || smp_watch_.diagnosed()) return std::nullopt;
  if (options_.scope.kind == topology::ScopeKind::kLocal) {
    // A walk of the local node's neighbours is a handful of SMPs, and a
    // re-walk would not stop at one hop.
    schedule_.Force();
    return std::nullopt;
  }
  if (changes.size() > kMaxRewalk) {
    log_.Info("many ports changed at once; walking the whole fabric", "ports=" + std::to_string(changes.size()));
    schedule_.Force();
    return std::nullopt;
  }
  topology::IncrementalResult r = topology::Rediscover(engine_, *fabric_, local_guid_, local_port_, changes);
  for (const auto& line : r.reread) log_.Info("re-walk", "what=\"" + line + "\"");
  for (const auto& c : changes) {
    if (c.port.port != 0) recent_[c.port] = kRecentSweeps;
  }
  ++rewalks_;
  Walked w;
  w.trigger = collectors::Trigger::kRewalk;
  w.ok = r.trusted;
  w.summary = "changes=" + std::to_string(changes.size()) + " new_nodes=" + std::to_string(r.new_nodes.size()) +
              " gone_nodes=" + std::to_string(r.gone_nodes.size());
  if (!r.trusted) {
    log_.Warn("re-walk could not be trusted; walking the whole fabric next");
    schedule_.Force();
    return w;
  }
  Adopt(r.discovery.fabric, &r.discovery.unanswered);
  Retry(changes, r.retry);
  w.fresh = {r.new_nodes.begin(), r.new_nodes.end()};
  w.gone = {r.gone_nodes.begin(), r.gone_nodes.end()};
  return w;
}

topology::Fabric FabricTracker::Named(const topology::Fabric& walked, const topology::Unanswered* unanswered) const {
  if (!unanswered || unanswered->descriptions.empty()) return walked;
  std::vector<topology::Node> nodes = walked.nodes();
  for (auto& n : nodes) {
    if (!n.description.empty() || !unanswered->descriptions.count(n.guid)) continue;
    auto it = nodes_->find(n.guid);
    if (it != nodes_->end()) n.description = it->second.name;
  }
  return topology::Fabric(std::move(nodes));
}

void FabricTracker::Adopt(const topology::Fabric& walked, const topology::Unanswered* unanswered) {
  fabric_ = std::make_shared<topology::Fabric>(topology::WithNames(Named(walked, unanswered), options_.names));
  ++fabric_generation_;
  trap_counted_.clear();  // the walk took the changes in
  const bool everything = options_.scope.everything();
  if (!everything) {
    in_scope_ = topology::PortsInScope(*fabric_, options_.scope, local_guid_, host_port_guids_);
    for (const topology::PortRef& far : host_far_ends_) {
      if (fabric_->FindPort(far)) in_scope_.insert(far);
    }
    RememberHostFarEnds();
  }
  auto nodes = std::make_shared<collectors::NodeLabels>(*nodes_);
  for (const auto& node : fabric_->nodes()) {
    collectors::NodeLabel& label = (*nodes)[node.guid];
    label.kind = node.kind;
    label.name = topology::NodeName(*fabric_, node.guid);  // shared names carry their GUID
    if (node.kind != topology::NodeKind::kSwitch) {
      for (const auto& port : node.ports) {
        if (port.guid != 0) label.port_guids[port.number] = port.guid;
      }
      continue;
    }
    for (const auto& port : node.ports) {
      const topology::PortRef ref{node.guid, port.number};
      if (port.link_up() && (everything || in_scope_.count(ref))) remembered_.insert(ref);
    }
  }
  nodes_ = std::move(nodes);
  UpdateReadPorts();
  links_ = collectors::LinkTargets(*fabric_);
  read_links_ = links_;
  std::erase_if(read_links_, [this](const auto& t) { return !ReadsPort(t.port); });
  owners_ = collectors::SweepTargets(*fabric_, remembered_, {});
  std::erase_if(owners_, [this](const auto& t) { return !ReadsPort(t.port); });
}

std::vector<topology::HostPort> FabricTracker::HostPortsNow() const {
  std::vector<topology::HostPort> out;
  for (topology::HostPort& h : options_.host_ports()) {
    if (!h.active) {
      // Down: read where its cable led, if known; else it is a port this
      // exporter never saw cabled (a spare), not a cable to report.
      auto it = host_far_.find(h.port_guid);
      if (it == host_far_.end()) continue;
      h.last_far = it->second.first;
      h.last_far_lid = it->second.second;
    }
    out.push_back(std::move(h));
  }
  return out;
}

void FabricTracker::RememberHostFarEnds() {
  for (const auto& node : fabric_->nodes()) {
    for (const auto& port : node.ports) {
      if (!host_port_guids_.count(port.guid) || !port.remote) continue;
      const topology::Node* sw = fabric_->FindNode(port.remote->node_guid);
      if (sw != nullptr && sw->kind == topology::NodeKind::kSwitch && sw->lid != 0)
        host_far_[port.guid] = {*port.remote, sw->lid};
    }
  }
  std::erase_if(host_far_, [this](const auto& e) { return !host_port_guids_.count(e.first); });
}

void FabricTracker::Retry(const std::vector<topology::PortChange>& changes,
                          const std::vector<topology::PortChange>& retry) {
  for (const auto& c : holds_.Rewalked(changes, retry, sweeps_)) {
    log_.Warn("nothing answers behind a changed port; leaving it to the rotation and the next full walk",
              "port=\"" + Describe(c.port) + "\" why=\"" + c.why + "\"");
  }
}

// --- SMPs dropped where GMPs answer -------------------------------------

std::uint16_t FabricTracker::LocalLid() const {
  const topology::Port* local = fabric_->FindPort({local_guid_, local_port_});
  return local && local->lid != 0 ? local->lid : options_.local_lid;
}

bool FabricTracker::ProbeDue() const { return smp_watch_.ProbeDue(sweeps_); }

void FabricTracker::ProbeSmps() { ProbeAccess(smp_watch_.Probe(sweeps_)); }

void FabricTracker::ProbeAccess(const std::vector<std::uint16_t>& lids) {
  SmpWatch::Evidence e;
  e.probe = true;
  for (const topology::Access& a : topology::ProbeAccess(engine_, lids)) {
    if (a.SmpsDropped()) {
      e.dropping.insert(a.lid);
    } else if (topology::Access::Answered(a.smp)) {
      e.answering.insert(a.lid);
    }
  }
  Judge(e);
}

void FabricTracker::ProbeMissed(const topology::DiscoveryResult& r) {
  if (smp_watch_.diagnosed()) return;
  std::vector<std::uint16_t> lids;
  if (!r.ok) {
    lids = {LocalLid(), master_sm_lid_ != 0 ? master_sm_lid_ : options_.sm_lid};
  } else {
    for (const topology::PortRef& ref : r.unanswered.behind) {
      const topology::Port* p = fabric_->FindPort(ref);
      const topology::Node* far = p && p->remote ? fabric_->FindNode(p->remote->node_guid) : nullptr;
      const topology::Port* far_port = far ? far->FindPort(p->remote->port) : nullptr;
      const std::uint16_t lid = far_port && far_port->lid != 0 ? far_port->lid : far ? far->lid : 0;
      if (lid != 0 && lids.size() < SmpWatch::kProbeLids) lids.push_back(lid);
    }
    const topology::Port* local = r.fabric.FindPort({r.local_node_guid, r.local_port});
    if (local && local->sm_lid != local->lid) lids.push_back(local->sm_lid);
  }
  ProbeAccess(lids);
}

void FabricTracker::Judge(SmpWatch::Evidence e) {
  const std::uint16_t sm = master_sm_lid_ != 0 ? master_sm_lid_ : options_.sm_lid;
  e.sure = e.dropping.count(LocalLid()) > 0 || (sm != 0 && e.dropping.count(sm) > 0);
  const std::size_t lids = std::max(e.dropping.size(), smp_watch_.blocked().size());
  switch (smp_watch_.Observe(e, sweeps_)) {
    case SmpWatch::Change::kNone: break;
    case SmpWatch::Change::kDiagnosed: {
      const std::string key = engine_.options().m_key != 0 ? "the M_Key given does not match the SM's"
                                                           : "no M_Key was given (--ib.m-key-file=FILE)";
      log_.Error(
          "SMPs go unanswered while GMPs to the same nodes answer: the fabric looks M_Key-protected; "
          "not walking it or sending SMPs but as probes until they answer (docs/security.md#m_key)",
          "lids=" + std::to_string(lids) + " sweeps=" + std::to_string(sweeps_) + " key=\"" + key + "\"");
      break;
    }
    case SmpWatch::Change::kCleared:
      log_.Info("SMPs answer again; walking the fabric");
      schedule_.Force();
      break;
    case SmpWatch::Change::kLost:
      log_.Warn("the LIDs that dropped SMPs answer nothing now, GMPs neither; walking the fabric");
      schedule_.Force();
      break;
  }
}

// --- sweeps --------------------------------------------------------------

std::optional<collectors::LinkTarget> FabricTracker::LocalTarget() const {
  const topology::Port* local = fabric_ ? fabric_->FindPort({local_guid_, local_port_}) : nullptr;
  if (local == nullptr || local->lid == 0 || !smp_watch_.Sends(local->lid)) return std::nullopt;
  const topology::Node* node = fabric_->FindNode(local_guid_);
  return collectors::LinkTarget{{local_guid_, local_port_},
                                local->lid,
                                node ? topology::ExtSpeedsOf(*node) : topology::ExtSpeeds{},
                                local->mlnx,
                                /*local=*/true};
}

FabricTracker::SweepReads FabricTracker::PlanSweep(const collectors::Snapshot& parts) {
  const std::uint64_t rounds =
      std::max<std::uint64_t>(1, SweepsPerRotation(options_.sweep_interval, options_.sweep_rotation));
  const std::set<topology::PortRef> watched = Watched(parts);
  SweepReads out;
  std::vector<collectors::LinkTarget> rest;
  for (const auto& t : read_links_) (watched.count(t.port) ? out.links : rest).push_back(t);
  for (auto& t : collectors::RotationSlice(rest, sweeps_, rounds)) out.links.push_back(t);
  // The LIDs of every port the exporter reads, counters or not.
  auto all_checks = collectors::LidChecks(owners_, read_links_);
  out.checks = check_all_lids_ ? std::move(all_checks) : collectors::RotationSlice(all_checks, sweeps_, rounds);
  check_all_lids_ = false;
  std::erase_if(out.links, [this](const auto& t) { return !smp_watch_.Sends(t.lid); });
  std::erase_if(out.checks, [this](const auto& c) { return !smp_watch_.Sends(c.lid); });
  return out;
}

std::set<topology::PortRef> FabricTracker::Watched(const collectors::Snapshot& parts) const {
  std::set<topology::PortRef> out;
  for (const auto& [ref, left] : recent_) out.insert(ref);
  for (const auto& [ref, r] : holds_.retries()) {
    if (ref.port != 0) out.insert(ref);
  }
  // A remembered port that is down: seen as soon as it comes back.
  for (const auto& ref : remembered_) {
    const topology::Port* p = fabric_->FindPort(ref);
    if (p && !p->link_up()) out.insert(ref);
  }
  // Degraded links: a retrain back (or further down) is seen at once.
  if (parts.topology) {
    for (const auto& [link, why] : parts.topology->degraded) {
      for (const auto& end : {link.a, link.b}) {
        if (auto s = SwitchEnd(end)) out.insert(*s);
      }
    }
  }
  // A LinkDownedCounter pinned at its maximum cannot show a flap.
  const std::size_t ld = collectors::Index(collectors::Counter::kLinkDowned);
  for (const auto& [ref, t] : *parts.ports) {
    if (!t.Pinned(ld)) continue;
    if (auto s = SwitchEnd(ref)) out.insert(*s);
  }
  return out;
}

FabricTracker::News FabricTracker::Observe(const collectors::PortTable& before, collectors::SweepResult* sweep) {
  if (auto it = sweep->links.find({local_guid_, local_port_}); it != sweep->links.end()) {
    // Its own LID names no SM this exporter could ask (it is none).
    master_sm_lid_ = it->second.sm_lid == it->second.lid ? 0 : it->second.sm_lid;
    sa_lid_ = it->second.sm_lid;
    // Back up: the SM may have dropped the subscription with the link.
    if (!local_link_up_ && it->second.link_up()) traps_.Lost();
    local_link_up_ = it->second.link_up();
  }
  // Unanswered (a sweep that began while nothing answered), the local
  // link is as last read: a cut-off exporter whose own counters answer
  // again before its PortInfo does is still cut off. Only another node's
  // answer shows the fabric answers: the local HCA answers its own SMPs
  // and PMA queries without the fabric (on hardware, also while it hangs).
  const auto other = [this](const topology::PortRef& p) { return p.node_guid != local_guid_; };
  const bool answered =
      std::any_of(sweep->links.begin(), sweep->links.end(), [&](const auto& l) { return other(l.first); }) ||
      std::any_of(sweep->readings.begin(), sweep->readings.end(),
                  [&](const collectors::PortReading& r) { return r.answered() && other(r.target.port); });
  reaches_fabric_ = local_link_up_ && answered;
  // SMPs timed out where the PMA of the same LID answered.
  std::set<std::uint16_t> gmps;
  for (const auto& r : sweep->readings) {
    if (topology::Access::Answered(r.outcome)) gmps.insert(r.target.lid);
  }
  SmpWatch::Evidence evidence;
  for (const auto& [lid, smp] : sweep->smps) {
    if (smp == collectors::SmpOutcome::kAnswered) {
      evidence.answering.insert(lid);
    } else if (smp == collectors::SmpOutcome::kTimedOut && gmps.count(lid)) {
      evidence.dropping.insert(lid);
    }
  }
  Judge(evidence);
  News news;
  const std::size_t ld = collectors::Index(collectors::Counter::kLinkDowned);
  for (const auto& r : sweep->readings) {
    if (!r.answered()) {
      if (known_failing_.insert(r.target.port).second) news.newly_failing.insert(r.target.port);
      if (auto end = SwitchEnd(r.target.port); end && holds_.SilenceDue(*end, sweeps_))
        news.silent.insert(r.target.port);
      continue;
    }
    known_failing_.erase(r.target.port);
    // Whether LinkDownedCounter moved is the counter store's rule, the
    // one link_health's totals come from.
    auto it = before.find(r.target.port);
    if (it == before.end()) continue;
    const std::optional<collectors::PortSample> sample = sweep->SampleOf(r);
    if (sample && collectors::Increase(it->second, *sample, ld) > 0) news.flapped.insert(r.target.port);
  }
  // The switch ends of links that flapped or stopped answering, where the
  // batch did not read them.
  std::set<topology::PortRef> more;
  for (const auto* set : {&news.flapped, &news.silent}) {
    for (const auto& ref : *set) {
      if (auto s = SwitchEnd(ref); s && !sweep->links.count(*s)) more.insert(*s);
    }
  }
  if (more.empty()) return news;
  std::vector<collectors::LinkTarget> extra;
  for (const auto& t : read_links_) {
    if (more.count(t.port)) extra.push_back(t);
  }
  const auto second = collectors::Sweep({}, extra, {}, engine_);
  sweep->links.insert(second.links.begin(), second.links.end());
  return news;
}

std::vector<topology::PortChange> FabricTracker::EndSweep(const collectors::SweepResult& sweep, const News& news,
                                                          bool master_changed) {
  if (master_changed) {
    // A new master may have handed out other LIDs, and knows nothing of
    // our subscriptions.
    check_all_lids_ = true;
    traps_.Due();
  }
  ++sweeps_;
  for (auto it = recent_.begin(); it != recent_.end();) it = --it->second <= 0 ? recent_.erase(it) : std::next(it);
  // LIDs that answer for other nodes make the whole view suspect (the next
  // cycle walks everything); a changed link, a flap or a port that stopped
  // answering is re-walked now.
  if (!sweep.moved_nodes.empty()) {
    lid_moves_ += sweep.moved_nodes.size();
    log_.Warn("LIDs answer for other nodes; rediscovering", "nodes=" + std::to_string(sweep.moved_nodes.size()));
    schedule_.Force();
    check_all_lids_ = true;
    return {};
  }
  return ChangesOf(sweep, news);
}

std::vector<topology::PortChange> FabricTracker::ChangesOf(const collectors::SweepResult& sweep, const News& news) {
  const auto changed = collectors::CompareLinks(*fabric_, sweep.links);
  NoteTrapChanges(changed);
  std::map<topology::PortRef, topology::PortChange> changes;
  for (const auto& [ref, port] : changed.ports) changes[ref] = {ref, port, "port state changed"};
  // A flap that is over (up again at the same rate) may have brought
  // another cable; a port that stopped answering may have another LID (not
  // every sweep: under loss it stops and starts again).
  std::set<std::uint64_t> silent_switches;
  for (const auto& [set, why] :
       {std::pair{&news.flapped, "LinkDownedCounter moved"}, std::pair{&news.silent, "stopped answering"}}) {
    const bool silent = set == &news.silent;
    for (const auto& ref : *set) {
      const auto end = SwitchEnd(ref);
      if (!end || changes.count(*end)) continue;
      auto it = sweep.links.find(*end);
      if (it != sweep.links.end()) {
        changes[*end] = {*end, it->second, why};
        if (silent) holds_.SilenceRewalked(*end, sweeps_);
      } else if (silent && *end == ref) {
        silent_switches.insert(ref.node_guid);  // the switch's own PortInfo did not answer either
      }
    }
  }
  // A switch nothing of which answered by LID this sweep may have another
  // LID: its port 0 is read over its directed route.
  const auto answered = [&](std::uint64_t g) {
    return std::any_of(sweep.readings.begin(), sweep.readings.end(),
                       [&](const auto& r) { return r.answered() && r.target.port.node_guid == g; }) ||
           std::any_of(sweep.links.begin(), sweep.links.end(), [&](const auto& l) { return l.first.node_guid == g; });
  };
  for (std::uint64_t g : silent_switches) {
    const topology::PortRef zero{g, 0};
    if (changes.count(zero) || !holds_.SilenceDue(zero, sweeps_) || answered(g)) continue;
    holds_.SilenceRewalked(zero, sweeps_);
    changes[zero] = {zero, topology::Port{}, "stopped answering by LID"};
  }
  // Re-walks whose far end did not answer, when due.
  for (auto& [ref, r] : holds_.retries()) {
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
  holds_.EndSweep(sweeps_);
  std::vector<topology::PortChange> list;
  if (changes.empty()) return list;
  log_.Info("switch ports changed; re-walking them",
            "came_up=" + std::to_string(changed.came_up) + " went_down=" + std::to_string(changed.went_down) +
                " retrained=" + std::to_string(changed.retrained) + " activated=" + std::to_string(changed.activated) +
                " flapped=" + std::to_string(news.flapped.size()) +
                " newly_failing=" + std::to_string(news.newly_failing.size()));
  for (auto& [ref, c] : changes) list.push_back(std::move(c));
  return list;
}

// --- traps ---------------------------------------------------------------

void FabricTracker::NoteTrapChanges(const collectors::LinkChanges& changed) {
  // A switch port that went down or came up raises trap 128 at its switch
  // (not one the SM brought Active: SubnSet changes raise none); its Report
  // was re-read before the sweep. Each counted once until a walk takes it
  // in; not the local port's link, which carries Reports itself.
  const auto local_end = SwitchEnd({local_guid_, local_port_});
  std::size_t fresh = 0;
  for (const auto& [ref, port] : changed.ports) {
    const topology::Port* was = fabric_->FindPort(ref);
    if (!was || was->link_up() == port.link_up() || ref.node_guid == local_guid_ || ref == local_end) continue;
    fresh += trap_counted_.insert(ref).second ? 1 : 0;
  }
  // While SMPs are dropped nothing is re-walked: the view is not current.
  if (!smp_watch_.diagnosed()) traps_.Observed(fresh, sweeps_);
}

void FabricTracker::Subscribe(std::chrono::steady_clock::time_point now, const collectors::Snapshot& parts) {
  if (!options_.subscribe_traps) return;
  // The master SM as the SM monitor sees it answer (where this exporter
  // watches the SMs), else as the local port knows it.
  std::uint16_t sm_lid = 0;
  if (parts.subnet_managers) {
    for (const auto& sm : parts.subnet_managers->sms) {
      if (sm.answering && sm.state == transport::SmState::kMaster) sm_lid = sm.lid;
    }
  } else {
    const topology::Port* local = fabric_->FindPort({local_guid_, local_port_});
    if (local) sm_lid = local->sm_lid;
  }
  traps_.Subscribe(now, sm_lid);
}

std::optional<FabricTracker::TrapReads> FabricTracker::TakeReports() {
  const std::vector<transport::Notice> notices = traps_.Take();
  if (notices.empty()) return std::nullopt;
  TrapReads out;
  for (const transport::Notice& n : notices) {
    const std::string trap = "trap " + std::to_string(n.trap_number);
    for (const auto& node : fabric_->nodes()) {
      const bool by_lid = n.lid != 0 && node.lid == n.lid;
      const bool ca = node.kind != topology::NodeKind::kSwitch;
      for (const auto& p : node.ports) {
        const bool named =
            by_lid || (ca && n.port_guid != 0 && p.guid == n.port_guid) || (ca && n.lid != 0 && p.lid == n.lid);
        if (!named) continue;
        if (auto s = SwitchEnd({node.guid, p.number})) out.why.emplace(*s, trap);
      }
    }
  }
  for (const auto& t : links_) {
    if (out.why.count(t.port)) out.links.push_back(t);
  }
  return out;
}

std::vector<topology::PortChange> FabricTracker::ChangesOf(const TrapReads& trap,
                                                           const collectors::SweepResult& reread) const {
  std::vector<topology::PortChange> changes;
  for (const auto& [ref, port] : collectors::CompareLinks(*fabric_, reread.links).ports) {
    auto it = trap.why.find(ref);
    changes.push_back({ref, port, it == trap.why.end() ? std::string() : it->second});
  }
  return changes;
}

// --- what the collectors are handed -------------------------------------

std::optional<topology::PortRef> FabricTracker::SwitchEnd(const topology::PortRef& port) const {
  const topology::Node* n = fabric_->FindNode(port.node_guid);
  if (!n) return std::nullopt;
  if (n->kind == topology::NodeKind::kSwitch) return port;
  const topology::Port* p = n->FindPort(port.port);
  if (!p || !p->remote) return std::nullopt;
  const topology::Node* far = fabric_->FindNode(p->remote->node_guid);
  if (!far || far->kind != topology::NodeKind::kSwitch) return std::nullopt;
  return *p->remote;
}

bool FabricTracker::ReadsPort(const topology::PortRef& port) const {
  return !read_ports_ || read_ports_->count(port) > 0;
}

bool FabricTracker::InScope(const topology::Node& node) const {
  if (options_.scope.everything()) return true;
  for (const auto& p : node.ports) {
    if (in_scope_.count({node.guid, p.number})) return true;
  }
  return false;
}

std::string FabricTracker::NameOf(std::uint64_t guid) const {
  auto it = nodes_->find(guid);
  return it == nodes_->end() || it->second.name.empty() ? topology::FormatGuid(guid) : it->second.name;
}

std::string FabricTracker::Describe(const topology::PortRef& port) const {
  return NameOf(port.node_guid) + "[" + std::to_string(port.port) + "]";
}

void FabricTracker::Publish(collectors::Snapshot* s) const {
  s->fabric = fabric_;
  s->nodes = nodes_;
  s->scope = options_.scope;
  s->read_ports = read_ports_;
  s->sweeps = sweeps_;
  s->discoveries = walks_;
  s->rewalks = rewalks_;
  s->traps = traps_.traps();
  s->trap_subscriptions = traps_.subscriptions();
  s->traps_delivering = traps_.delivering();
  s->lid_moves = lid_moves_;
  s->discovery_unanswered = unanswered_;
  s->incomplete_discoveries = incomplete_walks_;
  s->smps_blocked = smp_watch_.diagnosed();
  s->smp_blocked_lids = smp_watch_.diagnosed() ? smp_watch_.blocked().size() : 0;
  s->m_key_given = engine_.options().m_key != 0;
  s->local = options_.local;
  s->local.unread_ports = host_ports_unread_;
}

}  // namespace ibfabric::exporter
