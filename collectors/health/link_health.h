#pragma once
// Link health per cable, both ends together, from consecutive sweeps:
//  - link-down events: LinkDownedCounter increments and Down states that a
//    PortInfo read (never a MAD that went unanswered: a cable none of whose
//    ends can be read is unreachable, not down). One flap is one event
//    whichever saw it first: an event one end's counter or a Down state
//    showed is expected at each other end's next fresh reading and matched
//    there, not counted again; an end read again, with the link read up,
//    without it stops being expected to show it (ibsim never counts
//    LinkDowned; a pinned counter cannot); a Down state read after a
//    counter showed its flap is that flap.
//  - why a link went down: a host whose counters restarted from zero
//    between two readings while its cable went down was reset (one
//    host_reset event, no flap); nearly every cable of one switch going
//    down within the window is one switch_reboot event for that switch; a
//    port read Disabled was isolated on purpose (port_disabled). Only the
//    rest are flaps (downs_in_window);
//  - error rates over a sliding window at each end (symbol errors, link
//    error recoveries, receive errors, local link integrity errors, buffer
//    overruns), with a bit-error-rate estimate (symbol errors per bit
//    received) and a packet drop rate (receive errors per packet received)
//    where data was received; PortRcvRemotePhysicalErrors are kept but blame
//    another link, never this cable;
//  - congestion apart from faults: PortXmitWait as a fraction of the time
//    (counts times how long one lasts on that device at the speed the port
//    runs: topology/xmit_wait.h, given per sweep as WaitCountSeconds) and
//    PortXmitDiscards;
//  - width or speed below the best the cable ran at, and what the topology
//    analysis says (degraded).
// Bookkeeping only: no MADs, no thresholds (those are the alert engine's).

#include <array>
#include <bitset>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectors/health/counter_store.h"
#include "collectors/health/detail/ber_levels.h"
#include "collectors/reads/counters.h"
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
  // PortXmitDiscardDetails.PortSwHOQLifetimeLimitDiscards: read when
  // PortXmitDiscards moved; marks where congestion starts.
  kXmitHoqDiscards,
};
inline constexpr std::size_t kSignalCount = 12;
Counter CounterOf(Signal s);
const char* ToString(Signal s);  // "symbol_errors", ...

// What one end's counters did over the window.
struct EndWindow {
  double window_seconds = 0;  // span covered; 0: not two readings yet
  std::array<std::uint64_t, kSignalCount> delta{};
  std::bitset<kSignalCount> present;  // the port reports this counter

  bool Known(Signal s) const { return window_seconds > 0 && present.test(static_cast<std::size_t>(s)); }
  std::uint64_t Delta(Signal s) const { return delta[static_cast<std::size_t>(s)]; }
  double PerSecond(Signal s) const { return window_seconds > 0 ? static_cast<double>(Delta(s)) / window_seconds : 0; }
};

// One end of a cable over the window, with all the alert engine judges.
struct EndRates : EndWindow {
  topology::PortRef port;
  std::bitset<kSignalCount> pinned;  // stopped at its maximum: the delta is a lower bound
  std::optional<double> bit_error_rate;
  std::optional<double> packet_drop_rate;
  // Forward error correction, where the device reports it (the fec
  // collector, filled in by link_health's collector): raw (pre-FEC) and
  // effective (post-FEC) bit error ratios over the FEC window, and the
  // lane that corrected the most symbols in it (-1: none).
  std::optional<double> raw_bit_error_ratio;
  std::optional<double> effective_bit_error_ratio;
  double fec_window_seconds = 0;
  // What those ratios' levels depend on (AlertConfig::ber_levels): the
  // speed the link runs now, the port's FEC mode where it was read, the
  // process of the end's ASIC.
  topology::Speed speed = topology::Speed::kUnknown;
  std::optional<transport::FecMode> fec_mode;
  AsicProcess asic = AsicProcess::kUnknown;
  int worst_lane = -1;
  // The lowest raw ratio of the port over its history (the 24ths of
  // AlertConfig::degrading.period that hold a FEC window), how many of
  // those 24ths there are, and the time they span.
  std::optional<double> raw_bit_error_ratio_baseline;
  int baseline_parts = 0;
  double baseline_seconds = 0;
  // The port runs RS-FEC and its counters are read, but there is no
  // current ratio to judge (not two reads yet, the link went down since,
  // a counter pinned at its maximum, a reading gone stale): by that ratio
  // the cable can be judged clean no more than dirty.
  bool raw_unknown = false;
  bool effective_unknown = false;
  std::optional<double> xmit_wait_fraction;
  // The bits the link carried to this end in the window: its signalling
  // rate (lanes x lane rate, topology::ActiveSignalGbps) times the window,
  // idle symbols included, as NVIDIA's BER is over the bits received at
  // the PHY (PPCNT phy_received_bits), not PortRcvData's packet bytes
  // (which would inflate the ratio by 1/utilisation on a quiet link).
  double bits_carried = 0;
  double packets_received = 0;
};

