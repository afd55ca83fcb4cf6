#pragma once
// The alert engine: turns link health and topology findings into alerts an
// on-call engineer can act on. Each (cable, cause) is a small state machine:
// a condition met in `raise_after` sweeps in a row raises the alert; an
// active alert clears after `clear_after` sweeps in a row without it. A
// condition that cannot be judged this sweep (an end did not answer, a
// counter stopped at its maximum) counts neither way. Conditions are rates
// over the link-health window, never absolute counter values.
//
// Default thresholds (AlertConfig's initialisers) are documented with the
// config file format (collectors/health/alert_config.h) in docs/alerts.md.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/health/detail/ber_levels.h"
#include "collectors/health/detail/threshold.h"
#include "collectors/health/link_health.h"
#include "topology/analysis.h"
#include "topology/congestion.h"
#include "topology/routing.h"

namespace ibfabric::collectors {

// kMiswiring and kMissingCable come from topology findings
// (topology/findings.h LevelOf), the others from the counters.
enum class Cause : std::uint8_t {
  kBadCable,
  kFlappingLink,
  kDegradedLink,
  kCongestion,
  kMiswiring,
  kCableDegrading,
  kMissingCable,
};
inline constexpr Cause kAllCauses[] = {Cause::kBadCable,    Cause::kFlappingLink, Cause::kDegradedLink,
                                       Cause::kCongestion,  Cause::kMiswiring,    Cause::kCableDegrading,
                                       Cause::kMissingCable};
const char* ToString(Cause c);  // "bad_cable", "flapping_link", ..., "cable_degrading", "missing_cable""

struct AlertConfig {
  std::chrono::milliseconds window{300'000};  // rates are taken over this span
  int raise_after = 2;                        // sweeps in a row with the condition
  int clear_after = 3;                        // sweeps in a row without it
  std::size_t keep_cleared = 100;             // recently cleared alerts kept for /api/v1/alerts

  // Bad cable: per end, per second over the window.
  Threshold symbol_errors{0.01, 1};
  Threshold link_error_recoveries{0.001, 0.1};
  Threshold rcv_errors{0.01, 1};
  Threshold local_link_integrity_errors{0.001, 0.1};
  Threshold excessive_buffer_overrun_errors{0.001, 0.1};
  // Estimates, judged only once enough traffic was received in the window.
  Threshold bit_error_rate{1e-12, 1e-10};
  double bit_error_rate_min_bits = 1e12;
  Threshold packet_drop_rate{1e-6, 1e-4};
  double packet_drop_rate_min_packets = 1e6;
  // Forward error correction's ratios (RS-FEC links: HDR and later), per
  // end over its FEC window, at the levels of the first row of
  // `ber_levels` for the end's speed, FEC mode and ASIC (NVIDIA's field
  // thresholds: ber_levels.h), else at these (FDR and older, a speed or
  // mode no row names; NDR's optical levels).
  std::vector<BerRow> ber_levels = DefaultBerLevels();
  Threshold raw_bit_error_ratio{5e-6, 1e-5};
  Threshold effective_bit_error_ratio{5e-12, 1e-11};
  // Degrading cable (a warning): an end's raw ratio at least `factor`
  // times the lowest of its last `period` (the ratio of each 24th of it:
  // the lowest hour of the day by default) and at least `min_raw` (below
  // it corrected symbols are too few to matter), while still under
  // raw warning level of its ber_levels row (over it, a bad_cable). Judged
  // once two 24ths of the period are behind the port. Unset factor: off.
  struct Degrading {
    std::optional<double> factor = 10;
    std::chrono::milliseconds period{86'400'000};
    double min_raw = 1e-9;
  } degrading;
  // Flapping: link-down events within the window.
  Threshold link_downs{2, 5};
  // Congestion, per end: fraction of the time the port had data it could not send,
  // and discarded packets per second.
  Threshold xmit_wait_fraction{0.05, 0.25};
  // PortSamplesControl.Tick + 1 for every device, overriding what each
  // reports (topology/xmit_wait.h); unset: each device's own.
  std::optional<double> xmit_wait_tick_multiplier;
  Threshold xmit_discards{1, 100};
  // Discrete conditions.
  Severity degraded_severity = Severity::kWarning;
  Severity miswiring_severity = Severity::kWarning;  // and missing cables'
};

// What raised an alert: one signal at one end (`end` 0: cable.a, 1:
// cable.b, -1: the cable as a whole).
struct Evidence {
  std::string signal;  // "symbol_errors", "link_downs", "xmit_wait_fraction", ...
  int end = -1;
  double value = 0;                    // the judged value (a rate, a count, a fraction)
  std::string unit;                    // "per_second", "events", "fraction", ...
  std::optional<std::uint64_t> delta;  // counter increments over the window
  double window_seconds = 0;
  std::optional<double> threshold;  // the level it reached
  std::string detail;               // for discrete conditions
};

struct Alert {
  Cause cause = Cause::kBadCable;
  Severity severity = Severity::kWarning;
  topology::Link cable;
  std::chrono::system_clock::time_point since{};      // first sweep of the streak that raised it
  std::chrono::system_clock::time_point last_seen{};  // last sweep the condition held
  std::optional<std::chrono::system_clock::time_point> cleared;
  std::vector<Evidence> evidence;
  std::string summary;  // one line
  std::string action;   // what to do about it
  // Congestion: the tree's root port (an end of `cable`), the congested
  // ports waiting behind it (also in the evidence, one "victim" each) and
  // the most hops between them.
  std::optional<topology::PortRef> root;
  std::vector<topology::PortRef> victims;
  int depth = 0;
  // The switches of the tree with adaptive routing on: there its paths,
  // taken from the static forwarding tables, may not be the traffic's.
  std::vector<std::uint64_t> adaptive_switches;
};

// An alert's id, as the API and the drain list name it:
// "CAUSE:GUID_A:PORT_A-GUID_B:PORT_B" (the cable's ends in order); the
// same of another condition of a cable (the drain list's "link_down").
std::string IdOf(std::string_view cause, const topology::Link& cable);
std::string IdOf(const Alert& a);

// A congestion tree as one sweep judged it (topology/congestion.h), with
// each port's transmit-wait fraction over the window where it is known.
struct CongestionReport {
  topology::CongestionTree tree;
  Severity severity = Severity::kWarning;  // the worst of its ports
  std::map<topology::PortRef, double> xmit_wait_fraction;
  // Its ports whose switch discarded packets at head of queue in the
  // window (PortXmitDiscardDetails.PortSwHOQLifetimeLimitDiscards), and
  // how many.
  std::map<topology::PortRef, std::uint64_t> hoq_discards;
  std::vector<std::uint64_t> adaptive_switches;  // as Alert::adaptive_switches
};

// An end judged congested in an evaluation: its cable, its rates, the
// evidence its cable's verdict gave of it (grouped into trees at Finish).
struct CongestedEnd {
  topology::Link cable;
  EndRates rates;
  std::vector<Evidence> evidence;
  std::optional<Severity> severity;
};
using CongestedEnds = std::map<topology::PortRef, CongestedEnd>;

// Thread-safety: none; the sweeping thread owns it.
class AlertEngine {
 public:
  explicit AlertEngine(AlertConfig config) : config_(std::move(config)) {}

