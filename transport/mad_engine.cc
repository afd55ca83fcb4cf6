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
constexpr std::uint64_t kRouteMask = (1ULL << 56) - 1;
constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
constexpr std::uint64_t kFnvPrime = 0x100000001b3ULL;

// The nodes a request loads, the target last: its LID; or, directed, the
// node after each hop (the switches that forward it and the target), or
// the local node for the empty route.
void NodesOf(const MadRequest& r, std::vector<std::uint64_t>* out) {
  out->clear();
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
  int attempt;  // timed-out attempts so far
  int busy;     // Busy replies so far
};

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
      clock_(options.clock ? options.clock : &SteadyClock()),
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

void MadEngine::Run(std::span<const MadRequest> requests, const ResultSink& sink) {
  const std::size_t n = requests.size();
  stats_.requests += n;
  if (n == 0) return;
  // Per request only when it was first sent: the outcome goes to the sink
  // as it is decided (a sweep of 80k ports would otherwise hold 180k whole
  // response MADs, 50 MB, until the last one).
  std::vector<TimePoint> first_sent(n);

  const int per_dest = options_.per_destination;
  const int per_switch = options_.dr_per_switch > 0 ? options_.dr_per_switch : per_dest;
  const int max_cwnd = std::max(per_dest, per_switch);
  std::unordered_map<std::uint64_t, Dest> dests;
  std::unordered_map<std::uint64_t, Unit> units;
  // One ring of units per kind when interleaving; one FIFO otherwise.
  std::array<std::deque<std::uint64_t>, kMadKinds> rings;
  std::unordered_map<std::uint32_t, InFlight> in_flight;
  in_flight.reserve(static_cast<std::size_t>(options_.window) * 2);
  std::priority_queue<std::pair<TimePoint, std::uint32_t>, std::vector<std::pair<TimePoint, std::uint32_t>>,
                      std::greater<>>
      deadlines;
  std::priority_queue<Delayed, std::vector<Delayed>, std::greater<>> delayed;
  std::array<int, kMadKinds> kind_out{};
  int total_out = 0;
  std::size_t done = 0;
  int silent_attempts = 0;  // attempts timed out since the last answer from anywhere
  bool silent = false;
  std::vector<std::uint64_t> nodes;
  nodes.reserve(64);

  // Rate limit: a token bucket holding at most 10 ms worth of MADs.
  const double rate = options_.rate_limit;
  const double burst = rate > 0 ? std::max(1.0, rate * 0.01) : 0;
  double tokens = burst;
  TimePoint refilled = clock_->Now();

  auto dest = [&](std::uint64_t key) -> Dest& {
    auto [it, inserted] = dests.try_emplace(key);
    if (inserted) it->second.cwnd = max_cwnd;
    return it->second;
  };
  auto unit_of = [&](std::size_t index) -> std::uint64_t {
    if (!options_.interleave) return 0;
    NodesOf(requests[index], &nodes);
    // Injective for keys below 2^63: three kinds per node.
    return nodes.back() * kMadKinds + Slot(KindOf(requests[index].mgmt_class));
  };
  auto ring_of = [&](std::uint64_t unit_id) -> std::deque<std::uint64_t>& {
    return options_.interleave ? rings[unit_id % kMadKinds] : rings[0];
  };
  auto enqueue = [&](std::uint64_t unit_id) {
    Unit& u = units[unit_id];
    if (u.in_ring || u.parked || u.jobs.empty()) return;
    ring_of(unit_id).push_back(unit_id);
    u.in_ring = true;
  };
  // `answer`: the response, for kOk and kRemoteError.
  auto finish = [&](std::size_t index, MadOutcome outcome, const MadBytes* answer = nullptr, std::uint16_t status = 0,
                    int retries = 0) {
    MadResult r;
    r.outcome = outcome;
    if (answer) {
      r.mad_status = status;
      r.response = *answer;
      r.retries = static_cast<std::uint8_t>(std::min(255, retries));
    }
    r.first_sent = first_sent[index];
    r.done = clock_->Now();
    ++done;
    sink(index, std::move(r));
  };
  auto settle = [&](std::size_t index, MadKind kind) {
    --kind_out[Slot(kind)];
    --total_out;
    if (per_dest == 0) return;
    NodesOf(requests[index], &nodes);
    for (std::uint64_t key : nodes) {
      Dest& d = dest(key);
      --d.outstanding;
      for (std::uint64_t w : d.waiters) {
        units[w].parked = false;
        enqueue(w);
      }
      d.waiters.clear();
    }
  };
  auto target = [&](std::size_t index) -> Dest& {
    NodesOf(requests[index], &nodes);
    return dest(nodes.back());
  };
  auto lid_of = [&](std::size_t index) -> std::uint16_t {
    return requests[index].mgmt_class == MgmtClass::kSubnDirectRoute ? 0 : requests[index].address.lid;
  };

  // Sends the head job of `unit_id` if every limit allows it. Returns false
  // when it cannot go now; the unit is then parked or rotated.
  auto try_send = [&](std::uint64_t unit_id, std::deque<std::uint64_t>& ring, std::size_t* rotated) -> bool {
    Unit& u = units[unit_id];
    const Job job = u.jobs.front();
    const MadRequest& req = requests[job.index];
    const MadKind kind = KindOf(req.mgmt_class);
    NodesOf(req, &nodes);
    Dest& tgt = dest(nodes.back());
    if (tgt.dead || silent) {
      // Its node failed `dead_after` requests in a row, or nothing has
      // answered for `silence_after` attempts: not worth the wire.
      u.jobs.pop_front();
      ++stats_.kinds[Slot(kind)].timeouts;
      ++stats_.kinds[Slot(kind)].abandoned;
      finish(job.index, MadOutcome::kTimeout);
      enqueue(unit_id);
      return true;
    }
    if (per_dest > 0) {
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        Dest& d = dest(nodes[i]);
        const bool is_target = i + 1 == nodes.size();
        const int limit = is_target ? per_dest : per_switch;
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
    }
    u.jobs.pop_front();
    const std::uint32_t tid = NextTid();
    const MadBytes mad = EncodeRequest(req, tid);
    ++stats_.kinds[Slot(kind)].sent;
    if (rate > 0) tokens -= 1;
    if (!port_.Send(req.address, mad)) {
      ++stats_.kinds[Slot(kind)].send_errors;
      finish(job.index, MadOutcome::kSendError);
      enqueue(unit_id);
      return true;
    }
    const TimePoint now = clock_->Now();
    if (first_sent[job.index] == TimePoint{}) first_sent[job.index] = now;
    in_flight.emplace(tid, InFlight{job, now, unit_id});
    deadlines.emplace(now + TimeoutFor(kind, lid_of(job.index), job.attempt), tid);
    ++kind_out[Slot(kind)];
    ++total_out;
    stats_.peak_kind[Slot(kind)] = std::max(stats_.peak_kind[Slot(kind)], kind_out[Slot(kind)]);
    stats_.peak_total = std::max(stats_.peak_total, total_out);
    if (per_dest > 0) {
      for (std::uint64_t key : nodes) {
        Dest& d = dest(key);
        ++d.outstanding;
        stats_.peak_per_destination = std::max(stats_.peak_per_destination, d.outstanding);
      }
    }
    enqueue(unit_id);
    return true;
  };

  // Fills the windows: one request per kind in turn, round robin over the
  // units of each kind, until nothing more may go.
  constexpr std::size_t kRotateBudget = 256;  // transit-blocked units looked at per pass
  TimePoint token_due{};
  auto dispatch = [&]() {
    token_due = TimePoint{};
    bool progress = true;
    while (progress) {
      progress = false;
      for (std::size_t r = 0; r < rings.size(); ++r) {
        auto& ring = rings[r];
        std::size_t rotated = 0;
        while (!ring.empty() && total_out < options_.window) {
          if (rate > 0) {
            const TimePoint now = clock_->Now();
            tokens = std::min(burst, tokens + std::chrono::duration<double>(now - refilled).count() * rate);
            refilled = now;
            if (tokens < 1) {
              token_due = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>((1 - tokens) / rate));
              return;
            }
          }
          const std::uint64_t unit_id = ring.front();
          Unit& u = units[unit_id];
          if (u.jobs.empty()) {
            ring.pop_front();
            u.in_ring = false;
            continue;
          }
          const MadKind kind = KindOf(requests[u.jobs.front().index].mgmt_class);
          if (kind_out[Slot(kind)] >= options_.kind_window[Slot(kind)]) break;  // this kind is full
          if (!options_.interleave && per_dest == 0) {
            // In order: the head goes or nothing does.
            if (!try_send(unit_id, ring, &rotated)) break;
            progress = true;
            continue;
          }
          ring.pop_front();
          u.in_ring = false;
          if (try_send(unit_id, ring, &rotated)) {
            progress = true;
            break;  // next kind's turn
          }
          // Rotated units come round again; stop once a pass has looked at
          // enough of them while answers are due to free their routes.
          if (rotated >= std::min(ring.size(), kRotateBudget) && total_out > 0) break;
        }
      }
    }
  };

  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t id = unit_of(i);
    units[id].jobs.push_back(Job{i, 0, 0});
    enqueue(id);
  }

  auto retry_or_fail = [&](const InFlight& f, MadKind kind) {
    Dest& t = target(f.job.index);
    t.cwnd = 1;  // one at a time until it answers again
    if (options_.adaptive_timeout && rtt_[Slot(kind)].backoff < 2) ++rtt_[Slot(kind)].backoff;
    if (options_.silence_after > 0 && ++silent_attempts >= options_.silence_after) silent = true;
    if (f.job.attempt < options_.retries) {
      ++stats_.kinds[Slot(kind)].retries;
      Unit& u = units[f.unit];
      u.jobs.push_front(Job{f.job.index, f.job.attempt + 1, f.job.busy});
      enqueue(f.unit);
      return;
    }
    ++stats_.kinds[Slot(kind)].timeouts;
    finish(f.job.index, MadOutcome::kTimeout);
    if (options_.dead_after > 0 && ++t.failures >= options_.dead_after) t.dead = true;
  };

  while (done < n) {
    dispatch();
    TimePoint now = clock_->Now();
    while (!deadlines.empty() && deadlines.top().first <= now) {
      const std::uint32_t tid = deadlines.top().second;
      deadlines.pop();
      auto it = in_flight.find(tid);
      if (it == in_flight.end()) continue;  // answered already
      const InFlight f = it->second;
      in_flight.erase(it);
      const MadKind kind = KindOf(requests[f.job.index].mgmt_class);
      settle(f.job.index, kind);
      retry_or_fail(f, kind);
    }
    while (!delayed.empty() && delayed.top().due <= now) {
      const Delayed d = delayed.top();
      delayed.pop();
      units[d.unit].jobs.push_front(d.job);
      enqueue(d.unit);
    }
    if (done >= n) break;
    dispatch();
    now = clock_->Now();

    TimePoint wake = TimePoint::max();
    if (!deadlines.empty()) wake = std::min(wake, deadlines.top().first);
    if (!delayed.empty()) wake = std::min(wake, delayed.top().due);
    if (token_due != TimePoint{}) wake = std::min(wake, token_due);
    if (wake == TimePoint::max()) {
      // Nothing in flight, nothing scheduled, and nothing could be sent: a
      // bug in the limits above. Fail what is left rather than hang.
      for (auto& [id, u] : units) {
        for (const Job& j : u.jobs) finish(j.index, MadOutcome::kSendError);
        u.jobs.clear();
      }
      break;
    }
    const auto wait = std::max(microseconds(0), std::chrono::duration_cast<microseconds>(wake - now));
    std::optional<InboundMad> in = port_.Receive(wait);
    if (!in) continue;

    if (TakeReport(*in)) continue;
    const MadHeader h = DecodeHeader(in->mad);
    auto it = in_flight.find(static_cast<std::uint32_t>(h.tid));
    if (it == in_flight.end()) {
      ++stats_.ignored;  // late (after a retry), duplicate or not ours
      continue;
    }
    const InFlight f = it->second;
    const MadRequest& req = requests[f.job.index];
    const MadKind kind = KindOf(req.mgmt_class);
    if (in->status != 0) {
      // The kernel gave our send back unanswered: same as a user-space timeout.
      in_flight.erase(it);
      settle(f.job.index, kind);
      retry_or_fail(f, kind);
      continue;
    }
    if ((h.method & kResponseBit) == 0 || h.mgmt_class != static_cast<std::uint8_t>(req.mgmt_class) ||
        h.attr_id != req.attr_id || h.attr_mod != req.attr_mod) {
      ++stats_.ignored;  // a corrupted or foreign MAD that happens to carry our TID
      continue;
    }
    in_flight.erase(it);
    settle(f.job.index, kind);
    silent_attempts = 0;
    KindStats& ks = stats_.kinds[Slot(kind)];
    ++ks.responses;
    now = clock_->Now();
    // Karn: only a first attempt's answer is a clean round-trip sample.
    if (f.job.attempt == 0 && f.job.busy == 0) {
      Sample(kind, std::chrono::duration_cast<microseconds>(now - f.sent));
    }
    Dest& t = target(f.job.index);
    if ((h.status & kMadStatusBusy) != 0) {
      ++ks.busy;
      t.cwnd = 1;
      if (f.job.busy < options_.busy_retries) {
        // Busy: the agent discarded it (IBTA 13.4.7); ask again after a backoff.
        ++ks.retries;
        const Job again{f.job.index, f.job.attempt, f.job.busy + 1};
        delayed.push(Delayed{now + TimeoutFor(kind, lid_of(f.job.index), f.job.busy), f.unit, again});
        continue;
      }
    }
    t.failures = 0;
    if (h.status != 0) {
      if ((h.status & kMadStatusRedirect) != 0) ++ks.redirects;
      ++ks.remote_errors;
    } else if (per_dest > 0) {
      t.cwnd = std::min(max_cwnd, t.cwnd + 1);
    }
    finish(f.job.index, h.status != 0 ? MadOutcome::kRemoteError : MadOutcome::kOk, &in->mad, h.status,
           f.job.attempt + f.job.busy);
  }
}

}  // namespace ibfabric::transport
