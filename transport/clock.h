#pragma once
// The time the MAD engine reads. On a real port it is steady_clock; the
// hardware model (tests/model) runs in simulated time, so that a fabric of
// slow switch agents can be played out faster than real time and the same
// every run. Waiting is never done through the clock: the engine waits
// only inside MadPort::Receive, which a simulated port implements by moving
// its clock forward.

#include <chrono>

namespace ibfabric::transport {

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
};

// steady_clock. Thread-safe; lives for the whole program.
const Clock& SteadyClock();

}  // namespace ibfabric::transport
