#include "transport/umad_port.h"

#include <endian.h>
#include <fcntl.h>
#include <infiniband/mad.h>
#include <infiniband/umad.h>
#include <infiniband/umad_types.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ibfabric::transport {
namespace {

constexpr int kMaxCas = 32;

// Every port of `ca` in order. Empty when the CA is unknown.
std::vector<UmadDevicePort> PortsOf(const std::string& ca) {
  std::vector<UmadDevicePort> out;
  umad_ca_t info{};
  if (umad_get_ca(ca.c_str(), &info) < 0) return out;
  for (int p = 0; p <= info.numports && p < UMAD_CA_MAX_PORTS; ++p) {
    const umad_port_t* port = info.ports[p];
    if (port == nullptr) continue;
    constexpr std::uint32_t kIsSmDisabled = 1u << 10;  // PortInfo.CapabilityMask (IBTA 14.2.5.6)
    out.push_back({ca, port->portnum, port->state, be64toh(port->port_guid),
                   (be32toh(port->capmask) & kIsSmDisabled) != 0, be64toh(port->gid_prefix),
                   static_cast<std::uint16_t>(port->sm_lid),
                   std::strcmp(port->link_layer, "Ethernet") != 0,  // sysfs link_layer; "IB" where absent
                   static_cast<std::uint16_t>(port->base_lid)});
  }
  umad_release_ca(&info);
  return out;
}

std::vector<std::string> CaNames() {
  char names[kMaxCas][UMAD_CA_NAME_LEN];
  const int n = umad_get_cas_names(names, kMaxCas);
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.emplace_back(names[i]);
  return out;
}

constexpr unsigned kActive = 4;

// Every port of every device named in `names`, in order.
std::vector<UmadDevicePort> PortsOfAll(const std::vector<std::string>& names) {
  std::vector<UmadDevicePort> all;
  for (const auto& ca : names) {
    auto ports = PortsOf(ca);
    all.insert(all.end(), ports.begin(), ports.end());
  }
  return all;
}

// Resolves the CA and port to open following UmadPortOptions' rules;
// `all` gets every port of every CA (where the chosen one's partner is).
bool Choose(const UmadPortOptions& o, UmadDevicePort* chosen, std::vector<UmadDevicePort>* all, std::string* error) {
  const std::vector<std::string> names = CaNames();
  if (names.empty() && o.ca_name.empty()) {
    *error = "no InfiniBand device found (is the ib_umad module loaded?)";
    return false;
  }
  *all = PortsOfAll(names);
  std::vector<UmadDevicePort> candidates;
  for (const auto& p : *all) {
    if (o.ca_name.empty() || p.ca == o.ca_name) candidates.push_back(p);
  }
  if (!o.ca_name.empty() && candidates.empty()) {
    candidates = PortsOf(o.ca_name);  // a device libibumad does not list by name
    if (candidates.empty()) {
      *error = "InfiniBand device '" + o.ca_name + "' not found";
      return false;
    }
    all->insert(all->end(), candidates.begin(), candidates.end());
  }
  if (o.port != 0) {
    for (const auto& c : candidates) {
      if (c.port == o.port) {
        *chosen = c;
        return true;
      }
    }
    *error =
        "port " + std::to_string(o.port) + " not found on '" + (o.ca_name.empty() ? names.front() : o.ca_name) + "'";
    return false;
  }
  for (const auto& c : candidates) {
    if (c.state == kActive && c.infiniband) {
      *chosen = c;
      return true;
    }
  }
  if (!o.ca_name.empty() && !candidates.empty()) {
    *chosen = candidates.front();  // an explicit CA with no active port: open it anyway
    return true;
  }
  *error = "no active InfiniBand port found";
  return false;
}

std::string Hex2(std::uint8_t v) {
  char s[8];
  std::snprintf(s, sizeof s, "0x%02x", v);
  return s;
}

}  // namespace

const char* AgentName(MgmtClass c) {
  switch (c) {
    case MgmtClass::kSubnLidRouted: return "smp_lid";
    case MgmtClass::kSubnDirectRoute: return "smp_directed";
    case MgmtClass::kPerformance: return "perf";
    case MgmtClass::kSubnAdm: return "sa";
    case MgmtClass::kVendorNvidia: return "vendor";
  }
  return "unknown";
}

