#include "transport/umad_port.h"

#include <endian.h>
#include <infiniband/mad.h>
#include <infiniband/umad.h>
#include <infiniband/umad_types.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace ibfabric::transport {
namespace {

constexpr int kMaxCas = 32;

struct Candidate {
  std::string ca;
  int port = 0;
  unsigned state = 0;
};

// Ports of `ca` in order, with their states. Empty when the CA is unknown.
std::vector<Candidate> PortsOf(const std::string& ca) {
  std::vector<Candidate> out;
  umad_ca_t info{};
  if (umad_get_ca(ca.c_str(), &info) < 0) return out;
  for (int p = 0; p <= info.numports && p < UMAD_CA_MAX_PORTS; ++p) {
    if (info.ports[p] == nullptr) continue;
    out.push_back({ca, info.ports[p]->portnum, info.ports[p]->state});
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

// Resolves the CA and port to open following UmadPortOptions' rules.
bool Choose(const UmadPortOptions& o, Candidate* chosen, std::string* error) {
  std::vector<std::string> cas = o.ca_name.empty() ? CaNames() : std::vector{o.ca_name};
  if (cas.empty()) {
    *error = "no InfiniBand device found (is the ib_umad module loaded?)";
    return false;
  }
  std::vector<Candidate> all;
  for (const auto& ca : cas) {
    auto ports = PortsOf(ca);
    if (ports.empty() && !o.ca_name.empty()) {
      *error = "InfiniBand device '" + ca + "' not found";
      return false;
    }
    all.insert(all.end(), ports.begin(), ports.end());
  }
  if (o.port != 0) {
    for (const auto& c : all) {
      if (c.port == o.port) {
        *chosen = c;
        return true;
      }
    }
    *error = "port " + std::to_string(o.port) + " not found on '" + cas.front() + "'";
    return false;
  }
  for (const auto& c : all) {
    if (c.state == kActive) {
      *chosen = c;
      return true;
    }
  }
  if (!o.ca_name.empty() && !all.empty()) {
    *chosen = all.front();  // an explicit CA with no active port: open it anyway
    return true;
  }
  *error = "no active InfiniBand port found";
  return false;
}

}  // namespace

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

std::unique_ptr<UmadPort> UmadPort::Open(const UmadPortOptions& options, std::string* error) {
  if (umad_init() < 0) {
    *error = "umad_init failed: " + std::string(std::strerror(errno));
    return nullptr;
  }
  Candidate c;
  if (!Choose(options, &c, error)) return nullptr;

  std::unique_ptr<UmadPort> port(new UmadPort());
  port->kernel_timeout_ms_ = options.kernel_timeout_ms;
  umad_port_t info{};
  if (umad_get_port(c.ca.c_str(), c.port, &info) == 0) {
    port->local_.ca_name = info.ca_name;
    port->local_.port = info.portnum;
    port->local_.lid = static_cast<std::uint16_t>(info.base_lid);
    port->local_.sm_lid = static_cast<std::uint16_t>(info.sm_lid);
    port->local_.state = info.state;
    port->local_.port_guid = be64toh(info.port_guid);
    if (info.pkeys != nullptr) port->local_.pkeys.assign(info.pkeys, info.pkeys + info.pkeys_size);
    umad_release_port(&info);
  }
  umad_ca_t ca_info{};
  if (umad_get_ca(c.ca.c_str(), &ca_info) == 0) {
    port->local_.node_guid = be64toh(ca_info.node_guid);
    umad_release_ca(&ca_info);
  }

  PKeyChoice pkey;
  if (!ChoosePKeyIndex(port->local_.pkeys, options.pkey_index, &pkey, error)) return nullptr;
  port->pkey_index_ = pkey.index;
  port->local_.pkey_index = pkey.index;
  port->local_.pkey = pkey.pkey;

  port->fd_ = umad_open_port(c.ca.c_str(), c.port);
  if (port->fd_ < 0) {
    *error = "cannot open " + c.ca + " port " + std::to_string(c.port) + ": " +
             std::strerror(-port->fd_ > 0 ? -port->fd_ : errno) + " (needs read/write access to /dev/infiniband/umad*)";
    return nullptr;
  }
  // Class version 1 for SMI (IBTA 14.2.1) and PerfMgt (IBTA 16.1.1).
  port->agent_smi_ = umad_register(port->fd_, IB_SMI_CLASS, 1, 0, nullptr);
  port->agent_smi_dr_ = umad_register(port->fd_, IB_SMI_DIRECT_CLASS, 1, 0, nullptr);
  port->agent_perf_ = umad_register(port->fd_, IB_PERFORMANCE_CLASS, 1, 0, nullptr);
  if (port->agent_smi_ < 0 || port->agent_smi_dr_ < 0 || port->agent_perf_ < 0) {
    *error = "cannot register MAD agents on " + c.ca + " port " + std::to_string(c.port);
    return nullptr;
  }
  // SubnAdm class version 2 (IBTA 15.2.1.1), taking the SA's unsolicited
  // Reports (IBTA 13.4.5: method 0x06) besides responses to our requests.
  // Optional: the kernel allows one receiver of a method per class on a
  // port, so another daemon may hold it; the exporter then polls only.
  // RMPP version 1: the kernel acknowledges and reassembles the SA's
  // GetTable responses (IBTA 13.6), which the SA otherwise sends again.
  long methods[16 / sizeof(long)] = {};
  reinterpret_cast<unsigned char*>(methods)[0] = 1u << static_cast<unsigned>(MadMethod::kReport);
  port->agent_sa_ = umad_register(port->fd_, IB_SA_CLASS, 2, UMAD_RMPP_VERSION, methods);
  port->takes_reports_ = port->agent_sa_ >= 0;
  if (port->agent_sa_ < 0) port->agent_sa_ = umad_register(port->fd_, IB_SA_CLASS, 2, UMAD_RMPP_VERSION, nullptr);
  port->send_buf_.reset(new std::uint8_t[umad_size() + kMadSize]());
  port->recv_buf_.reset(new std::uint8_t[umad_size() + kMadSize]());
  return port;
}

UmadPort::~UmadPort() {
  if (fd_ < 0) return;
  for (int agent : {agent_smi_, agent_smi_dr_, agent_perf_, agent_sa_}) {
    if (agent >= 0) umad_unregister(fd_, agent);
  }
  umad_close_port(fd_);
}

int UmadPort::AgentFor(std::uint8_t mgmt_class) const {
  switch (static_cast<MgmtClass>(mgmt_class)) {
    case MgmtClass::kSubnLidRouted: return agent_smi_;
    case MgmtClass::kSubnDirectRoute: return agent_smi_dr_;
    case MgmtClass::kPerformance: return agent_perf_;
    case MgmtClass::kSubnAdm: return agent_sa_;
  }
  return -1;
}

bool UmadPort::Send(const MadAddress& to, const MadBytes& mad) {
  const std::uint8_t cls = mad[1];  // MgmtClass, IBTA 13.4.2
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
      umad_set_addr(umad, to.lid, static_cast<int>(to.qp), 0, to.qkey);  // QP1 unless redirected
      break;
  }
  umad_set_grh(umad, nullptr);
  umad_set_pkey(umad, pkey_index_);  // QP0 (SMPs) ignores it
  std::memcpy(umad_get_mad(umad), mad.data(), kMadSize);
  return umad_send(fd_, agent, umad, static_cast<int>(kMadSize), kernel_timeout_ms_, 0) == 0;
}

std::optional<InboundMad> UmadPort::Receive(std::chrono::microseconds timeout) {
  // umad2sim's poll() only honours the first descriptor, so the umad fd is
  // polled alone (inside umad_recv); the timeout is rounded up to 1 ms.
  int timeout_ms = static_cast<int>((timeout.count() + 999) / 1000);
  if (timeout_ms < 0) timeout_ms = 0;
  void* umad = recv_buf_.get();
  int length = static_cast<int>(kMadSize);
  int rc = umad_recv(fd_, umad, &length, timeout_ms);
  std::unique_ptr<std::uint8_t[]> reassembled;
  if (rc == -ENOSPC && length > static_cast<int>(kMadSize)) {
    // A reassembled RMPP transfer (an SA table) longer than one MAD: the
    // kernel keeps it queued until it is read whole. Its first 256 bytes
    // are the first segment, which is what a MadBytes holds.
    reassembled.reset(new std::uint8_t[umad_size() + static_cast<std::size_t>(length)]());
    umad = reassembled.get();
    rc = umad_recv(fd_, umad, &length, 0);
  }
  if (rc < 0) return std::nullopt;  // -ETIMEDOUT when nothing came, or a read error
  InboundMad in;
  in.status = umad_status(umad);
  if (const ib_mad_addr_t* from = umad_get_mad_addr(umad)) in.source_lid = be16toh(from->lid);
  std::memcpy(in.mad.data(), umad_get_mad(umad), kMadSize);
  return in;
}

}  // namespace ibfabric::transport
