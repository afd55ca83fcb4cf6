#include "topology/node_name_map.h"

#include <gtest/gtest.h>

#include "tests/testbed/process.h"

namespace ibfabric::topology {
namespace {

TEST(NodeNameMapTest, FormatsInfinibandDiagsAccepts) {
  NodeNameMap m;
  std::string error;
  ASSERT_TRUE(
      ParseNodeNameMap("# comment\n"
                       "\n"
                       "0x0002c90300a1b2c3 \"leaf01 (rack 3)\"\n"
                       "  0x10   spine-1   # trailing comment\n"
                       "17 \"quoted # not a comment\"\n",
                       &m, &error))
      << error;
  EXPECT_EQ(m.at(0x0002c90300a1b2c3ULL), "leaf01 (rack 3)");
  EXPECT_EQ(m.at(0x10), "spine-1");
  EXPECT_EQ(m.at(17), "quoted # not a comment");
  EXPECT_EQ(m.size(), 3u);
}

TEST(NodeNameMapTest, BadLinesNameTheLineAndTheReason) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"0x1 a\nnot-a-guid name\n", "line 2: 'not-a-guid' is not a GUID"},
      {"0x1\n", "line 1: no name after GUID 0x1"},
      {"0x1 \"open\n", "line 1: unterminated quote in the name"},
      {"0x1 a\n# c\n0x01 b\n", "line 3: GUID 0x01 is already named on line 1"},
      {"0x1ffffffffffffffff x\n", "line 1: '0x1ffffffffffffffff' is not a GUID"},
      {"-5 x\n", "line 1: '-5' is not a GUID"},
      {"0x12g4 x\n", "line 1: '0x12g4' is not a GUID"},
  };
  for (const auto& [text, want] : cases) {
    NodeNameMap m;
    std::string error;
    EXPECT_FALSE(ParseNodeNameMap(text, &m, &error)) << text;
    EXPECT_EQ(error, want) << text;
  }
}

TEST(NodeNameMapTest, FilesAndFabrics) {
  const std::string dir = testbed::MakeTempDir("nnm");
  testbed::WriteFile(dir + "/map", "0xa \"renamed\"\n0xb oops \"\n0xc\n");
  NodeNameMap m;
  std::string error;
  EXPECT_FALSE(LoadNodeNameMap(dir + "/map", &m, &error));
  EXPECT_EQ(error, dir + "/map:3: no name after GUID 0xc");
  EXPECT_FALSE(LoadNodeNameMap(dir + "/missing", &m, &error));
  EXPECT_NE(error.find(dir + "/missing: cannot read:"), std::string::npos) << error;
  testbed::RemoveTree(dir);

  Node a;
  a.guid = 0xa;
  a.description = "MT4123 ConnectX6";
  Node b;
  b.guid = 0xb;
  b.description = "keep";
  const Fabric f = WithNames(Fabric({a, b}), {{0xa, "gpu-001"}});
  EXPECT_EQ(f.FindNode(0xa)->description, "gpu-001");
  EXPECT_EQ(f.FindNode(0xb)->description, "keep");
}

}  // namespace
}  // namespace ibfabric::topology