  // How a port is named in summaries, e.g. "leaf01[3]".
  using Describe = std::function<std::string(const topology::PortRef&)>;

  // One evaluation per sweep. `analysis` null: no discovery yet, so
  // miswiring cannot be judged. Congestion: with the fabric and its
  // forwarding tables, the congested ports are grouped into trees
  // (topology/congestion.h) and each tree raises one alert, on its root's
  // cable, its victims in the evidence; without them (null, or an exporter
  // that does not read the tables) each congested cable is its own. A tree
  // through a switch of `adaptive` (adaptive routing on) says that its
  // paths are the static tables', which that switch need not follow.
  void Evaluate(const std::vector<CableHealth>& cables, const topology::Analysis* analysis,
                std::chrono::system_clock::time_point now, const Describe& describe,
                const topology::Fabric* fabric = nullptr, const topology::ForwardingTables* tables = nullptr,
                const std::set<std::uint64_t>* adaptive = nullptr);
  // Evaluate in parts, for many cables (98k at 32k GPUs, judged a few
  // thousand at a time and none held all at once): Begin, Judge every
  // cable once (in as many calls as it takes), then Finish with the rest
  // of Evaluate's arguments. `now`: the time of the cables' readings.
  void Begin(std::chrono::system_clock::time_point now);
  void Judge(const std::vector<CableHealth>& cables, const Describe& describe);
  void Finish(const topology::Analysis* analysis, std::chrono::system_clock::time_point now, const Describe& describe,
              const topology::Fabric* fabric = nullptr, const topology::ForwardingTables* tables = nullptr,
              const std::set<std::uint64_t>* adaptive = nullptr);

