#pragma once
// The exporter's subscription to the SM's traps (FabricTracker's): InformInfo
// Sets to the SA for traps 64, 65 (ports in and out of service), 128 (link
// state change) and 144 (local changes), asked when due (after a full walk,
// a new master SM, at another SM, once per rotation), and asked again each
// sweep until the SA accepted every one (an SA busy with a sweep of its
// own may not answer in time). Logged as it changes, not each time. The
// Reports that come in are counted by trap.
//
// Whether they are delivered: the SA may accept a subscription and still
// send nothing (it reports a trap only to subscribers that share a P_Key
// with the trap's source, opensm osm_inform.c; an SM that restarted has
// forgotten the subscription until it is renewed; another process on the
// host may take the port's Reports). The sweeps tell: a switch port that
// went down or came up (its switch raises trap 128, IBTA 14.2.5.1) that
// the sweeps found, with no trap-128 Report taken by the end of the next
// sweep, is a miss; misses in two sweeps with no Report between, and
// traps do not reach this exporter, said once (the sweeps' rotation finds
// changes meanwhile); a Report says they do again. For `grace` sweeps
// after a new subscription (another SM, accepted after refusals, Lost)
// nothing counts: a change the rotation reads may be older than it.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "collectors/common/log.h"
#include "transport/attributes.h"
#include "transport/mad_engine.h"

namespace ibfabric::exporter {

// Ownership: borrows engine and log, which outlive it.
// Thread-safety: the scheduler's thread only.
class TrapSubscription {
 public:
  // The traps subscribed to.
  static constexpr std::uint16_t kTraps[] = {transport::trap::kGidInService, transport::trap::kGidOutOfService,
                                             transport::trap::kLinkStateChange, transport::trap::kLocalChange};

  // `renew`: how often to subscribe again though nothing changed (the SM
  // may have forgotten: a restart that kept its LID).
  // `grace`: sweeps after a subscription in which changes found count as
  // no miss (a rotation's worth).
  TrapSubscription(transport::MadEngine& engine, collectors::Logger& log, std::chrono::milliseconds renew,
                   std::uint64_t grace = 0)
      : engine_(engine), log_(log), renew_(renew), grace_(grace) {}

  // The next Subscribe asks whatever else says (after a full walk, a new master).
  void Due() { due_ = true; }
  // The subscription may be gone (the local link was down and the SM may
  // have dropped it): the next Subscribe asks, and delivery is judged
  // afresh after the grace.
  void Lost() {
    due_ = true;
    Restart();
  }
  // Subscribes at the master SM `sm_lid` (0: none known, nothing is sent)
  // when due, when the master is another than last time, or once `renew`
  // passed since; one pipelined batch of InformInfo Sets.
  void Subscribe(std::chrono::steady_clock::time_point now, std::uint16_t sm_lid);
  // The Reports (traps) the engine took in since the last call, each counted.
  std::vector<transport::Notice> Take();
  // `changes`: switch ports that went down or came up which sweep number
  // `sweep` found (each once; the trap re-reads had not).
  void Observed(std::size_t changes, std::uint64_t sweep);
  // Whether Reports are delivered: nullopt before anything showed either way.
  std::optional<bool> delivering() const { return delivering_; }

  // Whether it has asked an SM (accepted or not).
  bool subscribed() const { return sm_ != 0; }
  // Trap -> whether the SA accepted it at the last subscription.
  const std::map<std::uint16_t, bool>& subscriptions() const { return subscriptions_; }
  // Trap -> Reports taken.
  const std::map<std::uint16_t, std::uint64_t>& traps() const { return traps_; }

 private:
  transport::MadEngine& engine_;
  collectors::Logger& log_;
  std::chrono::milliseconds renew_;
  std::uint16_t sm_ = 0;  // the SM LID subscribed at (0: none)
  std::chrono::steady_clock::time_point at_{};
  bool due_ = true;
  std::map<std::uint16_t, bool> subscriptions_;
  std::map<std::uint16_t, std::uint64_t> traps_;
  // Delivery is judged afresh (after a subscription): counting restarts
  // after the grace.
  void Restart() {
    reports_since_ = 0;
    waiting_.clear();
    missed_ = 0;
    restart_ = true;
  }
  // Delivery: trap-128 Reports taken since the sweeps last looked, the
  // sweeps whose changes wait for one, the sweeps missed since the last
  // Report, the sweep before which nothing counts.
  std::uint64_t grace_;
  std::size_t reports_since_ = 0;
  std::vector<std::uint64_t> waiting_;
  std::size_t missed_ = 0;
  bool restart_ = true;
  std::uint64_t counts_from_ = 0;
  std::optional<bool> delivering_;
};

}  // namespace ibfabric::exporter
