#pragma once
// Inverse of the decoders in attributes.h: attribute structs to the bytes of
// a MAD's data section. For fakes and tests only.

#include <cstdint>
#include <string>
#include <vector>

#include "transport/attributes.h"
#include "transport/mad_port.h"

namespace ibfabric::transport::testing {

std::vector<std::uint8_t> EncodeNodeInfo(const NodeInfo& n);
std::vector<std::uint8_t> EncodeNodeDescription(const std::string& s);
std::vector<std::uint8_t> EncodePortInfo(const PortInfo& p);
std::vector<std::uint8_t> EncodePortCounters(const PortCounters& c);
std::vector<std::uint8_t> EncodePortCountersExtended(const PortCountersExtended& c);
std::vector<std::uint8_t> EncodePortRcvErrorDetails(const PortRcvErrorDetails& d);
std::vector<std::uint8_t> EncodePortXmitDiscardDetails(const PortXmitDiscardDetails& d);
std::vector<std::uint8_t> EncodePortSamplesControl(const PortSamplesControl& c);
// These two are written byte by byte from the bit offsets of rdma-core's
// libibmad/fields.c (not through its field table, which the decoders
// use): a decoder reading the wrong field fails against them.
std::vector<std::uint8_t> EncodePortInfoExtended(const PortInfoExtended& p);
std::vector<std::uint8_t> EncodeExtendedSpeedsRsFec(const ExtendedSpeedsRsFec& e);
std::vector<std::uint8_t> EncodePerfClassPortInfo(const PerfClassPortInfo& c);
std::vector<std::uint8_t> EncodeSwitchInfo(const SwitchInfo& s);
std::vector<std::uint8_t> EncodeSmInfo(const SmInfo& s);
// A whole SA Report (IBTA 13.4.8.3) of a generic Notice as the SM sends it
// to a subscriber: trap `n.trap_number` about `n.lid` (traps 128, 144) or
// `n.port_guid` (traps 64-67, in a GID with the default prefix).
MadBytes EncodeNoticeReport(const Notice& n, std::uint64_t tid);
// The SA's GetTableResponse to `request` (a SubnAdmGetTable of
// SMInfoRecords) as a kernel delivers it: AttributeOffset 4 (32-byte
// records; 0 with none, as opensm), RMPP Active|First|Last with the
// PayloadLength; as many records as one MAD holds (EncodeSaTableTransfer).
MadBytes EncodeSmInfoRecordsResponse(const MadBytes& request, const std::vector<SmInfoRecord>& records);
// The SA's whole GetTableResponse to `request` as UmadPort hands over what
// the kernel reassembled (IBTA 13.6): `records` (each `stride` bytes,
// back to back) from byte 56 of the first segment on, the rest in
// InboundMad::tail, length 56 + their size; AttributeOffset stride / 8
// (0 with no records); RMPP Active|First, and Last where one MAD holds it.
// A non-zero `status` gives that status and no records.
InboundMad EncodeSaTableTransfer(const MadBytes& request, std::size_t stride, const std::vector<std::uint8_t>& records,
                                 std::uint16_t status = 0);

}  // namespace ibfabric::transport::testing
