#include "transport/mad_engine.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <queue>
#include <random>
#include <utility>

#include "transport/attributes.h"
#include "transport/codec.h"

namespace ibfabric::transport {
namespace {

using TimePoint = Clock::TimePoint;
using std::chrono::microseconds;

constexpr std::uint8_t kResponseBit = 0x80;  // IBTA 13.4.5: R bit of Method

class Steady final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
};

// Nodes are keyed by how they are addressed: a LID, or a directed route
// (a hash of its egress ports; FNV-1a). The tags keep the two apart.
constexpr std::uint64_t kLidTag = 1ULL << 62;
constexpr std::uint64_t kRouteTag = 1ULL << 61;
constexpr std::uint64_t kSaTag = 1ULL << 60;  // an SA: SubnAdm queries to its LID
constexpr std::uint64_t kRouteMask = (1ULL << 56) - 1;
constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
constexpr std::uint64_t kFnvPrime = 0x100000001b3ULL;

// The nodes a request loads, the target last: its LID; or, directed, the
// node after each hop (the switches that forward it and the target), or
// the local node for the empty route.
void NodesOf(const MadRequest& r, std::vector<std::uint64_t>* out) {
  out->clear();
  if (r.mgmt_class == MgmtClass::kSubnAdm) {
    out->push_back(kSaTag | r.address.lid);
    return;
  }
  if (r.mgmt_class != MgmtClass::kSubnDirectRoute) {
    out->push_back(kLidTag | r.address.lid);
    return;
  }
  std::uint64_t h = kFnvOffset;
  if (r.address.dr_path.empty()) out->push_back(kRouteTag | (h & kRouteMask));
  for (std::uint8_t port : r.address.dr_path) {
    h = (h ^ port) * kFnvPrime;
    out->push_back(kRouteTag | (h & kRouteMask));
  }
}

std::size_t Slot(MadKind k) { return static_cast<std::size_t>(k); }

struct Job {
  std::size_t index;
  int attempt;              // timed-out attempts so far
  int busy;                 // Busy replies so far
  bool redirected = false;  // a Redirect of this request was followed
};

// The key of a GMP agent's redirect: its LID and class.
std::uint32_t RedirectKey(const MadRequest& r) {
  return static_cast<std::uint32_t>(r.address.lid) << 8 | static_cast<std::uint8_t>(r.mgmt_class);
}

// What is known about one node during a Run.
struct Dest {
  int outstanding = 0;
  int cwnd = 0;      // how many it may have outstanding now: 1 after a timeout, back up on answers
  int failures = 0;  // requests in a row that failed every attempt
  bool dead = false;
  std::vector<std::uint64_t> waiters;  // units of requests to this node, parked until it has room
};

// First in, first out, and a retry goes back to the front: a vector and
// the index of its head (a std::deque's first block alone is 512 bytes,
// and a host's unit holds two or three jobs: 16k hosts, 10 MB a sweep).
class JobQueue {
 public:
  bool empty() const { return head_ == items_.size(); }
  const Job& front() const { return items_[head_]; }
  void pop_front() {
    if (++head_ == items_.size()) clear();
  }
  void push_back(const Job& j) { items_.push_back(j); }
  void push_front(const Job& j) {
    if (head_ > 0) {
      items_[--head_] = j;
    } else {
      items_.insert(items_.begin(), j);
    }
  }
  void clear() {
    items_.clear();
    head_ = 0;
  }
  std::vector<Job>::const_iterator begin() const { return items_.begin() + static_cast<std::ptrdiff_t>(head_); }
  std::vector<Job>::const_iterator end() const { return items_.end(); }

 private:
  std::vector<Job> items_;
  std::size_t head_ = 0;
};

// The queued requests of one kind to one node.
struct Unit {
  JobQueue jobs;
  bool in_ring = false;
  bool parked = false;
};

struct InFlight {
  Job job;
  TimePoint sent;
  std::uint64_t unit;
};

struct Delayed {
  TimePoint due;
  std::uint64_t unit;
  Job job;
  bool operator>(const Delayed& o) const { return due > o.due; }
};

}  // namespace

