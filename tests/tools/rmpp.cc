// rmpp: an LD_PRELOAD library that does for a client of umad2sim what the
// kernel's MAD layer does for a client of a real HCA: the Reliable
// Multi-Packet Protocol (IBTA 13.6) of the SA's long answers, where MADs
// cross libibumad (umad_send, umad_recv). Preload it right after umad2sim,
// in opensm and in its clients alike:
//
//   LD_PRELOAD="libumad2sim.so librmpp.so [others]"
//
// umad2sim hands ibsim at most 256 bytes of a send (ibsim's struct
// sim_request), so without this an SA table (opensm gives the kernel one
// buffer, RMPP flag Active, and leaves the segmenting to it) reaches a
// simulated client as its first 256 bytes, and a client waits for nothing
// more. With it:
// - sender (opensm): a send of the SA class with the RMPP Active flag is
//   cut into DATA segments of 256 bytes (MAD and RMPP headers, the SA
//   header repeated, the data: kSegmentData below; SegmentNumber from 1, First
//   and Last flags, PayloadLength of the whole transfer in the first and
//   of the last in the last, IBTA 13.6.2.3), sent within the window the
//   receiver grants: segment 1, then up to each ACK's NewWindowLast,
//   going back to the segment after an ACK's SegmentNumber when it names
//   one already sent (IBTA 13.6.3). ACK, STOP and ABORT packets that
//   reach it are taken here, as the kernel takes them: opensm never sees
//   them. No timer re-sends a lost segment: the requester's own timeout
//   asks again;
// - receiver (any client): DATA segments of the SA class, RMPP Active,
//   are put together in order (a segment out of order is dropped and the
//   last one in order acknowledged again) and acknowledged at 1, at each
//   window's end (64 segments, the kernel's recv queue / 8) and at the
//   last; the whole transfer is handed over as the kernel hands it: the
//   first segment whole, then each later segment's data, length
//   56 + data; where the caller's buffer is too small umad_recv returns
//   -ENOSPC with the length and the next call returns the transfer.
// With RMPP_STATS=FILE, what crossed here is written there at exit (by a
// process where anything did):
// "segments_sent N acks_received N segments_received N acks_sent N
// transfers_received N".
// A test tool: process-wide state, one lock.

#include <dlfcn.h>
#include <endian.h>
#include <fcntl.h>
#include <infiniband/umad.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "tests/tools/next_umad.h"

