#pragma once
// MadPort over libibumad: the local port's umad device(s) with one agent
// per management class this project speaks (LID-routed SMI, directed-route
// SMI, PerfMgt, SubnAdm; the last also receives the SA's Reports of the
// traps the exporter subscribed to, where no other agent on the port took
// them: takes_reports). SMPs and GMPs leave from different
// umad devices where the HCA splits them (a multi-plane HCA's SMI
// sub-device: PairManagementPorts).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transport/mad_port.h"

namespace ibfabric::transport {

// What the local port looks like (from sysfs through libibumad).
struct LocalPortInfo {
  std::string ca_name;  // the device GMPs leave from (--ib.ca names either)
  int port = 0;
  std::string smi_ca_name;  // the device SMPs leave from: ca_name unless split
  int smi_port = 0;
  std::uint64_t subnet_prefix = 0;  // of its GID 0 (host order)
  std::uint16_t lid = 0;
  std::uint16_t sm_lid = 0;
  unsigned state = 0;  // IBTA PortState: 4 = Active
  std::uint64_t port_guid = 0;
  std::uint64_t node_guid = 0;
  std::vector<std::uint16_t> pkeys;  // its P_Key table (empty: unknown)
  int pkey_index = 0;                // the index GMPs leave on
  std::uint16_t pkey = 0;            // the entry there (0: unknown)
  // A multi-plane HCA: the plane SMPs leave from (its SMI port's number)
  // and how many planes the HCA has; 0 and 0 otherwise. Each plane is
  // read as a fabric of its own (ManagementPorts::plane).
  int plane = 0;
  int planes = 0;
  // Whether SMPs leave from another device or port than GMPs.
  bool split() const { return !smi_ca_name.empty() && (smi_ca_name != ca_name || smi_port != port); }
};

// The P_Key index GMPs leave on. A port takes a packet whose P_Key has
// the same 15 bits as one of its entries, one of the two a full member
// (IBTA 10.9.3): the full-member default P_Key 0xFFFF reaches every node
// of the default partition, limited members too; a limited entry (bit 15
// clear) reaches only its full members, and each request to a limited
// member is dropped there and raises a Bad P_Key trap at the SM.
struct PKeyChoice {
  int index = 0;
  std::uint16_t pkey = 0;  // the entry at `index` (0: the table is unknown)
  bool full_default() const { return pkey == 0xffff; }
};
// A P_Key as 0x-prefixed hex of four digits ("0x7fff").
std::string FormatPKey(std::uint16_t pkey);
// `wanted` (>= 0, --ib.pkey-index), else the index of 0xFFFF, else of
// 0x7FFF, else of the first full-member entry, else of the first entry in
// use, else 0. False with a one-line reason when `wanted` is outside the
// table or its entry holds no P_Key (0x0000 empty, 0x8000 invalid).
bool ChoosePKeyIndex(const std::vector<std::uint16_t>& table, int wanted, PKeyChoice* out, std::string* error);

// One port of a umad device, as libibumad reads it from sysfs.
struct UmadDevicePort {
  std::string ca;
  int port = 0;
  unsigned state = 0;               // IBTA PortState: 4 = Active
  std::uint64_t port_guid = 0;      // host order; 0: unknown
  bool sm_disabled = false;         // CapabilityMask bit 10 IsSMDisabled: no QP0 on this device
  std::uint64_t subnet_prefix = 0;  // of its GID 0 (host order)
  std::uint16_t sm_lid = 0;
  bool infiniband = true;  // false: link layer Ethernet (a RoCE port: no subnet to read)
  std::uint16_t lid = 0;   // its base LID as the SM set it; 0: none
};

// Where SMPs (QP0) and GMPs (QP1) leave for the local port `chosen`. A
// multi-plane HCA (Linux 6.11, "multi-plane support for mlx5") gives QP0
// to a separate SMI sub-device when the parent device has none: the
// parent's port says IsSMDisabled and the sub-device's port has the same
// port GUID (the pairing rdma-core's libibumad makes in
// umad_get_smi_gsi_pairs, which Debian's rdma-core 44 lacks). `chosen` may
// be either side; with no partner in `all` both are `chosen`.
struct ManagementPorts {
  UmadDevicePort smi;
  UmadDevicePort gsi;
  // A multi-plane HCA's SMI ports (an SMI sub-device with a port per
  // plane, each sharing the parent's port GUID), `smi` among them; empty
  // where the HCA has one. `plane` is the number of the one `smi` is.
  std::vector<UmadDevicePort> planes;
  int plane = 0;
  bool split() const { return smi.ca != gsi.ca || smi.port != gsi.port; }
};
// `chosen` the parent: `smi` is its first SMI port; `chosen` an SMI port:
// that one, its plane.
ManagementPorts PairManagementPorts(const std::vector<UmadDevicePort>& all, const UmadDevicePort& chosen);

// Each plane of a multi-plane HCA is a fabric of its own (its own
// switches; the HCA's plane ports share one port GUID, so one walk over
// all of them would take them for one node): one pair per plane, SMPs from
// that plane's SMI port and GMPs from the parent (the only QP1: the
// firmware takes a GMP to the plane of its destination). A plane whose
// port is not Active is left out with a line in `notes`. A pair of an HCA
// with one plane comes back as it is.
std::vector<ManagementPorts> EachPlane(const ManagementPorts& pair, std::vector<std::string>* notes);

// The local ports to read when no flag names one: one Active port per
// fabric, and each plane of a multi-plane HCA (EachPlane; never taken for
// another port's fabric, the other ports compared among themselves). Ports with the same subnet prefix and MasterSMLID
// are taken for one fabric, read once, from the first; a port whose fabric has the subnet prefix of one already chosen
// but another SM cannot be told apart from it in the metrics (they are labelled by subnet prefix) and is left out; so
// is an SMI sub-device's port (read with its parent's), and a port whose link layer is Ethernet (RoCE). Same prefix and
// SM LID is what can be told without a MAD: two fabrics that both keep opensm's default prefix and put their SM at one
// LID are taken for one. `notes` gets one line per port left out, saying why. Empty: none Active.
std::vector<ManagementPorts> ChooseFabrics(const std::vector<UmadDevicePort>& all, std::vector<std::string>* notes);

// The host's other InfiniBand ports on the fabric of `subnet_prefix` and
// `sm_lid`, which ChooseFabrics left to the port read from (local scope
// reads their cables too): none of `read` ("ca/port" a pipeline reads
// from, SMI or GSI) nor sharing a port GUID with one; each physical port
// once (an SMI sub-device's port shares its parent's GUID: the parent is
// named); none of a multi-plane HCA (each plane a fabric of its own);
// Active or not (a port that went down is still the host's), an Active
// one only with that SM LID. In `all`'s order. Pure.
std::vector<UmadDevicePort> OtherPortsOnFabric(const std::vector<UmadDevicePort>& all,
                                               const std::vector<std::string>& read, std::uint64_t subnet_prefix,
                                               std::uint16_t sm_lid);

// An agent that could not register: its class ("smp_lid", "smp_directed",
// "perf", "sa" as AgentName says) and one line naming the device, the
// port, the class, the reason and what goes without it.
struct AgentProblem {
  MgmtClass mgmt_class{};
  std::string line;
};
const char* AgentName(MgmtClass c);

struct UmadPortOptions {
  std::string ca_name;  // empty: the first CA with an active port
  int port = 0;         // 0: the first active port of that CA
  int pkey_index = -1;  // the GMPs' P_Key index; -1: ChoosePKeyIndex's, checked again every 10 s
  // Told, on the sending thread, when the index GMPs leave on moves
  // because the SM reprogrammed the port's P_Key table (one line).
  std::function<void(const std::string&)> on_pkey_move;
  std::chrono::milliseconds pkey_recheck{10'000};  // how often the entry in use is read again
  // Passed to the kernel with each send so that it matches responses to
  // requests (ib_umad drops responses to sends without a timeout). The
  // engine keeps its own deadline too: the simulator has no kernel timeouts.
  int kernel_timeout_ms = 100;
};

// Ownership: owns the umad port and its agents; neither copyable nor movable.
class UmadPort final : public MadPort {
 public:
  // Every port of every device libibumad lists; empty with *error when
  // none (or libibumad cannot start).
  static std::vector<UmadDevicePort> List(std::string* error);
  // The pairs to open: the port `options` names (each Active plane of it
  // where it is a multi-plane HCA's parent, its first when none is; the
  // one plane where it is an SMI port), else ChooseFabrics' (its lines in
  // `notes`). Empty with *error.
  static std::vector<ManagementPorts> Select(const UmadPortOptions& options, std::vector<std::string>* notes,
                                             std::string* error);
  // Opens the pair `ports` (as PairManagementPorts or ChooseFabrics gave
  // them) with `options`' P_Key index and timeout, or returns nullptr and a
  // one-line reason in *error.
  static std::unique_ptr<UmadPort> Open(const ManagementPorts& ports, const UmadPortOptions& options,
                                        std::string* error);
  // Opens the port (its SMI sub-device too where split: a multi-plane
  // HCA's first plane only; Select gives every plane), or returns
  // nullptr and a one-line reason in *error: no such device or port, no
  // access, or not one agent registered. An agent that cannot register
  // is one line in problems(), and the port runs with the others: Send
  // refuses that class.
  static std::unique_ptr<UmadPort> Open(const UmadPortOptions& options, std::string* error);
  ~UmadPort() override;
  UmadPort(const UmadPort&) = delete;
  UmadPort& operator=(const UmadPort&) = delete;