const Clock& SteadyClock() {
  static const Steady kSteady;
  return kSteady;
}

KindStats& KindStats::operator+=(const KindStats& o) {
  sent += o.sent;
  responses += o.responses;
  retries += o.retries;
  timeouts += o.timeouts;
  busy += o.busy;
  redirects += o.redirects;
  redirects_unsupported += o.redirects_unsupported;
  redirected += o.redirected;
  remote_errors += o.remote_errors;
  send_errors += o.send_errors;
  abandoned += o.abandoned;
  return *this;
}

KindStats operator-(const KindStats& a, const KindStats& b) {
  KindStats d;
  d.sent = a.sent - b.sent;
  d.responses = a.responses - b.responses;
  d.retries = a.retries - b.retries;
  d.timeouts = a.timeouts - b.timeouts;
  d.busy = a.busy - b.busy;
  d.redirects = a.redirects - b.redirects;
  d.redirects_unsupported = a.redirects_unsupported - b.redirects_unsupported;
  d.redirected = a.redirected - b.redirected;
  d.remote_errors = a.remote_errors - b.remote_errors;
  d.send_errors = a.send_errors - b.send_errors;
  d.abandoned = a.abandoned - b.abandoned;
  return d;
}

KindStats Total(const KindCounts& counts) {
  KindStats t;
  for (const KindStats& k : counts) t += k;
  return t;
}

KindCounts Since(const KindCounts& before, const KindCounts& now) {
  KindCounts d;
  for (std::size_t k = 0; k < d.size(); ++k) d[k] = now[k] - before[k];
  return d;
}

EngineOptions EngineOptions::Legacy(int window, microseconds timeout, int retries) {
  EngineOptions o;
  o.window = window;
  o.timeout = timeout;
  o.retries = retries;
  o.kind_window = {window, window, window};
  o.per_destination = 0;
  o.busy_retries = 0;
  o.dead_after = 0;
  o.silence_after = 0;
  o.interleave = false;
  o.adaptive_timeout = false;
  return o;
}

MadEngine::MadEngine(MadPort& port, EngineOptions options)
    : port_(port),
      options_(options),
      clock_(options.clock  ? options.clock
             : port.clock() ? port.clock()
                            : &SteadyClock()),
      tid_(std::random_device{}()) {
  options_.window = std::max(options_.window, 1);
  options_.retries = std::max(options_.retries, 0);
  options_.busy_retries = std::max(options_.busy_retries, 0);
  options_.per_destination = std::max(options_.per_destination, 0);
  options_.dead_after = std::max(options_.dead_after, 0);
  options_.silence_after = std::max(options_.silence_after, 0);
  for (int& w : options_.kind_window) w = std::max(w, 1);
  options_.timeout = std::max(options_.timeout, microseconds(1));
  options_.timeout_max = std::max(options_.timeout_max, options_.timeout);
  for (std::size_t k = 0; k < kMadKinds; ++k) {
    stats_.timeout_seconds[k] = std::chrono::duration<double>(options_.timeout).count();
  }
}

MadAddress MadEngine::AddressFor(const MadRequest& req) const {
  if (KindOf(req.mgmt_class) != MadKind::kGmp || redirects_.empty()) return req.address;
  const auto it = redirects_.find(RedirectKey(req));
  return it == redirects_.end() ? req.address : it->second;
}

std::uint32_t MadEngine::NextTid() {
  // The kernel owns the upper 32 bits of a TID (ib_umad), so only the lower
  // 32 bits are ours to set and to match on. 0 is skipped.
  if (++tid_ == 0) ++tid_;
  return tid_;
}

void MadEngine::SetResponseTime(std::uint16_t lid, microseconds t) {
  if (t.count() <= 0) {
    response_time_.erase(lid);
  } else {
    response_time_[lid] = t;
  }
}