  std::vector<Alert> Active() const;                             // by severity, then cause, then cable
  const std::deque<Alert>& Cleared() const { return cleared_; }  // newest first
  std::map<Cause, std::uint64_t> Raised() const { return raised_; }
  // The congestion trees of the last evaluation, raised or not yet, by root.
  const std::vector<CongestionReport>& Congestion() const { return congestion_; }
  const AlertConfig& config() const { return config_; }

 private:
  // One judgement: nullopt severity with `clean` false means "cannot tell".
  struct Verdict {
    std::optional<Severity> severity;
    bool clean = true;
    std::vector<Evidence> evidence;
    std::string summary;
    std::string action;
    std::optional<topology::PortRef> root;
    std::vector<topology::PortRef> victims;
    int depth = 0;
    std::vector<std::uint64_t> adaptive_switches;
  };
  struct Track {
    int bad = 0;
    int good = 0;
    std::chrono::system_clock::time_point streak_start{};
    std::optional<Alert> active;
  };
  // Judges one value of one end against `t`; adds the evidence when it fires.
  static void JudgeEnd(Verdict* v, int end, const EndRates& rates, const std::string& signal, double value,
                       const Threshold& t, const std::string& unit, std::optional<std::uint64_t> delta);
  void Apply(const std::pair<topology::Link, Cause>& key, const Verdict& v, std::chrono::system_clock::time_point now);
  // The raw and effective BER levels of `end`: its speed, FEC mode and
  // ASIC's row of the table (ber_levels.h), else the plain levels; `row`
  // names the row, "" for the plain ones.
  struct BerLevelsOf {
    const Threshold& raw;
    const Threshold& effective;
    std::string row;
  };
  BerLevelsOf LevelsOf(const EndRates& end) const;
  Verdict BadCable(const CableHealth& h, const Describe& d) const;
  Verdict Flapping(const CableHealth& h, const Describe& d) const;
  Verdict Degraded(const CableHealth& h, const Describe& d) const;
  Verdict CableDegrading(const CableHealth& h, const Describe& d) const;
  // Each end judged alone; named and explained with its tree (GroupCongestion).
  // Not on a cable that went down within the window: PortXmitDiscards
  // counts the packets a port drops because it is down or congested
  // (IBTA PortCounters), which that window cannot tell apart.
  Verdict Congestion(const CableHealth& h) const;
  // Keeps `v` for this evaluation when it changes something: it fires, or
  // the cable and cause have a streak or an alert (any other would make a
  // track and drop it).
  void Keep(const topology::Link& cable, Cause cause, Verdict v);
  // One verdict a tree of the congested ends, on its root's cable; fills congestion_.
  void GroupCongestion(const topology::Fabric& fabric, const topology::ForwardingTables& tables,
                       const Describe& describe, const std::set<std::uint64_t>& adaptive);

  AlertConfig config_;
  std::chrono::system_clock::time_point now_{};  // of the evaluation under way (Begin)
  std::map<std::pair<topology::Link, Cause>, Track> tracks_;
  std::deque<Alert> cleared_;
  std::map<Cause, std::uint64_t> raised_;
  std::vector<CongestionReport> congestion_;
  // The evaluation under way (Begin to Finish).
  std::map<std::pair<topology::Link, Cause>, Verdict> verdicts_;
  CongestedEnds congested_;
};

}  // namespace ibfabric::collectors
