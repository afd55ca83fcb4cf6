#include "collectors/reads/sweep.h"

#include <algorithm>
#include <unordered_map>

#include "topology/access.h"
#include "topology/discovery.h"
#include "topology/link_rate.h"
#include "transport/attributes.h"

namespace ibfabric::collectors {

using transport::MadOutcome;

std::vector<SweepTarget> SweepTargets(const topology::Fabric& fabric, const std::set<topology::PortRef>& remembered,
                                      const CapabilityMap& caps) {
  std::vector<SweepTarget> out;
  for (const auto& node : fabric.nodes()) {
    // An Aggregation Node (inside its switch) or a router: no host port to
    // watch; the switch end of a router's cable is read.
    if (node.kind != topology::NodeKind::kSwitch && !topology::IsHca(node)) continue;
    auto cit = caps.find(node.guid);
    const PmaCapabilities node_caps = cit == caps.end() ? PmaCapabilities{} : cit->second;
    for (const auto& port : node.ports) {
      const topology::PortRef ref{node.guid, port.number};
      const bool wanted = node.kind != topology::NodeKind::kSwitch || port.link_up() || remembered.count(ref) > 0;
      if (wanted && port.lid != 0) out.push_back({ref, port.lid, node_caps});
    }
  }
  return out;
}

CapabilityMap ReadCapabilities(const topology::Fabric& fabric, transport::MadEngine& engine,
                               const std::set<std::uint64_t>* only) {
  std::vector<transport::MadRequest> reqs;
  std::vector<std::uint64_t> guids;
  for (const auto& node : fabric.nodes()) {
    if (only && !only->count(node.guid)) continue;
    std::uint16_t lid = node.kind == topology::NodeKind::kSwitch ? node.lid : 0;
    for (const auto& p : node.ports) {
      if (lid == 0) lid = p.lid;
    }
    if (lid == 0) continue;
    reqs.push_back(transport::PerfClassPortInfoQuery(lid));
    guids.push_back(node.guid);
  }
  const auto results = engine.Run(reqs);
  CapabilityMap out;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (results[i].outcome != MadOutcome::kOk) continue;
    const auto cpi = transport::DecodePerfClassPortInfo(results[i].response);
    out[guids[i]] = PmaCapabilities::From(cpi);
    engine.SetResponseTime(reqs[i].address.lid, transport::ExpectedTime(cpi.resp_time_value));
  }
  return out;
}

std::vector<LinkTarget> LinkTargets(const topology::Fabric& fabric) {
  std::vector<LinkTarget> out;
  for (const auto& node : fabric.nodes()) {
    if (node.kind != topology::NodeKind::kSwitch || node.lid == 0) continue;
    for (const auto& port : node.ports) {
      out.push_back({{node.guid, port.number}, node.lid, topology::ExtSpeedsOf(node), port.mlnx});
    }
  }
  return out;
}

std::vector<LidCheck> LidChecks(const std::vector<SweepTarget>& targets, const std::vector<LinkTarget>& links) {
  std::map<std::uint16_t, std::uint64_t> owner;
  for (const auto& t : targets) owner.emplace(t.lid, t.port.node_guid);
  for (const auto& t : links) owner.emplace(t.lid, t.port.node_guid);
  std::vector<LidCheck> out;
  out.reserve(owner.size());
  for (const auto& [lid, guid] : owner) out.push_back({lid, guid});
  return out;
}

namespace {

// PortCounters, PortCountersExtended and the optional attributes of each
// target port, folded into one PortReading a port once its last read is in.
class CounterReads final : public BatchPart {
 public:
  explicit CounterReads(const std::vector<SweepTarget>& targets) : targets_(targets) {}

