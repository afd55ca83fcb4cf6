#include "collectors/health/detail/ber_levels.h"

namespace ibfabric::collectors {
namespace {

constexpr std::uint32_t kNvidia = 0x0002c9;  // NodeInfo.VendorID of Mellanox/NVIDIA devices (IEEE OUI)

using topology::Speed;

}  // namespace

const char* ToString(AsicProcess p) {
  switch (p) {
    case AsicProcess::kUnknown: return "unknown";
    case AsicProcess::k16nm: return "16nm";
    case AsicProcess::k7nm: return "7nm";
  }
  return "unknown";
}

AsicProcess AsicProcessOf(std::uint32_t vendor_id, std::uint16_t device_id) {
  if (vendor_id != kNvidia) return AsicProcess::kUnknown;
  switch (device_id) {
    case 0xd2f2:  // Quantum-2 (MT54002)
    case 0x1021:  // ConnectX-7 (MT4129)
    case 0xd2f4:  // Quantum-3 (MT54004)
    case 0x1023:  // ConnectX-8 (MT4131)
      return AsicProcess::k7nm;
    case 0xd2f0:  // Quantum (MT54000)
    case 0x101b:  // ConnectX-6 (MT4123)
      return AsicProcess::k16nm;
    default: return AsicProcess::kUnknown;
  }
}

const char* ToString(FecClass c) {
  switch (c) {
    case FecClass::kAny: return "any";
    case FecClass::kNone: return "none";
    case FecClass::kRs: return "rs";
    case FecClass::kLowLatencyRs: return "ll_rs";
    case FecClass::kPlr: return "plr";
  }
  return "any";
}

std::optional<FecClass> ParseFecClass(const std::string& s) {
  for (FecClass c : {FecClass::kAny, FecClass::kNone, FecClass::kRs, FecClass::kLowLatencyRs, FecClass::kPlr}) {
    if (s == ToString(c)) return c;
  }
  return std::nullopt;
}

std::string BerRow::Describe() const {
  std::string d = topology::ToString(speed);
  if (fec != FecClass::kAny) d += std::string(" ") + ToString(fec);
  if (asic) d += std::string(" ") + ToString(*asic);
  return d;
}

std::vector<BerRow> DefaultBerLevels() {
  const Threshold ndr_raw{5e-6, 1e-5}, plr_effective{5e-12, 1e-11}, rs_effective{5e-14, 1e-13};
  std::vector<BerRow> rows;
  for (Speed s : {Speed::kXdr, Speed::kNdr}) {
    rows.push_back({s, FecClass::kPlr, std::nullopt, ndr_raw, plr_effective});
    rows.push_back({s, FecClass::kRs, std::nullopt, ndr_raw, rs_effective});
    rows.push_back({s, FecClass::kAny, std::nullopt, ndr_raw, plr_effective});
  }
  rows.push_back({Speed::kHdr, FecClass::kAny, AsicProcess::k7nm, {5e-8, 1e-7}, rs_effective});
  rows.push_back({Speed::kHdr, FecClass::kAny, std::nullopt, {5e-6, 1e-5}, rs_effective});
  rows.push_back({Speed::kEdr, FecClass::kRs, AsicProcess::k7nm, {5e-13, 1e-12}, rs_effective});
  rows.push_back({Speed::kEdr, FecClass::kLowLatencyRs, std::nullopt, {5e-13, 1e-12}, rs_effective});
  rows.push_back({Speed::kEdr, FecClass::kRs, std::nullopt, {5e-10, 1e-9}, rs_effective});
  rows.push_back({Speed::kEdr, FecClass::kNone, std::nullopt, {5e-14, 1e-13}, rs_effective});
  rows.push_back({Speed::kEdr, FecClass::kAny, std::nullopt, {5e-10, 1e-9}, rs_effective});
  return rows;
}

const BerRow* MatchBerRow(const std::vector<BerRow>& rows, topology::Speed speed,
                          std::optional<transport::FecMode> mode, AsicProcess asic) {
  // A mode not read matches only the rows for any mode.
  FecClass fec = FecClass::kAny;
  if (mode) {
    const bool low_latency =
        *mode == transport::FecMode::kLowLatencyRsFec || *mode == transport::FecMode::kMlnxLowLatencyRsFec;
    fec = transport::Plr(*mode)           ? FecClass::kPlr
          : low_latency                   ? FecClass::kLowLatencyRs
          : transport::RsFecLayout(*mode) ? FecClass::kRs
                                          : FecClass::kNone;
  }
  const auto fits = [fec](FecClass row) {
    if (row == FecClass::kAny) return true;
    if (fec == FecClass::kAny) return false;  // a mode not read fits only "any"
    return row == fec || (row == FecClass::kRs && fec == FecClass::kLowLatencyRs);
  };
  for (const BerRow& r : rows) {
    if (r.speed != speed) continue;
    if (!fits(r.fec)) continue;
    if (r.asic && *r.asic != asic) continue;
    return &r;
  }
  return nullptr;
}

}  // namespace ibfabric::collectors
