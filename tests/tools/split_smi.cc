// split_smi: an LD_PRELOAD library that makes umad2sim's one simulated
// HCA port look as a multi-plane ConnectX-8 host shows its port on Linux
// 6.11 and later ("multi-plane support for mlx5"): the parent device has
// no QP0 (its port's CapabilityMask says IsSMDisabled, bit 10) and QP0 is
// on an SMI sub-device, which the operator creates (`rdma dev add NAME
// type SMI parent PARENT`) and which shares the parent's port GUID.
//
//   LD_PRELOAD="libsplit_smi.so libumad2sim.so ..." SPLIT_SMI_GSI=mlx5_0 SPLIT_SMI_SMI=smi0
//
// SPLIT_SMI_PLANES=N (default 1, at most 4) gives the sub-device N ports, one per
// plane, all with the parent's port GUID (as one capture of an XDR host
// lists smi1 ports 1-4: rdmamap pull request 17); each is ibsim0's port.
//
// It goes first, before umad2sim, for poll() and umad_recv(): umad2sim's
// poll waits on the first umad descriptor of a set only, and a client of
// two devices polls both (this one looks at each in turn, 1 ms at a time,
// as the kernel would wake it for either). What it models, where MADs
// cross libibumad:
// - umad_get_cas_names lists SPLIT_SMI_GSI and then SPLIT_SMI_SMI in place
//   of umad2sim's ibsim0 (SPLIT_SMI_SMI empty: no sub-device was created);
// - umad_get_ca / umad_get_port of either name are ibsim0's renamed, the
//   parent's ports with IsSMDisabled set;
// - umad_open_port of either opens ibsim0's port; umad_register refuses
//   SMI classes (0x01, 0x81) on the parent and every other class on the
//   sub-device (assumed: it carries QP0 only) as the kernel refuses an
//   agent for a QP the device lacks (ib_register_mad_agent:
//   EPROTONOSUPPORT), which libibumad 44 returns as -EPERM;
// - umad_send through an agent not registered on that device's descriptor
//   fails (EINVAL, as the kernel's write does for an unknown agent);
// - a second agent of one class asking for unsolicited methods (the SA's
//   Reports) is refused, as the kernel allows one receiver of a method per
//   class on a port, and the SA's Reports go to the one that has them;
// - each answer reaches the descriptor whose agent sent the request, as
//   the kernel routes it by the agent in the TID: umad2sim hands every
//   answer of a class to the descriptor that registered that class last,
//   which is wrong as soon as two descriptors (an exporter reading every
//   plane: one pair per plane) register one class. Answers are read here
//   from every open descriptor (umad_recv, timeout 0) and held for the
//   one whose agent they name; poll() and umad_recv() look there.
// The answers the hardware personalities (hw_personality.cc, preloaded
// after umad2sim) make up come through the same umad_recv. A test tool:
// process-wide state, two locks (the pump's, then the state's).

#include <dlfcn.h>
#include <endian.h>
#include <infiniband/umad.h>
#include <poll.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

constexpr const char* kSimCa = "ibsim0";  // what umad2sim calls its device
constexpr std::uint32_t kIsSmDisabled = 1u << 10;

template <typename F>
F Next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

enum class Role { kNone, kGsi, kSmi };

struct Split {
  std::string gsi, smi;
  int planes = 1;  // the sub-device's ports
  std::mutex mu;
  std::map<int, Role> fds;                     // open umad ports -> which device
  std::map<int, std::set<int>> agents;         // open umad ports -> the agents registered on them
  std::map<int, std::pair<int, int>> reports;  // class -> (fd, agent) taking its unsolicited methods
  std::map<int, int> agent_class;              // agent -> its management class
  // Answers read, held for the descriptor whose agent they name: the
  // ib_user_mad header and the MAD, and the MAD's length.
  struct Held {
    std::vector<std::uint8_t> bytes;
    int length = 0;
  };
  std::map<int, std::deque<Held>> held;
  std::mutex pump_mu;  // one reader of the descriptors at a time

