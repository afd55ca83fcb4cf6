#include "exporter/trap_subscription.h"

#include <algorithm>
#include <string>

#include "topology/fabric.h"

namespace ibfabric::exporter {

void TrapSubscription::Subscribe(std::chrono::steady_clock::time_point now, std::uint16_t sm_lid) {
  if (sm_lid == 0) return;
  if (!due_ && sm_lid == sm_ && now - at_ < renew_) return;
  std::vector<transport::MadRequest> reqs;
  for (std::uint16_t t : kTraps) reqs.push_back(transport::InformInfoSubscribe(sm_lid, t));
  // Logged as it changes: accepted, or not (first time, or after it was).
  const bool first = subscriptions_.empty() || sm_lid != sm_;
  const bool had_all =
      !first && std::all_of(subscriptions_.begin(), subscriptions_.end(), [](const auto& e) { return e.second; });
  const auto results = engine_.Run(reqs);
  bool all = true;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const bool ok = results[i].outcome == transport::MadOutcome::kOk;
    subscriptions_[kTraps[i]] = ok;
    all = all && ok;
  }
  if (all && !had_all) {
    log_.Info("subscribed to the SM's traps", "sm_lid=" + std::to_string(sm_lid) + " traps=64,65,128,144");
  } else if (!all && (first || had_all)) {
    log_.Warn(
        "the SA did not accept every trap subscription; asking again each sweep, sweeps alone find changes "
        "meanwhile",
        "sm_lid=" + std::to_string(sm_lid));
  }
  if (first || (all && !had_all)) Restart();  // another SM, or accepted anew
  sm_ = sm_lid;
  at_ = now;
  due_ = !all;
}

std::vector<transport::Notice> TrapSubscription::Take() {
  std::vector<transport::Notice> out;
  for (const auto& mad : engine_.TakeReports()) {
    const transport::Notice n = transport::DecodeNotice(mad);
    ++traps_[n.trap_number];
    log_.Debug("trap", "number=" + std::to_string(n.trap_number) + " lid=" + std::to_string(n.lid) +
                           " port_guid=" + topology::FormatGuid(n.port_guid));
    if (n.trap_number == transport::trap::kLinkStateChange) ++reports_since_;
    out.push_back(n);
  }
  return out;
}

void TrapSubscription::Observed(std::size_t changes, std::uint64_t sweep) {
  const auto it = subscriptions_.find(transport::trap::kLinkStateChange);
  if (it == subscriptions_.end() || !it->second) {
    Restart();  // not subscribed: nothing to expect
    return;
  }
  if (restart_) {
    restart_ = false;
    counts_from_ = sweep + grace_;
  }
  if (reports_since_ > 0) {
    if (delivering_ == false) log_.Info("the SM's traps reach this exporter again");
    delivering_ = true;
    reports_since_ = 0;
    missed_ = 0;
    waiting_.clear();
  }
  // A change waits one more sweep for its Report (in flight while the
  // sweep read the port).
  std::erase_if(waiting_, [&](std::uint64_t at) {
    if (at + 1 >= sweep) return false;
    ++missed_;
    return true;
  });
  if (changes > 0 && sweep >= counts_from_) waiting_.push_back(sweep);
  if (missed_ >= 2 && delivering_ != false) {
    delivering_ = false;
    log_.Warn(
        "the SA accepted the trap subscription but sends no traps: link changes the sweeps found in two sweeps "
        "came with no Report; the sweeps' rotation finds changes (the SM reports a trap only to subscribers "
        "sharing a P_Key with its source, per its partitions.conf; another process on this host may take the "
        "port's Reports)",
        "sm_lid=" + std::to_string(sm_));
  }
}

}  // namespace ibfabric::exporter