namespace {

constexpr std::size_t kMad = 256;
constexpr std::size_t kRmppHeader = 24;  // RMPP header: bytes 24-35 (IBTA 13.6.2.1)
constexpr std::size_t kSaHeader = 36;    // SA header: bytes 36-55 (IBTA 15.2.1.1)
constexpr std::size_t kSaData = 56;
// IBTA's segment carries 200 data bytes (to byte 256). Here a segment
// carries 168, to byte 224: measured on ibsim-utils 0.10 (Debian), the last 32
// bytes of a MAD one simulated client sends another arrive changed (the
// size of struct sim_request's header: somewhere on the way a copy counts
// it in), which nothing else here sends past byte 224. Both ends of a
// transfer are this library, and what a client gets is put together as
// the kernel puts it (the data back to back), so only the wire differs.
constexpr std::size_t kSegmentData = 224 - kSaData;                            // 168
constexpr std::size_t kSegmentPayload = kSegmentData + (kSaData - kSaHeader);  // SA header and data
constexpr std::uint8_t kSaClass = 0x03;
constexpr std::uint8_t kData = 1, kAck = 2;
constexpr std::uint8_t kActive = 0x01, kFirst = 0x02, kLast = 0x04;
constexpr std::uint32_t kWindow = 64;  // Linux mad.c: recv queue 512 >> 3
// The receiver's window: kWindow, or RMPP_WINDOW (a test's knob, >= 1).
std::uint32_t Window() {
  static const std::uint32_t w = [] {
    const char* v = std::getenv("RMPP_WINDOW");
    const long n = v ? std::strtol(v, nullptr, 10) : 0;
    return n >= 1 ? static_cast<std::uint32_t>(n) : kWindow;
  }();
  return w;
}
constexpr auto kForgetAfter = std::chrono::seconds(30);

using ibfabric::testbed::tools::NextUmadRecv;
using ibfabric::testbed::tools::NextUmadSend;

std::uint32_t Get32(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return be32toh(v);
}
void Put32(std::uint8_t* p, std::uint32_t v) {
  v = htobe32(v);
  std::memcpy(p, &v, 4);
}
std::uint64_t Tid(const std::uint8_t* mad) {
  std::uint64_t v;
  std::memcpy(&v, mad + 8, 8);
  return be64toh(v);
}
bool Rmpp(const std::uint8_t* mad) { return mad[1] == kSaClass && (mad[kRmppHeader + 2] & kActive); }
bool Response(const std::uint8_t* mad) { return mad[3] & 0x80; }

// One long answer being sent (opensm's side).
struct Outgoing {
  int fd = 0, agent = 0;
  std::vector<std::uint8_t> umad;  // the send's umad header (address)
  std::uint8_t head[kSaData]{};    // MAD, RMPP and SA headers of the answer
  std::vector<std::uint8_t> data;  // the records
  std::uint32_t segments = 1, sent = 0;
  std::uint32_t went_back = 0;  // the ACK's SegmentNumber last gone back to (0: none)
  std::chrono::steady_clock::time_point touched;
};

// One long answer being received (a client's side).
struct Incoming {
  std::vector<std::uint8_t> mad;  // first segment whole, then each later one's data
  std::uint32_t last = 0, window = 1;
  std::uint32_t said_again = 0;  // the segment last acknowledged again after a gap
  std::chrono::steady_clock::time_point touched;
};

// A whole transfer the caller's buffer was too small for.
struct Held {
  std::vector<std::uint8_t> umad;  // umad header and the transfer
};

using Key = std::tuple<std::uint64_t, std::uint16_t>;  // TID, the other end's LID

struct Counts {
  std::uint64_t segments_sent = 0, acks_received = 0, segments_received = 0, acks_sent = 0, transfers_received = 0;
  ~Counts() {
    const char* path = std::getenv("RMPP_STATS");
    // Nothing crossed: a process that only started the client (timeout,
    // a shell) leaves the file to the one that did.
    if (!path || !*path || segments_sent + acks_received + segments_received + acks_sent == 0) return;
    const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    char line[256];
    const int n =
        std::snprintf(line, sizeof line,
                      "segments_sent %llu acks_received %llu segments_received %llu acks_sent %llu "
                      "transfers_received %llu\n",
                      static_cast<unsigned long long>(segments_sent), static_cast<unsigned long long>(acks_received),
                      static_cast<unsigned long long>(segments_received), static_cast<unsigned long long>(acks_sent),
                      static_cast<unsigned long long>(transfers_received));
    if (n > 0 && ::write(fd, line, static_cast<std::size_t>(n)) < 0) {
      // nothing to do: a test tool's figures
    }
    ::close(fd);
  }
};
Counts counts;  // written out when the process exits

struct State {
  std::mutex mu;
  std::map<Key, Outgoing> out;
  std::map<Key, Incoming> in;
  std::map<int, Held> held;  // by fd
};
State& S() {
  static State* s = new State();  // never destroyed: used until the process ends
  return *s;
}

void Forget(std::chrono::steady_clock::time_point now) {
  auto& s = S();
  for (auto it = s.out.begin(); it != s.out.end();)
    it = now - it->second.touched > kForgetAfter ? s.out.erase(it) : ++it;
  for (auto it = s.in.begin(); it != s.in.end();) it = now - it->second.touched > kForgetAfter ? s.in.erase(it) : ++it;
}

void SendSegment(const Outgoing& o, std::uint32_t seg) {
  std::vector<std::uint8_t> buf(o.umad.size() + kMad, 0);
  std::memcpy(buf.data(), o.umad.data(), o.umad.size());
  std::uint8_t* mad = buf.data() + o.umad.size();
  std::memcpy(mad, o.head, kSaData);
  mad[kRmppHeader] = 1;  // RMPPVersion
  mad[kRmppHeader + 1] = kData;
  mad[kRmppHeader + 2] = static_cast<std::uint8_t>((o.head[kRmppHeader + 2] & 0xf8) | kActive |
                                                   (seg == 1 ? kFirst : 0) | (seg == o.segments ? kLast : 0));
  mad[kRmppHeader + 3] = 0;
  Put32(mad + kRmppHeader + 4, seg);
  const std::size_t pad = o.segments * kSegmentData - o.data.size();
  std::uint32_t paylen = 0;
  if (seg == 1) paylen = static_cast<std::uint32_t>(o.segments * kSegmentPayload - pad);
  if (seg == o.segments) paylen = static_cast<std::uint32_t>(kSegmentPayload - pad);
  if (seg == 1 && o.segments == 1) paylen = static_cast<std::uint32_t>(kSegmentPayload - pad);
  Put32(mad + kRmppHeader + 8, paylen);
  const std::size_t from = (seg - 1) * kSegmentData;
  if (from < o.data.size()) {
    std::memcpy(mad + kSaData, o.data.data() + from, std::min(kSegmentData, o.data.size() - from));
  }
  NextUmadSend()(o.fd, o.agent, buf.data(), static_cast<int>(kMad), 0, 0);
  ++counts.segments_sent;
}

// Sends segments `from`..`to` (within the transfer).
void SendRange(Outgoing& o, std::uint32_t from, std::uint32_t to) {
  to = std::min(to, o.segments);
  for (std::uint32_t seg = from; seg <= to; ++seg) SendSegment(o, seg);
  o.sent = std::max(o.sent, to);
}

void SendAck(int fd, int agent, const std::uint8_t* umad_hdr, const std::uint8_t* mad, std::uint32_t seg,
             std::uint32_t window) {
  std::vector<std::uint8_t> buf(umad_size() + kMad, 0);
  std::memcpy(buf.data(), umad_hdr, umad_size());
  auto* u = reinterpret_cast<ib_user_mad*>(buf.data());
  const std::uint16_t lid = be16toh(u->addr.lid);
  const int qp = static_cast<int>(be32toh(u->addr.qpn));
  umad_set_addr(buf.data(), lid, qp ? qp : 1, 0, 0x80010000);  // QP1's well-known Q_Key (IBTA 13.5.3.3)
  std::uint8_t* ack = buf.data() + umad_size();
  std::memcpy(ack, mad, kSaData);
  ack[3] = static_cast<std::uint8_t>(mad[3] & 0x7f);  // the response bit flipped, as the kernel does
  ack[kRmppHeader] = 1;
  ack[kRmppHeader + 1] = kAck;
  ack[kRmppHeader + 2] = kActive;
  ack[kRmppHeader + 3] = 0;
  Put32(ack + kRmppHeader + 4, seg);
  Put32(ack + kRmppHeader + 8, window);
  NextUmadSend()(fd, agent, buf.data(), static_cast<int>(kMad), 0, 0);
  ++counts.acks_sent;
}

// An ACK, STOP or ABORT for a transfer this process sends.
void TakeControl(const std::uint8_t* umad_hdr, const std::uint8_t* mad) {
  auto& s = S();
  const auto* u = reinterpret_cast<const ib_user_mad*>(umad_hdr);
  const Key key{Tid(mad), be16toh(u->addr.lid)};
  auto it = s.out.find(key);
  if (it == s.out.end()) return;
  ++counts.acks_received;
  if (mad[kRmppHeader + 1] != kAck) {  // STOP or ABORT
    s.out.erase(it);
    return;
  }
  Outgoing& o = it->second;
  o.touched = std::chrono::steady_clock::now();
  const std::uint32_t acked = Get32(mad + kRmppHeader + 4), window = Get32(mad + kRmppHeader + 8);
  if (acked >= o.segments) {
    s.out.erase(it);
    return;
  }
  // Segments after the acknowledged one, up to the window; where that
  // goes back over segments already sent (one was lost), once per loss:
  // a repeated ACK of the same segment sends only what is new.
  std::uint32_t from = acked + 1;
  if (acked < o.sent) {
    if (o.went_back == acked) from = o.sent + 1;
    o.went_back = acked;
  }
  SendRange(o, from, std::max(window, acked + 1));
}

// A DATA segment. Returns the whole transfer when this was its last.
bool TakeData(int fd, int agent, const std::uint8_t* umad_hdr, const std::uint8_t* mad,
              std::vector<std::uint8_t>* whole) {
  auto& s = S();
  const auto* u = reinterpret_cast<const ib_user_mad*>(umad_hdr);
  const Key key{Tid(mad), be16toh(u->addr.lid)};
  const std::uint8_t flags = mad[kRmppHeader + 2];
  const std::uint32_t seg = Get32(mad + kRmppHeader + 4);
  ++counts.segments_received;
  const auto now = std::chrono::steady_clock::now();
  if (seg == 1 && (flags & kFirst)) {
    Incoming fresh;
    fresh.mad.assign(mad, mad + kSaData + kSegmentData);  // its data, not the bytes after it
    s.in[key] = std::move(fresh);
  }
  auto it = s.in.find(key);
  if (it == s.in.end()) return false;
  Incoming& in = it->second;
  in.touched = now;
  if (seg != in.last + 1) {  // a duplicate, or one after a lost one: say again where it stands, once
    if (in.last > 0 && in.said_again != in.last) SendAck(fd, agent, umad_hdr, mad, in.last, in.window);
    in.said_again = in.last;
    return false;
  }
  const std::uint32_t paylen = Get32(mad + kRmppHeader + 8);
  if (seg > 1) {
    const std::size_t take = (flags & kLast) && paylen >= kSaData - kSaHeader
                                 ? std::min<std::size_t>(paylen - 20, kSegmentData)
                                 : kSegmentData;
    in.mad.insert(in.mad.end(), mad + kSaData, mad + kSaData + take);
  }
  in.last = seg;
  if (flags & kLast) {
    if (seg == 1) in.mad.resize(kSaData + std::min<std::size_t>(paylen >= 20 ? paylen - 20 : 0, kSegmentData));
    SendAck(fd, agent, umad_hdr, mad, seg, seg);
    *whole = std::move(in.mad);
    ++counts.transfers_received;
    s.in.erase(it);
    return true;
  }
  if (seg == in.window) {
    in.window += Window();
    SendAck(fd, agent, umad_hdr, mad, seg, in.window);
  }
  return false;
}

// Puts `held` (umad header and MAD bytes) in the caller's buffer, or says
// how long it is.
int Deliver(int fd, void* umad, int* length, Held held) {
  auto* h = reinterpret_cast<ib_user_mad*>(held.umad.data());
  const int mad_length = static_cast<int>(held.umad.size() - umad_size());
  const int agent = static_cast<int>(h->agent_id);
  if (*length < mad_length) {
    *length = mad_length;
    S().held[fd] = std::move(held);
    errno = ENOSPC;  // libibumad's umad_recv sets it too; callers test it
    return -ENOSPC;
  }
  h->length = static_cast<std::uint32_t>(held.umad.size());
  std::memcpy(umad, held.umad.data(), held.umad.size());
  *length = mad_length;
  return agent;
}

}  // namespace

