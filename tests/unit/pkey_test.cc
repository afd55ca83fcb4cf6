// Which P_Key index GMPs leave on (transport/umad_port.h ChoosePKeyIndex):
// the full-member default P_Key's, wherever the SM put it; the flag's
// when given and in the table.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "transport/umad_port.h"

namespace ibfabric::transport {
namespace {

PKeyChoice Choose(const std::vector<std::uint16_t>& table, int wanted = -1) {
  PKeyChoice c;
  std::string error;
  EXPECT_TRUE(ChoosePKeyIndex(table, wanted, &c, &error)) << error;
  return c;
}

TEST(PKeyIndexTest, TheFullMemberDefaultWhereverItIs) {
  EXPECT_EQ(Choose({0xffff, 0x8001}).index, 0);
  const PKeyChoice second = Choose({0x7fff, 0xffff, 0, 0});
  EXPECT_EQ(second.index, 1);
  EXPECT_EQ(second.pkey, 0xffff);
  EXPECT_TRUE(second.full_default());
  // Limited only: the limited default, not full_default.
  const PKeyChoice limited = Choose({0x8002, 0x7fff});
  EXPECT_EQ(limited.index, 1);
  EXPECT_FALSE(limited.full_default());
  // No default partition at all: the first full member entry, else the first in use.
  EXPECT_EQ(Choose({0, 0x0005, 0x8006}).index, 2);
  EXPECT_EQ(Choose({0, 0x0005}).index, 1);
  // No table known (no sysfs): index 0, P_Key unknown.
  const PKeyChoice unknown = Choose({});
  EXPECT_EQ(unknown.index, 0);
  EXPECT_EQ(unknown.pkey, 0);
}

TEST(PKeyIndexTest, TheFlagIsTakenWhenTheTableHasIt) {
  const PKeyChoice c = Choose({0x7fff, 0xffff}, 0);
  EXPECT_EQ(c.index, 0);
  EXPECT_EQ(c.pkey, 0x7fff);
  EXPECT_EQ(Choose({}, 3).index, 3) << "no table known: as given";
  PKeyChoice out;
  std::string error;
  EXPECT_FALSE(ChoosePKeyIndex({0x7fff, 0xffff}, 2, &out, &error));
  EXPECT_EQ(error, "--ib.pkey-index=2: the port's P_Key table has 2 entries");
  EXPECT_FALSE(ChoosePKeyIndex({0x7fff, 0x0000, 0xffff}, 1, &out, &error));
  EXPECT_EQ(error,
            "--ib.pkey-index=1: the port's P_Key table has 3 entries and that one holds no P_Key (0x0000: empty or "
            "invalid)");
  EXPECT_FALSE(ChoosePKeyIndex({0x7fff, 0x8000}, 1, &out, &error)) << "0x8000: the invalid P_Key (IBTA 10.9.1.2)";
}

}  // namespace
}  // namespace ibfabric::transport
