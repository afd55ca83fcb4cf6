#include "collectors/sweep.h"

#include <algorithm>
#include <unordered_map>

#include "topology/discovery.h"
#include "topology/link_rate.h"
#include "transport/attributes.h"

namespace ibfabric::collectors {

using transport::MadOutcome;

std::vector<SweepTarget> SweepTargets(const topology::Fabric& fabric, const std::set<topology::PortRef>& remembered,
                                      const CapabilityMap& caps) {
  std::vector<SweepTarget> out;
  for (const auto& node : fabric.nodes()) {
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
    for (const auto& port : node.ports) out.push_back({{node.guid, port.number}, node.lid, node.ext_speeds2});
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

SweepResult Sweep(const std::vector<SweepTarget>& targets, const std::vector<LinkTarget>& links,
                  const std::vector<LidCheck>& checks, transport::MadEngine& engine) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<transport::MadRequest> reqs;
  reqs.reserve(targets.size() * 2 + targets.size() / 8);
  // A port's reads, by kind: where each is among `reqs` (kNone: not asked).
  enum Read : std::size_t { kBasic, kExt, kRcvDetails, kXmitDetails, kVlWait, kReads };
  constexpr std::uint32_t kNone = static_cast<std::uint32_t>(-1);
  std::vector<std::array<std::uint32_t, kReads>> index(targets.size());  // 4 bytes a read: 80k ports
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const auto& t = targets[i];
    index[i].fill(kNone);
    auto ask = [&](Read what, transport::MadRequest r) {
      index[i][what] = static_cast<std::uint32_t>(reqs.size());
      reqs.push_back(std::move(r));
    };
    ask(kBasic, transport::PortCountersQuery(t.lid, t.port.port));
    if (t.caps.Extended()) ask(kExt, transport::PortCountersExtendedQuery(t.lid, t.port.port));
    if (t.rcv_error_details) ask(kRcvDetails, transport::PortRcvErrorDetailsQuery(t.lid, t.port.port));
    if (t.xmit_discard_details) ask(kXmitDetails, transport::PortXmitDiscardDetailsQuery(t.lid, t.port.port));
    if (t.vl_xmit_wait) ask(kVlWait, transport::PortVlXmitWaitQuery(t.lid, t.port.port));
  }
  const std::size_t first_check = reqs.size();
  for (const auto& c : checks) reqs.push_back(transport::NodeInfoQuery(transport::MadAddress::Lid(c.lid)));
  const std::size_t first_link = reqs.size();
  for (const auto& t : links) {
    reqs.push_back(transport::PortInfoQuery(
        t.local ? transport::MadAddress::Directed({}) : transport::MadAddress::Lid(t.lid), t.port.port));
  }
  // Which target each counter request is for.
  std::vector<std::uint32_t> target_of(first_check);
  for (std::size_t i = 0; i < targets.size(); ++i) {
    for (const std::uint32_t q : index[i]) {
      if (q != kNone) target_of[q] = static_cast<std::uint32_t>(i);
    }
  }

  SweepResult out;
  auto tally = [&](std::uint64_t node, const transport::MadResult& r) {
    MadTally& t = out.mads[node];
    ++t.asked;
    if (r.retries > 0 || r.outcome == MadOutcome::kTimeout || r.outcome == MadOutcome::kSendError) ++t.troubled;
  };
  // What became of an optional details read, decoded into `s` by `add`
  // when it answered for this port.
  auto details_of = [](const transport::MadResult* m, std::uint8_t port, const auto& decode, const auto& add) {
    if (!m) return DetailsRead::kNotAsked;
    if (m->outcome != MadOutcome::kOk) {
      return m->outcome == MadOutcome::kRemoteError ? DetailsRead::kUnsupported : DetailsRead::kLost;
    }
    const auto d = decode(m->response);
    if (d.port_select != port) return DetailsRead::kLost;  // another port's: not this one's reading
    add(d);
    return DetailsRead::kRead;
  };
  // A port's reading from its counter reads (all but the basic one may be
  // null: not asked), whether or not its LID answered for its node.
  auto reading = [&](std::size_t i, const std::array<const transport::MadResult*, kReads>& m) {
    const auto& t = targets[i];
    const transport::MadResult& basic = *m[kBasic];
    const transport::MadResult* ext = m[kExt];
    PortReading r{t, std::nullopt, basic.outcome};
    for (const transport::MadResult* x : m) {
      if (!x) continue;
      const bool expected = x == &basic || (x == ext && t.caps.known);
      r.error |= x->outcome == MadOutcome::kRemoteError && expected;
      r.timeout |= x->outcome == MadOutcome::kTimeout || x->outcome == MadOutcome::kSendError;
      r.span.Add(x->first_sent, x->done);
    }
    if (basic.outcome != MadOutcome::kOk) return r;
    const auto pc = transport::DecodePortCounters(basic.response);
    std::optional<transport::PortCountersExtended> pce;
    bool ext_lost = false;
    if (ext) {
      if (ext->outcome == MadOutcome::kOk) pce = transport::DecodePortCountersExtended(ext->response);
      ext_lost = ext->outcome == MadOutcome::kTimeout || ext->outcome == MadOutcome::kSendError;
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
        if (!full.present.test(c) || full.bits[c] != s.bits[c]) s.present.reset(c);
      }
    }
    r.details = details_of(m[kRcvDetails], t.port.port, transport::DecodePortRcvErrorDetails,
                           [&](const auto& d) { AddRcvErrorDetails(d, &s); });
    r.discard_details = details_of(m[kXmitDetails], t.port.port, transport::DecodePortXmitDiscardDetails,
                                   [&](const auto& d) { AddXmitDiscardDetails(d, &s); });
    r.vl_wait = details_of(m[kVlWait], t.port.port, transport::DecodePortVlXmitWait,
                           [&](const auto& d) { out.vl_xmit_wait[t.port] = d.wait; });
    r.sample = s;
    return r;
  };

