// HTTP Basic authentication (exporter/basic_auth.h): base64 as RFC 4648
// has it, a user's password checked against its bcrypt hash, anything
// else refused.

#include "exporter/basic_auth.h"

#include <gtest/gtest.h>

#include "exporter/web_config.h"

namespace ibfabric::exporter {
namespace {

TEST(BasicAuthTest, Base64AsRfc4648HasIt) {
  // RFC 4648 section 10's test vectors.
  EXPECT_EQ(DecodeBase64("Zg=="), "f");
  EXPECT_EQ(DecodeBase64("Zm8="), "fo");
  EXPECT_EQ(DecodeBase64("Zm9v"), "foo");
  EXPECT_EQ(DecodeBase64("Zm9vYmFy"), "foobar");
  for (const char* bad : {"", "Zm9", "Zm=v", "Z===", "Zm9v!A==", "=Zm9"}) {
    EXPECT_FALSE(DecodeBase64(bad)) << bad;
  }
}

TEST(BasicAuthTest, AUsersPasswordPassesAndNothingElse) {
  BasicAuth open({});
  EXPECT_TRUE(open.Check("")) << "no users: open";
  BasicAuth auth({{"alice", HashPassword("s3cret", 4)}});
  EXPECT_TRUE(auth.Check("Basic YWxpY2U6czNjcmV0"));  // alice:s3cret
  EXPECT_TRUE(auth.Check("Basic YWxpY2U6czNjcmV0")) << "remembered, still right";
  EXPECT_FALSE(auth.Check("Basic YWxpY2U6d3Jvbmc="));  // alice:wrong
  EXPECT_FALSE(auth.Check("Basic Ym9iOnMzY3JldA=="));  // bob:s3cret
  EXPECT_FALSE(auth.Check("Basic YWxpY2U="));          // no colon
  EXPECT_FALSE(auth.Check("Basic !!!!"));
  EXPECT_FALSE(auth.Check("Bearer YWxpY2U6czNjcmV0"));
  EXPECT_FALSE(auth.Check(""));
}

}  // namespace
}  // namespace ibfabric::exporter