  static Split& Get() {
    static Split s;
    return s;
  }
  Split() {
    const char* g = std::getenv("SPLIT_SMI_GSI");
    const char* s = std::getenv("SPLIT_SMI_SMI");
    gsi = g != nullptr ? g : "";
    smi = s != nullptr ? s : "";
    const char* n = std::getenv("SPLIT_SMI_PLANES");
    // At most 4: umad2sim opens 8 descriptors per device, two per plane.
    if (n != nullptr) planes = std::max(1, std::min(std::atoi(n), 4));
  }
  bool on() const { return !gsi.empty(); }
  Role RoleOf(const char* name) const {
    if (!on() || name == nullptr) return Role::kNone;
    if (gsi == name) return Role::kGsi;
    if (!smi.empty() && smi == name) return Role::kSmi;
    return Role::kNone;
  }
  Role RoleOfFd(int fd) {
    std::lock_guard lock(mu);
    auto it = fds.find(fd);
    return it == fds.end() ? Role::kNone : it->second;
  }
  // The descriptor agent `agent` is registered on; `fallback` if none.
  int OwnerOf(int agent, int fallback) {
    for (const auto& [fd, ids] : agents) {
      if (ids.count(agent) != 0) return fd;
    }
    return fallback;
  }
  // Reads every answer waiting on any open descriptor and holds it for
  // its agent's. The next umad_recv is hw_personality's where preloaded
  // (its own answers first), else libibumad's reading umad2sim's queues.
  void Pump();
  // Takes the first answer held for `fd` into `umad` (room: *length
  // bytes of MAD): the agent id; -ENOSPC with *length set when it does
  // not fit (it stays); -EWOULDBLOCK when none.
  int TakeHeld(int fd, void* umad, int* length);
};

void Rename(char* field, const std::string& name) {
  std::memset(field, 0, UMAD_CA_NAME_LEN);
  std::strncpy(field, name.c_str(), UMAD_CA_NAME_LEN - 1);
}

void Dress(umad_port_t* port, const std::string& name, Role role) {
  Rename(port->ca_name, name);
  if (role == Role::kGsi) port->capmask = htobe32(be32toh(port->capmask) | kIsSmDisabled);
}

bool IsSmiClass(int mgmt_class) { return mgmt_class == 0x01 || mgmt_class == 0x81; }

std::int64_t NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

using RecvFn = int (*)(int, void*, int*, int);
RecvFn NextRecv() {
  static const RecvFn next = Next<RecvFn>("umad_recv");
  return next;
}
using PollFn = int (*)(struct pollfd*, nfds_t, int);
PollFn NextPoll() {
  static const PollFn next = Next<PollFn>("poll");
  return next;
}

int AgentOf(const std::uint8_t* umad) { return static_cast<int>(reinterpret_cast<const ib_user_mad*>(umad)->agent_id); }

void Split::Pump() {
  // Only ever the next umad_recv with timeout 0: with a timeout
  // libibumad would poll() (this preload's, which pumps: pump_mu again).
  std::lock_guard pump(pump_mu);
  std::vector<int> open;
  {
    std::lock_guard lock(mu);
    for (const auto& [fd, role] : fds) open.push_back(fd);
  }
  constexpr int kMad = 256;
  for (const int fd : open) {
    while (true) {
      Held h;
      h.bytes.resize(umad_size() + kMad);
      int length = kMad;
      int rc = NextRecv()(fd, h.bytes.data(), &length, 0);
      if (rc == -ENOSPC && length > kMad) {
        h.bytes.resize(umad_size() + static_cast<std::size_t>(length));
        rc = NextRecv()(fd, h.bytes.data(), &length, 0);
      }
      if (rc < 0) break;
      h.length = length;
      std::lock_guard lock(mu);
      auto* u = reinterpret_cast<ib_user_mad*>(h.bytes.data());
      int owner = OwnerOf(AgentOf(h.bytes.data()), fd);
      // A request the far end sent unasked (the SA's Report: the response
      // bit of Method clear) goes to the agent registered for it, as the
      // kernel sends it; umad2sim names the class's last registrant.
      const std::uint8_t* mad = h.bytes.data() + umad_size();
      if ((mad[3] & 0x80) == 0) {
        if (const auto r = reports.find(mad[1]); r != reports.end()) {
          owner = r->second.first;
          u->agent_id = static_cast<std::uint32_t>(r->second.second);
        }
      }
      if (fds.count(owner) == 0) continue;  // closed meanwhile: nobody reads it
      held[owner].push_back(std::move(h));
    }
  }
}

int Split::TakeHeld(int fd, void* umad, int* length) {
  std::lock_guard lock(mu);
  auto it = held.find(fd);
  if (it == held.end() || it->second.empty()) return -EWOULDBLOCK;
  Held& h = it->second.front();
  if (*length < h.length) {
    *length = h.length;
    errno = ENOSPC;
    return -ENOSPC;
  }
  std::memcpy(umad, h.bytes.data(), umad_size() + static_cast<std::size_t>(h.length));
  *length = h.length;
  const int agent = AgentOf(h.bytes.data());
  it->second.pop_front();
  return agent;
}

