// more_fabrics: an LD_PRELOAD library that gives a client of umad2sim
// (which attaches to one ibsim as the device ibsim0) further HCA devices,
// each attached to another ibsim: a host with ports on several fabrics.
//
//   LD_PRELOAD="libumad2sim.so libmore_fabrics.so" MORE_FABRICS="mlx5_1=simb@cn0001"
//   MORE_FABRICS="mlx5_1=sim@cn0002"   # a second port on umad2sim's own fabric
//
// Each entry is DEVICE=SOCKNAME@NODE: the device's one port attaches to
// NODE of the ibsim started with IBSIM_SOCKNAME=SOCKNAME (umad2sim's own
// too: its client id is the pid with the device's number above bit 22, so
// the names differ), over ibsim's own
// client protocol (include/ibsim.h: a control socket, then one datagram
// socket for MADs), as umad2sim does for its device. Where MADs cross
// libibumad, for those devices only (everything else passes on):
// umad_get_cas_names lists them after the others; umad_get_ca and
// umad_get_port describe them from the node's NodeInfo, PortInfo and P_Key
// table as ibsim has them at the call; umad_open_port connects and returns
// the MAD socket (a real descriptor: poll() works on it); umad_register,
// umad_unregister, umad_send and umad_recv carry MADs as umad2sim does
// (requests get the agent in TID bits 32-47, responses go back to it,
// unsolicited MADs to the agent of their class). A test tool: process-wide
// state, one lock.

#include <arpa/inet.h>
#include <dlfcn.h>
#include <endian.h>
#include <infiniband/mad.h>
#include <infiniband/umad.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

// ibsim's client protocol (ibsim include/ibsim.h).
constexpr std::uint32_t kSimMagic = 0xdeadbeef;
enum : std::uint32_t {
  kCtlError,
  kCtlConnect,
  kCtlDisconnect,
  kCtlGetNodeInfo = 7,
  kCtlGetPortInfo = 8,
  kCtlGetPkeys = 10
};
struct SimCtl {
  std::uint32_t magic, clientid, type, len;
  char data[64];
};
struct SimClientInfo {
  std::uint32_t id, qp, issm;
  char nodeid[32];
};
struct SimRequest {
  std::uint32_t dlid, slid, dqp, sqp, status;
  std::uint64_t length;
  char mad[256];
};
constexpr std::size_t kMadSize = 256;

template <typename F>
F Next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

// An abstract unix socket address "@NAME", its terminating NUL included
// in the name as ibsim and umad2sim make theirs (sim_client.c make_name).
socklen_t Address(const std::string& name, sockaddr_un* a) {
  std::memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  std::strncpy(a->sun_path + 1, name.c_str(), sizeof a->sun_path - 2);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size() + 1);
}

struct Device {
  std::string name, sock, node;
  int ctl = -1, data = -1;
  std::uint32_t client = 0;
  std::map<int, int> agents;  // agent id -> management class

  bool Ctl(std::uint32_t type, void* buf, std::size_t len) {
    SimCtl c{};
    c.magic = kSimMagic;
    c.clientid = client;
    c.type = type;
    c.len = static_cast<std::uint32_t>(len);
    if (len) std::memcpy(c.data, buf, len);
    if (write(ctl, &c, sizeof c) != static_cast<ssize_t>(sizeof c)) return false;
    c.type = kCtlError;
    pollfd p{ctl, POLLIN, 0};
    if (poll(&p, 1, 5000) <= 0 || read(ctl, &c, sizeof c) != static_cast<ssize_t>(sizeof c)) return false;
    if (c.type == kCtlError) return false;
    if (len) std::memcpy(buf, c.data, len);
    return true;
  }

