#include "topology/forwarding_tables.h"

#include <algorithm>
#include <cstring>

#include "transport/attributes.h"

namespace ibfabric::topology {

ForwardingTables::ForwardingTables(const std::map<std::uint64_t, std::vector<std::uint8_t>>& tables) {
  for (const auto& [guid, entries] : tables) Put(guid, entries);
}

std::uint8_t ForwardingTables::Table::At(std::size_t lid) const {
  return lid < size_ ? (*this)[lid] : transport::kLftNoPort;
}

std::vector<std::uint8_t> ForwardingTables::Table::Entries() const {
  std::vector<std::uint8_t> out(size_);
  for (std::size_t b = 0; b * kBlock < size_; ++b) {
    const std::size_t n = std::min(kBlock, size_ - b * kBlock);
    std::memcpy(out.data() + b * kBlock, pool_ + blocks_[b] * kBlock, n);
  }
  return out;
}

void ForwardingTables::Put(std::uint64_t guid, std::span<const std::uint8_t> entries) {
  std::vector<std::uint32_t> blocks;
  blocks.reserve((entries.size() + kBlock - 1) / kBlock);
  for (std::size_t at = 0; at < entries.size(); at += kBlock) {
    blocks.push_back(Block(entries.subspan(at, std::min(kBlock, entries.size() - at))));
  }
  PutBlocks(guid, entries.size(), std::move(blocks));
}

std::uint32_t ForwardingTables::Block(std::span<const std::uint8_t> entries) {
  std::uint8_t block[kBlock];
  const std::size_t n = std::min(kBlock, entries.size());
  std::memcpy(block, entries.data(), n);
  std::memset(block + n, transport::kLftNoPort, kBlock - n);  // a last block's tail: none
  return Intern(block);
}

void ForwardingTables::PutBlocks(std::uint64_t guid, std::size_t size, std::vector<std::uint32_t> blocks) {
  Switch s;
  s.size = size;
  s.blocks = std::move(blocks);
  switches_[guid] = std::move(s);
}

void ForwardingTables::Merge(const ForwardingTables& other) {
  // Each of the other's blocks interned once, whatever the number of its
  // switches that use it.
  std::vector<std::uint32_t> mapped(other.distinct_blocks(), UINT32_MAX);
  for (const auto& [guid, theirs] : other.switches_) {
    if (switches_.count(guid)) continue;
    Switch s;
    s.size = theirs.size;
    s.blocks.reserve(theirs.blocks.size());
    for (std::uint32_t b : theirs.blocks) {
      if (mapped[b] == UINT32_MAX) mapped[b] = Intern(other.pool_.data() + b * kBlock);
      s.blocks.push_back(mapped[b]);
    }
    switches_.emplace(guid, std::move(s));
  }
}

void ForwardingTables::Compact() { pool_.shrink_to_fit(); }

ForwardingTables::Table ForwardingTables::View(const Switch& s) const {
  Table t;
  t.pool_ = pool_.data();
  t.blocks_ = s.blocks.data();
  t.size_ = s.size;
  return t;
}

std::optional<ForwardingTables::Table> ForwardingTables::Find(std::uint64_t guid) const {
  const auto it = switches_.find(guid);
  if (it == switches_.end()) return std::nullopt;
  return View(it->second);
}

std::uint8_t ForwardingTables::Egress(std::uint64_t guid, std::size_t lid) const {
  const auto it = switches_.find(guid);
  return it == switches_.end() ? transport::kLftNoPort : View(it->second).At(lid);
}

std::vector<std::uint64_t> ForwardingTables::Switches() const {
  std::vector<std::uint64_t> out;
  out.reserve(switches_.size());
  for (const auto& [guid, s] : switches_) out.push_back(guid);
  return out;
}

std::size_t ForwardingTables::bytes() const {
  std::size_t n = pool_.capacity() + slots_.capacity() * sizeof(std::uint32_t);
  for (const auto& [guid, s] : switches_) n += s.blocks.capacity() * sizeof(std::uint32_t) + sizeof s;
  return n;
}

bool ForwardingTables::operator==(const ForwardingTables& o) const {
  if (switches_.size() != o.switches_.size()) return false;
  for (const auto& [guid, s] : switches_) {
    const auto it = o.switches_.find(guid);
    if (it == o.switches_.end() || View(s).Entries() != o.View(it->second).Entries()) return false;
  }
  return true;
}

std::uint64_t ForwardingTables::HashOf(const std::uint8_t* block) const {
  // FNV-1a over the block's 64 bytes, 8 at a time.
  std::uint64_t h = 14695981039346656037ull;
  for (std::size_t i = 0; i < kBlock; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, block + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  // Every bit of the block into the low bits the slot is taken from
  // (MurmurHash3's 64-bit finalizer).
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

void ForwardingTables::Grow() {
  std::vector<std::uint32_t> slots(std::max<std::size_t>(64, slots_.size() * 2), 0);
  const std::size_t mask = slots.size() - 1;
  for (std::uint32_t i = 0; i < distinct_blocks(); ++i) {
    std::size_t at = HashOf(pool_.data() + i * kBlock) & mask;
    while (slots[at] != 0) at = (at + 1) & mask;
    slots[at] = i + 1;
  }
  slots_ = std::move(slots);
}

std::uint32_t ForwardingTables::Intern(const std::uint8_t* block) {
  // At most half full.
  if ((distinct_blocks() + 1) * 2 > slots_.size()) Grow();
  const std::size_t mask = slots_.size() - 1;
  std::size_t at = HashOf(block) & mask;
  for (; slots_[at] != 0; at = (at + 1) & mask) {
    const std::uint32_t i = slots_[at] - 1;
    if (std::memcmp(pool_.data() + i * kBlock, block, kBlock) == 0) return i;
  }
  const auto i = static_cast<std::uint32_t>(distinct_blocks());
  pool_.insert(pool_.end(), block, block + kBlock);
  slots_[at] = i + 1;
  return i;
}

}  // namespace ibfabric::topology
