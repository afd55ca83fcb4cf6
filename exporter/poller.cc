#include "exporter/poller.h"

#include <condition_variable>

#include "collectors/sweep.h"
#include "topology/discovery.h"

namespace ibfabric::exporter {

namespace {
double SecondsOf(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}
}  // namespace

Poller::Poller(transport::MadEngine& engine, PollerOptions options, SnapshotHolder& holder,
               Logger& log)
    : engine_(engine),
      options_(options),
      holder_(holder),
      log_(log),
      fabric_(std::make_shared<topology::Fabric>()) {
  Publish();  // an empty snapshot, so /metrics answers before the first sweep
}

void Poller::Discover() {
  const auto start = std::chrono::steady_clock::now();
  topology::DiscoveryResult r = topology::Discover(engine_);
  discovery_.ran = true;
  discovery_.duration_seconds = SecondsOf(std::chrono::steady_clock::now() - start);
  discovery_.success = r.ok;
  ++discoveries_;
  discovery_problems_ = r.problems;
  for (const auto& p : r.problems) log_.Warn("discovery", "problem=\"" + p + "\"");
  if (!r.ok) {
    log_.Error("discovery failed; keeping the previous fabric");
    return;
  }
  for (const auto& node : r.fabric.nodes()) {
    nodes_[node.guid] = collectors::NodeLabel{node.kind, node.description};
    if (node.kind != topology::NodeKind::kSwitch) continue;
    for (const auto& port : node.ports) {
      if (port.link_up()) remembered_.insert({node.guid, port.number});
    }
  }
  fabric_ = std::make_shared<topology::Fabric>(std::move(r.fabric));
  log_.Info("discovery done", "switches=" + std::to_string(fabric_->switch_count()) +
                                  " hcas=" + std::to_string(fabric_->ca_count()) +
                                  " smps=" + std::to_string(r.smps) +
                                  " seconds=" + std::to_string(discovery_.duration_seconds));
}

bool Poller::Cycle() {
  const auto now = std::chrono::steady_clock::now();
  if (!discovery_.success || now >= next_discovery_) {
    Discover();
    next_discovery_ = now + options_.discovery_interval;
  }
  const auto targets = collectors::SweepTargets(*fabric_, remembered_);
  collectors::SweepResult sweep = collectors::Sweep(targets, engine_);
  const auto wall = std::chrono::system_clock::now();
  for (const auto& r : sweep.readings) {
    if (r.sample) {
      store_.Update(r.target.port, *r.sample, wall);
    } else {
      store_.MarkStale(r.target.port);
    }
  }
  // Ports that were read before but are no target now (their node vanished).
  std::set<topology::PortRef> targeted;
  for (const auto& t : targets) targeted.insert(t.port);
  for (const auto& [ref, totals] : store_.ports()) {
    if (!targeted.count(ref)) store_.MarkStale(ref);
  }
  ++sweeps_;
  targets_ = targets.size();
  failed_ports_ = sweep.failed_ports;
  port_counters_.ran = true;
  port_counters_.duration_seconds = sweep.duration.count();
  port_counters_.success = !targets.empty() && sweep.failed_ports < targets.size();
  if (port_counters_.success) last_success_ = wall;
  if (sweep.failed_ports > 0) {
    log_.Warn("sweep: ports did not answer", "failed=" + std::to_string(sweep.failed_ports) +
                                                 " targets=" + std::to_string(targets.size()));
    // A port that stops answering often means the fabric changed.
    next_discovery_ = std::chrono::steady_clock::now();
  }
  log_.Debug("sweep done", "ports=" + std::to_string(targets.size()) +
                               " seconds=" + std::to_string(port_counters_.duration_seconds));
  Publish();
  return port_counters_.success;
}

void Poller::Publish() {
  auto s = std::make_shared<collectors::Snapshot>();
  s->fabric = fabric_;
  s->ports = store_.ports();
  s->nodes = nodes_;
  s->mad = engine_.stats();
  s->discovery = discovery_;
  s->port_counters = port_counters_;
  s->sweeps = sweeps_;
  s->discoveries = discoveries_;
  s->targets = targets_;
  s->failed_ports = failed_ports_;
  s->last_success = last_success_;
  s->published = std::chrono::system_clock::now();
  s->discovery_problems = discovery_problems_;
  holder_.Publish(std::move(s));
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