bool MadEngine::TakeReport(const InboundMad& in) {
  if (in.status != 0 || !IsNoticeReport(in.mad)) return false;
  // Acknowledge every copy (the SA repeats a Report whose response it
  // missed), keep the first: Reports are told apart by TID and sender.
  const MadBytes response = ReportResponse(in.mad);
  if (in.source_lid != 0 && port_.Send(MadAddress::Lid(in.source_lid), response)) {
    ++stats_.kinds[Slot(MadKind::kGmp)].sent;
  }
  const std::uint64_t key = DecodeHeader(in.mad).tid ^ (static_cast<std::uint64_t>(in.source_lid) << 48);
  if (std::find(recent_reports_.begin(), recent_reports_.end(), key) != recent_reports_.end()) {
    ++stats_.reports_repeated;
    return true;
  }
  recent_reports_.push_back(key);
  if (recent_reports_.size() > 256) recent_reports_.pop_front();
  ++stats_.reports;
  reports_.push_back(in.mad);
  return true;
}

std::vector<MadBytes> MadEngine::TakeReports() { return std::exchange(reports_, {}); }

bool MadEngine::WaitForReports(microseconds timeout) {
  const TimePoint until = clock_->Now() + timeout;
  while (reports_.empty()) {
    const TimePoint now = clock_->Now();
    if (now >= until) break;
    std::optional<InboundMad> in = port_.Receive(std::chrono::duration_cast<microseconds>(until - now));
    if (!in) continue;
    if (!TakeReport(*in)) ++stats_.ignored;  // a late response to an earlier Run
  }
  return !reports_.empty();
}

void MadEngine::SetSubnetTimeout(microseconds lifetime) { subnet_lifetime_ = std::max(lifetime, microseconds(0)); }

microseconds MadEngine::Ceiling() const {
  microseconds c = options_.timeout_max;
  // IBTA 13.4.6.2: a response arrives within twice the packet lifetime plus
  // the responder's time; the responder's part is added per destination.
  if (subnet_lifetime_.count() > 0) c = std::min(c, 2 * subnet_lifetime_);
  return std::max(c, options_.timeout);
}

microseconds MadEngine::TimeoutFor(MadKind kind, std::uint16_t lid, int attempt) const {
  if (!options_.adaptive_timeout) return options_.timeout;
  microseconds base = options_.timeout;
  microseconds ceiling = Ceiling();
  const Rtt& r = rtt_[Slot(kind)];
  if (r.srtt > 0) {
    base = std::max(base, microseconds(static_cast<std::int64_t>((r.srtt + 4 * r.rttvar) * 1e6)));
  }
  if (lid != 0) {
    if (auto it = response_time_.find(lid); it != response_time_.end()) {
      base = std::max(base, it->second);
      if (subnet_lifetime_.count() > 0) {
        ceiling = std::max(ceiling, std::min(options_.timeout_max, 2 * subnet_lifetime_ + it->second));
      }
    }
  }
  base = std::min(base, ceiling);
  constexpr int kMaxDoublings = 2;
  const int doublings = std::min(attempt + r.backoff, kMaxDoublings);
  for (int i = 0; i < doublings && base < ceiling; ++i) base = std::min(base * 2, ceiling);
  return base;
}

void MadEngine::Sample(MadKind kind, microseconds rtt) {
  // RFC 6298, section 2, with alpha = 1/8 and beta = 1/4.
  Rtt& r = rtt_[Slot(kind)];
  r.backoff = 0;
  const double s = std::chrono::duration<double>(rtt).count();
  if (r.srtt == 0) {
    r.srtt = s;
    r.rttvar = s / 2;
  } else {
    r.rttvar = 0.75 * r.rttvar + 0.25 * std::abs(r.srtt - s);
    r.srtt = 0.875 * r.srtt + 0.125 * s;
  }
  stats_.srtt_seconds[Slot(kind)] = r.srtt;
  stats_.timeout_seconds[Slot(kind)] = std::chrono::duration<double>(TimeoutFor(kind, 0, 0)).count();
}

std::vector<MadResult> MadEngine::Run(std::span<const MadRequest> requests) {
  std::vector<MadResult> results(requests.size());
  Run(requests, [&results](std::size_t index, MadResult&& r) { results[index] = std::move(r); });
  return results;
}

