// ForwardingTables (topology/forwarding_tables.h): each switch's table
// back whole whatever its length, the blocks switches share held once, a
// merge that keeps the newer tables.

#include "topology/forwarding_tables.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "transport/attributes.h"

namespace ibfabric::topology {
namespace {

using Plain = std::vector<std::uint8_t>;

// `n` entries: port 1 + (lid + shift) % 32, as a fat tree's leaf spreads
// LIDs over its 32 uplinks.
Plain Spread(std::size_t n, int shift) {
  Plain t(n);
  for (std::size_t lid = 0; lid < n; ++lid) t[lid] = static_cast<std::uint8_t>(1 + (lid + shift) % 32);
  return t;
}

TEST(ForwardingTablesTest, EachTableComesBackWholeAndEndsWhereItEnds) {
  ForwardingTables t;
  const Plain a = Spread(200, 0), b = Spread(64, 5), c = {3};
  t.Put(0x10, a);
  t.Put(0x20, b);
  t.Put(0x30, c);
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.Switches(), (std::vector<std::uint64_t>{0x10, 0x20, 0x30}));
  EXPECT_EQ(t.Find(0x10)->Entries(), a);
  EXPECT_EQ(t.Find(0x20)->Entries(), b);
  EXPECT_EQ(t.Find(0x30)->Entries(), c);
  EXPECT_EQ(t.Find(0x10)->size(), 200u);
  // Beyond a table's end, or at a switch without one: no port.
  EXPECT_EQ(t.Egress(0x10, 199), a[199]);
  EXPECT_EQ(t.Egress(0x10, 200), transport::kLftNoPort);
  EXPECT_EQ(t.Egress(0x30, 0), 3);
  EXPECT_EQ(t.Egress(0x30, 1), transport::kLftNoPort);
  EXPECT_EQ(t.Egress(0x40, 0), transport::kLftNoPort);
  EXPECT_FALSE(t.Find(0x40));
  EXPECT_FALSE(t.Has(0x40));
}

TEST(ForwardingTablesTest, BlocksTheSwitchesShareAreHeldOnce) {
  ForwardingTables t;
  // Eight leaves in two phases of one spread: 8 x 16 blocks, 2 distinct
  // (a 32-port spread repeats every 32 LIDs: each block of a phase alike).
  for (int leaf = 0; leaf < 8; ++leaf) t.Put(0x100 + leaf, Spread(16 * 64, leaf % 2));
  EXPECT_EQ(t.distinct_blocks(), 2u);
  EXPECT_LT(t.bytes(), 8u * 16 * 64 / 2);
  for (int leaf = 0; leaf < 8; ++leaf) EXPECT_EQ(t.Find(0x100 + leaf)->Entries(), Spread(16 * 64, leaf % 2));
  // A table whose blocks are all its own costs its blocks.
  Plain own(64 * 4);
  for (std::size_t i = 0; i < own.size(); ++i) own[i] = static_cast<std::uint8_t>(i % 251);
  t.Put(0x200, own);
  EXPECT_EQ(t.distinct_blocks(), 6u);
  EXPECT_EQ(t.Find(0x200)->Entries(), own);
}

TEST(ForwardingTablesTest, PutReplacesAndMergeKeepsTheNewer) {
  ForwardingTables old;
  old.Put(0x10, Spread(100, 0));
  old.Put(0x20, Spread(100, 1));
  ForwardingTables fresh;
  fresh.Put(0x20, Spread(70, 2));
  fresh.Put(0x20, Spread(90, 3));  // replaces
  fresh.Merge(old);
  EXPECT_EQ(fresh.Find(0x10)->Entries(), Spread(100, 0));
  EXPECT_EQ(fresh.Find(0x20)->Entries(), Spread(90, 3));
  fresh.Erase(0x10);
  EXPECT_EQ(fresh.Switches(), std::vector<std::uint64_t>{0x20});
  // Equal by what they say, not by how they hold it.
  const ForwardingTables plain(std::map<std::uint64_t, Plain>{{0x20, Spread(90, 3)}});
  EXPECT_EQ(fresh, plain);
  EXPECT_FALSE(fresh == old);
}

TEST(ForwardingTablesTest, ManyDistinctBlocksAndTablesPutABlockAtATime) {
  // 300 switches of 5 blocks, each its own (the index grows many times),
  // every other one a block at a time as a switch-by-switch read does.
  ForwardingTables t;
  std::map<std::uint64_t, Plain> plain;
  for (std::uint64_t sw = 0; sw < 300; ++sw) {
    Plain table(5 * 64 - 7);  // a last block short of 7
    for (std::size_t lid = 0; lid < table.size(); ++lid) {
      table[lid] = static_cast<std::uint8_t>((lid * 7 + sw * 13 + lid / 64 * 31) % 254);
    }
    plain[sw] = table;
    if (sw % 2 == 0) {
      t.Put(sw, table);
      continue;
    }
    std::vector<std::uint32_t> blocks(5);
    for (int b = 4; b >= 0; --b) {  // in any order
      const std::size_t first = static_cast<std::size_t>(b) * 64;
      blocks[static_cast<std::size_t>(b)] =
          t.Block(std::span<const std::uint8_t>(table).subspan(first, std::min<std::size_t>(64, table.size() - first)));
    }
    t.PutBlocks(sw, table.size(), std::move(blocks));
  }
  t.Compact();
  EXPECT_EQ(t, ForwardingTables(plain));
  for (const auto& [sw, table] : plain) {
    ASSERT_EQ(t.Find(sw)->Entries(), table) << sw;
    EXPECT_EQ(t.Egress(sw, 5 * 64 - 8), table.back());
    EXPECT_EQ(t.Egress(sw, 5 * 64 - 7), transport::kLftNoPort);
  }
  // Merged into tables that share some of its blocks: each held once.
  ForwardingTables other;
  other.Put(1000, plain[0]);
  const std::size_t before = other.distinct_blocks();
  other.Merge(t);
  EXPECT_EQ(other.size(), 301u);
  EXPECT_EQ(other.distinct_blocks(), t.distinct_blocks());
  EXPECT_EQ(before, 5u);
  EXPECT_EQ(other.Find(1000)->Entries(), plain[0]);
  EXPECT_EQ(other.Find(299)->Entries(), plain[299]);
}

}  // namespace
}  // namespace ibfabric::topology