// Why a link went down.
enum class DownKind : std::uint8_t { kFlap, kHostReset, kSwitchReboot, kPortDisabled };
const char* ToString(DownKind k);  // "flap", "host_reset", "switch_reboot", "port_disabled"

// A link-down event that is not a flap of the cable: what happened, to
// which node, and how many links it took down.
struct FabricEvent {
  DownKind kind = DownKind::kHostReset;
  std::chrono::system_clock::time_point when{};
  std::uint64_t node_guid = 0;          // the host, the switch, the node of the disabled port
  std::optional<topology::Link> cable;  // a host reset's or disabled port's cable
  int links = 0;                        // link-down events it explains
};

// A cable's state as LinkHealth keeps it from sweep to sweep.
struct CableStatus {
  topology::Link cable;                           // ends ordered by GUID
  bool up = false;                                // as last seen (physical link up)
  bool active = false;                            // and PortState Active: traffic flows
  std::string rate;                               // "4xQDR" while up
  std::string best_rate;                          // the fastest it ran at since the exporter started
  bool dropped = false;                           // up, but below best_rate: retrained to a lower width or speed
  std::optional<topology::FindingKind> degraded;  // the topology analysis' verdict
  bool disabled = false;                          // down, an end Disabled on purpose (PortPhysicalState 3)
  bool reachable = true;          // an end was read, or discovery knows one: false when both are out of reach
  int downs_in_window = 0;        // flaps within the window (what flapping_link judges)
  std::uint64_t downs_total = 0;  // every link-down event, flap or not
  std::optional<std::chrono::system_clock::time_point> last_down;
  std::optional<DownKind> last_down_kind;
};

// And what its ends' counters did over the window, worked out from the
// kept readings when the cables are asked for (not kept per cable: at 40k
// cables the rates are most of the bytes).
struct CableHealth : CableStatus {
  EndRates a, b;
};

// What the published report keeps of an end (the metrics and the port
// view show it): its window and the ratios worked out over it, without
// what only the alert engine judges (FEC, pinned counters). Under half of
// EndRates: at 32k GPUs the report holds 98k cables, and a second one
// while the next is made.
struct EndSummary : EndWindow {
  EndSummary() = default;
  explicit EndSummary(const EndRates& r);
  std::optional<double> bit_error_rate() const { return Maybe(bit_error_rate_); }
  std::optional<double> packet_drop_rate() const { return Maybe(packet_drop_rate_); }
  std::optional<double> xmit_wait_fraction() const { return Maybe(xmit_wait_fraction_); }

 private:
  static std::optional<double> Maybe(double v) { return std::isnan(v) ? std::nullopt : std::optional<double>(v); }
  double bit_error_rate_ = std::nan("");  // NaN: none
  double packet_drop_rate_ = std::nan("");
  double xmit_wait_fraction_ = std::nan("");
};

// A cable as the report publishes it: its ends are cable.a and cable.b.
struct CableSummary : CableStatus {
  CableSummary() = default;
  explicit CableSummary(const CableHealth& h) : CableStatus(h), a(h.a), b(h.b) {}
  EndSummary a, b;
};