ManagementPorts PairManagementPorts(const std::vector<UmadDevicePort>& all, const UmadDevicePort& chosen) {
  ManagementPorts out{chosen, chosen, {}, 0};
  if (chosen.port_guid == 0) return out;
  for (const auto& p : all) {
    if (p.port_guid != chosen.port_guid) continue;
    if (chosen.sm_disabled && !p.sm_disabled) {
      // chosen is the parent: QP0 is on its SMI sub-device (the first
      // port; a multi-plane one has one per plane).
      if (out.planes.empty()) out.smi = p;
      out.planes.push_back(p);
    } else if (!chosen.sm_disabled && p.sm_disabled) {
      out.gsi = p;  // chosen is an SMI port: GMPs leave from its parent
    } else if (!chosen.sm_disabled && !p.sm_disabled && p.ca == chosen.ca) {
      out.planes.push_back(p);  // chosen among the SMI sub-device's ports
    }
  }
  if (!out.split() || out.planes.size() < 2) {
    out.planes.clear();
  } else {
    out.plane = out.smi.port;
  }
  return out;
}

std::vector<ManagementPorts> EachPlane(const ManagementPorts& pair, std::vector<std::string>* notes) {
  if (pair.planes.size() < 2) return {pair};
  std::vector<ManagementPorts> out;
  for (const UmadDevicePort& p : pair.planes) {
    if (p.state != kActive) {
      notes->push_back("plane " + std::to_string(p.port) + " of " + pair.gsi.ca + " (" + p.ca + " port " +
                       std::to_string(p.port) + ") is not Active (state " + std::to_string(p.state) + "): not read");
      continue;
    }
    ManagementPorts one = pair;
    one.smi = p;
    one.plane = p.port;
    out.push_back(one);
  }
  return out;
}

std::vector<UmadDevicePort> OtherPortsOnFabric(const std::vector<UmadDevicePort>& all,
                                               const std::vector<std::string>& read, std::uint64_t subnet_prefix,
                                               std::uint16_t sm_lid) {
  const auto name = [](const UmadDevicePort& p) { return p.ca + "/" + std::to_string(p.port); };
  std::set<std::uint64_t> taken;  // port GUIDs read, or listed already
  for (const UmadDevicePort& p : all) {
    if (std::find(read.begin(), read.end(), name(p)) != read.end() && p.port_guid != 0) taken.insert(p.port_guid);
  }
  std::vector<UmadDevicePort> out;
  for (const UmadDevicePort& p : all) {
    if (!p.infiniband || p.subnet_prefix != subnet_prefix) continue;
    if (p.state == kActive && p.sm_lid != sm_lid) continue;
    if (std::find(read.begin(), read.end(), name(p)) != read.end() || taken.count(p.port_guid)) continue;
    const ManagementPorts pair = PairManagementPorts(all, p);
    if (!pair.planes.empty()) continue;
    const UmadDevicePort& named = pair.gsi;  // the parent of an SMI sub-device
    if (named.port_guid != 0) taken.insert(named.port_guid);
    out.push_back(named);
  }
  return out;
}

