#pragma once
// The one seam between this project and the MAD wire. UmadPort implements it
// over libibumad; FakeMadPort (transport/testing) implements it in memory
// with delay, loss, duplication and corruption.

#include <chrono>
#include <optional>

#include "transport/clock.h"
#include "transport/mad.h"

namespace ibfabric::transport {

struct InboundMad {
  MadBytes mad{};
  // 0 for a MAD received from the wire. Non-zero (an errno such as
  // ETIMEDOUT) when the kernel hands back one of our own sends that got no
  // response; `mad` then holds the request, TID included.
  int status = 0;
  // The LID it came from (0 when unknown): where a reply to an unsolicited
  // MAD, such as an SA Report, goes.
  std::uint16_t source_lid = 0;
  // A reassembled RMPP transfer (an SA table, IBTA 13.6) longer than one
  // MAD: `mad` is its first segment, `tail` the rest as the kernel hands
  // it over (each later segment's data, back to back), `length` the whole
  // (the kernel's: 56 header bytes and the data). One MAD: `tail` empty,
  // `length` 256, or less where the kernel says (a one-segment transfer).
  std::vector<std::uint8_t> tail{};
  std::uint32_t length = kMadSize;
};

// Contract: not thread-safe; one thread drives a port. Send never blocks on
// the fabric; Receive blocks at most `timeout`.
class MadPort {
 public:
  virtual ~MadPort() = default;

  // Queues `mad` (a complete request, TID set) for `to`. Returns false when
  // the local port refuses it; nothing will come back for it then.
  virtual bool Send(const MadAddress& to, const MadBytes& mad) = 0;

  // The next inbound MAD, or nullopt when none arrived within `timeout`.
  virtual std::optional<InboundMad> Receive(std::chrono::microseconds timeout) = 0;

  // The time this port's answers run on, for a port that plays time out
  // (a simulation moves it forward inside Receive instead of sleeping);
  // nullptr for a port on the wall clock. An engine reads it unless its
  // options name a clock: timeouts on any other clock would expire while
  // an answer waits in the queue, or spin while simulated time stands.
  virtual const Clock* clock() const { return nullptr; }
};

}  // namespace ibfabric::transport
