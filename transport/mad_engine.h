#pragma once
// Pipelined MAD engine: keeps many requests in flight over one MadPort,
// matches responses by TID, times requests out in user space and retries
// them a bounded number of times, within limits that keep a production
// fabric and its subnet manager undisturbed.
//
// libibmad's mad_rpc is synchronous and discards responses whose TID is not
// the one it waits for, so it cannot keep more than one request in flight;
// this engine builds requests with libibmad's encoder (codec.h) instead and
// drives the port itself.
//
// Limits (each request must fit all of them to be sent):
// - per kind of MAD (mad.h MadKind): directed-route SMPs, LID-routed SMPs
//   and GMPs each have their own window;
// - per destination: at most `per_destination` requests outstanding to any
//   one node. A LID-routed request counts against its LID; a
//   directed-route SMP against every node on its route (each switch's
//   firmware forwards it, IBTA 14.2.2): its target within
//   `per_destination`, each switch it passes through within
//   `dr_per_switch` (everything outstanding there counted); an SA query
//   against its SA, within `sa_per_destination`. A node is
//   known by its address here: a LID, or the directed route the request
//   uses to it (callers use one route per node);
// - a total `window` over all kinds, and optionally a rate in MADs/s.
// Requests are interleaved across destinations (round robin), so a switch
// with 64 ports' worth of queries gets them one or two at a time while
// others are asked too, never 64 back to back.
//
// Timeouts: each kind keeps a smoothed round trip and its variation (RFC
// 6298 style, from first attempts only). An attempt's timeout is
// SRTT + 4 * RTTVAR (doubled per timeout since the last clean sample),
// raised to `timeout` (the floor) and to what the
// destination declared as its response time (SetResponseTime), lowered to
// `timeout_max` and to the subnet's own bound (SetSubnetTimeout), and
// doubled on a retry, at most twice (x4) and never past that ceiling: a
// slow agent is outwaited, a dead one does not cost ever longer waits. A destination that timed out
// gets one request at a time until it answers again; after `dead_after`
// requests in a row failed every attempt, the rest of its requests in this
// Run fail at once without being sent: a dead node costs a few timeouts,
// not a retry storm. When `silence_after` attempts in a row time out with
// no answer from anywhere in between, the local port or the whole fabric
// has gone quiet: the rest of the Run fails at once the same way. A Busy status (IBTA 13.4.7) is retried after the same
// backoff, at most `busy_retries` times. A GMP answered with the Redirect
// status is sent again at once where the ClassPortInfo in that answer
// says (RedirectLID, RedirectQP, RedirectQ_Key, RedirectSL; IBTA
// 13.5.3.3), and later requests of that class to that LID go there too,
// in this Run and the next ones, until an attempt to that LID and class
// times out (the next goes to QP1 again, and may be redirected again). A
// request redirected a second time without such a timeout between, a
// Redirect that names no QP, or one to LID 0 (the agent is at its
// RedirectGID, reached only with a GRH: not supported, as in libibmad's
// rpc.c; KindStats::redirects_unsupported) ends as a remote error.
// RedirectGID, TC, FL and P_Key are not used.
//
// Unsolicited MADs: an SA Report (a trap the exporter subscribed to) that
// arrives during a Run or a WaitForReports is acknowledged at once with a
// ReportResponse and kept, once, for TakeReports().

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

#include "transport/clock.h"
#include "transport/mad.h"
#include "transport/mad_port.h"

