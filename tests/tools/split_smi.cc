// split_smi: an LD_PRELOAD library that makes umad2sim's one simulated
// HCA port look as a multi-plane ConnectX-8 host shows its port on Linux
// 6.11 and later ("multi-plane support for mlx5"): the parent device has
// no QP0 (its port's CapabilityMask says IsSMDisabled, bit 10) and QP0 is
// on an SMI sub-device, which the operator creates (`rdma dev add NAME
// type SMI parent PARENT`) and which shares the parent's port GUID.
//
//   LD_PRELOAD="libsplit_smi.so libumad2sim.so ..." SPLIT_SMI_GSI=mlx5_0 SPLIT_SMI_SMI=smi0
//
// SPLIT_SMI_PLANES=N (default 1) gives the sub-device N ports, one per
// plane, all with the parent's port GUID (as one capture of an XDR host
// lists smi1 ports 1-4: rdmamap pull request 17); each is ibsim0's port.
//
// It goes first, before umad2sim, for poll(): umad2sim's waits on the first
// umad descriptor of a set only, and a client of two devices polls both
// (this one waits on each in turn, 1 ms at a time, as the kernel would
// wake it for either). What it models, where MADs cross libibumad:
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
//   fails (EINVAL, as the kernel's write does for an unknown agent).
// Answers the hardware personalities (hw_personality.cc) make up are polled
// through that preload's hw_personality_ready(). A test tool: process-wide
// state, one lock.

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
#include <map>
#include <mutex>
#include <set>
#include <string>

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
  std::map<int, Role> fds;              // open umad ports -> which device
  std::map<int, std::set<int>> agents;  // open umad ports -> the agents registered on them

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
    if (n != nullptr) planes = std::max(1, std::min(std::atoi(n), UMAD_CA_MAX_PORTS - 1));
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
  }
  return next(fd);
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
  const int agent = next(fd, mgmt_class, mgmt_version, rmpp_version, method_mask);
  if (agent >= 0 && role != Role::kNone) {
    std::lock_guard lock(s.mu);
    s.agents[fd].insert(agent);
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

int poll(struct pollfd* fds, nfds_t nfds, int timeout) {
  using Fn = int (*)(struct pollfd*, nfds_t, int);
  static const Fn next = Next<Fn>("poll");
  Split& s = Split::Get();
  bool ours = nfds >= 2;
  for (nfds_t i = 0; ours && i < nfds; ++i) ours = s.RoleOfFd(fds[i].fd) != Role::kNone;
  if (!ours) return next(fds, nfds, timeout);
  // Answers the hardware personalities made up themselves never reach
  // umad2sim's queues: that preload says where they wait.
  using Ready = int (*)(int);
  static const Ready answered = reinterpret_cast<Ready>(dlsym(RTLD_DEFAULT, "hw_personality_ready"));
  const std::int64_t deadline = timeout < 0 ? -1 : NowMs() + timeout;
  for (nfds_t turn = 0;; ++turn) {
    int ready = 0;
    for (nfds_t i = 0; i < nfds; ++i) {
      pollfd one = fds[i];
      one.revents = 0;
      if (answered != nullptr && answered(one.fd) != 0) {
        one.revents = POLLIN;
      } else {
        next(&one, 1, 0);
      }
      if (one.revents != 0) ++ready;
      fds[i].revents = one.revents;
    }
    if (ready > 0) return ready;
    const std::int64_t left = deadline < 0 ? 1 : deadline - NowMs();
    if (left <= 0) return 0;
    pollfd wait = fds[turn % nfds];
    next(&wait, 1, static_cast<int>(std::min<std::int64_t>(left, 1)));
  }
}

}  // extern "C"