  void AddRequests(std::vector<transport::MadRequest>* out) override {
    const std::size_t begin = out->size();
    out->reserve(begin + targets_.size() * 2 + targets_.size() / 8);
    index_.resize(targets_.size());
    for (std::size_t i = 0; i < targets_.size(); ++i) {
      const auto& t = targets_[i];
      index_[i].fill(kNone);
      auto ask = [&](Read what, transport::MadRequest r) {
        index_[i][what] = static_cast<std::uint32_t>(out->size() - begin);
        out->push_back(std::move(r));
      };
      // One GMP a port where PortCountersExtended holds the error counters
      // too (ClassPortInfo.CapabilityMask2 IsAdditionalPortCountersExtended):
      // PortCounters would say nothing more.
      if (!t.caps.AdditionalExtended()) ask(kBasic, transport::PortCountersQuery(t.lid, t.port.port));
      if (t.caps.Extended() || t.caps.AdditionalExtended()) {
        ask(kExt, transport::PortCountersExtendedQuery(t.lid, t.port.port));
      }
      if (t.rcv_error_details) ask(kRcvDetails, transport::PortRcvErrorDetailsQuery(t.lid, t.port.port));
      if (t.xmit_discard_details) ask(kXmitDetails, transport::PortXmitDiscardDetailsQuery(t.lid, t.port.port));
      if (t.vl_xmit_wait) ask(kVlWait, transport::PortVlXmitWaitQuery(t.lid, t.port.port));
    }
    target_of_.resize(out->size() - begin);
    awaited_.assign(targets_.size(), 0);
    for (std::size_t i = 0; i < targets_.size(); ++i) {
      for (const std::uint32_t q : index_[i]) {
        if (q == kNone) continue;
        target_of_[q] = static_cast<std::uint32_t>(i);
        ++awaited_[i];
      }
    }
    readings_.resize(targets_.size());
  }
  std::uint64_t NodeOf(std::size_t q) const override { return targets_[target_of_[q]].port.node_guid; }

  // Results are taken as they come, so that only the ports whose reads are
  // not all in yet hold whole response MADs: a port's reading is made once
  // its last read is decided.
  void Take(std::size_t q, transport::MadResult&& m) override {
    const std::size_t i = target_of_[q];
    if (--awaited_[i] > 0) {
      held_.emplace(q, std::move(m));
      return;
    }
    std::array<const transport::MadResult*, kReads> results{};
    for (std::size_t k = 0; k < kReads; ++k) {
      const std::uint32_t at = index_[i][k];
      results[k] = at == kNone ? nullptr : at == q ? &m : &held_.at(at);
    }
    readings_[i] = Reading(i, results);
    for (const std::uint32_t at : index_[i]) {
      if (at != kNone && at != q) held_.erase(at);
    }
  }

  // A LID that answered for another node: what came from it is someone else's.
  void Finish(const std::set<std::uint16_t>& moved) override {
    for (PortReading& r : readings_) {
      if (r.outcome == MadOutcome::kOk && moved.count(r.target.lid)) {
        r.outcome = MadOutcome::kRemoteError;  // someone else's counters
        r.sample = PackedSamples::kNone;
        r.details = r.discard_details = r.vl_wait = DetailsRead::kNotAsked;
        vl_xmit_wait_.erase(r.target.port);
      }
      if (!r.answered()) ++failed_ports_;
    }
  }

  std::vector<PortReading> readings_;  // in target order
  PackedSamples samples_;              // theirs, as they came
  std::map<topology::PortRef, std::array<std::uint16_t, transport::kVlCount>> vl_xmit_wait_;
  std::size_t failed_ports_ = 0;

 private:
  // A port's reads, by kind: where each is among the part's requests (kNone: not asked).
  enum Read : std::size_t { kBasic, kExt, kRcvDetails, kXmitDetails, kVlWait, kReads };
  static constexpr std::uint32_t kNone = static_cast<std::uint32_t>(-1);