namespace ibfabric::transport {

struct EngineOptions {
  int window = 128;                            // all MADs in flight at once, >= 1
  std::chrono::microseconds timeout{100'000};  // the floor of every attempt's timeout
  int retries = 2;                             // extra attempts after a timeout
  // Per kind (MadKind order: directed-route SMPs, LID-routed SMPs, GMPs).
  // 4 directed-route SMPs on the wire is opensm's max_wire_smps; 16
  // LID-routed SMPs and 128 GMPs spread over many agents (opensm's PerfMgr
  // keeps up to 500 GMPs outstanding). docs/mad-limits.md.
  std::array<int, kMadKinds> kind_window{4, 16, 128};
  // Outstanding MADs to one node; 0: no limit (the old engine).
  int per_destination = 1;
  // Outstanding MADs at a switch that a directed-route SMP passes through
  // (not its target); 0: the same as per_destination.
  int dr_per_switch = 1;
  // SubnAdm queries outstanding to one SA at once (its own agent: the SM's
  // process, which answers every node's queries, not the node's management
  // processor); 0: the same as per_destination. A few table transfers
  // (RMPP, many segments each) overlap their round trips.
  int sa_per_destination = 4;
  std::chrono::microseconds timeout_max{1'000'000};  // ceiling of the backoff
  int busy_retries = 3;                              // re-sends after a Busy status
  int dead_after = 3;      // requests in a row that failed every attempt: give up on that destination
  int silence_after = 64;  // attempts in a row timed out, no answer at all: give up on the Run
  double rate_limit = 0;   // MADs per second over all kinds; 0: none
  // Round-robin across destinations; false sends in request order (the
  // old engine, kept for comparisons in benchmarks).
  bool interleave = true;
  // Adapt timeouts to the measured round trip; false: always `timeout`.
  bool adaptive_timeout = true;
  // The M_Key every SMP carries (IBTA 14.2.1.1; 0: none). Where the SM set
  // M_Key protection, a Get with the wrong key is dropped unanswered.
  // Secret: never logged or exported.
  std::uint64_t m_key = 0;
  // The SA's key (IBTA 15.2.1.1 SM_Key; 0: none), in the SA queries for
  // records it gives trusted requests alone (codec.h TrustedOnly:
  // P_KeyTableRecords). Secret likewise.
  std::uint64_t sa_key = 0;
  const Clock* clock = nullptr;  // nullptr: the port's (MadPort::clock), else SteadyClock()

  // What this engine did before fabric-safe limits: one window of `window`
  // for every kind, no per-destination limit, requests in order, a fixed
  // timeout. For benchmarks that show the difference.
  static EngineOptions Legacy(int window, std::chrono::microseconds timeout, int retries);
};

// Counts of one kind of MAD since the engine was made.
struct KindStats {
  std::uint64_t sent = 0;                   // attempts put on the port
  std::uint64_t responses = 0;              // matched responses
  std::uint64_t retries = 0;                // re-sends after a timed-out attempt or a Busy status
  std::uint64_t timeouts = 0;               // requests that failed after every retry
  std::uint64_t busy = 0;                   // responses with the Busy status
  std::uint64_t redirects = 0;              // requests ended by a Redirect that could not be followed
  std::uint64_t redirects_unsupported = 0;  // of those, Redirects to a GID (RedirectLID 0)
  std::uint64_t redirected = 0;             // Redirect replies followed
  std::uint64_t remote_errors = 0;          // requests ended by a non-zero MAD status
  std::uint64_t send_errors = 0;            // attempts the port refused
  std::uint64_t abandoned = 0;              // not sent: their destination was dead (counted in timeouts too)
  KindStats& operator+=(const KindStats& o);
};
KindStats operator-(const KindStats& a, const KindStats& b);

// Counts of every kind, in MadKind order.
using KindCounts = std::array<KindStats, kMadKinds>;
// All kinds together.
KindStats Total(const KindCounts& counts);
// What happened between two copies of the counts (`now` taken after `before`).
KindCounts Since(const KindCounts& before, const KindCounts& now);

// Cumulative counts since the engine was made. Plain values: copy them out.
struct EngineStats {
  std::uint64_t requests = 0;          // Run() requests (not attempts)
  std::uint64_t ignored = 0;           // late, duplicate, unknown or mismatched MADs
  KindCounts kinds{};                  // everything else, by kind of MAD
  std::uint64_t reports = 0;           // SA Reports of a Notice taken in (each acknowledged)
  std::uint64_t reports_repeated = 0;  // the SA sent one again; acknowledged, not taken twice
  // The most that were ever outstanding at once: to or through one node,
  // per kind, and in total. Never above the configured limits.
  int peak_per_destination = 0;
  std::array<int, kMadKinds> peak_kind{};
  int peak_total = 0;
  // The current smoothed round trip and timeout floor per kind (0 before the
  // first sample), in seconds.
  std::array<double, kMadKinds> srtt_seconds{};
  std::array<double, kMadKinds> timeout_seconds{};

  const KindStats& of(MadKind k) const { return kinds[static_cast<std::size_t>(k)]; }
  KindStats total() const { return Total(kinds); }
};

// Thread-safety: none; one thread uses an engine (and its port) at a time.
// Ownership: borrows the port (and the clock), which must outlive the engine.
class MadEngine {
 public:
  MadEngine(MadPort& port, EngineOptions options);
  MadEngine(const MadEngine&) = delete;
  MadEngine& operator=(const MadEngine&) = delete;

