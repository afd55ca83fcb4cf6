#pragma once
// An in-memory MadPort for tests and benchmarks. A responder turns each
// request into a response (or none); faults delay, drop, duplicate or
// corrupt what comes back.
//
// Time is simulated by default: the port is its engine's clock
// (MadPort::clock), and Receive moves that clock to the next answer's due
// time, or by the whole timeout when none is due, without sleeping. An
// answer queued at once is therefore never late, however long the test's
// thread is descheduled, and a silent node's timeouts cost no wall time.
// Benchmarks that measure the engine against real latency ask for
// Time::kReal (steady_clock, sleeping in Receive).

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <random>
#include <vector>

#include "transport/mad_port.h"

namespace ibfabric::transport::testing {

struct FakeFaults {
  std::chrono::microseconds latency{0};  // request to response
  double drop_rate = 0;                  // probability a response is lost
  double duplicate_rate = 0;             // probability a response arrives twice
  double corrupt_rate = 0;               // probability the attribute ID is garbled
};

// Thread-safety: none, like every MadPort; the simulated clock is read by
// the one thread that drives the port.
class FakeMadPort final : public MadPort, public Clock {
 public:
  enum class Time { kSimulated, kReal };

  // Returns the response MAD for a request, or nullopt for no response.
  using Responder = std::function<std::optional<MadBytes>(const MadAddress&, const MadBytes&)>;

  FakeMadPort(Responder responder, FakeFaults faults = {}, std::uint32_t seed = 1, Time time = Time::kSimulated);

  bool Send(const MadAddress& to, const MadBytes& mad) override;
  std::optional<InboundMad> Receive(std::chrono::microseconds timeout) override;
  const Clock* clock() const override { return time_ == Time::kSimulated ? this : nullptr; }

  // Clock: the simulated time (starts at the wall clock's when the port is
  // made), or steady_clock's with Time::kReal.
  TimePoint Now() const override;

  // A longer answer where one is given: `transfer` turns a request into a
  // whole RMPP transfer (InboundMad::tail and length, as UmadPort hands
  // over what the kernel reassembled) before the responder is asked.
  using TransferResponder = std::function<std::optional<InboundMad>(const MadAddress&, const MadBytes&)>;
  void set_transfers(TransferResponder transfer) { transfer_ = std::move(transfer); }

  // Lets `d` pass with no MAD (between two sweeps, say): moves the
  // simulated clock, or sleeps with Time::kReal.
  void Advance(std::chrono::microseconds d) { WaitUntil(Now() + d); }

  // Queues an unsolicited MAD (an SA Report, say) for the next Receive, as
  // if `source_lid` had sent it.
  void Inject(const MadBytes& mad, std::uint16_t source_lid);

  // Observations for tests.
  std::uint64_t sends() const { return sends_; }
  std::uint64_t delivered() const { return delivered_; }
  // Largest number of sends whose response had not been delivered yet at any
  // instant. A dropped response counts as settled when it is dropped, so this
  // equals the engine's window use only when nothing is dropped.
  std::size_t max_outstanding() const { return max_outstanding_; }
  // Every MAD sent, when recording is on (the default). Benchmarks turn it
  // off: a growing record costs copies that would look like engine stalls.
  const std::vector<MadBytes>& sent_mads() const { return sent_; }
  const std::vector<MadAddress>& sent_addresses() const { return sent_to_; }  // where each went
  void set_record_sent(bool on) { record_sent_ = on; }
  void set_faults(const FakeFaults& f) { faults_ = f; }

 private:
  struct Pending {
    TimePoint due;
    std::uint64_t seq;
    MadBytes mad;
    bool answers;  // false for the second copy of a duplicate and for injected MADs
    std::uint16_t source_lid = 0;
    std::vector<std::uint8_t> tail;  // a long transfer's (InboundMad)
    std::uint32_t length = kMadSize;
    bool operator>(const Pending& o) const { return due != o.due ? due > o.due : seq > o.seq; }
  };

  // Simulated: moves the clock to `t` (never back). Real: sleeps until `t`.
  void WaitUntil(TimePoint t);

  Responder responder_;
  TransferResponder transfer_;
  Time time_;
  TimePoint now_;  // simulated time
  FakeFaults faults_;
  std::mt19937 rng_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> queue_;
  std::vector<MadBytes> sent_;
  std::vector<MadAddress> sent_to_;
  bool record_sent_ = true;
  std::uint64_t seq_ = 0;
  std::uint64_t sends_ = 0;
  std::uint64_t delivered_ = 0;
  std::size_t outstanding_ = 0;
  std::size_t max_outstanding_ = 0;
};

}  // namespace ibfabric::transport::testing