  // What became of an optional details read, decoded into the sample by
  // `add` when it answered for this port.
  static DetailsRead DetailsOf(const transport::MadResult* m, std::uint8_t port, const auto& decode, const auto& add) {
    if (!m) return DetailsRead::kNotAsked;
    if (m->outcome != MadOutcome::kOk) {
      // Only "unsupported attribute" (0x000C) says it is absent; Busy past
      // its retries, a Redirect or another error status is a lost read.
      return transport::Unsupported(*m) ? DetailsRead::kUnsupported : DetailsRead::kLost;
    }
    const auto d = decode(m->response);
    if (d.port_select != port) return DetailsRead::kLost;  // another port's: not this one's reading
    add(d);
    return DetailsRead::kRead;
  }

  // A port's reading from its counter reads (the first, PortCounters, or
  // PortCountersExtended when it alone is asked; the others may be null:
  // not asked), whether or not its LID answered for its node.
  PortReading Reading(std::size_t i, const std::array<const transport::MadResult*, kReads>& m) {
    const auto& t = targets_[i];
    const transport::MadResult* ext = m[kExt];
    const transport::MadResult& first = m[kBasic] ? *m[kBasic] : *ext;
    PortReading r{t, PackedSamples::kNone, first.outcome};
    for (const transport::MadResult* x : m) {
      if (!x) continue;
      const bool expected = x == &first || (x == ext && t.caps.known);
      r.error |= x->outcome == MadOutcome::kRemoteError && expected;
      r.timeout |= x->outcome == MadOutcome::kTimeout || x->outcome == MadOutcome::kSendError;
      r.span.Add(x->first_sent, x->done);
    }
    if (first.outcome != MadOutcome::kOk) return r;
    transport::PortCounters pc;
    if (m[kBasic]) {
      pc = transport::DecodePortCounters(m[kBasic]->response);
    } else {
      pc.port_select = t.port.port;  // not asked: PortCountersExtended holds every counter
    }
    std::optional<transport::PortCountersExtended> pce;
    bool ext_lost = false;
    if (ext) {
      if (ext->outcome == MadOutcome::kOk) pce = transport::DecodePortCountersExtended(ext->response);
      ext_lost = ext->outcome != MadOutcome::kOk && !transport::Unsupported(*ext);
    }
    // A reply for another port than asked is not this port's reading.
    if (pc.port_select != t.port.port || (pce && pce->port_select != t.port.port)) {
      r.outcome = MadOutcome::kRemoteError;
      return r;
    }
    PortSample s = SampleFrom(pc, pce ? &*pce : nullptr, t.caps);
    if (ext_lost) {
      // Lost, not unsupported: keep only the counters that come from the
      // same field as when PortCountersExtended answers, rather than
      // switch the others to their narrower PortCounters fields once.
      const transport::PortCountersExtended any{};
      const PortSample full = SampleFrom(pc, &any, t.caps);
      for (std::size_t c = 0; c < kCounterCount; ++c) {
        if (!full.present.test(c) || full.wide.test(c) != s.wide.test(c)) s.present.reset(c);
      }
    }
    r.details = DetailsOf(m[kRcvDetails], t.port.port, transport::DecodePortRcvErrorDetails,
                          [&](const auto& d) { AddRcvErrorDetails(d, &s); });
    r.discard_details = DetailsOf(m[kXmitDetails], t.port.port, transport::DecodePortXmitDiscardDetails,
                                  [&](const auto& d) { AddXmitDiscardDetails(d, &s); });
    r.vl_wait = DetailsOf(m[kVlWait], t.port.port, transport::DecodePortVlXmitWait,
                          [&](const auto& d) { vl_xmit_wait_[t.port] = d.wait; });
    r.sample = samples_.Add(s);
    return r;
  }