std::vector<ManagementPorts> ChooseFabrics(const std::vector<UmadDevicePort>& all, std::vector<std::string>* notes) {
  const auto where = [](const UmadDevicePort& p) { return p.ca + " port " + std::to_string(p.port); };
  const auto prefix = [](std::uint64_t v) {
    char s[24];
    std::snprintf(s, sizeof s, "0x%016llx", static_cast<unsigned long long>(v));
    return std::string(s);
  };
  std::vector<ManagementPorts> out;
  for (const UmadDevicePort& p : all) {
    if (p.state != kActive || !p.infiniband) continue;  // a RoCE port has no subnet to read
    const ManagementPorts pair = PairManagementPorts(all, p);
    if (pair.split() && pair.smi.ca == p.ca && pair.smi.port == p.port) continue;  // read with its parent
    if (!pair.planes.empty()) {
      // A multi-plane HCA: each plane a fabric of its own, its series
      // labelled with its plane, never another plain port's fabric. A
      // second such HCA on the same planes (the same subnet prefix and
      // plane number: a GPU node has several) reaches the same fabrics:
      // read once, from the first.
      for (ManagementPorts& plane : EachPlane(pair, notes)) {
        const ManagementPorts* twin = nullptr;
        for (const ManagementPorts& c : out) {
          if (c.plane == plane.plane && c.gsi.subnet_prefix == plane.gsi.subnet_prefix) twin = &c;
        }
        if (twin != nullptr) {
          notes->push_back("plane " + std::to_string(plane.plane) + " of " + plane.gsi.ca + " (" + plane.smi.ca +
                           " port " + std::to_string(plane.smi.port) + ") is taken for plane " +
                           std::to_string(twin->plane) + " of " + twin->gsi.ca +
                           " (the same subnet prefix), read once, from there");
          continue;
        }
        out.push_back(std::move(plane));
      }
      continue;
    }
    const ManagementPorts* same = nullptr;
    for (const ManagementPorts& c : out) {
      if (c.plane == 0 && c.gsi.subnet_prefix == p.subnet_prefix) same = &c;
    }
    if (same == nullptr) {
      out.push_back(pair);
    } else if (same->gsi.sm_lid == p.sm_lid) {
      notes->push_back(where(p) + " is taken for the fabric of " + where(same->gsi) + " (the same subnet prefix " +
                       prefix(p.subnet_prefix) + " and SM LID " + std::to_string(p.sm_lid) +
                       "), read once, from there; if it is another fabric, give its SM another subnet_prefix "
                       "or read it with --ib.ca=" +
                       p.ca + " --ib.port=" + std::to_string(p.port));
    } else {
      notes->push_back(where(p) + " is on another fabric (SM LID " + std::to_string(p.sm_lid) + ") than " +
                       where(same->gsi) + " (SM LID " + std::to_string(same->gsi.sm_lid) +
                       ") with the same subnet prefix " + prefix(p.subnet_prefix) +
                       ": their series could not be told apart, so it is not read; give its SM another "
                       "subnet_prefix, or read it with an exporter of its own (--ib.ca=" +
                       p.ca + " --ib.port=" + std::to_string(p.port) + ")");
    }
  }
  return out;
}

std::string FormatPKey(std::uint16_t pkey) {
  char s[8];
  std::snprintf(s, sizeof s, "0x%04x", pkey);
  return s;
}

bool ChoosePKeyIndex(const std::vector<std::uint16_t>& table, int wanted, PKeyChoice* out, std::string* error) {
  if (wanted >= 0) {
    if (table.empty()) {
      *out = {wanted, 0};  // the table is unknown: as given
      return true;
    }
    if (static_cast<std::size_t>(wanted) >= table.size() || (table[wanted] & 0x7fff) == 0) {
      *error = "--ib.pkey-index=" + std::to_string(wanted) + ": the port's P_Key table has " +
               std::to_string(table.size()) + " entries" +
               (static_cast<std::size_t>(wanted) < table.size()
                    ? " and that one holds no P_Key (" + FormatPKey(table[wanted]) + ": empty or invalid)"
                    : "");
      return false;
    }
    *out = {wanted, table[wanted]};
    return true;
  }
  for (std::uint16_t want : {std::uint16_t{0xffff}, std::uint16_t{0x7fff}}) {
    for (std::size_t i = 0; i < table.size(); ++i) {
      if (table[i] == want) {
        *out = {static_cast<int>(i), want};
        return true;
      }
    }
  }
  // No default partition: the first full member entry, else the first entry in use.
  for (const bool full : {true, false}) {
    for (std::size_t i = 0; i < table.size(); ++i) {
      if ((table[i] & 0x7fff) != 0 && (!full || (table[i] & 0x8000) != 0)) {
        *out = {static_cast<int>(i), table[i]};
        return true;
      }
    }
  }
  *out = {0, 0};
  return true;
}

std::vector<UmadDevicePort> UmadPort::List(std::string* error) {
  std::vector<UmadDevicePort> all;
  if (umad_init() < 0) {
    *error = "umad_init failed: " + std::string(std::strerror(errno));
    return all;
  }
  all = PortsOfAll(CaNames());
  if (all.empty()) *error = "no InfiniBand device found (is the ib_umad module loaded?)";
  return all;
}

