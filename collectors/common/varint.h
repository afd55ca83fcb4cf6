#pragma once
// LEB128 varints: 7 bits a byte, least significant first, the high bit set
// on every byte but the last (a value below 128 takes one byte, a 64-bit
// one at most kMaxVarint). Pure; the caller owns the bytes.

#include <cstddef>
#include <cstdint>

namespace ibfabric::collectors {

inline constexpr std::size_t kMaxVarint = 10;

// Writes `v` at `out`; returns the byte after it.
inline std::uint8_t* PutVarint(std::uint64_t v, std::uint8_t* out) {
  for (; v >= 0x80; v >>= 7) *out++ = static_cast<std::uint8_t>(v | 0x80);
  *out++ = static_cast<std::uint8_t>(v);
  return out;
}

// Reads one at `*in` and moves `*in` past it.
inline std::uint64_t GetVarint(const std::uint8_t** in) {
  std::uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const std::uint8_t b = *(*in)++;
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return v;
  }
}

}  // namespace ibfabric::collectors
