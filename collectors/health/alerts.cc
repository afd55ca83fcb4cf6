#include "collectors/health/alerts.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <tuple>

#include "topology/findings.h"

namespace ibfabric::collectors {
namespace {

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::optional<Severity> Worse(std::optional<Severity> x, std::optional<Severity> y) {
  if (!x) return y;
  if (!y) return x;
  return std::max(*x, *y);
}

std::string Seconds(double s) { return Number(s) + "s"; }

// A span as written in the config: "24h", "30m", "24s", "500ms".
std::string Span(std::chrono::milliseconds d) {
  const auto ms = d.count();
  if (ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

// Whether an end can be judged this sweep: it answered, and twice so far.
bool Readable(const EndRates& end) { return end.present.any() && end.window_seconds > 0; }

}  // namespace

void AlertEngine::JudgeEnd(Verdict* v, int end, const EndRates& rates, const std::string& signal, double value,
                           const Threshold& t, const std::string& unit, std::optional<std::uint64_t> delta) {
  const auto sev = t.Judge(value);
  if (!sev) return;
  v->severity = Worse(v->severity, sev);
  v->evidence.push_back({signal, end, value, unit, delta, rates.window_seconds, t.LevelOf(*sev), ""});
}

std::string IdOf(std::string_view cause, const topology::Link& cable) {
  return std::string(cause) + ":" + topology::FormatGuid(cable.a.node_guid) + ":" + std::to_string(cable.a.port) + "-" +
         topology::FormatGuid(cable.b.node_guid) + ":" + std::to_string(cable.b.port);
}

std::string IdOf(const Alert& a) { return IdOf(ToString(a.cause), a.cable); }

const char* ToString(Cause c) {
  switch (c) {
    case Cause::kBadCable: return "bad_cable";
    case Cause::kFlappingLink: return "flapping_link";
    case Cause::kDegradedLink: return "degraded_link";
    case Cause::kCongestion: return "congestion";
    case Cause::kMiswiring: return "miswiring";
    case Cause::kCableDegrading: return "cable_degrading";
    case Cause::kMissingCable: return "missing_cable";
  }
  return "unknown";
}

AlertEngine::Verdict AlertEngine::BadCable(const CableHealth& h, const Describe& describe) const {
  struct Rule {
    Signal signal;
    const Threshold* threshold;
  };
  const Rule rules[] = {{Signal::kSymbolErrors, &config_.symbol_errors},
                        {Signal::kLinkErrorRecoveries, &config_.link_error_recoveries},
                        {Signal::kRcvErrors, &config_.rcv_errors},
                        {Signal::kLocalLinkIntegrityErrors, &config_.local_link_integrity_errors},
                        {Signal::kExcessiveBufferOverrunErrors, &config_.excessive_buffer_overrun_errors}};
  Verdict v;
  bool ends_with_errors[2] = {false, false};
  int e = 0;
  for (const EndRates* end : {&h.a, &h.b}) {
    const int me = e++;
    if (!Readable(*end)) {
      v.clean = false;  // this end was not read, or not twice yet
      continue;
    }
    const std::size_t before = v.evidence.size();
    for (const Rule& r : rules) {
      if (!end->Known(r.signal)) continue;  // not reported by this port
      if (end->pinned.test(static_cast<std::size_t>(r.signal)) && end->Delta(r.signal) == 0) {
        v.clean = false;  // stopped at its maximum: its rate cannot be seen
        continue;
      }
      JudgeEnd(&v, me, *end, ToString(r.signal), end->PerSecond(r.signal), *r.threshold, "per_second",
               end->Delta(r.signal));
    }
    if (end->bit_error_rate && end->bits_carried >= config_.bit_error_rate_min_bits) {
      JudgeEnd(&v, me, *end, "bit_error_rate", *end->bit_error_rate, config_.bit_error_rate, "ratio",
               end->Delta(Signal::kSymbolErrors));
    }
    if (end->packet_drop_rate && end->packets_received >= config_.packet_drop_rate_min_packets) {
      JudgeEnd(&v, me, *end, "packet_drop_rate", *end->packet_drop_rate, config_.packet_drop_rate, "ratio",
               end->Delta(Signal::kRcvErrors));
    }
    // FEC's ratios: a cable going bad shows here while symbol errors, after
    // FEC, stay 0. Over the FEC window (the physical layer's slower beat).
    // Counted but not judgeable now: counts neither way (as a pinned counter).
    if (end->raw_unknown || end->effective_unknown) v.clean = false;
    const auto fec = [&](const char* signal, const std::optional<double>& value, const Threshold& t,
                         const std::string& detail) {
      if (!value) return;
      const auto sev = t.Judge(*value);
      if (!sev) return;
      v.severity = Worse(v.severity, sev);
      v.evidence.push_back(
          {signal, me, *value, "ratio", std::nullopt, end->fec_window_seconds, t.LevelOf(*sev), detail});
    };
    // The levels of the end's speed, FEC mode and ASIC (ber_levels.h); the
    // worst lane is the raw ratio's: uncorrectable blocks are not per lane.
    const BerLevelsOf levels = LevelsOf(*end);
    const std::string lane = end->worst_lane >= 0 ? "worst lane " + std::to_string(end->worst_lane) : "";
    fec("raw_bit_error_ratio", end->raw_bit_error_ratio, levels.raw,
        lane + (!lane.empty() && !levels.row.empty() ? ", " : "") + levels.row);
    fec("effective_bit_error_ratio", end->effective_bit_error_ratio, levels.effective, levels.row);
    ends_with_errors[me] = v.evidence.size() > before;
  }
  if (!v.severity) return v;
  // The estimates go with the evidence wherever traffic allows them, also
  // below their thresholds (or their minimum traffic): they say how bad.
  int k = 0;
  for (const EndRates* end : {&h.a, &h.b}) {
    const int me = k++;
    auto has = [&](const char* signal) {
      return std::any_of(v.evidence.begin(), v.evidence.end(),
                         [&](const Evidence& x) { return x.end == me && x.signal == signal; });
    };
    if (end->bit_error_rate && !has("bit_error_rate")) {
      v.evidence.push_back({"bit_error_rate", me, *end->bit_error_rate, "ratio", end->Delta(Signal::kSymbolErrors),
                            end->window_seconds, std::nullopt, ""});
    }
    if (end->packet_drop_rate && !has("packet_drop_rate")) {
      v.evidence.push_back({"packet_drop_rate", me, *end->packet_drop_rate, "ratio", end->Delta(Signal::kRcvErrors),
                            end->window_seconds, std::nullopt, ""});
    }
  }
  const std::string cable = describe(h.cable.a) + " - " + describe(h.cable.b);
  const Evidence& first = v.evidence.front();
  const topology::PortRef& at = first.end == 0 ? h.cable.a : h.cable.b;
  v.summary = "bad cable " + cable + ": " + first.signal + " " + Number(first.value) +
              (first.unit == "per_second" ? "/s" : "") + " at " + describe(at) + " over " +
              Seconds(first.window_seconds);
  if (ends_with_errors[0] && ends_with_errors[1]) {
    v.action = "Errors at both ends: replace the cable.";
  } else {
    const topology::PortRef& far = ends_with_errors[0] ? h.cable.b : h.cable.a;
    const topology::PortRef& near = ends_with_errors[0] ? h.cable.a : h.cable.b;
    v.action = "Errors are received at " + describe(near) + ": reseat the cable at both ends; if they continue, " +
               "replace the cable, then check the transceiver and port at the far end " + describe(far) + ".";
  }
  return v;
}

AlertEngine::Verdict AlertEngine::Flapping(const CableHealth& h, const Describe& describe) const {
  Verdict v;
  const double window = std::chrono::duration<double>(config_.window).count();
  v.severity = config_.link_downs.Judge(h.downs_in_window);
  if (!v.severity) {
    // Downs leave the window as time passes; with neither end read (both
    // out of reach, or the exporter cut off) none could have been seen.
    v.clean = Readable(h.a) || Readable(h.b);
    return v;
  }
  v.evidence.push_back({"link_downs", -1, static_cast<double>(h.downs_in_window), "events", h.downs_total, window,
                        config_.link_downs.LevelOf(*v.severity), ""});
  v.summary = "flapping link " + describe(h.cable.a) + " - " + describe(h.cable.b) + ": went down " +
              std::to_string(h.downs_in_window) + " times in " + Seconds(window);
  v.action =
      "Check the cable seating and the transceivers at both ends; replace the cable if it keeps going "
      "down. If other links of one port flap too, suspect that port.";
  return v;
}

AlertEngine::Verdict AlertEngine::Degraded(const CableHealth& h, const Describe& describe) const {
  Verdict v;
  if (!h.up) {
    v.clean = false;  // down: whether it still trains low is unknown
    return v;
  }
  if (!h.dropped && !h.degraded) return v;
  v.severity = config_.degraded_severity;
  std::string why;
  if (h.dropped) {
    why = "runs " + h.rate + ", it ran " + h.best_rate;
    v.evidence.push_back({"rate_drop", -1, 0, "", std::nullopt, 0, std::nullopt, why});
  }
  if (h.degraded) {
    const std::string d = std::string("topology: ") + topology::ToString(*h.degraded) + " at " + h.rate;
    v.evidence.push_back({"topology", -1, 0, "", std::nullopt, 0, std::nullopt, d});
    if (why.empty()) why = d;
  }
  v.summary = "degraded link " + describe(h.cable.a) + " - " + describe(h.cable.b) + ": " + why;
  v.action =
      "Reseat the cable; if it still trains below its width or speed, replace it, and check the "
      "enabled width and speed of both ports.";
  return v;
}

AlertEngine::BerLevelsOf AlertEngine::LevelsOf(const EndRates& end) const {
  const BerRow* row = MatchBerRow(config_.ber_levels, end.speed, end.fec_mode, end.asic);
  if (!row) return {config_.raw_bit_error_ratio, config_.effective_bit_error_ratio, ""};
  return {row->raw, row->effective, "levels " + row->Describe()};
}

AlertEngine::Verdict AlertEngine::CableDegrading(const CableHealth& h, const Describe& describe) const {
  Verdict v;
  const AlertConfig::Degrading& d = config_.degrading;
  if (!d.factor) return v;
  // Down, whether it still degrades is unknown.
  if (!h.up) v.clean = false;
  std::string first;  // the summary's end
  int e = 0;
  for (const EndRates* end : {&h.a, &h.b}) {
    const int me = e++;
    // The end's bad-cable level: over it the cable is a bad_cable instead.
    const Threshold& raw = LevelsOf(*end).raw;
    const std::optional<double> bad = raw.warning ? raw.warning : raw.critical;
    if (end->raw_unknown) {
      v.clean = false;  // counted, but no ratio to judge now
      continue;
    }
    // Judged with two 24ths of the period behind the port at least (two
    // hours of a day) that hold a FEC window.
    if (!end->raw_bit_error_ratio || !end->raw_bit_error_ratio_baseline || end->baseline_parts < 2) continue;
    const double now = *end->raw_bit_error_ratio;
    const double lowest = *end->raw_bit_error_ratio_baseline;
    if (now < d.min_raw || now < *d.factor * lowest || (bad && now >= *bad)) continue;
    v.severity = Severity::kWarning;
    const std::string lane = end->worst_lane >= 0 ? "worst lane " + std::to_string(end->worst_lane) + ", " : "";
    v.evidence.push_back({"raw_bit_error_ratio", me, now, "ratio", std::nullopt, end->fec_window_seconds,
                          *d.factor * lowest, lane + "up from " + Number(lowest)});
    v.evidence.push_back({"raw_bit_error_ratio_baseline", me, lowest, "ratio", std::nullopt, end->baseline_seconds,
                          std::nullopt, "the lowest of the last " + Span(d.period)});
    if (first.empty()) {
      first = "raw_bit_error_ratio " + Number(now) + " at " + describe(me == 0 ? h.cable.a : h.cable.b) + ", " +
              (lowest > 0
                   ? Number(now / lowest) + "x its lowest of the last " + Span(d.period) + " (" + Number(lowest) + ")"
                   : "its lowest of the last " + Span(d.period) + " was 0") +
              (bad ? ", under the bad-cable level " + Number(*bad) : "");
    }
  }
  if (!v.severity) return v;
  v.summary = "degrading cable " + describe(h.cable.a) + " - " + describe(h.cable.b) + ": " + first;
  v.action =
      "FEC still corrects every error, but the cable's raw error ratio is rising: reseat or replace it at the next "
      "maintenance window, before it reaches the bad-cable level; if it keeps rising, check the module temperature "
      "and the transceiver at the far end.";
  return v;
}

AlertEngine::Verdict AlertEngine::Congestion(const CableHealth& h) const {
  Verdict v;
  // A link read down carries nothing, so nothing on it waits: clean. An
  // alert raised before the exporter read it down clears: IBTA's
  // PortXmitDiscards counts packets "discarded by the port because the
  // port is down or congested", and a switch discards what its table still
  // routes to a port that just died until the SM routes around it.
  if (!h.up) return v;
  if (!h.active || (h.last_down && now_ - *h.last_down < config_.window)) {
    // Discards on a link that is not Active come from its state (packets
    // routed to a port still in Init), not from congestion; over a window
    // that holds a link-down, from the port being down (a host's reboot)
    // as much as from congestion.
    v.clean = false;
    return v;
  }
  int e = 0;
  for (const EndRates* end : {&h.a, &h.b}) {
    const int me = e++;
    if (!Readable(*end)) {
      v.clean = false;
      continue;
    }
    if (end->xmit_wait_fraction) {
      JudgeEnd(&v, me, *end, "xmit_wait_fraction", *end->xmit_wait_fraction, config_.xmit_wait_fraction, "fraction",
               end->Delta(Signal::kXmitWait));
    }
    if (end->Known(Signal::kXmitDiscards)) {
      JudgeEnd(&v, me, *end, "xmit_discards", end->PerSecond(Signal::kXmitDiscards), config_.xmit_discards,
               "per_second", end->Delta(Signal::kXmitDiscards));
    }
  }
  return v;  // named and explained with its tree (GroupCongestion)
}

namespace {

// The tree's worst severity and each port's wait fraction and head-of-queue
// discards into `report`; the discards as evidence (at the root its end
// says where, elsewhere in the tree the detail).
std::vector<Evidence> MeasureTree(const topology::CongestionTree& tree, const CongestedEnds& ends,
                                  const AlertEngine::Describe& describe, CongestionReport* report) {
  std::optional<Severity> worst;
  std::vector<Evidence> hoq;
  std::vector<topology::PortRef> members{tree.root};
  members.insert(members.end(), tree.victims.begin(), tree.victims.end());
  for (const topology::PortRef& p : members) {
    const CongestedEnd& end = ends.at(p);
    worst = Worse(worst, end.severity);
    if (end.rates.xmit_wait_fraction) report->xmit_wait_fraction[p] = *end.rates.xmit_wait_fraction;
    if (end.rates.Known(Signal::kXmitHoqDiscards) && end.rates.Delta(Signal::kXmitHoqDiscards) > 0) {
      const std::uint64_t n = end.rates.Delta(Signal::kXmitHoqDiscards);
      report->hoq_discards[p] = n;
      const bool at_root = p == tree.root;
      hoq.push_back({"hoq_lifetime_discards", at_root ? (p == end.cable.a ? 0 : 1) : -1,
                     end.rates.PerSecond(Signal::kXmitHoqDiscards), "per_second", n, end.rates.window_seconds,
                     std::nullopt, at_root ? "" : "at " + describe(p)});
    }
  }
  report->severity = worst.value_or(Severity::kWarning);
  return hoq;
}

// The tree's verdict in words: a victim line each in `evidence`, the
// summary and what to do (a loop, an HCA that does not drain, or a switch
// port).
void ExplainTree(const topology::CongestionTree& tree, const CongestedEnd& root, const CongestedEnds& ends,
                 const CongestionReport& report, const topology::Fabric& fabric, const AlertEngine::Describe& describe,
                 std::vector<Evidence>* evidence, std::string* summary, std::string* action) {
  for (const topology::PortRef& victim : tree.victims) {
    auto f = report.xmit_wait_fraction.find(victim);
    const int hops = tree.hops.at(victim);
    evidence->push_back({"victim", -1, f == report.xmit_wait_fraction.end() ? 0 : f->second, "fraction", std::nullopt,
                         ends.at(victim).rates.window_seconds, std::nullopt,
                         describe(victim) + " waits behind the root, " + std::to_string(hops) +
                             (hops == 1 ? " hop" : " hops") + " away"});
  }
  const topology::PortRef peer = root.cable.a == tree.root ? root.cable.b : root.cable.a;
  const topology::Node* behind = fabric.FindNode(peer.node_guid);
  const bool to_ca = behind && behind->kind == topology::NodeKind::kCa;
  const std::string victims = std::to_string(tree.victims.size()) + (tree.victims.size() == 1 ? " victim" : " victims");
  const Evidence& first = root.evidence.front();
  *summary = std::string(tree.loop ? "congestion loop" : "congestion") + " rooted at " + describe(tree.root) +
             " towards " + describe(peer) + (to_ca ? " (not draining)" : "") + ": " + first.signal + " " +
             Number(first.value) + ", " + victims +
             (tree.victims.empty() ? "" : ", depth " + std::to_string(tree.depth));
  if (tree.loop) {
    *action =
        "These ports wait on each other in a loop (a credit loop): check the routing engine for cycles "
        "(SM routing engine, ibdiagnet); nothing drains it but a change of routes or traffic.";
  } else if (to_ca) {
    *action =
        "The HCA at the root does not take what is sent to it (a host stalled on CPU, PCIe or memory, or "
        "an incast to it): look at that host first; the victims clear when it drains.";
  } else {
    *action =
        "Congestion, not a cable fault, rooted at this port: check the routing balance (SM routing engine, "
        "ibdiagnet), the traffic pattern and whether the switch has enough uplinks; the victims wait behind it.";
  }
}

// The switches of a tree's ports (root and victims) in `adaptive`, ascending.
std::vector<std::uint64_t> AdaptiveOnTree(const topology::CongestionTree& tree,
                                          const std::set<std::uint64_t>& adaptive) {
  std::set<std::uint64_t> on;
  if (adaptive.count(tree.root.node_guid)) on.insert(tree.root.node_guid);
  for (const topology::PortRef& v : tree.victims) {
    if (adaptive.count(v.node_guid)) on.insert(v.node_guid);
  }
  return {on.begin(), on.end()};
}

}  // namespace

void AlertEngine::GroupCongestion(const topology::Fabric& fabric, const topology::ForwardingTables& tables,
                                  const Describe& describe, const std::set<std::uint64_t>& adaptive) {
  const CongestedEnds& ends = congested_;
  std::set<topology::PortRef> congested;
  for (const auto& [port, end] : ends) congested.insert(port);
  for (topology::CongestionTree& tree : topology::FindCongestionTrees(fabric, tables, congested)) {
    CongestionReport report;
    const std::vector<Evidence> hoq = MeasureTree(tree, ends, describe, &report);
    const CongestedEnd& root = ends.at(tree.root);
    Verdict& v = verdicts_[{root.cable, Cause::kCongestion}];
    v.severity = Worse(v.severity, report.severity);
    v.evidence.insert(v.evidence.end(), root.evidence.begin(), root.evidence.end());
    v.evidence.insert(v.evidence.end(), hoq.begin(), hoq.end());
    ExplainTree(tree, root, ends, report, fabric, describe, &v.evidence, &v.summary, &v.action);
    report.adaptive_switches = AdaptiveOnTree(tree, adaptive);
    if (!report.adaptive_switches.empty()) {
      std::string names;
      for (std::uint64_t g : report.adaptive_switches)
        names += (names.empty() ? "" : ", ") + topology::NodeName(fabric, g);
      v.summary += "; paths from the static forwarding tables, but adaptive routing is on at " + names +
                   ": traffic there may take other ports";
    }
    v.adaptive_switches = report.adaptive_switches;
    v.root = tree.root;
    v.victims = tree.victims;
    v.depth = tree.depth;
    report.tree = std::move(tree);
    congestion_.push_back(std::move(report));
  }
}

void AlertEngine::Apply(const std::pair<topology::Link, Cause>& key, const Verdict& v,
                        std::chrono::system_clock::time_point now) {
  Track& t = tracks_[key];
  if (v.severity) {
    t.good = 0;
    if (t.bad++ == 0) t.streak_start = now;
    if (!t.active && t.bad >= config_.raise_after) {
      t.active = Alert{};
      t.active->cause = key.second;
      t.active->cable = key.first;
      t.active->since = t.streak_start;
      ++raised_[key.second];
    }
    if (t.active) {
      t.active->severity = *v.severity;
      t.active->last_seen = now;
      t.active->evidence = v.evidence;
      t.active->summary = v.summary;
      t.active->action = v.action;
      t.active->root = v.root;
      t.active->victims = v.victims;
      t.active->depth = v.depth;
      t.active->adaptive_switches = v.adaptive_switches;
    }
  } else if (v.clean) {
    t.bad = 0;
    if (t.active && ++t.good >= config_.clear_after) {
      t.active->cleared = now;
      cleared_.push_front(std::move(*t.active));
      while (cleared_.size() > config_.keep_cleared) cleared_.pop_back();
      t.active.reset();
      t.good = 0;
    }
  }
  if (!t.active && t.bad == 0) tracks_.erase(key);
}

void AlertEngine::Evaluate(const std::vector<CableHealth>& cables, const topology::Analysis* analysis,
                           std::chrono::system_clock::time_point now, const Describe& describe,
                           const topology::Fabric* fabric, const topology::ForwardingTables* tables,
                           const std::set<std::uint64_t>* adaptive) {
  Begin(now);
  Judge(cables, describe);
  Finish(analysis, now, describe, fabric, tables, adaptive);
}

void AlertEngine::Begin(std::chrono::system_clock::time_point now) {
  now_ = now;
  verdicts_.clear();
  congested_.clear();
}

void AlertEngine::Keep(const topology::Link& cable, Cause cause, Verdict v) {
  std::pair<topology::Link, Cause> key{cable, cause};
  if (v.severity || tracks_.count(key)) {
    verdicts_.insert_or_assign(std::move(key), std::move(v));
  } else {
    verdicts_.erase(key);  // a cable judged again: its last verdict stands
  }
}

void AlertEngine::Judge(const std::vector<CableHealth>& cables, const Describe& describe) {
  // Only the verdicts that change something are kept: a whole fabric's
  // clean ones, five a cable, were the most a sweep held at 32k GPUs.
  for (const CableHealth& h : cables) {
    Keep(h.cable, Cause::kBadCable, BadCable(h, describe));
    Keep(h.cable, Cause::kFlappingLink, Flapping(h, describe));
    Keep(h.cable, Cause::kDegradedLink, Degraded(h, describe));
    Keep(h.cable, Cause::kCableDegrading, CableDegrading(h, describe));
    // Each congested end is taken out of its cable's verdict, with a copy
    // of its rates: judged with its tree at Finish.
    Verdict congestion = Congestion(h);
    if (congestion.severity) {
      for (const Evidence& e : congestion.evidence) {
        CongestedEnd& end = congested_[e.end == 0 ? h.cable.a : h.cable.b];
        end.cable = h.cable;
        end.rates = e.end == 0 ? h.a : h.b;
        end.evidence.push_back(e);
        const Threshold& t = e.signal == "xmit_wait_fraction" ? config_.xmit_wait_fraction : config_.xmit_discards;
        end.severity = Worse(end.severity, t.Judge(e.value));
      }
      congestion = Verdict{};
    }
    Keep(h.cable, Cause::kCongestion, std::move(congestion));
  }
}

void AlertEngine::Finish(const topology::Analysis* analysis, std::chrono::system_clock::time_point now,
                         const Describe& describe, const topology::Fabric* fabric,
                         const topology::ForwardingTables* tables, const std::set<std::uint64_t>* adaptive) {
  congestion_.clear();
  static const topology::ForwardingTables kNoTables;
  static const topology::Fabric kNoFabric;
  static const std::set<std::uint64_t> kNone;
  GroupCongestion(fabric ? *fabric : kNoFabric, fabric && tables ? *tables : kNoTables, describe,
                  adaptive ? *adaptive : kNone);
  if (analysis) {
    for (const auto& f : analysis->findings) {
      if (!topology::RaisesCableAlert(f)) continue;
      const bool missing = topology::LevelOf(f.kind) == topology::FindingLevel::kMissingCable;
      const topology::Link cable = topology::CableBetween(*f.a, *f.b);
      Verdict& v = verdicts_[{cable, missing ? Cause::kMissingCable : Cause::kMiswiring}];
      v.severity = config_.miswiring_severity;
      v.evidence.push_back({topology::ToString(f.kind), -1, 0, "", std::nullopt, 0, std::nullopt, f.detail});
      if (v.summary.empty()) v.summary = std::string(missing ? "missing cable: " : "miswired: ") + f.detail;
      v.action = missing ? "Cable the ports the evidence names (where the pattern or the plan puts the cable), "
                           "or check that the cable there is seated and its ports enabled."
                         : "Recable as the plan or the fat-tree layout says; the evidence names both ends.";
    }
  }
  // Alerts and streaks of cables and findings that are gone: judged clean,
  // except the topology's before the first analysis.
  std::vector<std::pair<topology::Link, Cause>> stale;
  for (const auto& [key, t] : tracks_) {
    const bool topological = key.second == Cause::kMiswiring || key.second == Cause::kMissingCable;
    if (!verdicts_.count(key) && (analysis || !topological)) stale.push_back(key);
  }
  for (const auto& key : stale) Apply(key, Verdict{}, now);
  for (const auto& [key, v] : verdicts_) Apply(key, v, now);
  verdicts_.clear();
  congested_.clear();
}

std::vector<Alert> AlertEngine::Active() const {
  std::vector<Alert> out;
  for (const auto& [key, t] : tracks_) {
    if (t.active) out.push_back(*t.active);
  }
  std::stable_sort(out.begin(), out.end(), [](const Alert& x, const Alert& y) {
    if (x.severity != y.severity) return x.severity > y.severity;
    return std::tie(x.cause, x.cable) < std::tie(y.cause, y.cable);
  });
  return out;
}

}  // namespace ibfabric::collectors