  bool Send(const MadAddress& to, const MadBytes& mad) override;
  std::optional<InboundMad> Receive(std::chrono::microseconds timeout) override;

  // Its P_Key fields change (on the sending thread: RecheckPKey) when the
  // SM moves the full-member entry; read it from that thread only.
  const LocalPortInfo& local() const { return local_; }
  // Whether the SA's Reports reach this port: another agent on it may
  // hold that registration (another process, or another plane's pair,
  // which shares the parent's QP1).
  bool takes_reports() const { return takes_reports_; }
  // Whether this port has an agent of the class (MgmtClass).
  bool Has(MgmtClass mgmt_class) const { return AgentFor(static_cast<std::uint8_t>(mgmt_class)) >= 0; }
  const std::vector<AgentProblem>& problems() const { return problems_; }

 private:
  void ReadLocal(const ManagementPorts& ports);
  bool RegisterAgents(const ManagementPorts& ports, std::string* error);
  UmadPort() = default;
  int AgentFor(std::uint8_t mgmt_class) const;
  int FdFor(std::uint8_t mgmt_class) const;

  int fd_ = -1;                  // the GSI device's (QP1)
  int smi_fd_ = -1;              // the SMI device's (QP0): fd_ unless split
  bool next_first_smi_ = false;  // which of the two Receive reads first
  int agent_smi_ = -1;
  int agent_smi_dr_ = -1;
  int agent_perf_ = -1;
  int agent_sa_ = -1;
  int agent_vendor_ = -1;
  bool takes_reports_ = false;
  std::vector<AgentProblem> problems_;

  // The P_Key index chosen (not given): looked at again in Send, at most
  // every 10 s, as the SM may reprogram the table (sysfs shows it).
  void RecheckPKey();

  int kernel_timeout_ms_ = 100;
  int pkey_index_ = 0;
  bool pkey_chosen_ = false;
  std::chrono::steady_clock::time_point pkey_checked_{};
  std::function<void(const std::string&)> on_pkey_move_;
  std::chrono::milliseconds pkey_recheck_{10'000};
  LocalPortInfo local_;
  std::unique_ptr<std::uint8_t[]> send_buf_;
  std::unique_ptr<std::uint8_t[]> recv_buf_;
};

}  // namespace ibfabric::transport
