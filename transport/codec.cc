#include "transport/codec.h"

#include <infiniband/mad.h>

#include <algorithm>
#include <cstring>

namespace ibfabric::transport {
namespace {

// libibmad's accessors take a non-const buffer but only read through it.
void* Mut(const MadBytes& m) { return const_cast<std::uint8_t*>(m.data()); }

}  // namespace

const char* ToString(MadOutcome o) {
  switch (o) {
    case MadOutcome::kOk: return "ok";
    case MadOutcome::kRemoteError: return "remote_error";
    case MadOutcome::kTimeout: return "timeout";
    case MadOutcome::kSendError: return "send_error";
  }
  return "unknown";
}

const char* ToString(MadKind k) {
  switch (k) {
    case MadKind::kDirectedSmp: return "dr_smp";
    case MadKind::kLidSmp: return "lid_smp";
    case MadKind::kGmp: return "gmp";
  }
  return "unknown";
}

MadKind KindOf(MgmtClass c) {
  switch (c) {
    case MgmtClass::kSubnDirectRoute: return MadKind::kDirectedSmp;
    case MgmtClass::kSubnLidRouted: return MadKind::kLidSmp;
    case MgmtClass::kPerformance:
    case MgmtClass::kSubnAdm:
    case MgmtClass::kVendorNvidia: return MadKind::kGmp;
  }
  return MadKind::kGmp;
}

std::size_t DataOffset(MgmtClass c) {
  switch (c) {
    case MgmtClass::kSubnAdm: return kSaDataOffset;
    case MgmtClass::kVendorNvidia: return kVendorDataOffset;
    default: return kMadDataOffset;
  }
}

bool TrustedOnly(std::uint16_t sa_attr_id) { return sa_attr_id == sa_attr::kPKeyTableRecord; }

MadBytes EncodeRequest(const MadRequest& request, std::uint64_t tid, std::uint64_t m_key, std::uint64_t sa_key) {
  MadBytes out{};
  ib_rpc_t rpc{};
  rpc.mgtclass = static_cast<int>(request.mgmt_class);
  rpc.method = static_cast<int>(request.method);
  rpc.attr.id = request.attr_id;
  rpc.attr.mod = request.attr_mod;
  rpc.trid = tid;
  rpc.mask = request.component_mask;
  const bool sa = request.mgmt_class == MgmtClass::kSubnAdm;
  const std::size_t offset = DataOffset(request.mgmt_class);
  rpc.dataoffs = static_cast<int>(offset);
  rpc.datasz = static_cast<int>(std::min(request.payload.size(), kMadSize - offset));

  ib_dr_path_t dr{};
  const bool directed = request.mgmt_class == MgmtClass::kSubnDirectRoute;
  if (directed) {
    // InitialPath[0] is unused; hops are InitialPath[1..HopCount] (IBTA 14.2.2).
    const std::size_t hops = std::min<std::size_t>(request.address.dr_path.size(), IB_SUBNET_PATH_HOPS_MAX - 1);
    dr.cnt = static_cast<int>(hops);
    for (std::size_t i = 0; i < hops; ++i) dr.p[i + 1] = request.address.dr_path[i];
    dr.drslid = 0xffff;  // permissive: the whole route is directed
    dr.drdlid = 0xffff;
  }
  // mad_encode copies `datasz` bytes from data; pad the payload so it may.
  std::vector<std::uint8_t> data(request.payload);
  data.resize(kMadSize - offset, 0);
  mad_encode(out.data(), &rpc, directed ? &dr : nullptr, data.data());
  const bool smp = directed || request.mgmt_class == MgmtClass::kSubnLidRouted;
  if (smp) mad_set_field64(out.data(), 0, IB_MAD_MKEY_F, m_key);
  // The SA speaks class version 2 (IBTA 15.2.1.1); libibmad writes 1.
  if (sa) {
    mad_set_field(out.data(), 0, IB_MAD_CLASSVER_F, 2);
    mad_set_field64(out.data(), 0, IB_SA_COMPMASK_F, request.component_mask);
    if (TrustedOnly(request.attr_id)) mad_set_field64(out.data(), 0, IB_SA_MKEY_F, sa_key);
  }
  return out;
}

MadHeader DecodeHeader(const MadBytes& mad) {
  MadHeader h;
  void* b = Mut(mad);
  h.base_version = static_cast<std::uint8_t>(mad_get_field(b, 0, IB_MAD_BASEVER_F));
  h.mgmt_class = static_cast<std::uint8_t>(mad_get_field(b, 0, IB_MAD_MGMTCLASS_F));
  h.class_version = static_cast<std::uint8_t>(mad_get_field(b, 0, IB_MAD_CLASSVER_F));
  h.method =
      static_cast<std::uint8_t>(mad_get_field(b, 0, IB_MAD_METHOD_F) | (mad_get_field(b, 0, IB_MAD_RESPONSE_F) << 7));
  if (h.mgmt_class == static_cast<std::uint8_t>(MgmtClass::kSubnDirectRoute)) {
    h.status = static_cast<std::uint16_t>(mad_get_field(b, 0, IB_DRSMP_STATUS_F));
  } else {
    h.status = static_cast<std::uint16_t>(mad_get_field(b, 0, IB_MAD_STATUS_F));
  }
  h.tid = mad_get_field64(b, 0, IB_MAD_TRID_F);
  h.attr_id = static_cast<std::uint16_t>(mad_get_field(b, 0, IB_MAD_ATTRID_F));
  h.attr_mod = mad_get_field(b, 0, IB_MAD_ATTRMOD_F);
  return h;
}

MadBytes EncodeResponse(const MadBytes& request_mad, std::span<const std::uint8_t> data, std::uint16_t status) {
  MadBytes out = request_mad;
  void* b = out.data();
  // GetTable is answered by GetTableResponse; Get and Set by GetResponse
  // (IBTA 13.4.5, 15.2.2).
  const bool table = mad_get_field(b, 0, IB_MAD_METHOD_F) == static_cast<std::uint32_t>(MadMethod::kGetTable);
  const MadMethod method = table ? MadMethod::kGetTableResponse : MadMethod::kGetResponse;
  mad_set_field(b, 0, IB_MAD_METHOD_F, static_cast<std::uint32_t>(method) & 0x7f);
  mad_set_field(b, 0, IB_MAD_RESPONSE_F, 1);
  if (mad_get_field(b, 0, IB_MAD_MGMTCLASS_F) == static_cast<std::uint32_t>(MgmtClass::kSubnDirectRoute)) {
    mad_set_field(b, 0, IB_DRSMP_STATUS_F, status);
    mad_set_field(b, 0, IB_DRSMP_DIRECTION_F, 1);
  } else {
    mad_set_field(b, 0, IB_MAD_STATUS_F, status);
  }
  // SMP data is 64 bytes; a DR SMP keeps its InitialPath/ReturnPath after it.
  const std::uint32_t cls = mad_get_field(b, 0, IB_MAD_MGMTCLASS_F);
  const bool smp = cls == static_cast<std::uint32_t>(MgmtClass::kSubnDirectRoute) ||
                   cls == static_cast<std::uint32_t>(MgmtClass::kSubnLidRouted);
  const std::size_t offset = DataOffset(static_cast<MgmtClass>(cls));
  const std::size_t area = smp ? kSmpDataSize : kMadSize - offset;
  std::memset(out.data() + offset, 0, area);
  std::memcpy(out.data() + offset, data.data(), std::min(data.size(), area));
  return out;
}

}  // namespace ibfabric::transport
