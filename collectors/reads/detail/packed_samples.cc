#include "collectors/reads/detail/packed_samples.h"

#include <limits>
#include <stdexcept>

#include "collectors/common/varint.h"

namespace ibfabric::collectors {
namespace {

std::uint8_t* PutMask(std::uint8_t* at, std::uint32_t mask) {
  for (int b = 0; b < 4; ++b) *at++ = static_cast<std::uint8_t>(mask >> (8 * b));
  return at;
}

const std::uint8_t* GetMask(const std::uint8_t* at, std::uint32_t* mask) {
  *mask = 0;
  for (int b = 0; b < 4; ++b) *mask |= static_cast<std::uint32_t>(*at++) << (8 * b);
  return at;
}

}  // namespace

PackedSamples::Handle PackedSamples::Add(const PortSample& s) {
  if (chunks_.empty() || kChunk - used_ < kMaxSample) {
    if ((chunks_.size() + 1) * kChunk > std::numeric_limits<Handle>::max()) {
      throw std::length_error("more port samples in one sweep than 4 GiB hold");
    }
    chunks_.emplace_back(new std::uint8_t[kChunk]);
    used_ = 0;
  }
  const Handle h = static_cast<Handle>((chunks_.size() - 1) * kChunk + used_);
  std::uint8_t* const begin = chunks_.back().get() + used_;
  std::uint8_t* at = PutMask(begin, static_cast<std::uint32_t>(s.present.to_ulong()));
  at = PutMask(at, static_cast<std::uint32_t>((s.wide & s.present).to_ulong()));
  for (std::size_t i = 0; i < kCounterCount; ++i) {
    if (s.present.test(i)) at = PutVarint(s.value[i], at);
  }
  used_ += static_cast<std::size_t>(at - begin);
  return h;
}

std::optional<PortSample> PackedSamples::Get(Handle h) const {
  if (h == kNone || h / kChunk >= chunks_.size()) return std::nullopt;
  const std::uint8_t* at = chunks_[h / kChunk].get() + h % kChunk;
  std::uint32_t present = 0, wide = 0;
  at = GetMask(at, &present);
  at = GetMask(at, &wide);
  PortSample s;
  s.present = present;
  s.wide = wide;
  for (std::size_t i = 0; i < kCounterCount; ++i) {
    if (s.present.test(i)) s.value[i] = GetVarint(&at);
  }
  return s;
}

void PackedSamples::Clear() {
  std::vector<std::unique_ptr<std::uint8_t[]>>().swap(chunks_);
  used_ = 0;
}

}  // namespace ibfabric::collectors
