#include "transport/mad_engine.h"

#include <deque>
#include <random>
#include <unordered_map>

#include "transport/codec.h"

namespace ibfabric::transport {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint8_t kResponseBit = 0x80;  // IBTA 13.4.5: R bit of Method

struct InFlight {
  std::size_t index;
  int attempt;
};

}  // namespace

MadEngine::MadEngine(MadPort& port, EngineOptions options)
    : port_(port), options_(options), tid_(std::random_device{}()) {
  if (options_.window < 1) options_.window = 1;
  if (options_.retries < 0) options_.retries = 0;
}

std::uint32_t MadEngine::NextTid() {
  // The kernel owns the upper 32 bits of a TID (ib_umad), so only the lower
  // 32 bits are ours to set and to match on. 0 is skipped.
  if (++tid_ == 0) ++tid_;
  return tid_;
}

std::vector<MadResult> MadEngine::Run(std::span<const MadRequest> requests) {
  const std::size_t n = requests.size();
  std::vector<MadResult> results(n);
  stats_.requests += n;

  std::unordered_map<std::uint32_t, InFlight> in_flight;
  in_flight.reserve(static_cast<std::size_t>(options_.window) * 2);
  // Every attempt gets the same timeout, so deadlines are ordered by send
  // time and a FIFO holds them sorted; completed entries are skipped lazily.
  std::deque<std::pair<std::uint32_t, Clock::time_point>> deadlines;
  std::size_t next = 0;
  std::size_t done = 0;

  auto finish = [&](std::size_t index, MadOutcome outcome) {
    results[index].outcome = outcome;
    ++done;
  };
  auto send = [&](std::size_t index, int attempt) {
    const std::uint32_t tid = NextTid();
    const MadBytes mad = EncodeRequest(requests[index], tid);
    ++stats_.sent;
    if (!port_.Send(requests[index].address, mad)) {
      ++stats_.send_errors;
      finish(index, MadOutcome::kSendError);
      return;
    }
    in_flight.emplace(tid, InFlight{index, attempt});
    deadlines.emplace_back(tid, Clock::now() + options_.timeout);
  };
  auto expire = [&](InFlight f) {
    if (f.attempt < options_.retries) {
      ++stats_.retries;
      send(f.index, f.attempt + 1);
    } else {
      ++stats_.timeouts;
      finish(f.index, MadOutcome::kTimeout);
    }
  };

  while (done < n) {
    while (in_flight.size() < static_cast<std::size_t>(options_.window) && next < n) {
      send(next++, 0);
    }
    if (in_flight.empty()) continue;

    const auto now = Clock::now();
    while (!deadlines.empty() && deadlines.front().second <= now) {
      const std::uint32_t tid = deadlines.front().first;
      deadlines.pop_front();
      auto it = in_flight.find(tid);
      if (it == in_flight.end()) continue;  // answered already
      const InFlight f = it->second;
      in_flight.erase(it);
      expire(f);
    }
    if (in_flight.empty() || deadlines.empty()) continue;

    const auto wait =
        std::chrono::duration_cast<std::chrono::microseconds>(deadlines.front().second - now);
    std::optional<InboundMad> in = port_.Receive(wait);
    if (!in) continue;

    const MadHeader h = DecodeHeader(in->mad);
    auto it = in_flight.find(static_cast<std::uint32_t>(h.tid));
    if (it == in_flight.end()) {
      ++stats_.ignored;  // late (after a retry), duplicate or not ours
      continue;
    }
    const InFlight f = it->second;
    const MadRequest& req = requests[f.index];
    if (in->status != 0) {
      // The kernel gave our send back unanswered: same as a user-space timeout.
      in_flight.erase(it);
      expire(f);
      continue;
    }
    if ((h.method & kResponseBit) == 0 || h.mgmt_class != static_cast<std::uint8_t>(req.mgmt_class) ||
        h.attr_id != req.attr_id || h.attr_mod != req.attr_mod) {
      ++stats_.ignored;  // a corrupted or foreign MAD that happens to carry our TID
      continue;
    }
    in_flight.erase(it);
    ++stats_.responses;
    results[f.index].mad_status = h.status;
    results[f.index].response = in->mad;
    if (h.status != 0) {
      ++stats_.remote_errors;
      finish(f.index, MadOutcome::kRemoteError);
    } else {
      finish(f.index, MadOutcome::kOk);
    }
  }
  return results;
}

}  // namespace ibfabric::transport