  const std::vector<SweepTarget>& targets_;
  std::vector<std::array<std::uint32_t, kReads>> index_;        // 4 bytes a read: 80k ports
  std::vector<std::uint32_t> target_of_;                        // the target each request is for
  std::vector<std::uint8_t> awaited_;                           // reads of each target not in yet
  std::unordered_map<std::size_t, transport::MadResult> held_;  // request -> result, ports still awaited
};

// NodeInfo by LID: whether each LID still answers for its node.
class LidCheckReads final : public BatchPart {
 public:
  explicit LidCheckReads(const std::vector<LidCheck>& checks) : checks_(checks) {}
  void AddRequests(std::vector<transport::MadRequest>* out) override {
    for (const auto& c : checks_) out->push_back(transport::NodeInfoQuery(transport::MadAddress::Lid(c.lid)));
  }
  std::uint64_t NodeOf(std::size_t i) const override { return checks_[i].guid; }
  void Take(std::size_t i, transport::MadResult&& m) override {
    const LidCheck& c = checks_[i];
    NoteSmp(&smps_, c.lid, m.outcome);
    if (m.outcome == MadOutcome::kOk && transport::DecodeNodeInfo(m.response).node_guid != c.guid) {
      moved_lids_.insert(c.lid);
      moved_nodes_.insert(c.guid);
    }
  }
  void MovedLids(std::set<std::uint16_t>* out) const override { out->insert(moved_lids_.begin(), moved_lids_.end()); }

  std::set<std::uint64_t> moved_nodes_;
  std::map<std::uint16_t, SmpOutcome> smps_;

 private:
  const std::vector<LidCheck>& checks_;
  std::set<std::uint16_t> moved_lids_;
};

// PortInfo of switch ports (and the local port): their links' state, width and speed.
class LinkReads final : public BatchPart {
 public:
  explicit LinkReads(const std::vector<LinkTarget>& links) : links_(links) {}
  void AddRequests(std::vector<transport::MadRequest>* out) override {
    for (const auto& t : links_) {
      out->push_back(transport::PortInfoQuery(
          t.local ? transport::MadAddress::Directed({}) : transport::MadAddress::Lid(t.lid), t.port.port));
    }
  }
  std::uint64_t NodeOf(std::size_t i) const override { return links_[i].port.node_guid; }
  void Take(std::size_t i, transport::MadResult&& m) override {
    const LinkTarget& l = links_[i];
    NoteSmp(&smps_, l.lid, m.outcome);
    if (m.outcome != MadOutcome::kOk) return;
    topology::Port p;
    p.number = l.port.port;
    p.lid = l.lid;
    topology::ApplyPortInfo(transport::DecodePortInfo(m.response), l.speeds, &p);
    topology::KeepMlnxSpeeds(l.mlnx, &p);
    links_read_.emplace(l.port, p);
  }
  // The local port's own PortInfo is read over no LID: its answer is its own.
  void Finish(const std::set<std::uint16_t>& moved) override {
    for (const auto& l : links_) {
      if (!l.local && moved.count(l.lid)) links_read_.erase(l.port);
    }
  }

  std::map<topology::PortRef, topology::Port> links_read_;
  std::map<std::uint16_t, SmpOutcome> smps_;

 private:
  const std::vector<LinkTarget>& links_;
};

}  // namespace

SweepResult Sweep(const std::vector<SweepTarget>& targets, const std::vector<LinkTarget>& links,
                  const std::vector<LidCheck>& checks, transport::MadEngine& engine,
                  const std::vector<BatchPart*>& own) {
  CounterReads counters(targets);
  LidCheckReads lid_checks(checks);
  LinkReads link_reads(links);
  std::vector<BatchPart*> parts{&counters};
  parts.insert(parts.end(), own.begin(), own.end());
  parts.push_back(&lid_checks);
  parts.push_back(&link_reads);
  BatchTally tally = RunBatch(parts, engine);
  SweepResult out;
  out.readings = std::move(counters.readings_);
  out.samples = std::move(counters.samples_);
  out.vl_xmit_wait = std::move(counters.vl_xmit_wait_);
  out.failed_ports = counters.failed_ports_;
  out.moved_nodes = std::move(lid_checks.moved_nodes_);
  out.links = std::move(link_reads.links_read_);
  out.smps = std::move(lid_checks.smps_);
  for (const auto& [lid, smp] : link_reads.smps_) {
    auto [it, fresh] = out.smps.emplace(lid, smp);
    if (!fresh) it->second = std::max(it->second, smp);
  }
  out.mads = std::move(tally.mads);
  out.duration = tally.duration;
  return out;
}

