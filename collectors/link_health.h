#pragma once
// Link health per cable, both ends together, from consecutive sweeps:
//  - flaps: LinkDownedCounter increments and Down transitions seen between
//    sweeps (one event per sweep counted once, whichever saw it);
//  - error rates over a sliding window at each end (symbol errors, link
//    error recoveries, receive errors, local link integrity errors, buffer
//    overruns), with a bit-error-rate estimate (symbol errors per bit
//    received) and a packet drop rate (receive errors per packet received)
//    where data was received; PortRcvRemotePhysicalErrors are kept but blame
//    another link, never this cable;
//  - congestion apart from faults: PortXmitWait as a fraction of the time
//    (ticks of one symbol time at the link's speed, times a multiplier; see
//    PortSamplesControl.Tick in IBTA 16.1.3.2) and PortXmitDiscards;
//  - width or speed below the best the cable ran at, and what the topology
//    analysis says (degraded).
// Bookkeeping only: no MADs, no thresholds (those are the alert engine's).

#include <array>
#include <bitset>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectors/counter_store.h"
#include "collectors/counters.h"
#include "topology/analysis.h"
#include "topology/fabric.h"

namespace ibfabric::collectors {

// The counters link health looks at, in this order in EndRates::delta.
enum class Signal : std::uint8_t {
  kSymbolErrors,
  kLinkErrorRecoveries,
  kLinkDowned,
  kRcvErrors,
  kRcvRemotePhysicalErrors,
  kLocalLinkIntegrityErrors,
  kExcessiveBufferOverrunErrors,
  kXmitDiscards,
  kXmitWait,
  kRcvData,  // 4-octet words
  kRcvPkts,
};
inline constexpr std::size_t kSignalCount = 11;
Counter CounterOf(Signal s);
const char* ToString(Signal s);  // "symbol_errors", ...

// One end of a cable over the window.
struct EndRates {
  topology::PortRef port;
  double window_seconds = 0;  // span covered; 0: not two readings yet
  std::array<std::uint64_t, kSignalCount> delta{};
  std::bitset<kSignalCount> present;  // the port reports this counter
  std::bitset<kSignalCount> pinned;   // stopped at its maximum: the delta is a lower bound
  std::optional<double> bit_error_rate;
  std::optional<double> packet_drop_rate;
  std::optional<double> xmit_wait_fraction;
  double bits_received = 0;
  double packets_received = 0;

  bool Known(Signal s) const { return window_seconds > 0 && present.test(static_cast<std::size_t>(s)); }
  std::uint64_t Delta(Signal s) const { return delta[static_cast<std::size_t>(s)]; }
  double PerSecond(Signal s) const {
    return window_seconds > 0 ? static_cast<double>(Delta(s)) / window_seconds : 0;
  }
};

struct CableHealth {
  topology::Link cable;  // ends ordered by GUID
  bool up = false;       // as last seen (physical link up)
  bool active = false;   // and PortState Active: traffic flows
  std::string rate;      // "4xQDR" while up
  std::string best_rate; // the fastest it ran at since the exporter started
  bool dropped = false;  // up, but below best_rate: retrained to a lower width or speed
  std::optional<topology::FindingKind> degraded;  // the topology analysis' verdict
  int downs_in_window = 0;
  std::uint64_t downs_total = 0;
  std::optional<std::chrono::system_clock::time_point> last_down;
  EndRates a, b;
};

struct LinkHealthOptions {
  std::chrono::milliseconds window{300'000};
  double xmit_wait_tick_multiplier = 1;  // PortSamplesControl.Tick + 1 of the fabric's ports
};

// Thread-safety: none; the sweeping thread owns it.
class LinkHealth {
 public:
  explicit LinkHealth(LinkHealthOptions options) : options_(options) {}

  // Folds in one sweep: the fabric as last discovered with its analysis
  // (may be null), every port's totals after the sweep, and the PortInfo the
  // sweep read of switch ports. Cables are those of every fabric seen; one
  // whose port is now cabled elsewhere is forgotten. With `counters_read`
  // false (PortInfo read between sweeps, on a trap) the totals are not
  // new: only link states are folded in, and a Down state seen then is not
  // counted again when the LinkDownedCounter that counted it is read.
  void Observe(const topology::Fabric& fabric, const topology::Analysis* analysis,
               const std::map<topology::PortRef, PortTotals>& ports,
               const std::map<topology::PortRef, topology::Port>& links,
               std::chrono::steady_clock::time_point now, std::chrono::system_clock::time_point wall,
               bool counters_read = true);

  std::vector<CableHealth> Cables() const;

 private:
  struct Point {
    std::chrono::steady_clock::time_point t;
    std::array<std::uint64_t, kSignalCount> total{};
  };
  struct History {
    std::deque<Point> kept;  // thinned: at most one point per window/5, one older than the window
    std::optional<Point> latest;
  };
  struct CableState {
    CableHealth health;
    double best_gbps = 0;
    std::deque<std::chrono::steady_clock::time_point> downs;
    // Down states counted between sweeps that no LinkDownedCounter
    // increment has matched yet.
    std::uint64_t unmatched_downs = 0;
  };
  void Track(const topology::Fabric& fabric);
  // Adds the port's reading to its history; returns its LinkDownedCounter
  // increment since the previous reading.
  std::uint64_t Record(const topology::PortRef& port, const PortTotals& totals,
                       std::chrono::steady_clock::time_point now);
  EndRates RatesOf(const topology::PortRef& port, const topology::Port* state) const;

  LinkHealthOptions options_;
  std::map<topology::Link, CableState> cables_;
  std::map<topology::PortRef, topology::Link> cable_of_;
  std::map<topology::PortRef, History> history_;
};

}  // namespace ibfabric::collectors
