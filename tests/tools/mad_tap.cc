// mad_tap: an LD_PRELOAD library that watches every MAD crossing
// libibumad (umad_send, umad_recv) from outside the process under test and
// writes one line per MAD to $MAD_TAP_FILE:
//
//   S <ns> <tid> <class> <lid> <route> <attr> <mod>    a request sent
//   R <ns> <tid> <class>                  a response received
//
// <ns> is CLOCK_MONOTONIC in nanoseconds, <tid> the low 32 bits of the
// TransactionID (IBTA 13.4.2; the kernel and the simulator may rewrite the
// high ones), <class> the MgmtClass in hex, <lid> the destination LID of the
// address handle (0 or 0xffff for directed routes), <route> a directed-route
// SMP's InitialPath[1..HopCount] (IBTA 14.2.2, bytes 128.. of the MAD) as
// comma-separated ports, "-" otherwise, <attr> its AttributeID and <mod>
// its AttributeModifier (bytes 20-23: the register of an AccessRegister)
// in hex.
// tests/testbed/mad_tap.h reads it.
//
// Preload it after umad2sim: LD_PRELOAD="libumad2sim.so libmad_tap.so".

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <infiniband/umad.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace {

constexpr std::size_t kTidOffset = 12;      // low half of the 8-byte TID at byte 8
constexpr std::size_t kHopCountOffset = 7;  // DR SMP HopCount
constexpr std::size_t kInitialPathOffset = 128;
constexpr std::uint8_t kDirectedRoute = 0x81;

// One writer for the process: lines are buffered and written whole, so a
// reader after exit sees complete lines.
class Tap {
 public:
  Tap() {
    const char* path = std::getenv("MAD_TAP_FILE");
    if (path && *path) fd_ = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  }
  ~Tap() { Flush(); }
  Tap(const Tap&) = delete;
  Tap& operator=(const Tap&) = delete;

  void Line(const std::string& s) {
    if (fd_ < 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    buffer_ += s;
    // Small enough that a killed process loses little, large enough to be cheap.
    if (buffer_.size() > 4096) FlushLocked();
  }
  void Flush() {
    std::lock_guard<std::mutex> lock(mu_);
    FlushLocked();
  }

 private:
  void FlushLocked() {
    std::size_t done = 0;
    while (fd_ >= 0 && done < buffer_.size()) {
      const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    buffer_.clear();
  }
  int fd_ = -1;
  std::mutex mu_;
  std::string buffer_;
};

Tap& TheTap() {
  static Tap tap;
  return tap;
}

std::uint64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint32_t TidOf(const std::uint8_t* mad) {
  return static_cast<std::uint32_t>(mad[kTidOffset]) << 24 | static_cast<std::uint32_t>(mad[kTidOffset + 1]) << 16 |
         static_cast<std::uint32_t>(mad[kTidOffset + 2]) << 8 | mad[kTidOffset + 3];
}

template <typename F>
F Next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" {

int umad_send(int fd, int agentid, void* umad, int length, int timeout_ms, int retries) {
  using Fn = int (*)(int, int, void*, int, int, int);
  static const Fn next = Next<Fn>("umad_send");
  const auto* u = static_cast<const ib_user_mad*>(umad);
  const std::uint8_t* mad = u->data;
  char line[128];
  std::string route = "-";
  if (mad[1] == kDirectedRoute) {
    route.clear();
    const int hops = mad[kHopCountOffset];
    for (int i = 1; i <= hops && i < 64; ++i) {
      route += (i > 1 ? "," : "") + std::to_string(mad[kInitialPathOffset + static_cast<std::size_t>(i)]);
    }
    if (route.empty()) route = "local";
  }
  std::snprintf(line, sizeof line, "S %llu %u %x %u ", static_cast<unsigned long long>(NowNs()), TidOf(mad), mad[1],
                ntohs(u->addr.lid));
  char attr[32];
  const auto mod = static_cast<unsigned>(mad[20]) << 24 | static_cast<unsigned>(mad[21]) << 16 |
                   static_cast<unsigned>(mad[22]) << 8 | mad[23];
  std::snprintf(attr, sizeof attr, " %x %x\n", static_cast<unsigned>(mad[16] << 8 | mad[17]), mod);
  TheTap().Line(line + route + attr);
  return next(fd, agentid, umad, length, timeout_ms, retries);
}

int umad_recv(int fd, void* umad, int* length, int timeout_ms) {
  using Fn = int (*)(int, void*, int*, int);
  static const Fn next = Next<Fn>("umad_recv");
  const int rc = next(fd, umad, length, timeout_ms);
  if (rc >= 0) {
    const auto* u = static_cast<const ib_user_mad*>(umad);
    // A send that timed out in the kernel comes back with its status set:
    // not a response from the fabric.
    if (u->status == 0) {
      char line[64];
      std::snprintf(line, sizeof line, "R %llu %u %x\n", static_cast<unsigned long long>(NowNs()), TidOf(u->data),
                    u->data[1]);
      TheTap().Line(line);
    }
  }
  return rc;
}

}  // extern "C"