  bool Connect() {
    if (ctl >= 0) return true;
    // Names of its own beside umad2sim's (which use the bare pid) and the
    // other devices', so that two devices may attach to one ibsim (a host
    // with two ports on one fabric): the pid with the device's number
    // above the 22 bits a pid takes.
    static int attached = 0;
    const std::uint32_t id = static_cast<std::uint32_t>(getpid()) | (static_cast<std::uint32_t>(++attached) << 22);
    const std::string pid = std::to_string(id);
    sockaddr_un a{};
    ctl = socket(AF_UNIX, SOCK_DGRAM, 0);
    const int in = socket(AF_UNIX, SOCK_DGRAM, 0);
    bool ok = ctl >= 0 && in >= 0;
    ok = ok && bind(ctl, reinterpret_cast<sockaddr*>(&a), Address(sock + ":ctl" + pid, &a)) == 0;
    ok = ok && connect(ctl, reinterpret_cast<sockaddr*>(&a), Address(sock + ":ctl", &a)) == 0;
    ok = ok && bind(in, reinterpret_cast<sockaddr*>(&a), Address(sock + ":in" + pid, &a)) == 0;
    SimClientInfo info{};
    info.id = id;
    std::strncpy(info.nodeid, node.c_str(), sizeof info.nodeid - 1);
    ok = ok && Ctl(kCtlConnect, &info, sizeof info);
    if (ok) client = info.id;
    ok = ok && connect(in, reinterpret_cast<sockaddr*>(&a), Address(sock + ":out" + std::to_string(client), &a)) == 0;
    if (!ok) {
      std::fprintf(stderr, "more_fabrics: cannot attach %s to %s@%s: %s\n", name.c_str(), sock.c_str(), node.c_str(),
                   std::strerror(errno));
      if (ctl >= 0) close(ctl);
      if (in >= 0) close(in);
      ctl = -1;
      return false;
    }
    data = in;
    return true;
  }

  // The attribute as ibsim holds it now (64 bytes), or false.
  bool Get(std::uint32_t type, std::uint8_t out[64]) {
    std::memset(out, 0, 64);
    return Connect() && Ctl(type, out, 64);
  }

  void Describe(umad_port_t* port) {
    std::uint8_t node_info[64], port_info[64], pkeys[64];
    Get(kCtlGetNodeInfo, node_info);
    port_info[0] = 0;  // the client's own port
    Get(kCtlGetPortInfo, port_info);
    Get(kCtlGetPkeys, pkeys);
    std::memset(port, 0, sizeof *port);
    std::strncpy(port->ca_name, name.c_str(), UMAD_CA_NAME_LEN - 1);
    port->portnum = 1;
    port->base_lid = mad_get_field(port_info, 0, IB_PORT_LID_F);
    port->lmc = mad_get_field(port_info, 0, IB_PORT_LMC_F);
    port->sm_lid = mad_get_field(port_info, 0, IB_PORT_SMLID_F);
    port->sm_sl = mad_get_field(port_info, 0, IB_PORT_SMSL_F);
    port->state = mad_get_field(port_info, 0, IB_PORT_STATE_F);
    port->phys_state = mad_get_field(port_info, 0, IB_PORT_PHYS_STATE_F);
    port->capmask = htobe32(mad_get_field(port_info, 0, IB_PORT_CAPMASK_F));
    port->gid_prefix = htobe64(mad_get_field64(port_info, 0, IB_PORT_GID_PREFIX_F));
    // The NodeInfo ibsim holds says PortGUID as it was made (the node's
    // GUID); a CA's port 1 is the node's GUID + 1 (sim_net.c), which a
    // NodeInfo SMP to it answers and sysfs would show.
    const std::uint64_t node_guid = mad_get_field64(node_info, 0, IB_NODE_GUID_F);
    const bool ca = mad_get_field(node_info, 0, IB_NODE_TYPE_F) == 1;
    port->port_guid = htobe64(ca ? node_guid + 1 : mad_get_field64(node_info, 0, IB_NODE_PORT_GUID_F));
    port->pkeys_size = 32;
    port->pkeys = static_cast<std::uint16_t*>(std::calloc(32, sizeof(std::uint16_t)));
    for (int i = 0; i < 32; ++i) {  // ibsim keeps them as on the wire; sysfs (and libibumad) says host order
      std::uint16_t be = 0;
      std::memcpy(&be, pkeys + 2 * i, 2);
      port->pkeys[i] = ntohs(be);
    }
    std::strncpy(port->link_layer, "InfiniBand", UMAD_CA_NAME_LEN - 1);
  }
};

struct Fabrics {
  std::mutex mu;
  std::vector<std::unique_ptr<Device>> devices;

  static Fabrics& Get() {
    static Fabrics f;
    return f;
  }
  Fabrics() {
    const char* spec = std::getenv("MORE_FABRICS");
    std::string s = spec != nullptr ? spec : "";
    for (std::size_t at = 0; at < s.size();) {
      const std::size_t end = std::min(s.find(',', at), s.size());
      const std::string entry = s.substr(at, end - at);
      const std::size_t eq = entry.find('='), sign = entry.find('@');
      if (eq != std::string::npos && sign != std::string::npos && eq < sign) {
        auto d = std::make_unique<Device>();
        d->name = entry.substr(0, eq);
        d->sock = entry.substr(eq + 1, sign - eq - 1);
        d->node = entry.substr(sign + 1);
        devices.push_back(std::move(d));
      }
      at = end + 1;
    }
  }
  Device* Named(const char* name) {
    for (auto& d : devices) {
      if (name != nullptr && d->name == name) return d.get();
    }
    return nullptr;
  }
  Device* OfFd(int fd) {
    for (auto& d : devices) {
      if (d->data >= 0 && d->data == fd) return d.get();
    }
    return nullptr;
  }
};