std::vector<ManagementPorts> UmadPort::Select(const UmadPortOptions& options, std::vector<std::string>* notes,
                                              std::string* error) {
  if (options.ca_name.empty() && options.port == 0) {
    const std::vector<UmadDevicePort> all = List(error);
    if (all.empty()) return {};
    std::vector<ManagementPorts> out = ChooseFabrics(all, notes);
    if (out.empty()) *error = "no active InfiniBand port found";
    return out;
  }
  if (umad_init() < 0) {
    *error = "umad_init failed: " + std::string(std::strerror(errno));
    return {};
  }
  UmadDevicePort chosen;
  std::vector<UmadDevicePort> all;
  if (!Choose(options, &chosen, &all, error)) return {};
  const ManagementPorts pair = PairManagementPorts(all, chosen);
  if (chosen.ca != pair.gsi.ca || chosen.port != pair.gsi.port) return {pair};  // one plane, named
  std::vector<ManagementPorts> out = EachPlane(pair, notes);
  if (out.empty()) out.push_back(pair);  // named, none Active: its first plane anyway, as Choose opens a named port
  return out;
}

std::unique_ptr<UmadPort> UmadPort::Open(const UmadPortOptions& options, std::string* error) {
  if (umad_init() < 0) {
    *error = "umad_init failed: " + std::string(std::strerror(errno));
    return nullptr;
  }
  UmadDevicePort chosen;
  std::vector<UmadDevicePort> all;
  if (!Choose(options, &chosen, &all, error)) return nullptr;
  return Open(PairManagementPorts(all, chosen), options, error);
}

// What the port says of itself (umad's sysfs view): its name, LID, SM,
// state, GUIDs, subnet prefix, P_Key table; a plane's LID, SM and state
// are its own port's (the parent's is the planes' aggregate).
void UmadPort::ReadLocal(const ManagementPorts& ports) {
  const UmadDevicePort& c = ports.gsi;
  umad_port_t info{};
  if (umad_get_port(c.ca.c_str(), c.port, &info) == 0) {
    local_.ca_name = info.ca_name;
    local_.port = info.portnum;
    local_.lid = static_cast<std::uint16_t>(info.base_lid);
    local_.sm_lid = static_cast<std::uint16_t>(info.sm_lid);
    local_.state = info.state;
    local_.port_guid = be64toh(info.port_guid);
    local_.subnet_prefix = be64toh(info.gid_prefix);
    if (info.pkeys != nullptr) local_.pkeys.assign(info.pkeys, info.pkeys + info.pkeys_size);
    umad_release_port(&info);
  } else {
    local_.ca_name = c.ca;
    local_.port = c.port;
  }
  umad_port_t plane{};
  if (ports.plane != 0 && umad_get_port(ports.smi.ca.c_str(), ports.smi.port, &plane) == 0) {
    local_.lid = static_cast<std::uint16_t>(plane.base_lid);
    local_.sm_lid = static_cast<std::uint16_t>(plane.sm_lid);
    local_.state = plane.state;
    if (plane.gid_prefix != 0) local_.subnet_prefix = be64toh(plane.gid_prefix);
    umad_release_port(&plane);
  }
  umad_ca_t ca_info{};
  if (umad_get_ca(c.ca.c_str(), &ca_info) == 0) {
    local_.node_guid = be64toh(ca_info.node_guid);
    umad_release_ca(&ca_info);
  }
}