extern "C" int umad_send(int fd, int agentid, void* umad, int length, int timeout_ms, int retries) {
  std::uint8_t* mad = static_cast<std::uint8_t*>(umad_get_mad(umad));
  if (length < static_cast<int>(kSaData) || !Rmpp(mad) || !Response(mad) || mad[kRmppHeader + 1] > kData) {
    return NextUmadSend()(fd, agentid, umad, length, timeout_ms, retries);
  }
  auto& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  const auto now = std::chrono::steady_clock::now();
  Forget(now);
  Outgoing o;
  o.fd = fd;
  o.agent = agentid;
  o.umad.assign(static_cast<std::uint8_t*>(umad), static_cast<std::uint8_t*>(umad) + umad_size());
  std::memcpy(o.head, mad, kSaData);
  o.data.assign(mad + kSaData, mad + length);
  o.segments = static_cast<std::uint32_t>(std::max<std::size_t>(1, (o.data.size() + kSegmentData - 1) / kSegmentData));
  o.touched = now;
  const auto* u = static_cast<const ib_user_mad*>(umad);
  const Key key{Tid(mad), be16toh(u->addr.lid)};
  Outgoing& kept = s.out[key] = std::move(o);
  SendRange(kept, 1, 1);  // the receiver's first ACK opens the window
  return 0;
}