bool IsSmi(int mgmt_class) { return mgmt_class == 0x01 || mgmt_class == 0x81; }

}  // namespace

extern "C" {

int umad_get_cas_names(char cas[][UMAD_CA_NAME_LEN], int max) {
  using Fn = int (*)(char[][UMAD_CA_NAME_LEN], int);
  static const Fn next = Next<Fn>("umad_get_cas_names");
  int n = next(cas, max);
  if (n < 0) n = 0;
  Fabrics& f = Fabrics::Get();
  std::lock_guard lock(f.mu);
  for (const auto& d : f.devices) {
    if (n >= max) break;
    std::memset(cas[n], 0, UMAD_CA_NAME_LEN);
    std::strncpy(cas[n++], d->name.c_str(), UMAD_CA_NAME_LEN - 1);
  }
  return n;
}

int umad_get_ca(const char* name, umad_ca_t* ca) {
  using Fn = int (*)(const char*, umad_ca_t*);
  static const Fn next = Next<Fn>("umad_get_ca");
  Fabrics& f = Fabrics::Get();
  std::lock_guard lock(f.mu);
  Device* d = f.Named(name);
  if (d == nullptr) return next(name, ca);
  if (!d->Connect()) return -ENODEV;
  std::memset(ca, 0, sizeof *ca);
  std::strncpy(ca->ca_name, d->name.c_str(), UMAD_CA_NAME_LEN - 1);
  ca->node_type = 1;  // CA
  ca->numports = 1;
  std::strncpy(ca->ca_type, "simulator", sizeof ca->ca_type - 1);
  std::uint8_t node_info[64];
  d->Get(kCtlGetNodeInfo, node_info);
  ca->node_guid = htobe64(mad_get_field64(node_info, 0, IB_NODE_GUID_F));
  ca->system_guid = htobe64(mad_get_field64(node_info, 0, IB_NODE_SYSTEM_GUID_F));
  ca->ports[1] = static_cast<umad_port_t*>(std::calloc(1, sizeof(umad_port_t)));
  d->Describe(ca->ports[1]);
  return 0;
}

int umad_get_port(const char* name, int portnum, umad_port_t* port) {
  using Fn = int (*)(const char*, int, umad_port_t*);
  static const Fn next = Next<Fn>("umad_get_port");
  Fabrics& f = Fabrics::Get();
  std::lock_guard lock(f.mu);
  Device* d = f.Named(name);
  if (d == nullptr) return next(name, portnum, port);
  if (portnum != 1 && portnum != 0) return -ENODEV;
  if (!d->Connect()) return -ENODEV;
  d->Describe(port);
  return 0;
}

int umad_open_port(const char* name, int portnum) {
  using Fn = int (*)(const char*, int);
  static const Fn next = Next<Fn>("umad_open_port");
  Fabrics& f = Fabrics::Get();
  std::lock_guard lock(f.mu);
  Device* d = f.Named(name);
  if (d == nullptr) return next(name, portnum);
  return d->Connect() ? d->data : -ENODEV;
}

int umad_close_port(int fd) {
  using Fn = int (*)(int);
  static const Fn next = Next<Fn>("umad_close_port");
  Fabrics& f = Fabrics::Get();
  std::lock_guard lock(f.mu);
  Device* d = f.OfFd(fd);
  if (d == nullptr) return next(fd);
  d->Ctl(kCtlDisconnect, nullptr, 0);
  close(d->data);
  close(d->ctl);
  d->data = d->ctl = -1;
  d->agents.clear();
  return 0;
}

int umad_register(int fd, int mgmt_class, int mgmt_version, uint8_t rmpp_version, long method_mask[]) {
  using Fn = int (*)(int, int, int, uint8_t, long[]);
  static const Fn next = Next<Fn>("umad_register");
  Fabrics& f = Fabrics::Get();
  std::lock_guard lock(f.mu);
  Device* d = f.OfFd(fd);
  if (d == nullptr) return next(fd, mgmt_class, mgmt_version, rmpp_version, method_mask);
  int id = 0;
  while (d->agents.count(id) != 0) ++id;
  d->agents[id] = mgmt_class;
  return id;
}

int umad_unregister(int fd, int agentid) {
  using Fn = int (*)(int, int);
  static const Fn next = Next<Fn>("umad_unregister");
  Fabrics& f = Fabrics::Get();
  std::lock_guard lock(f.mu);
  Device* d = f.OfFd(fd);
  if (d == nullptr) return next(fd, agentid);
  d->agents.erase(agentid);
  return 0;
}

int umad_send(int fd, int agentid, void* umad, int length, int timeout_ms, int retries) {
  using Fn = int (*)(int, int, void*, int, int, int);
  static const Fn next = Next<Fn>("umad_send");
  Fabrics& f = Fabrics::Get();
  std::unique_lock lock(f.mu);
  Device* d = f.OfFd(fd);
  if (d == nullptr) {
    lock.unlock();
    return next(fd, agentid, umad, length, timeout_ms, retries);
  }
  const auto agent = d->agents.find(agentid);
  if (agent == d->agents.end()) return -EINVAL;
  const auto* u = static_cast<const ib_user_mad*>(umad);
  SimRequest req{};
  req.dlid = u->addr.lid;
  req.slid = req.dlid == 0xffff ? 0xffff : 0;  // 0: ibsim fills it in
  req.dqp = u->addr.qpn;
  req.sqp = htonl(IsSmi(agent->second) ? 0 : 1);
  const std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(length), kMadSize);
  // libibumad's own offset: 56 bytes of header, 64 once a real
  // umad_open_port enabled P_Key indexes (the kernel's newer ABI).
  std::memcpy(req.mad, umad_get_mad(umad), n);
  req.length = htobe64(n);
  if (!mad_get_field(req.mad, 0, IB_MAD_RESPONSE_F)) {
    std::uint64_t tid = mad_get_field64(req.mad, 0, IB_MAD_TRID_F);
    tid = (tid & 0xffff0000ffffffffULL) | (static_cast<std::uint64_t>(agentid) << 32);
    mad_set_field64(req.mad, 0, IB_MAD_TRID_F, tid);
  }
  return write(d->data, &req, sizeof req) == static_cast<ssize_t>(sizeof req) ? 0 : -EIO;
}

