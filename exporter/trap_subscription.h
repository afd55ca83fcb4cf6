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
// with the trap's source, opensm osm_inform.c; another daemon may hold the
// port's Report receiver). The sweeps tell: a switch port's link state
// change they find (trap 128 at its switch) that no Report was taken for
// by the end of the next sweep is missed; two missed with no Report
// between, and traps do not reach this exporter, said once (the sweeps'
// rotation finds changes meanwhile); a Report says they do again.

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
  TrapSubscription(transport::MadEngine& engine, collectors::Logger& log, std::chrono::milliseconds renew)
      : engine_(engine), log_(log), renew_(renew) {}

  // The next Subscribe asks whatever else says (after a full walk, a new master).
  void Due() { due_ = true; }
  // Subscribes at the master SM `sm_lid` (0: none known, nothing is sent)
  // when due, when the master is another than last time, or once `renew`
  // passed since; one pipelined batch of InformInfo Sets.
  void Subscribe(std::chrono::steady_clock::time_point now, std::uint16_t sm_lid);
  // The Reports (traps) the engine took in since the last call, each counted.
  std::vector<transport::Notice> Take();
  // `changes`: link state changes of switch ports sweep number `sweep`
  // found (the trap re-reads had not), while subscribed.
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
  // Delivery: Reports taken since the sweeps last looked, the changes that
  // wait for one (sweep, count), those missed since the last Report.
  std::size_t reports_since_ = 0;
  std::vector<std::pair<std::uint64_t, std::size_t>> waiting_;
  std::size_t missed_ = 0;
  std::optional<bool> delivering_;
};

}  // namespace ibfabric::exporter