  // Results are taken as they come, so that only the ports whose reads are
  // not all in yet hold whole response MADs: a port's reading is made once
  // its last read is decided.
  out.readings.resize(targets.size());
  std::vector<std::uint8_t> awaited(targets.size(), 0);
  for (std::size_t i = 0; i < targets.size(); ++i) {
    awaited[i] = static_cast<std::uint8_t>(
        std::count_if(index[i].begin(), index[i].end(), [](std::uint32_t q) { return q != kNone; }));
  }
  std::unordered_map<std::size_t, transport::MadResult> held;  // request index -> result, ports still awaited
  std::set<std::uint16_t> moved_lids;
  engine.Run(reqs, [&](std::size_t q, transport::MadResult&& m) {
    if (q >= first_link) {
      const LinkTarget& l = links[q - first_link];
      tally(l.port.node_guid, m);
      if (m.outcome != MadOutcome::kOk) return;
      topology::Port p;
      p.number = l.port.port;
      p.lid = l.lid;
      topology::ApplyPortInfo(transport::DecodePortInfo(m.response), l.ext_speeds2, &p);
      out.links.emplace(l.port, p);
      return;
    }
    if (q >= first_check) {
      const LidCheck& c = checks[q - first_check];
      tally(c.guid, m);
      if (m.outcome == MadOutcome::kOk && transport::DecodeNodeInfo(m.response).node_guid != c.guid) {
        moved_lids.insert(c.lid);
        out.moved_nodes.insert(c.guid);
      }
      return;
    }
    const std::size_t i = target_of[q];
    tally(targets[i].port.node_guid, m);
    if (--awaited[i] > 0) {
      held.emplace(q, std::move(m));
      return;
    }
    std::array<const transport::MadResult*, kReads> results{};
    for (std::size_t k = 0; k < kReads; ++k) {
      const std::uint32_t at = index[i][k];
      results[k] = at == kNone ? nullptr : at == q ? &m : &held.at(at);
    }
    out.readings[i] = reading(i, results);
    for (const std::uint32_t at : index[i]) {
      if (at != kNone && at != q) held.erase(at);
    }
  });

  // A LID that answered for another node: what came from it is someone
  // else's (the local port's own PortInfo is read over no LID).
  for (std::size_t i = 0; i < links.size(); ++i) {
    if (!links[i].local && moved_lids.count(links[i].lid)) out.links.erase(links[i].port);
  }
  for (PortReading& r : out.readings) {
    if (r.outcome == MadOutcome::kOk && moved_lids.count(r.target.lid)) {
      r.outcome = MadOutcome::kRemoteError;  // someone else's counters
      r.sample.reset();
      r.details = r.discard_details = r.vl_wait = DetailsRead::kNotAsked;
      out.vl_xmit_wait.erase(r.target.port);
    }
    if (!r.sample) ++out.failed_ports;
  }
  out.duration = std::chrono::steady_clock::now() - start;
  return out;
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
    if (!sample.present.test(i) || sample.bits[i] >= 64 || specs[i].select_bit < 0) continue;
    // Only fields of PortCounters are cleared; 32-bit data counters too,
    // when they are what this port has.
    const std::uint64_t threshold = MaxOf(sample.bits[i]) * static_cast<std::uint64_t>(percent) / 100;
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
