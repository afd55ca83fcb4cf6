// config/text.h: UTF-8 as RFC 3629 has it, bad bytes replaced as the
// Unicode standard recommends (one U+FFFD per maximal ill-formed
// subpart), cuts on character boundaries; and config files refused when
// they are not UTF-8.

#include "config/text.h"

#include <gtest/gtest.h>

#include "tests/testbed/process.h"
#include "topology/node_name_map.h"

namespace ibfabric::config {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(TextTest, FirstInvalidByteOfEachIllFormedKind) {
  EXPECT_EQ(FirstInvalidUtf8(""), std::nullopt);
  EXPECT_EQ(FirstInvalidUtf8("cn0001 mlx5_0 \xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"), std::nullopt);  // é € 😀
  EXPECT_EQ(FirstInvalidUtf8(std::string("a\0b", 3)), std::nullopt);  // NUL is a character
  const std::vector<std::pair<std::string, std::size_t>> bad{
      {"ab\xFF\xFE", 2},        // never in UTF-8
      {"\xC0\xAF", 0},          // overlong '/'
      {"x\xE0\x80\xAF", 1},     // overlong, three bytes
      {"\xF0\x80\x80\xAF", 0},  // overlong, four bytes
      {"ok\xE2\x82", 2},        // cut short at the end
      {"\xE2\x82x", 0},         // cut short in the middle
      {"\x80", 0},              // a continuation alone
      {"\xED\xA0\x80", 0},      // a surrogate (U+D800)
      {"\xF4\x90\x80\x80", 0},  // above U+10FFFF
      {"\xF5\x80\x80\x80", 0},
  };
  for (const auto& [text, at] : bad) EXPECT_EQ(FirstInvalidUtf8(text), at) << ::testing::PrintToString(text);
}

TEST(TextTest, EachMaximalIllFormedSubpartBecomesOneReplacementCharacter) {
  EXPECT_EQ(ValidUtf8("plain"), "plain");
  EXPECT_EQ(ValidUtf8("a\xFF\xFE"
                      "b"),
            "a" + kFffd + kFffd + "b");
  EXPECT_EQ(ValidUtf8("\xE2\x82"
                      "x"),
            kFffd + "x");                                       // a truncated sequence is one
  EXPECT_EQ(ValidUtf8("\xF0\x80\x80"), kFffd + kFffd + kFffd);  // F0 cannot go on with 80: three
  EXPECT_EQ(ValidUtf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // a surrogate: three
  EXPECT_EQ(ValidUtf8("\xC3\xA9\xC3"), "\xC3\xA9" + kFffd);
  EXPECT_EQ(FirstInvalidUtf8(ValidUtf8("\xC0\xAF\xF4\x90\x80\x80\xE0\x80")), std::nullopt);
}

TEST(TextTest, AnExcerptIsCutOnACharacterBoundaryAndSaysSo) {
  EXPECT_EQ(Excerpt("short", 40), "short");
  // 79 ASCII bytes and a two-byte character: its 80th byte splits it; the
  // excerpt of 80 characters keeps it whole.
  const std::string split = std::string(79, 'a') + "\xC3\xA9" + "b";
  EXPECT_EQ(Excerpt(split, 80), std::string(79, 'a') + "\xC3\xA9...");
  EXPECT_EQ(Excerpt(split, 79), std::string(79, 'a') + "...");
  EXPECT_EQ(Excerpt("\xFF\xFF\xFF", 2), kFffd + kFffd + "...");
  EXPECT_EQ(Excerpt(std::string(40, 'x'), 40), std::string(40, 'x'));
}

TEST(TextTest, AConfigFileThatIsNotUtf8IsRefusedNamingLineAndColumn) {
  EXPECT_EQ(Utf8Problem("fine\n"), "");
  EXPECT_EQ(Utf8Problem("0x1 a\n0x2 b\xE9t\n"), "line 2: not valid UTF-8 at column 6 (byte 0xE9)");
  const std::string dir = testbed::MakeTempDir("utf8");
  testbed::WriteFile(dir + "/map", "0xa leaf01\n0xb caf\xE9\n");  // Latin-1, as an old editor writes it
  topology::NodeNameMap m;
  std::string error;
  EXPECT_FALSE(topology::LoadNodeNameMap(dir + "/map", &m, &error));
  EXPECT_EQ(error, dir + "/map:2: not valid UTF-8 at column 8 (byte 0xE9)");
  testbed::WriteFile(dir + "/map", "0xa leaf01\n0xb caf\xC3\xA9\n");
  EXPECT_TRUE(topology::LoadNodeNameMap(dir + "/map", &m, &error)) << error;
  EXPECT_EQ(m.at(0xb), "caf\xC3\xA9");
  testbed::RemoveTree(dir);
}

}  // namespace
}  // namespace ibfabric::config
