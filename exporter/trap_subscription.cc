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
    out.push_back(n);
  }
  reports_since_ += out.size();
  return out;
}

void TrapSubscription::Observed(std::size_t changes, std::uint64_t sweep) {
  const auto it = subscriptions_.find(transport::trap::kLinkStateChange);
  if (it == subscriptions_.end() || !it->second) {
    waiting_.clear();  // not subscribed: nothing to expect
    return;
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
  std::erase_if(waiting_, [&](const auto& w) {
    if (w.first + 1 >= sweep) return false;
    missed_ += w.second;
    return true;
  });
  if (changes > 0) waiting_.emplace_back(sweep, changes);
  if (missed_ >= 2 && delivering_ != false) {
    delivering_ = false;
    log_.Warn(
        "the SA accepted the trap subscription but sends no traps: link changes the sweeps found came with no "
        "Report; the sweeps' rotation finds changes (traps are reported only to subscribers sharing a P_Key "
        "with their source: see --ib.pkey-index)",
        "missed=" + std::to_string(missed_) + " sm_lid=" + std::to_string(sm_));
  }
}

}  // namespace ibfabric::exporter