// One Run: the requests, their queues by node and kind, what is in flight
// and when it times out, and each node's window; the steps of the loop
// (fill the windows, expire, release Busy backoffs, wait, take an answer)
// are its member functions.
class MadEngine::Batch {
 public:
  Batch(MadEngine& engine, std::span<const MadRequest> requests, const ResultSink& sink)
      : e_(engine),
        o_(engine.options_),
        requests_(requests),
        sink_(sink),
        first_sent_(requests.size()),
        per_dest_(o_.per_destination),
        per_switch_(o_.dr_per_switch > 0 ? o_.dr_per_switch : per_dest_),
        per_sa_(o_.sa_per_destination > 0 ? o_.sa_per_destination : per_dest_),
        max_cwnd_(std::max({per_dest_, per_switch_, per_sa_})),
        rate_(o_.rate_limit),
        burst_(rate_ > 0 ? std::max(1.0, rate_ * 0.01) : 0) {
    in_flight_.reserve(static_cast<std::size_t>(o_.window) * 2);
    nodes_.reserve(64);
    for (std::size_t i = 0; i < requests_.size(); ++i) {
      const std::uint64_t id = UnitOf(i);
      units_[id].jobs.push_back(Job{i, 0, 0});
      Enqueue(id);
    }
  }

  void Run() {
    while (done_ < requests_.size()) {
      Dispatch();
      TimePoint now = e_.clock_->Now();
      Expire(now);
      ReleaseDelayed(now);
      if (done_ >= requests_.size()) break;
      Dispatch();
      now = e_.clock_->Now();
      const TimePoint wake = NextWake();
      if (wake == TimePoint::max()) {
        // Nothing in flight, nothing scheduled, and nothing could be sent: a
        // bug in the limits above. Fail what is left rather than hang.
        FailQueued();
        break;
      }
      const auto wait = std::max(microseconds(0), std::chrono::duration_cast<microseconds>(wake - now));
      if (std::optional<InboundMad> in = e_.port_.Receive(wait)) Take(*in);
    }
  }

 private:
  Dest& DestOf(std::uint64_t key) {
    auto [it, inserted] = dests_.try_emplace(key);
    if (inserted) it->second.cwnd = max_cwnd_;
    return it->second;
  }
  // The queue a request waits in: its target node and kind when
  // interleaving, one FIFO otherwise.
  std::uint64_t UnitOf(std::size_t index) {
    if (!o_.interleave) return 0;
    NodesOf(requests_[index], &nodes_);
    // Injective for keys below 2^63: three kinds per node.
    return nodes_.back() * kMadKinds + Slot(KindOf(requests_[index].mgmt_class));
  }
  std::deque<std::uint64_t>& RingOf(std::uint64_t unit_id) {
    return o_.interleave ? rings_[unit_id % kMadKinds] : rings_[0];
  }
  void Enqueue(std::uint64_t unit_id) {
    Unit& u = units_[unit_id];
    if (u.in_ring || u.parked || u.jobs.empty()) return;
    RingOf(unit_id).push_back(unit_id);
    u.in_ring = true;
  }
  MadKind KindAt(std::size_t index) const { return KindOf(requests_[index].mgmt_class); }
  std::uint16_t LidOf(std::size_t index) const {
    return requests_[index].mgmt_class == MgmtClass::kSubnDirectRoute ? 0 : requests_[index].address.lid;
  }
  Dest& Target(std::size_t index) {
    NodesOf(requests_[index], &nodes_);
    return DestOf(nodes_.back());
  }

  // Hands the outcome to the sink; `answer`: the response, for kOk and kRemoteError.
  void Finish(std::size_t index, MadOutcome outcome, const InboundMad* answer = nullptr, std::uint16_t status = 0,
              int retries = 0) {
    MadResult r;
    r.outcome = outcome;
    if (answer) {
      r.mad_status = status;
      r.response = answer->mad;
      r.length = answer->length;
      r.tail = answer->tail;
      r.retries = static_cast<std::uint8_t>(std::min(255, retries));
    }
    r.first_sent = first_sent_[index];
    r.done = e_.clock_->Now();
    ++done_;
    sink_(index, std::move(r));
  }
  // A request is no longer outstanding: its windows have room again.
  void Settle(std::size_t index, MadKind kind) {
    --kind_out_[Slot(kind)];
    --total_out_;
    if (per_dest_ == 0) return;
    NodesOf(requests_[index], &nodes_);
    for (std::uint64_t key : nodes_) {
      Dest& d = DestOf(key);
      --d.outstanding;
      for (std::uint64_t w : d.waiters) {
        units_[w].parked = false;
        Enqueue(w);
      }
      d.waiters.clear();
    }
  }