// Sleeps up to 1 ms, less where umad2sim has something for `fd`.
void WaitAMoment(int fd) {
  pollfd one{fd, POLLIN, 0};
  NextPoll()(&one, 1, 1);
}

}  // namespace

extern "C" {

int umad_get_cas_names(char cas[][UMAD_CA_NAME_LEN], int max) {
  using Fn = int (*)(char[][UMAD_CA_NAME_LEN], int);
  static const Fn next = Next<Fn>("umad_get_cas_names");
  Split& s = Split::Get();
  const int n = next(cas, max);
  if (!s.on() || n < 0) return n;
  int out = 0;
  for (int i = 0; i < n; ++i) {
    if (std::strcmp(cas[i], kSimCa) != 0) {
      if (out != i) std::memcpy(cas[out], cas[i], UMAD_CA_NAME_LEN);
      ++out;
      continue;
    }
    Rename(cas[out++], s.gsi);
    if (!s.smi.empty() && out < max) Rename(cas[out++], s.smi);
  }
  return out;
}

int umad_get_ca(const char* name, umad_ca_t* ca) {
  using Fn = int (*)(const char*, umad_ca_t*);
  static const Fn next = Next<Fn>("umad_get_ca");
  const Role role = Split::Get().RoleOf(name);
  if (role == Role::kNone) return next(name, ca);
  const std::string as = name;
  const int rc = next(kSimCa, ca);
  if (rc < 0) return rc;
  Rename(ca->ca_name, as);
  for (int p = 0; p < UMAD_CA_MAX_PORTS; ++p) {
    if (ca->ports[p] != nullptr) Dress(ca->ports[p], as, role);
  }
  const int planes = Split::Get().planes;
  if (role == Role::kSmi && planes > 1 && ca->ports[1] != nullptr) {
    for (int p = 2; p <= planes; ++p) {
      ca->ports[p] = static_cast<umad_port_t*>(std::malloc(sizeof(umad_port_t)));
      *ca->ports[p] = *ca->ports[1];
      ca->ports[p]->portnum = p;
      ca->ports[p]->pkeys = nullptr;  // the copy's table stays with port 1 (released once)
      ca->ports[p]->pkeys_size = 0;
    }
    ca->numports = planes;
  }
  return rc;
}

int umad_get_port(const char* name, int portnum, umad_port_t* port) {
  using Fn = int (*)(const char*, int, umad_port_t*);
  static const Fn next = Next<Fn>("umad_get_port");
  const Role role = Split::Get().RoleOf(name);
  if (role == Role::kNone) return next(name, portnum, port);
  const std::string as = name;
  const bool plane = role == Role::kSmi && portnum > 1 && portnum <= Split::Get().planes;
  const int rc = next(kSimCa, plane ? 1 : portnum, port);
  if (rc == 0) Dress(port, as, role);
  if (rc == 0 && plane) port->portnum = portnum;
  return rc;
}

int umad_open_port(const char* name, int portnum) {
  using Fn = int (*)(const char*, int);
  static const Fn next = Next<Fn>("umad_open_port");
  Split& s = Split::Get();
  const Role role = s.RoleOf(name);
  if (role == Role::kNone) return next(name, portnum);
  const bool plane = role == Role::kSmi && portnum > 1 && portnum <= s.planes;
  const int fd = next(kSimCa, plane ? 1 : portnum);
  if (fd >= 0) {
    std::lock_guard lock(s.mu);
    s.fds[fd] = role;
    // What was opened, where a test can see it (SPLIT_SMI_TRACE=1): the
    // port behind a descriptor is not told by the MADs (every plane here
    // is ibsim0's one port).
    if (std::getenv("SPLIT_SMI_TRACE") != nullptr)
      std::fprintf(stderr, "split_smi: opened %s port %d\n", name, portnum);
  }
  return fd;
}

int umad_close_port(int fd) {
  using Fn = int (*)(int);
  static const Fn next = Next<Fn>("umad_close_port");
  Split& s = Split::Get();
  {
    std::lock_guard lock(s.mu);
    s.fds.erase(fd);
    s.agents.erase(fd);
    s.held.erase(fd);
    for (auto it = s.reports.begin(); it != s.reports.end();) {
      it = it->second.first == fd ? s.reports.erase(it) : std::next(it);
    }
  }
  return next(fd);
}

int umad_unregister(int fd, int agentid) {
  using Fn = int (*)(int, int);
  static const Fn next = Next<Fn>("umad_unregister");
  Split& s = Split::Get();
  bool shared = false;  // another descriptor still has an agent of the class
  {
    std::lock_guard lock(s.mu);
    if (auto it = s.agents.find(fd); it != s.agents.end()) it->second.erase(agentid);
    for (auto it = s.reports.begin(); it != s.reports.end();) {
      it = it->second == std::pair{fd, agentid} ? s.reports.erase(it) : std::next(it);
    }
    const auto cls = s.agent_class.find(agentid);
    if (cls != s.agent_class.end()) {
      for (const auto& [other, ids] : s.agents) {
        for (const int id : ids) {
          const auto c = s.agent_class.find(id);
          shared |= other != fd && c != s.agent_class.end() && c->second == cls->second;
        }
      }
      s.agent_class.erase(cls);
    }
  }
  // umad2sim forgets where the class's answers go for every descriptor:
  // while another still has the class, its agent stays registered there.
  return shared ? 0 : next(fd, agentid);
}

int umad_register(int fd, int mgmt_class, int mgmt_version, uint8_t rmpp_version, long method_mask[]) {
  using Fn = int (*)(int, int, int, uint8_t, long[]);
  static const Fn next = Next<Fn>("umad_register");
  Split& s = Split::Get();
  const Role role = s.RoleOfFd(fd);
  if ((role == Role::kGsi && IsSmiClass(mgmt_class)) || (role == Role::kSmi && !IsSmiClass(mgmt_class))) {
    errno = EPROTONOSUPPORT;
    return -EPERM;
  }
  bool unsolicited = false;  // a receiver of requests the SA sends unasked (Reports)
  for (std::size_t i = 0; method_mask != nullptr && i < 16 / sizeof(long); ++i) unsolicited |= method_mask[i] != 0;
  if (role != Role::kNone && unsolicited) {
    std::lock_guard lock(s.mu);
    if (s.reports.count(mgmt_class) != 0) {
      errno = EINVAL;  // ib_register_mad_agent: method already in use
      return -EPERM;
    }
  }
  const int agent = next(fd, mgmt_class, mgmt_version, rmpp_version, method_mask);
  if (agent >= 0 && role != Role::kNone) {
    std::lock_guard lock(s.mu);
    s.agents[fd].insert(agent);
    s.agent_class[agent] = mgmt_class;
    if (unsolicited) s.reports[mgmt_class] = {fd, agent};
  }
  return agent;
}

int umad_send(int fd, int agentid, void* umad, int length, int timeout_ms, int retries) {
  using Fn = int (*)(int, int, void*, int, int, int);
  static const Fn next = Next<Fn>("umad_send");
  Split& s = Split::Get();
  if (s.RoleOfFd(fd) != Role::kNone) {
    std::lock_guard lock(s.mu);
    if (s.agents[fd].count(agentid) == 0) {
      errno = EINVAL;
      return -EINVAL;
    }
  }
  return next(fd, agentid, umad, length, timeout_ms, retries);
}

int umad_recv(int fd, void* umad, int* length, int timeout_ms) {
  Split& s = Split::Get();
  if (s.RoleOfFd(fd) == Role::kNone) return NextRecv()(fd, umad, length, timeout_ms);
  const std::int64_t deadline = timeout_ms < 0 ? -1 : NowMs() + timeout_ms;
  while (true) {
    s.Pump();
    const int rc = s.TakeHeld(fd, umad, length);
    if (rc != -EWOULDBLOCK) return rc;
    const std::int64_t left = deadline < 0 ? 1 : deadline - NowMs();
    if (left <= 0) {
      // As libibumad says it: nothing to read, or nothing came in time.
      errno = timeout_ms == 0 ? EWOULDBLOCK : ETIMEDOUT;
      return -errno;
    }
    WaitAMoment(fd);
  }
}

int poll(struct pollfd* fds, nfds_t nfds, int timeout) {
  Split& s = Split::Get();
  bool ours = nfds >= 1;
  for (nfds_t i = 0; ours && i < nfds; ++i) ours = s.RoleOfFd(fds[i].fd) != Role::kNone;
  if (!ours) return NextPoll()(fds, nfds, timeout);
  const std::int64_t deadline = timeout < 0 ? -1 : NowMs() + timeout;
  for (nfds_t turn = 0;; ++turn) {
    s.Pump();
    int ready = 0;
    {
      std::lock_guard lock(s.mu);
      for (nfds_t i = 0; i < nfds; ++i) {
        const auto it = s.held.find(fds[i].fd);
        fds[i].revents = it != s.held.end() && !it->second.empty() ? POLLIN : 0;
        if (fds[i].revents != 0) ++ready;
      }
    }
    if (ready > 0) return ready;
    const std::int64_t left = deadline < 0 ? 1 : deadline - NowMs();
    if (left <= 0) return 0;
    WaitAMoment(fds[turn % nfds].fd);
  }
}

}  // extern "C"