// Registers the agents (SMI, directed-route SMI, PerfMgt, SubnAdm, the
// vendor class): one that fails is a line in problems_; false with the
// first line when none registered.
bool UmadPort::RegisterAgents(const ManagementPorts& ports, std::string* error) {
  const UmadDevicePort& c = ports.gsi;
  // One agent: its id, or -1 with a line in problems_.
  const auto enroll = [this](int fd, const UmadDevicePort& on, std::uint8_t mgmt_class, int version, int rmpp,
                             long* methods, const char* what, const char* without) {
    errno = 0;
    const int agent = umad_register(fd, mgmt_class, version, static_cast<std::uint8_t>(rmpp), methods);
    if (agent >= 0) return agent;
    const int why = errno != 0 ? errno : -agent;
    std::string line = "cannot register the " + std::string(what) + " agent (class " + Hex2(mgmt_class) + ") on " +
                       on.ca + " port " + std::to_string(on.port) + ": " + std::strerror(why);
    if (mgmt_class != static_cast<std::uint8_t>(MgmtClass::kPerformance) &&
        mgmt_class != static_cast<std::uint8_t>(MgmtClass::kSubnAdm) && on.sm_disabled) {
      line += " (the port says IsSMDisabled and no SMI sub-device shares its port GUID)";
    }
    problems_.push_back({static_cast<MgmtClass>(mgmt_class), line + "; " + without});
    return -1;
  };
  // Class version 1 for SMI (IBTA 14.2.1) and PerfMgt (IBTA 16.1.1).
  agent_smi_ = enroll(smi_fd_, ports.smi, IB_SMI_CLASS, 1, 0, nullptr, "LID-routed SMP",
                      "LID checks, link states and SM checks are off");
  agent_smi_dr_ = enroll(smi_fd_, ports.smi, IB_SMI_DIRECT_CLASS, 1, 0, nullptr, "directed-route SMP",
                         "the fabric cannot be discovered");
  agent_perf_ = enroll(fd_, c, IB_PERFORMANCE_CLASS, 1, 0, nullptr, "PerfMgt (PMA)", "no port counters are read");
  // SubnAdm class version 2 (IBTA 15.2.1.1), taking the SA's unsolicited
  // Reports (IBTA 13.4.5: method 0x06) besides responses to our requests.
  // Optional: the kernel allows one receiver of a method per class on a
  // port, so another daemon may hold it; the exporter then polls only.
  // RMPP version 1: the kernel acknowledges and reassembles the SA's
  // GetTable responses (IBTA 13.6), which the SA otherwise sends again.
  long methods[16 / sizeof(long)] = {};
  reinterpret_cast<unsigned char*>(methods)[0] = 1u << static_cast<unsigned>(MadMethod::kReport);
  agent_sa_ = umad_register(fd_, IB_SA_CLASS, 2, UMAD_RMPP_VERSION, methods);
  takes_reports_ = agent_sa_ >= 0;
  if (agent_sa_ < 0) {
    agent_sa_ = enroll(fd_, c, IB_SA_CLASS, 2, UMAD_RMPP_VERSION, nullptr, "SubnAdm (SA)",
                       "no trap subscription (sweeps only)");
  }
  // NVIDIA's vendor class (GeneralInfo, AccessRegister), class version 1
  // as mstflint sends it; no RMPP (vendor range 1).
  agent_vendor_ = enroll(fd_, c, static_cast<std::uint8_t>(MgmtClass::kVendorNvidia), 1, 0, nullptr, "vendor-specific",
                         "no device registers are read (AccessRegister)");
  if (agent_smi_ < 0 && agent_smi_dr_ < 0 && agent_perf_ < 0 && agent_sa_ < 0) {
    *error = problems_.front().line + " (and no other agent registered either)";
    return false;
  }
  return true;
}

std::unique_ptr<UmadPort> UmadPort::Open(const ManagementPorts& ports, const UmadPortOptions& options,
                                         std::string* error) {
  const UmadDevicePort& c = ports.gsi;

  std::unique_ptr<UmadPort> port(new UmadPort());
  port->kernel_timeout_ms_ = options.kernel_timeout_ms;
  port->local_.smi_ca_name = ports.smi.ca;
  port->local_.smi_port = ports.smi.port;
  port->local_.plane = ports.plane;
  port->local_.planes = static_cast<int>(ports.planes.size());
  port->ReadLocal(ports);
  PKeyChoice pkey;
  if (!ChoosePKeyIndex(port->local_.pkeys, options.pkey_index, &pkey, error)) return nullptr;
  port->pkey_index_ = pkey.index;
  port->local_.pkey_index = pkey.index;
  port->local_.pkey = pkey.pkey;
  port->pkey_chosen_ = options.pkey_index < 0 && !port->local_.pkeys.empty();
  port->pkey_checked_ = std::chrono::steady_clock::now();
  port->on_pkey_move_ = options.on_pkey_move;
  port->pkey_recheck_ = options.pkey_recheck;

  const auto open = [&](const UmadDevicePort& p) {
    const int fd = umad_open_port(p.ca.c_str(), p.port);
    if (fd < 0) {
      *error = "cannot open " + p.ca + " port " + std::to_string(p.port) + ": " + std::strerror(-fd > 0 ? -fd : errno) +
               " (needs read/write access to /dev/infiniband/umad*)";
    }
    return fd;
  };
  if ((port->fd_ = open(c)) < 0) return nullptr;
  port->smi_fd_ = port->fd_;
  if (ports.split() && (port->smi_fd_ = open(ports.smi)) < 0) return nullptr;

  if (!port->RegisterAgents(ports, error)) return nullptr;
  port->send_buf_.reset(new std::uint8_t[umad_size() + kMadSize]());
  port->recv_buf_.reset(new std::uint8_t[umad_size() + kMadSize]());
  return port;
}