extern "C" int umad_recv(int fd, void* umad, int* length, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
  {
    auto& s = S();
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.held.find(fd);
    if (it != s.held.end()) {
      Held held = std::move(it->second);
      s.held.erase(it);
      return Deliver(fd, umad, length, std::move(held));
    }
  }
  std::vector<std::uint8_t> buf(umad_size() + kMad);
  for (bool first = true;; first = false) {
    int wait = timeout_ms;
    if (timeout_ms > 0 && !first) {
      const auto left =
          std::chrono::duration_cast<std::chrono::microseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        errno = ETIMEDOUT;
        return -ETIMEDOUT;
      }
      wait = static_cast<int>((left.count() + 999) / 1000);
    }
    int got_length = static_cast<int>(kMad);
    const int agent = NextUmadRecv()(fd, buf.data(), &got_length, wait);
    if (agent < 0) return agent;
    const std::uint8_t* mad = buf.data() + umad_size();
    const bool rmpp_data = Rmpp(mad) && mad[kRmppHeader + 1] == kData;
    if (!Rmpp(mad) || (rmpp_data && !Response(mad))) {
      // Anything else goes to the caller as it came (a request with RMPP
      // Active too: none this test bed sends).
      // Anything else goes to the caller as it came.
      if (*length < got_length) {
        Held held;
        held.umad.assign(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(umad_size() + got_length));
        std::lock_guard<std::mutex> lock(S().mu);
        return Deliver(fd, umad, length, std::move(held));
      }
      std::memcpy(umad, buf.data(), umad_size() + static_cast<std::size_t>(got_length));
      *length = got_length;
      return agent;
    }
    std::lock_guard<std::mutex> lock(S().mu);
    Forget(std::chrono::steady_clock::now());
    if (!rmpp_data) {
      TakeControl(buf.data(), mad);
    } else {
      std::vector<std::uint8_t> whole;
      if (TakeData(fd, agent, buf.data(), mad, &whole)) {
        Held held;
        held.umad.assign(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(umad_size()));
        held.umad.insert(held.umad.end(), whole.begin(), whole.end());
        return Deliver(fd, umad, length, std::move(held));
      }
    }
    if (timeout_ms == 0) {
      errno = ETIMEDOUT;
      return -ETIMEDOUT;
    }
  }
}