  // Whether every node on the head job's way has room; if not, the unit is
  // parked on its full target or rotated behind a full switch.
  bool Room(std::uint64_t unit_id, Unit& u, std::deque<std::uint64_t>& ring, std::size_t* rotated) {
    if (per_dest_ == 0) return true;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      Dest& d = DestOf(nodes_[i]);
      const bool is_target = i + 1 == nodes_.size();
      const int limit = !is_target ? per_switch_ : (nodes_[i] & kSaTag) != 0 ? per_sa_ : per_dest_;
      if (d.outstanding < std::min(limit, d.cwnd)) continue;  // cwnd >= 1 here
      if (is_target) {
        // Its own node is full: wait for one of its answers.
        d.waiters.push_back(unit_id);
        u.parked = true;
      } else {
        // A switch on its route is full: try again after the others.
        ring.push_back(unit_id);
        u.in_ring = true;
        ++*rotated;
      }
      return false;
    }
    return true;
  }

  // Sends the head job of `unit_id` if every limit allows it. Returns false
  // when it cannot go now; the unit is then parked or rotated.
  bool TrySend(std::uint64_t unit_id, std::deque<std::uint64_t>& ring, std::size_t* rotated) {
    Unit& u = units_[unit_id];
    const Job job = u.jobs.front();
    const MadRequest& req = requests_[job.index];
    const MadKind kind = KindOf(req.mgmt_class);
    NodesOf(req, &nodes_);
    if (DestOf(nodes_.back()).dead || silent_) {
      // Its node failed `dead_after` requests in a row, or nothing has
      // answered for `silence_after` attempts: not worth the wire.
      u.jobs.pop_front();
      ++e_.stats_.kinds[Slot(kind)].timeouts;
      ++e_.stats_.kinds[Slot(kind)].abandoned;
      Finish(job.index, MadOutcome::kTimeout);
      Enqueue(unit_id);
      return true;
    }
    if (!Room(unit_id, u, ring, rotated)) return false;
    u.jobs.pop_front();
    const std::uint32_t tid = e_.NextTid();
    ++e_.stats_.kinds[Slot(kind)].sent;
    if (rate_ > 0) e_.bucket_.tokens -= 1;
    // The round trip starts before the send: a thread descheduled between
    // the send and reading the clock would take a reply for faster than it was.
    const TimePoint sent_at = e_.clock_->Now();
    if (!e_.port_.Send(e_.AddressFor(req), EncodeRequest(req, tid, o_.m_key, o_.sa_key))) {
      ++e_.stats_.kinds[Slot(kind)].send_errors;
      Finish(job.index, MadOutcome::kSendError);
      Enqueue(unit_id);
      return true;
    }
    Sent(job, unit_id, tid, kind, sent_at);
    return true;
  }
  // Books a request sent at `now`: in flight, its deadline, the windows and their peaks.
  void Sent(const Job& job, std::uint64_t unit_id, std::uint32_t tid, MadKind kind, TimePoint now) {
    if (first_sent_[job.index] == TimePoint{}) first_sent_[job.index] = now;
    in_flight_.emplace(tid, InFlight{job, now, unit_id});
    deadlines_.emplace(now + e_.TimeoutFor(kind, LidOf(job.index), job.attempt), tid);
    ++kind_out_[Slot(kind)];
    ++total_out_;
    EngineStats& stats = e_.stats_;
    stats.peak_kind[Slot(kind)] = std::max(stats.peak_kind[Slot(kind)], kind_out_[Slot(kind)]);
    stats.peak_total = std::max(stats.peak_total, total_out_);
    if (per_dest_ > 0) {
      for (std::uint64_t key : nodes_) {
        Dest& d = DestOf(key);
        ++d.outstanding;
        stats.peak_per_destination = std::max(stats.peak_per_destination, d.outstanding);
      }
    }
    Enqueue(unit_id);
  }

  // Whether the rate limit lets one more go now; if not, when it will.
  bool Token() {
    if (rate_ <= 0) return true;
    const TimePoint now = e_.clock_->Now();
    // The bucket is the engine's: Runs one after the other (a walk's many
    // small ones) share one rate, each does not start with a burst.
    MadEngine::Bucket& b = e_.bucket_;
    b.tokens = b.filled ? std::min(burst_, b.tokens + std::chrono::duration<double>(now - b.refilled).count() * rate_)
                        : burst_;
    b.filled = true;
    b.refilled = now;
    if (b.tokens >= 1) return true;
    // Sleeps until a few have come, not one (10 µs at 100,000 a second:
    // waking that often is a spinning thread that takes the CPU from the
    // agents it waits for): at most 1 ms, or a tenth of the burst's worth.
    const double wait = std::max((1 - b.tokens) / rate_, std::min(1e-3, burst_ / rate_ / 10));
    token_due_ =
        now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(wait));
    return false;
  }

  // Fills the windows: one request per kind in turn, round robin over the
  // units of each kind, until nothing more may go.
  void Dispatch() {
    token_due_ = TimePoint{};
    bool progress = true;
    while (progress) {
      progress = false;
      for (auto& ring : rings_) {
        const int sent = DispatchRing(ring);
        if (sent < 0) return;  // out of tokens
        progress = progress || sent > 0;
      }
    }
  }
  // One kind's turn: how many went (in order: as many as may; interleaved:
  // one), or -1 when the rate limit stopped it.
  int DispatchRing(std::deque<std::uint64_t>& ring) {
    constexpr std::size_t kRotateBudget = 256;  // transit-blocked units looked at per pass
    std::size_t rotated = 0;
    int sent = 0;
    while (!ring.empty() && total_out_ < o_.window) {
      if (!Token()) return -1;
      const std::uint64_t unit_id = ring.front();
      Unit& u = units_[unit_id];
      if (u.jobs.empty()) {
        ring.pop_front();
        u.in_ring = false;
        continue;
      }
      const MadKind kind = KindAt(u.jobs.front().index);
      if (kind_out_[Slot(kind)] >= o_.kind_window[Slot(kind)]) break;  // this kind is full
      if (!o_.interleave && per_dest_ == 0) {
        // In order: the head goes or nothing does.
        if (!TrySend(unit_id, ring, &rotated)) break;
        ++sent;
        continue;
      }
      ring.pop_front();
      u.in_ring = false;
      if (TrySend(unit_id, ring, &rotated)) return sent + 1;  // next kind's turn
      // Rotated units come round again; stop once a pass has looked at
      // enough of them while answers are due to free their routes.
      if (rotated >= std::min(ring.size(), kRotateBudget) && total_out_ > 0) break;
    }
    return sent;
  }

  // An attempt got no answer: again while it has retries, else a timeout.
  void RetryOrFail(const InFlight& f, MadKind kind) {
    Dest& t = Target(f.job.index);
    t.cwnd = 1;  // one at a time until it answers again
    if (o_.adaptive_timeout && e_.rtt_[Slot(kind)].backoff < 2) ++e_.rtt_[Slot(kind)].backoff;
    if (o_.silence_after > 0 && ++silent_attempts_ >= o_.silence_after) silent_ = true;
    // Nothing answers where the agent sent us: back to QP1 (which may
    // redirect again).
    const bool was_redirected = kind == MadKind::kGmp && e_.redirects_.erase(RedirectKey(requests_[f.job.index])) > 0;
    if (f.job.attempt < o_.retries) {
      ++e_.stats_.kinds[Slot(kind)].retries;
      units_[f.unit].jobs.push_front(
          Job{f.job.index, f.job.attempt + 1, f.job.busy, f.job.redirected && !was_redirected});
      Enqueue(f.unit);
      return;
    }
    ++e_.stats_.kinds[Slot(kind)].timeouts;
    Finish(f.job.index, MadOutcome::kTimeout);
    if (o_.dead_after > 0 && ++t.failures >= o_.dead_after) t.dead = true;
  }
  // Every attempt whose deadline passed.
  void Expire(TimePoint now) {
    while (!deadlines_.empty() && deadlines_.top().first <= now) {
      const std::uint32_t tid = deadlines_.top().second;
      deadlines_.pop();
      auto it = in_flight_.find(tid);
      if (it == in_flight_.end()) continue;  // answered already
      const InFlight f = it->second;
      in_flight_.erase(it);
      const MadKind kind = KindAt(f.job.index);
      Settle(f.job.index, kind);
      RetryOrFail(f, kind);
    }
  }
  // Requests answered Busy whose backoff is over go back to their queue's front.
  void ReleaseDelayed(TimePoint now) {
    while (!delayed_.empty() && delayed_.top().due <= now) {
      const Delayed d = delayed_.top();
      delayed_.pop();
      units_[d.unit].jobs.push_front(d.job);
      Enqueue(d.unit);
    }
  }
  // The next deadline, Busy backoff or token; max when there is none.
  TimePoint NextWake() const {
    TimePoint wake = TimePoint::max();
    if (!deadlines_.empty()) wake = std::min(wake, deadlines_.top().first);
    if (!delayed_.empty()) wake = std::min(wake, delayed_.top().due);
    if (token_due_ != TimePoint{}) wake = std::min(wake, token_due_);
    return wake;
  }
  void FailQueued() {
    for (auto& [id, u] : units_) {
      for (const Job& j : u.jobs) Finish(j.index, MadOutcome::kSendError);
      u.jobs.clear();
    }
  }

  // A MAD that arrived: a Report, an answer to one in flight, or something to ignore.
  void Take(const InboundMad& in) {
    if (e_.TakeReport(in)) return;
    const MadHeader h = DecodeHeader(in.mad);
    auto it = in_flight_.find(static_cast<std::uint32_t>(h.tid));
    if (it == in_flight_.end()) {
      ++e_.stats_.ignored;  // late (after a retry), duplicate or not ours
      return;
    }
    const InFlight f = it->second;
    const MadRequest& req = requests_[f.job.index];
    const MadKind kind = KindOf(req.mgmt_class);
    if (in.status != 0) {
      // The kernel gave our send back unanswered: same as a user-space timeout.
      in_flight_.erase(it);
      Settle(f.job.index, kind);
      RetryOrFail(f, kind);
      return;
    }
    if ((h.method & kResponseBit) == 0 || h.mgmt_class != static_cast<std::uint8_t>(req.mgmt_class) ||
        h.attr_id != req.attr_id || h.attr_mod != req.attr_mod) {
      ++e_.stats_.ignored;  // a corrupted or foreign MAD that happens to carry our TID
      return;
    }
    in_flight_.erase(it);
    Settle(f.job.index, kind);
    Answered(f, kind, h, in);
  }
  // The answer to an attempt: a sample, a Busy to back off from, or the outcome.
  void Answered(const InFlight& f, MadKind kind, const MadHeader& h, const InboundMad& in) {
    silent_attempts_ = 0;
    KindStats& ks = e_.stats_.kinds[Slot(kind)];
    ++ks.responses;
    const TimePoint now = e_.clock_->Now();
    // Karn: only a first attempt's answer is a clean round-trip sample.
    if (f.job.attempt == 0 && f.job.busy == 0) e_.Sample(kind, std::chrono::duration_cast<microseconds>(now - f.sent));
    Dest& t = Target(f.job.index);
    if ((h.status & kMadStatusBusy) != 0) {
      ++ks.busy;
      t.cwnd = 1;
      if (f.job.busy < o_.busy_retries) {
        // Busy: the agent discarded it (IBTA 13.4.7); ask again after a backoff.
        ++ks.retries;
        const Job again{f.job.index, f.job.attempt, f.job.busy + 1, f.job.redirected};
        delayed_.push(Delayed{now + e_.TimeoutFor(kind, LidOf(f.job.index), f.job.busy), f.unit, again});
        return;
      }
    }
    t.failures = 0;
    if ((h.status & kMadStatusRedirect) != 0 && Follow(f, kind, in.mad, &ks)) {
      ++ks.redirected;
      return;
    }
    if (h.status != 0) {
      if ((h.status & kMadStatusRedirect) != 0) ++ks.redirects;
      ++ks.remote_errors;
    } else if (per_dest_ > 0) {
      t.cwnd = std::min(max_cwnd_, t.cwnd + 1);
    }
    Finish(f.job.index, h.status != 0 ? MadOutcome::kRemoteError : MadOutcome::kOk, &in, h.status,
           f.job.attempt + f.job.busy);
  }

  // A Redirect (IBTA 13.5.3.3): the answer's data is the agent's
  // ClassPortInfo; the request goes again, at once, where it names, and
  // so do later ones of its class to its LID. False when it cannot be
  // followed: not a GMP, redirected once already, no QP named, or to a
  // GID (RedirectLID 0: a GRH-routed agent, which this engine cannot
  // reach; libibmad's rpc.c refuses it too), counted apart.
  bool Follow(const InFlight& f, MadKind kind, const MadBytes& mad, KindStats* ks) {
    if (kind != MadKind::kGmp || f.job.redirected) return false;
    const MadRequest& req = requests_[f.job.index];
    const ClassRedirect where = DecodeClassRedirect(mad);
    if (where.lid == 0) {
      ++ks->redirects_unsupported;
      return false;
    }
    if (where.qp == 0) return false;
    MadAddress to = MadAddress::Lid(where.lid);
    to.qp = where.qp;
    to.qkey = where.qkey;
    to.sl = where.sl;
    e_.redirects_[RedirectKey(req)] = to;
    units_[f.unit].jobs.push_front(Job{f.job.index, f.job.attempt, f.job.busy, true});
    Enqueue(f.unit);
    return true;
  }

  MadEngine& e_;
  const EngineOptions& o_;
  std::span<const MadRequest> requests_;
  const ResultSink& sink_;
  // Per request only when it was first sent: the outcome goes to the sink
  // as it is decided (a sweep of 80k ports would otherwise hold 180k whole
  // response MADs, 50 MB, until the last one).
  std::vector<TimePoint> first_sent_;
  const int per_dest_;
  const int per_switch_;
  const int per_sa_;
  const int max_cwnd_;
  std::unordered_map<std::uint64_t, Dest> dests_;
  std::unordered_map<std::uint64_t, Unit> units_;
  // One ring of units per kind when interleaving; one FIFO otherwise.
  std::array<std::deque<std::uint64_t>, kMadKinds> rings_;
  std::unordered_map<std::uint32_t, InFlight> in_flight_;
  std::priority_queue<std::pair<TimePoint, std::uint32_t>, std::vector<std::pair<TimePoint, std::uint32_t>>,
                      std::greater<>>
      deadlines_;
  std::priority_queue<Delayed, std::vector<Delayed>, std::greater<>> delayed_;
  std::array<int, kMadKinds> kind_out_{};
  int total_out_ = 0;
  std::size_t done_ = 0;
  int silent_attempts_ = 0;  // attempts timed out since the last answer from anywhere
  bool silent_ = false;
  std::vector<std::uint64_t> nodes_;  // the nodes of the request looked at last (NodesOf)
  // Rate limit: a token bucket holding at most 10 ms worth of MADs.
  const double rate_;
  const double burst_;
  TimePoint token_due_{};
};

MadEngine::Probed MadEngine::RunProbed(std::span<const MadRequest> requests, const ResultSink& sink) {
  Probed out;
  if (requests.empty()) return out;
  std::vector<MadResult> first = Run(requests.first(1));
  out.first = first[0].outcome;
  out.sent = 1;
  sink(0, std::move(first[0]));
  if (out.first != MadOutcome::kOk || requests.size() == 1) return out;
  Run(requests.subspan(1), [&sink](std::size_t i, MadResult&& r) { sink(i + 1, std::move(r)); });
  out.sent = requests.size();
  return out;
}

void MadEngine::Run(std::span<const MadRequest> requests, const ResultSink& sink) {
  stats_.requests += requests.size();
  if (requests.empty()) return;
  Batch(*this, requests, sink).Run();
}

}  // namespace ibfabric::transport
