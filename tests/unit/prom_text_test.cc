#include "tests/testbed/prom_text.h"

#include <gtest/gtest.h>

namespace ibfabric::testbed {
namespace {

TEST(PromTextTest, ParsesLabelsValuesAndTypes) {
  const Scrape s = Scrape::Parse(
      "# HELP a_total help\n# TYPE a_total counter\n"
      "a_total{x=\"1\",y=\"q\\\"uote\"} 4.5e+06\n"
      "b 7\n");
  EXPECT_EQ(s.types().at("a_total"), "counter");
  EXPECT_EQ(s.Value("a_total", {{"y", "q\"uote"}}), 4.5e6);
  EXPECT_EQ(s.Value("b"), 7);
  EXPECT_FALSE(s.Value("c"));
  EXPECT_THROW(Scrape::Parse("broken{x=1} 2\n"), std::runtime_error);
}

}  // namespace
}  // namespace ibfabric::testbed