UmadPort::~UmadPort() {
  if (fd_ < 0) return;
  for (int agent : {agent_smi_, agent_smi_dr_}) {
    if (agent >= 0) umad_unregister(smi_fd_, agent);
  }
  for (int agent : {agent_perf_, agent_sa_, agent_vendor_}) {
    if (agent >= 0) umad_unregister(fd_, agent);
  }
  if (smi_fd_ >= 0 && smi_fd_ != fd_) umad_close_port(smi_fd_);
  umad_close_port(fd_);
}

int UmadPort::AgentFor(std::uint8_t mgmt_class) const {
  switch (static_cast<MgmtClass>(mgmt_class)) {
    case MgmtClass::kSubnLidRouted: return agent_smi_;
    case MgmtClass::kSubnDirectRoute: return agent_smi_dr_;
    case MgmtClass::kPerformance: return agent_perf_;
    case MgmtClass::kSubnAdm: return agent_sa_;
    case MgmtClass::kVendorNvidia: return agent_vendor_;
  }
  return -1;
}

int UmadPort::FdFor(std::uint8_t mgmt_class) const {
  const auto c = static_cast<MgmtClass>(mgmt_class);
  return c == MgmtClass::kSubnLidRouted || c == MgmtClass::kSubnDirectRoute ? smi_fd_ : fd_;
}

namespace {

// The P_Key table as sysfs has it now (libibumad reads every entry).
std::vector<std::uint16_t> ReadPKeys(const std::string& ca, int port) {
  std::vector<std::uint16_t> table;
  umad_port_t info{};
  if (umad_get_port(ca.c_str(), port, &info) != 0) return table;
  if (info.pkeys != nullptr) table.assign(info.pkeys, info.pkeys + info.pkeys_size);
  umad_release_port(&info);
  return table;
}

// One entry, from its own sysfs file (one read, where the whole table is
// ~128: on mlx5 each a firmware command); nullopt when it cannot be read.
// Through open(2), as libibumad reads sysfs (umad2sim redirects it).
std::optional<std::uint16_t> ReadPKey(const std::string& ca, int port, int index) {
  const std::string path =
      std::string(SYS_INFINIBAND) + "/" + ca + "/ports/" + std::to_string(port) + "/pkeys/" + std::to_string(index);
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return std::nullopt;
  char text[16] = {};
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return std::nullopt;
  char* end = nullptr;
  const unsigned long v = std::strtoul(text, &end, 0);
  if (end == text || v > 0xffff) return std::nullopt;
  return static_cast<std::uint16_t>(v);
}

}  // namespace

void UmadPort::RecheckPKey() {
  const auto now = std::chrono::steady_clock::now();
  if (!pkey_chosen_ || now - pkey_checked_ < pkey_recheck_) return;
  pkey_checked_ = now;
  // The entry in use still holds what it held: nothing moved (the usual
  // case costs one sysfs read).
  const auto in_use = ReadPKey(local_.ca_name, local_.port, pkey_index_);
  if (in_use && *in_use == local_.pkey) return;
  // Where the full-member entry went, read twice alike: a table the SM is
  // rewriting (or an empty one) moves nothing.
  PKeyChoice choice, again;
  std::string error;
  const std::vector<std::uint16_t> table = ReadPKeys(local_.ca_name, local_.port);
  if (table.empty() || !ChoosePKeyIndex(table, -1, &choice, &error) || (choice.pkey & 0x7fff) == 0) return;
  if (!ChoosePKeyIndex(ReadPKeys(local_.ca_name, local_.port), -1, &again, &error) || again.index != choice.index ||
      again.pkey != choice.pkey)
    return;
  if (choice.index == pkey_index_ && choice.pkey == local_.pkey) return;
  const std::string was = static_cast<std::size_t>(pkey_index_) < table.size()
                              ? FormatPKey(table[static_cast<std::size_t>(pkey_index_)])
                              : std::string("no entry");
  const std::string line = "the P_Key table of " + local_.ca_name + " port " + std::to_string(local_.port) +
                           " changed: GMPs now leave on index " + std::to_string(choice.index) + " = " +
                           FormatPKey(choice.pkey) + " (index " + std::to_string(pkey_index_) +
                           ", used until now, holds " + was + ")";
  pkey_index_ = choice.index;
  local_.pkey_index = choice.index;
  local_.pkey = choice.pkey;
  local_.pkeys = table;
  if (on_pkey_move_) on_pkey_move_(line);
}

