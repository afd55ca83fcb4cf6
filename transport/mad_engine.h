#pragma once
// Pipelined MAD engine: keeps up to `window` requests in flight over one
// MadPort, matches responses by TID, times requests out in user space and
// retries them a bounded number of times.
//
// libibmad's mad_rpc is synchronous and discards responses whose TID is not
// the one it waits for, so it cannot keep more than one request in flight;
// this engine builds requests with libibmad's encoder (codec.h) instead and
// drives the port itself.

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "transport/mad.h"
#include "transport/mad_port.h"

namespace ibfabric::transport {

struct EngineOptions {
  int window = 128;                                   // requests in flight, >= 1
  std::chrono::microseconds timeout{100'000};         // per attempt
  int retries = 2;                                    // extra attempts after a timeout
};

// Cumulative counts since the engine was made. Plain values: copy them out.
struct EngineStats {
  std::uint64_t requests = 0;      // Run() requests (not attempts)
  std::uint64_t sent = 0;          // attempts put on the port
  std::uint64_t responses = 0;     // matched responses
  std::uint64_t timeouts = 0;      // requests that failed after every retry
  std::uint64_t retries = 0;       // re-sends after a timed-out attempt
  std::uint64_t remote_errors = 0; // responses with a non-zero MAD status
  std::uint64_t send_errors = 0;   // attempts the port refused
  std::uint64_t ignored = 0;       // late, duplicate, unknown or mismatched MADs
};

// Thread-safety: none; one thread uses an engine (and its port) at a time.
// Ownership: borrows the port, which must outlive the engine.
class MadEngine {
 public:
  MadEngine(MadPort& port, EngineOptions options);
  MadEngine(const MadEngine&) = delete;
  MadEngine& operator=(const MadEngine&) = delete;

  // Runs every request to completion. The result at index i belongs to
  // requests[i]. Never more than options.window attempts are outstanding.
  std::vector<MadResult> Run(std::span<const MadRequest> requests);

  const EngineStats& stats() const { return stats_; }
  const EngineOptions& options() const { return options_; }

 private:
  std::uint32_t NextTid();

  MadPort& port_;
  EngineOptions options_;
  EngineStats stats_;
  std::uint32_t tid_;
};

}  // namespace ibfabric::transport
