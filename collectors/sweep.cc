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
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<std::size_t> basic_index(targets.size());
  std::vector<std::size_t> ext_index(targets.size(), kNone);
  std::vector<std::size_t> details_index(targets.size(), kNone);
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const auto& t = targets[i];
    basic_index[i] = reqs.size();
    reqs.push_back(transport::PortCountersQuery(t.lid, t.port.port));
    if (t.caps.Extended()) {
      ext_index[i] = reqs.size();
      reqs.push_back(transport::PortCountersExtendedQuery(t.lid, t.port.port));
    }
    if (t.rcv_error_details) {
      details_index[i] = reqs.size();
      reqs.push_back(transport::PortRcvErrorDetailsQuery(t.lid, t.port.port));
    }
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
    for (const std::size_t q : {basic_index[i], ext_index[i], details_index[i]}) {
      if (q != kNone) target_of[q] = static_cast<std::uint32_t>(i);
    }
  }

  SweepResult out;
  auto tally = [&](std::uint64_t node, const transport::MadResult& r) {
    MadTally& t = out.mads[node];
    ++t.asked;
    if (r.retries > 0 || r.outcome == MadOutcome::kTimeout || r.outcome == MadOutcome::kSendError) ++t.troubled;
  };
  // A port's reading from its counter reads (ext and details may be null:
  // not asked), whether or not its LID answered for its node.
  auto reading = [&](std::size_t i, const transport::MadResult& basic, const transport::MadResult* ext,
                     const transport::MadResult* details) {
    const auto& t = targets[i];
    PortReading r{t, std::nullopt, basic.outcome};
    for (const transport::MadResult* m : {&basic, ext, details}) {
      if (!m) continue;
      const bool expected = m == &basic || (m == ext && t.caps.known);
      r.error |= m->outcome == MadOutcome::kRemoteError && expected;
      r.timeout |= m->outcome == MadOutcome::kTimeout || m->outcome == MadOutcome::kSendError;
      r.span.Add(m->first_sent, m->done);
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
    if (details) {
      if (details->outcome == MadOutcome::kOk) {
        const auto d = transport::DecodePortRcvErrorDetails(details->response);
        if (d.port_select == t.port.port) {
          AddRcvErrorDetails(d, &s);
          r.details = DetailsRead::kRead;
        } else {
          r.details = DetailsRead::kLost;  // another port's: not this one's reading
        }
      } else {
        r.details = details->outcome == MadOutcome::kRemoteError ? DetailsRead::kUnsupported : DetailsRead::kLost;
      }
    }
    r.sample = s;
    return r;
  };

  // Results are taken as they come, so that only the ports whose reads are
  // not all in yet hold whole response MADs: a port's reading is made once
  // its last read is decided.
  out.readings.resize(targets.size());
  std::vector<std::uint8_t> awaited(targets.size(), 0);
  for (std::size_t i = 0; i < targets.size(); ++i) {
    awaited[i] = static_cast<std::uint8_t>(1 + (ext_index[i] != kNone) + (details_index[i] != kNone));
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
    auto take = [&](std::size_t index) -> const transport::MadResult* {
      if (index == kNone) return nullptr;
      if (index == q) return &m;
      return &held.at(index);
    };
    out.readings[i] = reading(i, *take(basic_index[i]), take(ext_index[i]), take(details_index[i]));
    for (const std::size_t index : {basic_index[i], ext_index[i], details_index[i]}) {
      if (index != kNone && index != q) held.erase(index);
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
      r.details = DetailsRead::kNotAsked;
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