bool UmadPort::Send(const MadAddress& to, const MadBytes& mad) {
  const std::uint8_t cls = mad[1];  // MgmtClass, IBTA 13.4.2
  if (cls == static_cast<std::uint8_t>(MgmtClass::kPerformance) ||
      cls == static_cast<std::uint8_t>(MgmtClass::kSubnAdm) ||
      cls == static_cast<std::uint8_t>(MgmtClass::kVendorNvidia))
    RecheckPKey();
  const int agent = AgentFor(cls);
  if (agent < 0) return false;
  void* umad = send_buf_.get();
  std::memset(umad, 0, umad_size() + kMadSize);
  switch (static_cast<MgmtClass>(cls)) {
    case MgmtClass::kSubnDirectRoute:
      umad_set_addr(umad, 0xffff, 0, 0, 0);  // permissive DLID
      break;
    case MgmtClass::kSubnLidRouted: umad_set_addr(umad, to.lid, 0, 0, 0); break;
    case MgmtClass::kPerformance:
    case MgmtClass::kSubnAdm:
    case MgmtClass::kVendorNvidia:
      umad_set_addr(umad, to.lid, static_cast<int>(to.qp), to.sl, to.qkey);  // QP1 unless redirected
      break;
  }
  umad_set_grh(umad, nullptr);
  umad_set_pkey(umad, pkey_index_);  // QP0 (SMPs) ignores it
  std::memcpy(umad_get_mad(umad), mad.data(), kMadSize);
  return umad_send(FdFor(cls), agent, umad, static_cast<int>(kMadSize), kernel_timeout_ms_, 0) == 0;
}

std::optional<InboundMad> UmadPort::Receive(std::chrono::microseconds timeout) {
  // The timeout is rounded up to 1 ms. One device: its fd is polled alone
  // (inside umad_recv; umad2sim's poll() only honours the first
  // descriptor of a set). Split: both are polled, and read in turn.
  int timeout_ms = static_cast<int>((timeout.count() + 999) / 1000);
  if (timeout_ms < 0) timeout_ms = 0;
  int fd = fd_;
  if (smi_fd_ != fd_) {
    pollfd fds[2] = {{next_first_smi_ ? smi_fd_ : fd_, POLLIN, 0}, {next_first_smi_ ? fd_ : smi_fd_, POLLIN, 0}};
    if (poll(fds, 2, timeout_ms) <= 0) return std::nullopt;
    fd = (fds[0].revents & POLLIN) ? fds[0].fd : fds[1].fd;
    next_first_smi_ = fd == fd_;  // the other one first next time
    timeout_ms = 0;
  }
  void* umad = recv_buf_.get();
  int length = static_cast<int>(kMadSize);
  int rc = umad_recv(fd, umad, &length, timeout_ms);
  std::unique_ptr<std::uint8_t[]> reassembled;
  if (rc == -ENOSPC && length > static_cast<int>(kMadSize)) {
    // A reassembled RMPP transfer (an SA table) longer than one MAD: the
    // kernel keeps it queued until it is read whole: its first segment,
    // then each later one's data (InboundMad::tail).
    reassembled.reset(new std::uint8_t[umad_size() + static_cast<std::size_t>(length)]());
    umad = reassembled.get();
    rc = umad_recv(fd, umad, &length, 0);
  }
  if (rc < 0) return std::nullopt;  // -ETIMEDOUT when nothing came, or a read error
  InboundMad in;
  in.status = umad_status(umad);
  if (const ib_mad_addr_t* from = umad_get_mad_addr(umad)) in.source_lid = be16toh(from->lid);
  std::memcpy(in.mad.data(), umad_get_mad(umad), kMadSize);
  if (length > 0 && length < static_cast<int>(kMadSize)) in.length = static_cast<std::uint32_t>(length);
  if (reassembled && length > static_cast<int>(kMadSize)) {
    const auto* bytes = static_cast<const std::uint8_t*>(umad_get_mad(umad));
    in.tail.assign(bytes + kMadSize, bytes + length);
    in.length = static_cast<std::uint32_t>(length);
  }
  return in;
}

}  // namespace ibfabric::transport
