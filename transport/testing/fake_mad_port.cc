#include "transport/testing/fake_mad_port.h"

#include <thread>

#include "transport/codec.h"

namespace ibfabric::transport::testing {

FakeMadPort::FakeMadPort(Responder responder, FakeFaults faults, std::uint32_t seed, Time time)
    : responder_(std::move(responder)),
      time_(time),
      now_(std::chrono::steady_clock::now()),
      faults_(faults),
      rng_(seed) {}

Clock::TimePoint FakeMadPort::Now() const {
  return time_ == Time::kSimulated ? now_ : std::chrono::steady_clock::now();
}

void FakeMadPort::WaitUntil(TimePoint t) {
  if (time_ == Time::kReal) {
    std::this_thread::sleep_until(t);
  } else if (t > now_) {
    now_ = t;
  }
}

bool FakeMadPort::Send(const MadAddress& to, const MadBytes& mad) {
  ++sends_;
  if (record_sent_) {
    sent_.push_back(mad);
    sent_to_.push_back(to);
  }
  std::optional<InboundMad> transfer = transfer_ ? transfer_(to, mad) : std::nullopt;
  std::optional<MadBytes> response = transfer ? std::optional<MadBytes>(transfer->mad) : responder_(to, mad);
  if (!response) return true;  // a request nobody answers: the engine must time out
  std::uniform_real_distribution<double> u(0, 1);
  if (u(rng_) < faults_.drop_rate) return true;
  if (u(rng_) < faults_.corrupt_rate) {
    (*response)[16] ^= 0x5a;  // AttributeID, IBTA 13.4.2 byte 16
  }
  const auto due = Now() + faults_.latency;
  Pending p{due, seq_++, *response, true, 0, {}, kMadSize};
  if (transfer) {
    p.tail = std::move(transfer->tail);
    p.length = transfer->length;
  }
  queue_.push(p);
  if (u(rng_) < faults_.duplicate_rate) {
    p.seq = seq_++;
    p.answers = false;
    queue_.push(p);
  }
  ++outstanding_;
  if (outstanding_ > max_outstanding_) max_outstanding_ = outstanding_;
  return true;
}

std::optional<InboundMad> FakeMadPort::Receive(std::chrono::microseconds timeout) {
  const auto limit = Now() + timeout;
  if (queue_.empty() || queue_.top().due > limit) {
    WaitUntil(limit);
    return std::nullopt;
  }
  WaitUntil(queue_.top().due);
  Pending p = queue_.top();
  queue_.pop();
  if (p.answers) --outstanding_;
  ++delivered_;
  InboundMad in{p.mad, 0, p.source_lid, {}, kMadSize};
  in.tail = std::move(p.tail);
  in.length = p.length;
  return in;
}

void FakeMadPort::Inject(const MadBytes& mad, std::uint16_t source_lid) {
  queue_.push(Pending{Now(), seq_++, mad, false, source_lid, {}, kMadSize});
}

}  // namespace ibfabric::transport::testing