  // Runs every request to completion. The result at index i belongs to
  // requests[i]. The limits above hold at every instant.
  std::vector<MadResult> Run(std::span<const MadRequest> requests);
  // The same, but each result goes to `sink` (with its request's index) as
  // soon as its outcome is decided, in no particular order, and is not
  // kept: for batches too big to hold every response at once. The sink
  // must not use the engine.
  using ResultSink = std::function<void(std::size_t index, MadResult&& result)>;
  void Run(std::span<const MadRequest> requests, const ResultSink& sink);
  // requests[0] alone first and, only where it was answered (kOk), the
  // rest, pipelined; each result to `sink` as with Run. For a service that
  // keeps such records or does not (the SA's tables): one query learns
  // which, not a timeout or refusal a request. Returns the first one's
  // outcome and how many were sent (1, or all).
  struct Probed {
    MadOutcome first = MadOutcome::kOk;
    std::size_t sent = 0;
  };
  Probed RunProbed(std::span<const MadRequest> requests, const ResultSink& sink);

  // The time the agent at `lid` declared it may take to answer (ClassPortInfo
  // or PortInfo RespTimeValue): timeouts for it are at least this, within
  // the ceiling. Zero forgets it.
  void SetResponseTime(std::uint16_t lid, std::chrono::microseconds t);
  // The subnet's packet lifetime (PortInfo.SubnetTimeOut as a time): no
  // reply comes later than twice that plus the agent's response time, so
  // the ceiling is lowered to that (never below the floor). Zero: none.
  void SetSubnetTimeout(std::chrono::microseconds lifetime);

  // SA Reports (the traps subscribed to, transport::IsNoticeReport) that
  // arrived during a Run or a wait, oldest first; each was acknowledged
  // with a ReportResponse when it arrived (counted as a GMP sent).
  std::vector<MadBytes> TakeReports();
  // Waits up to `timeout` for a Report, taking in whatever else arrives (late
  // responses are ignored). True when Reports are waiting for TakeReports().
  bool WaitForReports(std::chrono::microseconds timeout);

  const EngineStats& stats() const { return stats_; }
  const EngineOptions& options() const { return options_; }
  const Clock& clock() const { return *clock_; }

 private:
  class Batch;  // one Run (mad_engine.cc)
  struct Rtt {
    double srtt = 0;    // seconds; 0: no sample yet
    double rttvar = 0;  // seconds
    // Timeouts of this kind since the last clean sample: later requests
    // start that many doublings up (RFC 6298 5.5), so a floor below the
    // real round trip does not time out every first attempt forever.
    int backoff = 0;
  };
  std::uint32_t NextTid();
  // The timeout of `attempt` (0 = first) of a request of `kind` to `lid`
  // (0 when directed-route).
  std::chrono::microseconds TimeoutFor(MadKind kind, std::uint16_t lid, int attempt) const;
  void Sample(MadKind kind, std::chrono::microseconds rtt);
  std::chrono::microseconds Ceiling() const;
  // Takes in an SA Report (acknowledges it, keeps it once); false for
  // anything else.
  bool TakeReport(const InboundMad& in);

  MadPort& port_;
  EngineOptions options_;
  const Clock* clock_;
  EngineStats stats_;
  std::uint32_t tid_;
  std::array<Rtt, kMadKinds> rtt_{};
  std::unordered_map<std::uint16_t, std::chrono::microseconds> response_time_;
  // Where a GMP agent redirected its class: (LID << 8 | class) -> address.
  std::unordered_map<std::uint32_t, MadAddress> redirects_;
  MadAddress AddressFor(const MadRequest& req) const;
  std::chrono::microseconds subnet_lifetime_{0};
  std::vector<MadBytes> reports_;
  std::deque<std::uint64_t> recent_reports_;  // TID and sender of the last Reports, to drop repeats
  // The rate limit's token bucket, across Runs (EngineOptions::rate_limit).
  struct Bucket {
    double tokens = 0;
    std::chrono::steady_clock::time_point refilled{};
    bool filled = false;  // the first send finds it full
  };
  Bucket bucket_;
};

}  // namespace ibfabric::transport
