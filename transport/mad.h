#pragma once
// Plain value types for management datagrams (MADs). Nothing here includes
// <infiniband/*.h>: every library above transport/ sees only these.
//
// References are to the InfiniBand Architecture Specification, Volume 1
// (IBTA), chapter 13.4 (MAD formats), 14.2.5 (SMP attributes) and 16.1.3
// (Performance Management attributes).

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ibfabric::transport {

inline constexpr std::size_t kMadSize = 256;  // IBTA 13.4.2: every MAD is 256 bytes.
using MadBytes = std::array<std::uint8_t, kMadSize>;

// Management classes used here (IBTA 13.4.4, table 110).
enum class MgmtClass : std::uint8_t {
  kSubnLidRouted = 0x01,  // SMP, LID routed
  kSubnAdm = 0x03,        // SA (GS class, the SM's database, LID routed, QP1)
  kPerformance = 0x04,    // PMA (GS class, LID routed, QP1)
  // NVIDIA's vendor-specific GMPs (GeneralInfo, AccessRegister): vendor
  // range 1 (IBTA 13.4.4), so no OUI or RMPP header, data from byte 24;
  // LID routed, QP1 (mstflint mtcr_ib_ofed.c IB_VENDOR_SPECIFIC_CLASS_0xA).
  kVendorNvidia = 0x0A,
  kSubnDirectRoute = 0x81,  // SMP, directed route
};

// The three kinds of MAD this project sends, which the engine limits
// separately because they load the fabric differently:
// - directed-route SMPs are forwarded by the management firmware of every
//   switch on their route and travel on VL15, which has no flow control;
// - LID-routed SMPs travel on VL15 too but only the target's agent
//   handles them;
// - GMPs (PMA and SA queries to QP1) travel on a data VL with flow control
//   and load only the target's agent (the SA's is the SM).
enum class MadKind : std::uint8_t { kDirectedSmp = 0, kLidSmp = 1, kGmp = 2 };
inline constexpr std::size_t kMadKinds = 3;
const char* ToString(MadKind k);  // "dr_smp", "lid_smp", "gmp"
MadKind KindOf(MgmtClass c);

// Methods (IBTA 13.4.5).
enum class MadMethod : std::uint8_t {
  kGet = 0x01,
  kSet = 0x02,
  kGetResponse = 0x81,
  kReport = 0x06,  // an SA Report (unsolicited, IBTA 13.4.5 table 113)
  kReportResponse = 0x86,
  kGetTable = 0x12,  // SubnAdmGetTable (IBTA 15.2.2, table 197)
  kGetTableResponse = 0x92,
};

// Subnet management attribute IDs (IBTA 14.2.5, table 145).
namespace smp_attr {
inline constexpr std::uint16_t kNodeDescription = 0x0010;
inline constexpr std::uint16_t kNodeInfo = 0x0011;
inline constexpr std::uint16_t kSwitchInfo = 0x0012;
inline constexpr std::uint16_t kPortInfo = 0x0015;
inline constexpr std::uint16_t kPKeyTable = 0x0016;
inline constexpr std::uint16_t kLinearForwardingTable = 0x0019;
inline constexpr std::uint16_t kSmInfo = 0x0020;
inline constexpr std::uint16_t kPortInfoExtended = 0x0033;  // IBTA 1.3 (rdma-core IB_ATTR_PORT_INFO_EXT)
// Vendor-specific range 0xFF00-0xFFFF (IBTA table 145): Mellanox
// ExtendedPortInfo (rdma-core mad.h IB_ATTR_MLNX_EXT_PORT_INFO), the only
// place FDR10 shows.
inline constexpr std::uint16_t kMlnxExtendedPortInfo = 0xFF90;
// NVIDIA AdaptiveRoutingInfo, in the same vendor range (Mellanox's opensm
// ib_types.h IB_MAD_ATTR_ADAPTIVE_ROUTING_INFO).
inline constexpr std::uint16_t kMlnxAdaptiveRoutingInfo = 0xFF20;
}  // namespace smp_attr

// Performance management attribute IDs (IBTA 16.1.3, table 224).
namespace pma_attr {
inline constexpr std::uint16_t kClassPortInfo = 0x0001;
inline constexpr std::uint16_t kPortSamplesControl = 0x0010;  // mandatory (IBTA 16.1.3.2)
inline constexpr std::uint16_t kPortCounters = 0x0012;
inline constexpr std::uint16_t kPortRcvErrorDetails = 0x0015;     // optional (IBTA 16.1.4.x, A16.1.x)
inline constexpr std::uint16_t kPortXmitDiscardDetails = 0x0016;  // optional, likewise
inline constexpr std::uint16_t kPortVlXmitWaitCounters = 0x001C;  // optional, likewise
inline constexpr std::uint16_t kPortCountersExtended = 0x001D;
inline constexpr std::uint16_t kPortExtendedSpeedsCounters =
    0x001F;  // optional (rdma-core IB_GSI_PORT_EXT_SPEEDS_COUNTERS)
}  // namespace pma_attr

// Subnet administration attribute IDs (IBTA 15.2.5, table 196).
// NVIDIA vendor-specific attribute IDs (class 0x0A; mstflint mtcr_ib_ofed.c
// IB_VS_ATTR_GENERAL_INFO, IB_VS_ATTR_ACCESS_REGISTER_GMP).
namespace vs_attr {
inline constexpr std::uint16_t kGeneralInfo = 0x0017;
inline constexpr std::uint16_t kAccessRegister = 0x0051;
}  // namespace vs_attr

namespace sa_attr {
inline constexpr std::uint16_t kNotice = 0x0002;
inline constexpr std::uint16_t kInformInfo = 0x0003;
inline constexpr std::uint16_t kNodeRecord = 0x0011;
inline constexpr std::uint16_t kSmInfoRecord = 0x0018;
inline constexpr std::uint16_t kLinkRecord = 0x0020;
inline constexpr std::uint16_t kLftRecord = 0x0015;        // LinearForwardingTableRecord (IBTA 15.2.5.6)
inline constexpr std::uint16_t kPKeyTableRecord = 0x0033;  // P_KeyTableRecord (IBTA 15.2.5.11)
}  // namespace sa_attr

// Where a MAD goes. A directed route is the list of egress port numbers,
// hop by hop, starting at the local port (IBTA 14.2.2 InitialPath[1..n]); an
// empty route addresses the local node. LID routing is used for everything
// that is not a directed-route SMP. A route has at most kMaxDirectedHops
// hops: InitialPath is 64 bytes and its byte 0 unused (IBTA 14.2.2;
// libibmad IB_SUBNET_PATH_HOPS_MAX); the codec cuts a longer one, so its
// makers never ask one (discovery names what lies beyond).
inline constexpr std::size_t kMaxDirectedHops = 63;
inline constexpr std::uint32_t kDefaultQp1Qkey = 0x80010000;  // IBTA 13.5.3.3 (rdma-core IB_DEFAULT_QP1_QKEY)
struct MadAddress {
  std::uint16_t lid = 0;              // destination LID when LID routed
  std::vector<std::uint8_t> dr_path;  // egress ports when directed route
  // GMPs: the queue pair and Q_Key at that LID; QP1 and its well-known key
  // unless the agent redirected its class elsewhere (IBTA 13.5.3.3).
  std::uint32_t qp = 1;
  std::uint32_t qkey = kDefaultQp1Qkey;
  std::uint8_t sl = 0;  // GMPs: the service level (an agent's RedirectSL; 0 otherwise)

  static MadAddress Lid(std::uint16_t l) { return MadAddress{l, {}}; }
  static MadAddress Directed(std::vector<std::uint8_t> path) { return MadAddress{0, std::move(path)}; }
};

// One request, before a TID is assigned. `payload` is the attribute data
// that follows the class header (for SMPs and PMA both start at byte 64 of
// the MAD, see kMadDataOffset; SA data at byte 56, kSaDataOffset; the
// vendor class's at byte 24, kVendorDataOffset: DataOffset).
struct MadRequest {
  MgmtClass mgmt_class = MgmtClass::kPerformance;
  MadMethod method = MadMethod::kGet;
  std::uint16_t attr_id = 0;
  std::uint32_t attr_mod = 0;
  MadAddress address;
  std::vector<std::uint8_t> payload;  // at most kMadSize - kMadDataOffset bytes
  std::uint64_t component_mask = 0;   // an SA query's ComponentMask (IBTA 15.2.1.1): the record fields to match
};

// SMP data (IBTA 14.2.1.1) and PMA data (IBTA 16.1.1, after the 40 reserved
// bytes) both begin at byte 64 of the MAD.
inline constexpr std::size_t kMadDataOffset = 64;
inline constexpr std::size_t kSmpDataSize = 64;
inline constexpr std::size_t kPmaDataSize = kMadSize - kMadDataOffset;
// SA data (IBTA 15.2.1.1) follows the RMPP and SA headers at byte 56.
inline constexpr std::size_t kSaDataOffset = 56;
inline constexpr std::size_t kSaDataSize = kMadSize - kSaDataOffset;
// Vendor range 1 data follows the common header (libibmad mad.h
// IB_VENDOR_RANGE1_DATA_OFFS).
inline constexpr std::size_t kVendorDataOffset = 24;
// Where a class's data begins.
std::size_t DataOffset(MgmtClass c);

// Fields of the common MAD header (IBTA 13.4.2), decoded.
struct MadHeader {
  std::uint8_t base_version = 0;
  std::uint8_t mgmt_class = 0;
  std::uint8_t class_version = 0;
  std::uint8_t method = 0;   // with the response bit (0x80)
  std::uint16_t status = 0;  // for DR SMPs the 15-bit status without the D bit
  std::uint64_t tid = 0;
  std::uint16_t attr_id = 0;
  std::uint32_t attr_mod = 0;
};

// Bits of the common MAD Status field (IBTA 13.4.7, table 114).
inline constexpr std::uint16_t kMadStatusBusy = 0x0001;      // discarded, retry later
inline constexpr std::uint16_t kMadStatusRedirect = 0x0002;  // ask elsewhere (ClassPortInfo)
// Bits 2-4, the "invalid field" code; 3 is "unsupported method/attribute
// combination": the only status that says an attribute is absent.
inline constexpr std::uint16_t kMadStatusCodeMask = 0x001C;
inline constexpr std::uint16_t kMadStatusUnsupportedAttribute = 0x000C;

// How one request ended.
enum class MadOutcome : std::uint8_t {
  kOk,           // a response came back with MAD status 0
  kRemoteError,  // a response came back with a non-zero MAD status
  kTimeout,      // no response after every retry
  kSendError,    // the local port refused the send
};

const char* ToString(MadOutcome o);

struct MadResult {
  MadOutcome outcome = MadOutcome::kTimeout;
  std::uint16_t mad_status = 0;  // valid for kOk / kRemoteError
  MadBytes response{};           // the whole response MAD, valid for kOk / kRemoteError
  // An RMPP transfer longer than one MAD (an SA table): `response` is its
  // first segment, `tail` the later segments' data, `length` the whole
  // (transport/mad_port.h InboundMad).
  std::vector<std::uint8_t> tail;
  std::uint32_t length = kMadSize;
  std::uint8_t retries = 0;  // attempts re-sent (timed out or Busy) before this outcome
  // When it was first sent and when its outcome was decided, on the
  // engine's clock (both the epoch when it was never sent).
  std::chrono::steady_clock::time_point first_sent{};
  std::chrono::steady_clock::time_point done{};
};

// The "invalid field" code of an answer with an error status (bits 2-4,
// kMadStatusCodeMask); 0 for anything else (no answer, or no error).
inline std::uint16_t StatusCode(const MadResult& r) {
  return r.outcome == MadOutcome::kRemoteError ? r.mad_status & kMadStatusCodeMask : 0;
}

// The agent answered that it does not have the attribute (status code 3,
// 0x000C): absent for good on that node, unlike a timeout, Busy or any
// other error status.
inline bool Unsupported(const MadResult& r) { return StatusCode(r) == kMadStatusUnsupportedAttribute; }

}  // namespace ibfabric::transport