int umad_recv(int fd, void* umad, int* length, int timeout_ms) {
  using Fn = int (*)(int, void*, int*, int);
  static const Fn next = Next<Fn>("umad_recv");
  Fabrics& f = Fabrics::Get();
  Device* d = nullptr;
  {
    std::lock_guard lock(f.mu);
    d = f.OfFd(fd);
  }
  if (d == nullptr) return next(fd, umad, length, timeout_ms);
  if (*length < static_cast<int>(kMadSize)) {
    *length = static_cast<int>(kMadSize);
    return -ENOSPC;
  }
  pollfd p{fd, POLLIN, 0};
  const int ready = poll(&p, 1, timeout_ms);
  if (ready == 0) return -ETIMEDOUT;
  if (ready < 0) return -errno;
  SimRequest req{};
  if (read(fd, &req, sizeof req) < static_cast<ssize_t>(sizeof req - sizeof req.mad)) return -EIO;
  auto* u = static_cast<ib_user_mad*>(umad);
  std::memset(u, 0, sizeof *u);
  const int mgmt_class = static_cast<int>(mad_get_field(req.mad, 0, IB_MAD_MGMTCLASS_F));
  std::lock_guard lock(f.mu);
  if (mad_get_field(req.mad, 0, IB_MAD_RESPONSE_F)) {
    u->agent_id = static_cast<std::uint32_t>((mad_get_field64(req.mad, 0, IB_MAD_TRID_F) >> 32) & 0xffff);
  } else {
    u->agent_id = static_cast<std::uint32_t>(-1);
    for (const auto& [id, cls] : d->agents) {
      if (cls == mgmt_class) u->agent_id = static_cast<std::uint32_t>(id);
    }
  }
  u->status = ntohl(req.status);
  u->length = static_cast<std::uint32_t>(umad_size() + be64toh(req.length));
  u->addr.qpn = req.sqp;
  u->addr.lid = static_cast<std::uint16_t>(req.slid);
  std::memcpy(umad_get_mad(umad), req.mad, kMadSize);
  *length = static_cast<int>(kMadSize);
  return static_cast<int>(u->agent_id);
}

}  // extern "C"
