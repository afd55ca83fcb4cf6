// The local port's choices (transport/umad_port.h): which P_Key index GMPs
// leave on (ChoosePKeyIndex: the full-member default P_Key's, wherever the
// SM put it; the flag's when given and in the table), and which device
// SMPs and GMPs leave from (PairManagementPorts: a multi-plane HCA's SMI
// sub-device and its parent share the port GUID).

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

// mlx5_0 port 1 lacks QP0 (IsSMDisabled); smi0 port 1 has its GUID.
std::vector<UmadDevicePort> MultiPlaneHost() {
  return {{"mlx5_0", 1, 4, 0xa1, true}, {"mlx5_1", 1, 4, 0xb1, false}, {"smi0", 1, 4, 0xa1, false}};
}

TEST(ManagementPortsTest, TheParentsSmpsLeaveFromItsSmiSubDevice) {
  const auto all = MultiPlaneHost();
  const ManagementPorts from_parent = PairManagementPorts(all, all[0]);
  EXPECT_TRUE(from_parent.split());
  EXPECT_EQ(from_parent.smi.ca, "smi0");
  EXPECT_EQ(from_parent.gsi.ca, "mlx5_0");
  // Named the other way round (--ib.ca=smi0): the same pair.
  const ManagementPorts from_smi = PairManagementPorts(all, all[2]);
  EXPECT_EQ(from_smi.smi.ca, "smi0");
  EXPECT_EQ(from_smi.gsi.ca, "mlx5_0");
}

// A multi-plane HCA's SMI sub-device with a port per plane: the pair of
// the parent leaves from the first and knows them all; EachPlane makes a
// pair of each (GMPs from the parent), a plane that is down left out with
// a line; naming one (--ib.ca=smi1 --ib.port=2) is that plane.
TEST(ManagementPortsTest, EachPlaneIsAPairOfItsOwn) {
  const std::vector<UmadDevicePort> all{{"mlx5_0", 1, 4, 0xa1, true},
                                        {"smi1", 1, 4, 0xa1, false},
                                        {"smi1", 2, 4, 0xa1, false},
                                        {"smi1", 3, 1, 0xa1, false},
                                        {"smi1", 4, 4, 0xa1, false}};
  const ManagementPorts p = PairManagementPorts(all, all[0]);
  EXPECT_EQ(p.smi.port, 1);
  EXPECT_EQ(p.plane, 1);
  ASSERT_EQ(p.planes.size(), 4u);
  std::vector<std::string> notes;
  const std::vector<ManagementPorts> each = EachPlane(p, &notes);
  ASSERT_EQ(each.size(), 3u);
  for (std::size_t i = 0; i < each.size(); ++i) {
    const int want = i < 2 ? static_cast<int>(i) + 1 : 4;
    EXPECT_EQ(each[i].plane, want);
    EXPECT_EQ(each[i].smi.ca, "smi1");
    EXPECT_EQ(each[i].smi.port, want);
    EXPECT_EQ(each[i].gsi.ca, "mlx5_0");
    EXPECT_EQ(each[i].gsi.port, 1);
  }
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "plane 3 of mlx5_0 (smi1 port 3) is not Active (state 1): not read");

  const ManagementPorts second = PairManagementPorts(all, all[2]);
  EXPECT_EQ(second.smi.port, 2);
  EXPECT_EQ(second.plane, 2);
  EXPECT_EQ(second.gsi.ca, "mlx5_0");
  // One SMI port: no planes, and EachPlane gives the pair back.
  const auto single = MultiPlaneHost();
  const ManagementPorts one = PairManagementPorts(single, single[0]);
  EXPECT_EQ(one.plane, 0);
  EXPECT_TRUE(one.planes.empty());
  notes.clear();
  const auto back = EachPlane(one, &notes);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].smi.ca, "smi0");
  EXPECT_TRUE(notes.empty());
}

TEST(ManagementPortsTest, AnOrdinaryPortIsBoth) {
  const auto all = MultiPlaneHost();
  const ManagementPorts p = PairManagementPorts(all, all[1]);
  EXPECT_FALSE(p.split());
  EXPECT_EQ(p.smi.ca, "mlx5_1");
  EXPECT_EQ(p.gsi.ca, "mlx5_1");
}

TEST(ManagementPortsTest, NoSubDeviceLeavesTheParentAlone) {
  // No sub-device created: SMPs are tried on the parent (whose agents
  // then fail to register, one line each); a GUID of 0 pairs with nothing.
  const std::vector<UmadDevicePort> alone{{"mlx5_0", 1, 4, 0xa1, true}, {"mlx5_1", 1, 4, 0xb1, false}};
  EXPECT_FALSE(PairManagementPorts(alone, alone[0]).split());
  const std::vector<UmadDevicePort> unknown{{"a", 1, 4, 0, true}, {"b", 1, 4, 0, false}};
  EXPECT_FALSE(PairManagementPorts(unknown, unknown[0]).split());
  // Two ports of one GUID that both have QP0 (a second port of the same
  // node would have its own GUID): not a split either.
  const std::vector<UmadDevicePort> both{{"a", 1, 4, 0xc1, false}, {"b", 1, 4, 0xc1, false}};
  EXPECT_FALSE(PairManagementPorts(both, both[0]).split());
}

}  // namespace
}  // namespace ibfabric::transport
