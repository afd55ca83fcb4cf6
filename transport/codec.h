#pragma once
// Pure functions between MAD bytes and the value types of mad.h and
// attributes.h. They are implemented with libibmad's field tables
// (mad_get_field / mad_encode), so every offset used is the one rdma-core
// ships; the IBTA section of each attribute is named where it is decoded.
//
// Thread-safety: all functions are pure and reentrant.

#include <cstdint>
#include <span>

#include "transport/mad.h"

namespace ibfabric::transport {

// Builds the 256 bytes of a request MAD: common header, the directed-route
// fields for DR SMPs (hop count, InitialPath, permissive DrSLID/DrDLID) and
// the payload at byte 64. `tid` is written as is; `m_key` goes in an SMP's
// M_Key (IBTA 14.2.1.1, bytes 24-31; GMPs have none).
// `m_key` goes in every SMP; `sa_key` only in the SA queries for records
// the SA gives trusted requests alone (TrustedOnly): an SA discards a
// request whose non-zero SM_Key is not its key (IBTA C15-0.1.5), so a
// wrong key costs those records only, not every SA query.
MadBytes EncodeRequest(const MadRequest& request, std::uint64_t tid, std::uint64_t m_key = 0, std::uint64_t sa_key = 0);
// SA attributes whose records the SA gives trusted requests alone:
// P_KeyTableRecord (IBTA 1.2.1 p. 922, as opensm cites it).
bool TrustedOnly(std::uint16_t sa_attr_id);

// Decodes the common MAD header (IBTA 13.4.2). For directed-route SMPs the
// status is the 15-bit field that excludes the direction bit (IBTA 14.2.1.2).
MadHeader DecodeHeader(const MadBytes& mad);

// Builds the response a responder would send to `request_mad`: same class,
// TID, attribute and modifier; GetResponse (GetTableResponse to a
// GetTable); `status`; `data` copied at byte 64 (56 for the SA; truncated to
// the MAD). Used by fakes and tests, never on the wire.
MadBytes EncodeResponse(const MadBytes& request_mad, std::span<const std::uint8_t> data, std::uint16_t status = 0);

// The attribute data section of a MAD (from byte 64 to the end).
inline std::span<const std::uint8_t> MadData(const MadBytes& mad) {
  return std::span<const std::uint8_t>(mad).subspan(kMadDataOffset);
}

}  // namespace ibfabric::transport
