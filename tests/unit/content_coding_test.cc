// What an Accept-Encoding asks for (exporter/content_coding.h): gzip
// where a coding takes it with q above 0, brotli never offered on.

#include "exporter/content_coding.h"

#include <gtest/gtest.h>

namespace ibfabric::exporter {
namespace {

TEST(ContentCodingTest, GzipWhereACodingTakesItWithQAboveZero) {
  EXPECT_TRUE(AcceptsGzip("gzip"));
  EXPECT_TRUE(AcceptsGzip("identity, gzip;q=0.5"));
  EXPECT_TRUE(AcceptsGzip("x-gzip"));
  EXPECT_TRUE(AcceptsGzip("*"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("deflate, br"));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_FALSE(AcceptsGzip("xgzip"));
}

TEST(ContentCodingTest, EveryEntryHoldingBrGoes) {
  EXPECT_EQ(WithoutBrotli("gzip, deflate, br"), "gzip, deflate");
  EXPECT_EQ(WithoutBrotli("br;q=1.0, gzip;q=0.8"), "gzip;q=0.8");
  EXPECT_EQ(WithoutBrotli("xbr, gzip;q=br"), "");
  EXPECT_EQ(WithoutBrotli(" gzip ,identity"), "gzip , identity");
}

}  // namespace
}  // namespace ibfabric::exporter
