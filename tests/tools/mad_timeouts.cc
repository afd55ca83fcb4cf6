// mad_timeouts: an LD_PRELOAD library that gives a client of umad2sim the
// kernel's MAD timeouts, which umad2sim has not (../shared/simulated-
// fabric.md: "a lost reply never comes back as a timed-out send"). The
// kernel's MAD layer (Linux drivers/infiniband/core/mad.c, as ib_umad
// hands it over) sends a request given timeout_ms again up to `retries`
// times while no response with its TID comes, then hands the sent MAD back
// to umad_recv with status ETIMEDOUT. opensm's vendor layer
// (libvendor/osm_vendor_ibumad.c) counts on that: each SMP it sends is
// outstanding until its response or that timeout, and a sweep waits for
// none to be outstanding. On the simulator a request ibsim forwards to
// another client that never answers it (an SM process not yet able to, or
// gone; measured: once in five runs of the SM suite on a loaded machine the
// master's sweep after a standby's trap 144 never ended, its ActCount
// stood still and the standby was never polled) would otherwise hold the SM
// for ever. Preload it after umad2sim and rmpp, in opensm:
//
//   LD_PRELOAD="libumad2sim.so librmpp.so libmad_timeouts.so"
//
// A response is matched to its request by the TID's low 32 bits (umad2sim
// and ibsim write their agent and client numbers into the high ones) and
// the management class. With MAD_TIMEOUTS_STATS=FILE, "resent N
// timed_out N" is written there at exit. A test tool: process-wide state,
// one lock.

#include <dlfcn.h>
#include <infiniband/umad.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "tests/tools/next_umad.h"

namespace {

using Clock = std::chrono::steady_clock;
using ibfabric::testbed::tools::NextUmadRecv;
using ibfabric::testbed::tools::NextUmadSend;

constexpr std::size_t kMad = 256;
// While waiting on the descriptor, look again this often: a request
// another thread sent meanwhile may time out first.
constexpr auto kLookAgain = std::chrono::milliseconds(20);

bool Response(const std::uint8_t* mad) { return mad[3] & 0x80; }
// The key a response is matched on: fd, class, the TID's low 32 bits.
using Key = std::tuple<int, std::uint8_t, std::uint32_t>;
Key KeyOf(int fd, const std::uint8_t* mad) {
  std::uint32_t low;
  std::memcpy(&low, mad + 12, 4);  // TransactionID is bytes 8-15, big-endian
  return {fd, mad[1], low};
}

struct Sent {
  std::vector<std::uint8_t> umad;  // header and MAD, as sent
  int agent = 0;
  int length = 0;  // the MAD's
  int timeout_ms = 0;
  int retries_left = 0;
  Clock::time_point due;
};

struct State {
  std::mutex mu;
  std::map<Key, Sent> sent;
  long resent = 0, timed_out = 0;
  ~State() {
    const char* path = std::getenv("MAD_TIMEOUTS_STATS");
    if (!path || (resent == 0 && timed_out == 0)) return;
    if (FILE* f = std::fopen(path, "w")) {
      std::fprintf(f, "resent %ld timed_out %ld\n", resent, timed_out);
      std::fclose(f);
    }
  }
};
State& S() {
  static State s;
  return s;
}

// The first request of `fd` whose time is up: resent while it has retries
// left, else removed and copied out. Called with the lock held.
bool TakeTimedOut(int fd, Sent* out) {
  auto& s = S();
  const auto now = Clock::now();
  for (auto it = s.sent.begin(); it != s.sent.end(); ++it) {
    if (std::get<0>(it->first) != fd || it->second.due > now) continue;
    Sent& r = it->second;
    if (r.retries_left > 0) {
      --r.retries_left;
      r.due = now + std::chrono::milliseconds(r.timeout_ms);
      ++s.resent;
      NextUmadSend()(fd, r.agent, r.umad.data(), r.length, 0, 0);
      continue;
    }
    *out = std::move(r);
    s.sent.erase(it);
    ++s.timed_out;
    return true;
  }
  return false;
}

// When the first request of `fd` is due (max() when none).
Clock::time_point NextDue(int fd) {
  Clock::time_point next = Clock::time_point::max();
  for (const auto& [key, r] : S().sent) {
    if (std::get<0>(key) == fd && r.due < next) next = r.due;
  }
  return next;
}

}  // namespace

extern "C" int umad_send(int fd, int agentid, void* umad, int length, int timeout_ms, int retries) {
  const auto* mad = static_cast<const std::uint8_t*>(umad_get_mad(umad));
  if (timeout_ms > 0 && length > 0 && static_cast<std::size_t>(length) <= kMad && !Response(mad)) {
    Sent r;
    const auto* bytes = static_cast<const std::uint8_t*>(umad);
    r.umad.assign(bytes, bytes + umad_size() + static_cast<std::size_t>(length));
    r.agent = agentid;
    r.length = length;
    r.timeout_ms = timeout_ms;
    r.retries_left = retries;
    r.due = Clock::now() + std::chrono::milliseconds(timeout_ms);
    std::lock_guard<std::mutex> lock(S().mu);
    S().sent[KeyOf(fd, mad)] = std::move(r);
  }
  // The kernel times it out: umad2sim is given none.
  return NextUmadSend()(fd, agentid, umad, length, 0, 0);
}

extern "C" int umad_recv(int fd, void* umad, int* length, int timeout_ms) {
  const auto give_up = timeout_ms < 0 ? Clock::time_point::max() : Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    Clock::time_point next;
    {
      std::lock_guard<std::mutex> lock(S().mu);
      Sent r;
      if (TakeTimedOut(fd, &r)) {
        if (*length < r.length) {
          *length = r.length;
          errno = ENOSPC;
          return -ENOSPC;
        }
        auto* h = reinterpret_cast<ib_user_mad*>(r.umad.data());
        h->status = ETIMEDOUT;
        h->agent_id = static_cast<std::uint32_t>(r.agent);
        std::memcpy(umad, r.umad.data(), r.umad.size());
        *length = r.length;
        return r.agent;
      }
      next = NextDue(fd);
    }
    const auto now = Clock::now();
    auto until = std::min(give_up, now + kLookAgain);
    if (next < until) until = next;
    const int wait =
        timeout_ms == 0
            ? 0
            : static_cast<int>(
                  std::chrono::ceil<std::chrono::milliseconds>(std::max(until - now, Clock::duration{})).count());
    const int agent = NextUmadRecv()(fd, umad, length, wait);
    if (agent >= 0) {
      // A response, or the request itself handed back with a status
      // (ibsim's 110 for one it could not deliver): no longer outstanding.
      const auto* mad = static_cast<const std::uint8_t*>(umad_get_mad(umad));
      if (Response(mad) || umad_status(umad) != 0) {
        std::lock_guard<std::mutex> lock(S().mu);
        S().sent.erase(KeyOf(fd, mad));
      }
      return agent;
    }
    if (agent != -ETIMEDOUT || timeout_ms == 0 || Clock::now() >= give_up) return agent;
  }
}
