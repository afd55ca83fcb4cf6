// config/slurm_names.cc: Slurm-safe names and the map file that names the
// fabric's hosts as Slurm knows them.

#include "config/slurm_names.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace ibfabric::config {
namespace {

TEST(SlurmNamesTest, OnlyWhatSlurmsHostlistsReadAsNamesIsKept) {
  EXPECT_EQ(SlurmSafe("MF0;ib-leaf01:MQM8700/U1"), "MF0_ib-leaf01_MQM8700_U1");
  EXPECT_EQ(SlurmSafe("gpu-01.a_b"), "gpu-01.a_b");
  EXPECT_EQ(SlurmSafe("a[1],b c"), "a_1__b_c");
}

TEST(SlurmNamesTest, ANodeNameMapIsCheckedLineByLine) {
  std::map<std::string, std::string> names;
  std::string error;
  EXPECT_TRUE(ParseSlurmNodeNames("# fabric slurm\ncn0001 node01\n\ncn0002 node02 # second\n", &names, &error));
  EXPECT_EQ(names, (std::map<std::string, std::string>{{"cn0001", "node01"}, {"cn0002", "node02"}}));
  names.clear();
  EXPECT_FALSE(ParseSlurmNodeNames("cn0001\n", &names, &error));
  EXPECT_EQ(error, "line 1: not FABRIC_HOST SLURM_NODE");
  EXPECT_FALSE(ParseSlurmNodeNames("cn0001 a\ncn0002 b[1]\n", &names, &error));
  EXPECT_EQ(error, "line 2: 'b[1]' is no Slurm node name (letters, digits, . - _)");
  names.clear();
  EXPECT_FALSE(ParseSlurmNodeNames("cn0001 a\ncn0001 b\n", &names, &error));
  EXPECT_EQ(error, "line 2: cn0001 named twice");
}

}  // namespace
}  // namespace ibfabric::config