void NoteSmp(std::map<std::uint16_t, SmpOutcome>* smps, std::uint16_t lid, transport::MadOutcome outcome) {
  const SmpOutcome now = topology::Access::Answered(outcome)          ? SmpOutcome::kAnswered
                         : outcome == transport::MadOutcome::kTimeout ? SmpOutcome::kTimedOut
                                                                      : SmpOutcome::kRefused;
  auto [it, fresh] = smps->emplace(lid, now);
  if (!fresh) it->second = std::max(it->second, now);
}

void MadSpan::Add(std::chrono::steady_clock::time_point sent, std::chrono::steady_clock::time_point done) {
  last = std::max(last, done);
  if (sent == std::chrono::steady_clock::time_point{}) return;  // never sent
  if (first == std::chrono::steady_clock::time_point{} || sent < first) first = sent;
}

double MadSpan::seconds() const {
  return last > first && first != std::chrono::steady_clock::time_point{}
             ? std::chrono::duration<double>(last - first).count()
             : 0;
}

LinkChanges CompareLinks(const topology::Fabric& fabric, const std::map<topology::PortRef, topology::Port>& links) {
  LinkChanges out;
  for (const auto& [ref, now] : links) {
    const topology::Port* then = fabric.FindPort(ref);
    if (!then) continue;
    const std::size_t before = out.came_up + out.went_down + out.retrained + out.activated;
    if (!then->link_up() && now.link_up()) ++out.came_up;
    if (then->link_up() && !now.link_up()) ++out.went_down;
    if (then->link_up() && now.link_up()) {
      if (topology::RateString(*then) != topology::RateString(now)) {
        ++out.retrained;
      } else if ((then->state == transport::kPortStateActive) != (now.state == transport::kPortStateActive)) {
        ++out.activated;
      }
    }
    if (out.came_up + out.went_down + out.retrained + out.activated != before) out.ports.emplace(ref, now);
  }
  return out;
}

std::optional<ClearRequest> ClearNeeded(const SweepTarget& target, const PortSample& sample, int percent) {
  ClearRequest req{target, 0, 0, {}};
  const auto& specs = CounterSpecs();
  for (std::size_t i = 0; i < kCounterCount; ++i) {
    if (!sample.present.test(i) || sample.Bits(i) >= 64 || specs[i].select_bit < 0) continue;
    // Only fields of PortCounters are cleared; 32-bit data counters too,
    // when they are what this port has.
    const std::uint64_t threshold = MaxOf(sample.Bits(i)) * static_cast<std::uint64_t>(percent) / 100;
    if (sample.value[i] < threshold) continue;
    const int bit = specs[i].select_bit;
    if (bit < 16) {
      req.select |= static_cast<std::uint16_t>(1u << bit);
    } else {
      req.select2 |= static_cast<std::uint8_t>(1u << (bit - 16));
    }
    req.counters.set(i);
  }
  if (req.counters.none()) return std::nullopt;
  return req;
}

std::vector<bool> ClearCounters(const std::vector<ClearRequest>& requests, transport::MadEngine& engine) {
  std::vector<transport::MadRequest> reqs;
  for (const auto& r : requests) {
    reqs.push_back(transport::PortCountersClear(r.target.lid, r.target.port.port, r.select, r.select2));
  }
  const auto results = engine.Run(reqs);
  std::vector<bool> ok(results.size());
  for (std::size_t i = 0; i < results.size(); ++i) ok[i] = results[i].outcome == MadOutcome::kOk;
  return ok;
}

}  // namespace ibfabric::collectors
