#pragma once
// Every switch's LinearForwardingTable (IBTA 14.2.5.10), by switch GUID:
// the egress port by destination LID (transport::kLftNoPort: none).
//
// Held as the LFT's own 64-entry blocks, each distinct block once for all
// switches: the switches of a fat tree repeat a few thousand blocks (the
// 32k-GPU rail-optimized fabric: 2,560 tables of 35,329 entries, 1.4
// million blocks of which 15 thousand distinct; 90 MB as plain arrays, 6 MB
// here). A fabric whose blocks never repeat costs 4 bytes a block more than
// plain arrays.
//
// Thread-safety: none while it is filled; immutable once shared (the
// routing collector publishes it behind a shared_ptr to const).

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

namespace ibfabric::topology {

class ForwardingTables {
 public:
  static constexpr std::size_t kBlock = 64;  // entries in an LFT block

  ForwardingTables() = default;
  // From plain tables (tests, small fabrics).
  explicit ForwardingTables(const std::map<std::uint64_t, std::vector<std::uint8_t>>& tables);

  // One switch's table, looked at in place; valid while its owner lives
  // and is not changed.
  class Table {
   public:
    std::size_t size() const { return size_; }
    // Entry `lid`, lid < size().
    std::uint8_t operator[](std::size_t lid) const { return pool_[blocks_[lid / kBlock] * kBlock + lid % kBlock]; }
    // Entry `lid`; kLftNoPort beyond the table.
    std::uint8_t At(std::size_t lid) const;
    std::vector<std::uint8_t> Entries() const;

   private:
    friend class ForwardingTables;
    const std::uint8_t* pool_ = nullptr;
    const std::uint32_t* blocks_ = nullptr;
    std::size_t size_ = 0;
  };

  // Sets switch `guid`'s table to `entries` (replacing any).
  void Put(std::uint64_t guid, std::span<const std::uint8_t> entries);
  // The same a block at a time, for a table read block by block: each
  // block's index as it comes (up to kBlock entries, the rest none), then
  // the table of `size` entries from the indexes of its blocks in order.
  std::uint32_t Block(std::span<const std::uint8_t> entries);
  void PutBlocks(std::uint64_t guid, std::size_t size, std::vector<std::uint32_t> blocks);
  void Erase(std::uint64_t guid) { switches_.erase(guid); }
  // Adds `other`'s tables of the switches this holds none of.
  void Merge(const ForwardingTables& other);
  // Gives back what the pool grew by beyond its blocks (once filled).
  void Compact();

  std::optional<Table> Find(std::uint64_t guid) const;
  bool Has(std::uint64_t guid) const { return switches_.count(guid) > 0; }
  // The egress port of switch `guid` toward `lid`; kLftNoPort where it has
  // no table or the table ends below `lid`.
  std::uint8_t Egress(std::uint64_t guid, std::size_t lid) const;
  std::size_t size() const { return switches_.size(); }
  bool empty() const { return switches_.empty(); }
  // The switches with a table, ascending.
  std::vector<std::uint64_t> Switches() const;
  // Distinct blocks held, and what they and the switches' lists of them take.
  std::size_t distinct_blocks() const { return pool_.size() / kBlock; }
  std::size_t bytes() const;

  bool operator==(const ForwardingTables& o) const;

 private:
  struct Switch {
    std::size_t size = 0;               // entries
    std::vector<std::uint32_t> blocks;  // indexes into pool_, one a block
  };
  Table View(const Switch& s) const;
  // The index of a block with these 64 entries, added when new.
  std::uint32_t Intern(const std::uint8_t* block);
  std::uint64_t HashOf(const std::uint8_t* block) const;
  void Grow();

  std::map<std::uint64_t, Switch> switches_;
  std::vector<std::uint8_t> pool_;  // distinct blocks, kBlock entries each
  // Open addressing over the pool's blocks: index + 1, 0 empty.
  std::vector<std::uint32_t> slots_;
};

}  // namespace ibfabric::topology
