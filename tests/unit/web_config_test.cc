// The exporter-toolkit web config: what it accepts, what it refuses (with
// the line), and the bcrypt helpers.

#include "exporter/web_config.h"

#include <gtest/gtest.h>

namespace ibfabric::exporter {
namespace {

TEST(WebConfigTest, ReadsTlsAuthAndHeadersWithPathsRelativeToTheFile) {
  const std::string hash = HashPassword("s3cret", 4);
  ASSERT_TRUE(IsBcryptHash(hash)) << hash;
  const std::string text =
      "tls_server_config:\n"
      "  cert_file: server.crt\n"
      "  key_file: /etc/keys/server.key\n"
      "  client_auth_type: RequireAndVerifyClientCert\n"
      "  client_ca_file: ca.crt\n"
      "  min_version: TLS13\n"
      "http_server_config:\n"
      "  http2: true\n"
      "  headers:\n"
      "    Strict-Transport-Security: max-age=31536000\n"
      "basic_auth_users:\n"
      "  prometheus: " +
      hash + "\n";
  WebConfig c;
  std::string error;
  ASSERT_TRUE(ParseWebConfig(text, "/srv/web", &c, &error)) << error;
  ASSERT_TRUE(c.tls);
  EXPECT_EQ(c.tls->cert_file, "/srv/web/server.crt");
  EXPECT_EQ(c.tls->key_file, "/etc/keys/server.key");
  EXPECT_EQ(c.tls->client_ca_file, "/srv/web/ca.crt");
  EXPECT_EQ(c.tls->client_auth, ClientAuth::kRequireAndVerify);
  EXPECT_EQ(c.tls->min_version, 0x0304);
  EXPECT_EQ(c.headers.at("Strict-Transport-Security"), "max-age=31536000");
  EXPECT_EQ(c.basic_auth_users.at("prometheus"), hash);
  EXPECT_TRUE(CheckPassword("s3cret", hash));
  EXPECT_FALSE(CheckPassword("s3cret ", hash));
  EXPECT_FALSE(CheckPassword("", hash));
}

TEST(WebConfigTest, EmptyFileMeansPlainHttpWithoutAuth) {
  WebConfig c;
  std::string error;
  ASSERT_TRUE(ParseWebConfig("", ".", &c, &error)) << error;
  EXPECT_FALSE(c.tls);
  EXPECT_TRUE(c.basic_auth_users.empty());
}

TEST(WebConfigTest, RefusesWhatItCannotHonourNamingTheLine) {
  const std::string hash = HashPassword("x", 4);
  const std::vector<std::pair<std::string, std::string>> cases{
      {"tls_server_config:\n  cert_file: a\n", "tls_server_config: key_file is required"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: Always\n",
       "line 4: tls_server_config.client_auth_type must be one of"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n",
       "client_ca_file is required"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS14\n",
       "line 4: tls_server_config.min_version"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS13\n  max_version: TLS12\n",
       "max_version is below min_version"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
       "line 4: tls_server_config.cipher_suites is not supported"},
      {"tls_server_config:\n  cert_file: a\n  keyfile: b\n", "line 3: unknown key 'keyfile' in tls_server_config"},
      {"basic_auth_users:\n  alice: plaintext\n", "line 2: basic_auth_users.alice is not a bcrypt hash"},
      {"basic_auth_users:\n  alice: " + hash.substr(0, 59) + "\n", "is not a bcrypt hash"},
      {"basic_auth_users: [alice]\n", "line 1: basic_auth_users must be a map"},
      {"http_server_config:\n  headers:\n    Content-Length: 3\n",
       "line 3: http_server_config.headers: header 'Content-Length' cannot be set"},
      {"http_server_config:\n  http2: maybe\n", "http_server_config.http2 must be true or false"},
      {"tls_config:\n  cert_file: a\n", "line 1: unknown key 'tls_config' in the file"},
      {"basic_auth_users: {a: [\n", "not YAML"},
  };
  for (const auto& [text, want] : cases) {
    WebConfig c;
    std::string error;
    EXPECT_FALSE(ParseWebConfig(text, ".", &c, &error)) << text;
    EXPECT_NE(error.find(want), std::string::npos) << "error '" << error << "' lacks '" << want << "'";
  }
}

TEST(WebConfigTest, LoadNamesTheFile) {
  WebConfig c;
  std::string error;
  EXPECT_FALSE(LoadWebConfig("/nonexistent/web.yml", &c, &error));
  EXPECT_EQ(error.rfind("/nonexistent/web.yml: cannot read", 0), 0u) << error;
}

}  // namespace
}  // namespace ibfabric::exporter