struct LinkHealthOptions {
  std::chrono::milliseconds window{300'000};
};

// Seconds one PortXmitWait count of a port stands for as it runs now (0:
// not up, or unknown): topology::XmitWaitCountSeconds with what the
// exporter knows of the device's Tick. Unset: with no Tick read.
using WaitCountSeconds = std::function<double(const topology::Node&, const topology::Port&)>;

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
  void Observe(const topology::Fabric& fabric, const topology::Analysis* analysis, const PortTable& ports,
               const std::map<topology::PortRef, topology::Port>& links, std::chrono::steady_clock::time_point now,
               std::chrono::system_clock::time_point wall, bool counters_read = true,
               const WaitCountSeconds& wait_count = {});

  std::vector<CableHealth> Cables() const;
  // Each cable's in turn, made as it is handed over (Cables holds them all).
  void ForEachCable(const std::function<void(CableHealth&&)>& take) const;
  std::size_t cables() const { return cables_.size(); }
  // Events that explain link downs other than flaps, oldest first (the last
  // 256), and how many of each kind since the start.
  const std::deque<FabricEvent>& Events() const { return events_; }
  const std::map<DownKind, std::uint64_t>& EventCounts() const { return event_counts_; }

 private:
  struct Point {
    std::chrono::steady_clock::time_point t;
    std::array<std::uint64_t, kSignalCount> total{};
  };
  // A port's points: at most 5 kept at least window/5 apart within the
  // window, one older, and one more: the newest reading (not yet kept), or
  // the one just kept before the oldest is dropped.
  static constexpr std::size_t kKeptPoints = 7;
  // A port's points unpacked, oldest first, as Record and RatesOf work on them.
  struct Points {
    std::array<Point, kKeptPoints> at;
    std::size_t size = 0;
    Point& front() { return at[0]; }
    Point& back() { return at[size - 1]; }
  };
  struct History {
    // Oldest first: points thinned to one per window/5, the first older
    // than the window, then the newest reading. Held newest first as
    // varints: the newest's time and totals, then each older one as how
    // much earlier it was and how much lower each total than the next
    // newer one (about 25 bytes where a Point takes 104). This is most of
    // link health's memory: 197k ports at 32k GPUs.
    std::vector<std::uint8_t> points;
    std::uint8_t count = 0;    // points, the newest included
    bool last_kept = false;    // the newest is one of the thinned points
    bool on_cable = false;     // the port is on a cable; a port on none has no history
    std::uint32_t resets = 0;  // PortTotals::resets as last seen
  };
  static Points Unpack(const History& h);
  static void Pack(const Points& points, History* h);
  // What one fresh reading of a port brought.
  struct Reading {
    std::uint64_t link_downed = 0;  // LinkDownedCounter increment since the previous reading
    bool reset = false;             // its counters restarted since
    std::optional<std::chrono::steady_clock::time_point> previous;  // when it was read before
  };
  struct Down {
    std::chrono::steady_clock::time_point t;
    DownKind kind;
  };
  struct CableState {
    CableStatus health;
    // Each end's as of the last observation: how long one PortXmitWait
    // count lasts (RatesOf), the counters it reports and those pinned.
    std::array<double, 2> wait_count_seconds{};
    std::array<double, 2> signal_gbps{};  // the link's signalling rate at each end (0: not up)
    std::array<topology::Speed, 2> speed{};
    std::array<AsicProcess, 2> asic{};
    std::array<std::bitset<kSignalCount>, 2> present, pinned;
    double best_gbps = 0;
    std::vector<Down> downs;  // within the window, oldest first
    // Events each end's LinkDownedCounter is still expected to show, and
    // events a counter showed whose Down state may still be read.
    std::array<std::uint64_t, 2> pending{};
    std::uint64_t seen_by_counter = 0;
    // The observation in which a CA end's counters were seen restarted:
    // downs counted soon after are that reset too.
    std::optional<std::uint64_t> reset_seen;
  };
  // What a cable's two ends showed this observation: each end's totals
  // (stale or not), its fresh reading when its counters were read now, the
  // signals it reports and those pinned.
  struct Ends {
    std::array<const PortTotals*, 2> totals{};
    std::array<std::optional<Reading>, 2> fresh;
    std::array<std::bitset<kSignalCount>, 2> present, pinned;
  };
  // The link's state as PortInfo gave it (ReadLink).
  struct LinkRead {
    const topology::Port* state = nullptr;  // the PortInfo it is judged by; null when unknown
    bool known = false;                     // some PortInfo tells
    bool read_now = false;                  // read at an end this sweep
    bool up = true;
    bool active = true;
    bool disabled = false;
    std::uint64_t disabled_node = 0;  // the node of the end read Disabled
  };
  // The steps of Observe, for one cable.
  Ends ReadEnds(const topology::Link& link, const PortTable& ports, bool counters_read,
                std::chrono::steady_clock::time_point now);
  static LinkRead ReadLink(const topology::Link& link, const CableStatus& was, const topology::Fabric& fabric,
                           const std::map<topology::PortRef, topology::Port>& links);
  // Link-down events new this observation (each flap once, whichever end saw it first).
  static std::uint64_t CountDowns(CableState* c, const Ends& ends, bool read_up, bool went_down);
  // What the downs were: a flap, a host reset, a port disabled (emitting the events).
  DownKind Classify(const topology::Link& link, CableState* c, const Ends& ends, bool disabled,
                    std::uint64_t disabled_node, std::uint64_t events, std::chrono::system_clock::time_point wall);
  static void NoteRates(const topology::Link& link, CableState* c, const LinkRead& read,
                        const topology::Analysis* analysis, const topology::Fabric& fabric,
                        const std::map<topology::PortRef, topology::Port>& links, const WaitCountSeconds& wait_count);
  void Track(const topology::Fabric& fabric);
  // Adds the port's reading to its history.
  Reading Record(const topology::PortRef& port, const PortTotals& totals, std::chrono::steady_clock::time_point now);
  // `wait_count_seconds`: how long one PortXmitWait count of the port
  // lasts, 0 when unknown (no wait fraction then); `signal_gbps`: the
  // signalling rate of its link, 0 when unknown (no bit error rate then).
  EndRates RatesOf(const topology::PortRef& port, double wait_count_seconds, double signal_gbps) const;
  // The earliest time in the window of downs that an observation at `now`
  // closes: just after `window` before it, or the sweep before if that was
  // longer ago (a window is never shorter than the exporter's own cycle:
  // see Record). An observation between sweeps (a trap) keeps what the last
  // sweep counted.
  std::chrono::steady_clock::time_point WindowStart(std::chrono::steady_clock::time_point now,
                                                    bool counters_read) const;
  // Downs of the cable from `since` on, of kind flap, become `kind`; returns how many.
  static int Reclassify(CableState* c, std::chrono::steady_clock::time_point since, DownKind kind);
  // Nearly every cable of one switch down within the window: one reboot.
  void FindReboots(std::chrono::steady_clock::time_point now, std::chrono::system_clock::time_point wall,
                   std::chrono::steady_clock::time_point window_start);
  void Emit(FabricEvent e);

  LinkHealthOptions options_;
  std::map<topology::Link, CableState> cables_;
  std::map<topology::PortRef, History> history_;       // every port on a cable
  std::map<std::uint64_t, topology::NodeKind> kinds_;  // every node seen in a fabric
  std::uint64_t observation_ = 0;
  // When the last two sweeps' counters were read (Observe with
  // counters_read), the latest first: a port read in the sweep before has
  // no gap, however long the sweep took (Record), and the window of downs
  // reaches back to the sweep before (WindowStart).
  std::array<std::optional<std::chrono::steady_clock::time_point>, 2> sweeps_;
  std::deque<FabricEvent> events_;
  std::map<DownKind, std::uint64_t> event_counts_;
};

}  // namespace ibfabric::collectors
