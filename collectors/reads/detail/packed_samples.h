#pragma once
// A sweep's port samples, packed one after another: each as its present
// and wide masks (4 bytes each), then the values of its present counters in
// counter order as LEB128 varints (7 bits a byte, the high bit set on all
// but the last). A fabric's error counters are mostly 0 and its data
// counters far below 2^64: a sample takes 30 bytes with ibsim's idle
// counters and under 100 with busy 64-bit data counters, where a
// PortSample is 272 (at 32k GPUs, 196,608 of them a sweep: 51 MiB).
//
// The bytes are held in chunks that are never moved: adding a sample copies
// nothing that is there, and no sample spans two chunks.
//
// Thread-safety: none.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "collectors/common/varint.h"
#include "collectors/reads/counters.h"

namespace ibfabric::collectors {

class PackedSamples {
 public:
  // Where a sample starts; kNone: no sample.
  using Handle = std::uint32_t;
  static constexpr Handle kNone = ~Handle{0};

  // Adds `s`; its handle. Throws std::length_error past 4 GiB of samples
  // (some 50 million ports).
  Handle Add(const PortSample& s);
  // The sample added as `h`; nullopt for kNone, or once cleared.
  std::optional<PortSample> Get(Handle h) const;
  // Lets every sample go, and the memory with them; handles given out
  // before find nothing.
  void Clear();
  std::size_t bytes() const { return chunks_.size() * kChunk; }

 private:
  static constexpr std::size_t kChunk = std::size_t{1} << 18;  // 256 KiB
  // The most one sample takes: the masks and 32 values of 10 bytes.
  static constexpr std::size_t kMaxSample = 8 + kCounterCount * kMaxVarint;
  static_assert(kCounterCount <= 32, "the masks are 32 bits");

  std::vector<std::unique_ptr<std::uint8_t[]>> chunks_;
  std::size_t used_ = 0;  // bytes of the last chunk taken
};

}  // namespace ibfabric::collectors
