#include "config/values.h"

#include <gtest/gtest.h>

namespace ibfabric::config {
namespace {

TEST(ValuesTest, Durations) {
  std::chrono::milliseconds d;
  ASSERT_TRUE(ParseDuration("2m", &d));
  EXPECT_EQ(d, std::chrono::minutes(2));
  ASSERT_TRUE(ParseDuration("1h", &d));
  EXPECT_EQ(d, std::chrono::hours(1));
  ASSERT_TRUE(ParseDuration("250ms", &d));
  EXPECT_EQ(d, std::chrono::milliseconds(250));
  EXPECT_FALSE(ParseDuration("", &d));
  EXPECT_FALSE(ParseDuration("s", &d));
  EXPECT_FALSE(ParseDuration("1.5s", &d));
  EXPECT_FALSE(ParseDuration("10d", &d));
  EXPECT_FALSE(ParseDuration("99999999999999s", &d));
}

TEST(ValuesTest, DurationValueSaysWhatIsWrongWithoutNamingAFlag) {
  std::chrono::milliseconds d{7};
  EXPECT_EQ(DurationValue("2s", std::chrono::milliseconds(100), &d), "");
  EXPECT_EQ(d, std::chrono::seconds(2));
  EXPECT_EQ(DurationValue("50ms", std::chrono::milliseconds(100), &d), "must be at least 100ms");
  EXPECT_EQ(DurationValue("soon", std::chrono::milliseconds(100), &d),
            "'soon' is not a duration (e.g. 500ms, 10s, 5m)");
  EXPECT_EQ(d, std::chrono::seconds(2)) << "left alone when wrong";
}

TEST(ValuesTest, Integers) {
  long long n = 0;
  EXPECT_TRUE(ParseInt("64", 1, 64, &n));
  EXPECT_EQ(n, 64);
  EXPECT_FALSE(ParseInt("65", 1, 64, &n));
  EXPECT_FALSE(ParseInt("0x10", 0, 100, &n));
  EXPECT_FALSE(ParseInt(" 1", 0, 100, &n));
  EXPECT_FALSE(ParseInt("", 0, 100, &n));
  int i = 3;
  EXPECT_EQ(IntValue("12", 0, 20, &i), "");
  EXPECT_EQ(i, 12);
  EXPECT_EQ(IntValue("21", 0, 20, &i), "'21' is not an integer in 0..20");
  EXPECT_EQ(i, 12);
}

}  // namespace
}  // namespace ibfabric::config
