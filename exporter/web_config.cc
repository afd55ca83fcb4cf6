#include "exporter/web_config.h"

#include <crypt.h>
#include <openssl/crypto.h>

#include <cstring>
#include <set>

#include "config/config_file.h"
#include "config/yaml.h"

namespace ibfabric::exporter {

namespace yaml = config::yaml;
namespace {

using yaml::Bad;
using yaml::Keys;
using yaml::LineOf;

std::string Resolve(const std::string& dir, const std::string& file) {
  if (file.empty() || file[0] == '/' || dir.empty()) return file;
  return dir + "/" + file;
}

int TlsVersion(const YAML::Node& n, const std::string& key) {
  static const std::map<std::string, int> kVersions{
      {"TLS10", 0x0301}, {"TLS11", 0x0302}, {"TLS12", 0x0303}, {"TLS13", 0x0304}};
  const std::string v = yaml::String(n, key);
  auto it = kVersions.find(v);
  if (it == kVersions.end())
    throw Bad{LineOf(n), key + " must be one of TLS10, TLS11, TLS12, TLS13, not '" + v.substr(0, 20) + "'"};
  return it->second;
}

ClientAuth ClientAuthOf(const YAML::Node& n, const std::string& key) {
  static const std::map<std::string, ClientAuth> kTypes{{"NoClientCert", ClientAuth::kNone},
                                                        {"RequestClientCert", ClientAuth::kRequest},
                                                        {"RequireAnyClientCert", ClientAuth::kRequireAny},
                                                        {"VerifyClientCertIfGiven", ClientAuth::kVerifyIfGiven},
                                                        {"RequireAndVerifyClientCert", ClientAuth::kRequireAndVerify}};
  const std::string v = yaml::String(n, key);
  auto it = kTypes.find(v);
  if (it == kTypes.end()) {
    throw Bad{LineOf(n), key +
                             " must be one of NoClientCert, RequestClientCert, RequireAnyClientCert, "
                             "VerifyClientCertIfGiven, RequireAndVerifyClientCert, not '" +
                             v.substr(0, 40) + "'"};
  }
  return it->second;
}

yaml::KeyHandler Refused(const char* why) {
  return [why](const YAML::Node& n, const std::string& key) {
    throw Bad{LineOf(n), key + " is not supported: " + why};
  };
}

void ParseTls(const YAML::Node& node, const std::string& where, const std::string& dir, TlsConfig* tls) {
  Keys(node, where,
       {{"cert_file",
         [&](const YAML::Node& n, const std::string& k) { tls->cert_file = Resolve(dir, yaml::String(n, k)); }},
        {"key_file",
         [&](const YAML::Node& n, const std::string& k) { tls->key_file = Resolve(dir, yaml::String(n, k)); }},
        {"client_ca_file",
         [&](const YAML::Node& n, const std::string& k) { tls->client_ca_file = Resolve(dir, yaml::String(n, k)); }},
        {"client_auth_type", [&](const YAML::Node& n, const std::string& k) { tls->client_auth = ClientAuthOf(n, k); }},
        {"min_version", [&](const YAML::Node& n, const std::string& k) { tls->min_version = TlsVersion(n, k); }},
        {"max_version", [&](const YAML::Node& n, const std::string& k) { tls->max_version = TlsVersion(n, k); }},
        {"prefer_server_cipher_suites",
         [&](const YAML::Node& n, const std::string& k) { tls->prefer_server_cipher_suites = yaml::Boolean(n, k); }},
        {"cipher_suites", Refused("Go's cipher suite names do not map onto OpenSSL's; use min_version")},
        {"curve_preferences", Refused("the TLS library's default curves are used")}});
  const int line = LineOf(node);
  if (tls->cert_file.empty()) throw Bad{line, where + ": cert_file is required"};
  if (tls->key_file.empty()) throw Bad{line, where + ": key_file is required"};
  const bool verifies =
      tls->client_auth == ClientAuth::kVerifyIfGiven || tls->client_auth == ClientAuth::kRequireAndVerify;
  if (verifies && tls->client_ca_file.empty())
    throw Bad{line, where + ": client_ca_file is required to verify client certificates"};
  if (!verifies && !tls->client_ca_file.empty()) {
    throw Bad{line, where +
                        ": client_ca_file is set but client_auth_type does not verify client certificates "
                        "(use VerifyClientCertIfGiven or RequireAndVerifyClientCert)"};
  }
  if (tls->max_version != 0 && tls->max_version < tls->min_version)
    throw Bad{line, where + ": max_version is below min_version"};
}

}  // namespace

bool IsBcryptHash(const std::string& hash) {
  if (hash.size() != 60 || hash[0] != '$' || hash[1] != '2' || (hash[2] != 'a' && hash[2] != 'b' && hash[2] != 'y') ||
      hash[3] != '$') {
    return false;
  }
  crypt_data data{};
  const char* out = crypt_r("probe", hash.c_str(), &data);
  return out != nullptr && out[0] != '*';
}

bool CheckPassword(const std::string& password, const std::string& hash) {
  crypt_data data{};
  const char* out = crypt_r(password.c_str(), hash.c_str(), &data);
  if (out == nullptr || out[0] == '*' || std::strlen(out) != hash.size()) return false;
  return CRYPTO_memcmp(out, hash.data(), hash.size()) == 0;
}

std::string HashPassword(const std::string& password, int cost) {
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  if (crypt_gensalt_rn("$2b$", static_cast<unsigned long>(cost), nullptr, 0, setting, sizeof setting) == nullptr)
    return "";
  crypt_data data{};
  const char* out = crypt_r(password.c_str(), setting, &data);
  if (out == nullptr || out[0] == '*') return "";
  return out;
}

bool ParseWebConfig(const std::string& text, const std::string& dir, WebConfig* config, std::string* error) {
  WebConfig c;
  const bool ok = yaml::Parse(
      text,
      [&](const YAML::Node& root) {
        if (root.IsNull()) return;
        Keys(root, "the file",
             {{"tls_server_config",
               [&](const YAML::Node& n, const std::string& k) {
                 c.tls.emplace();
                 ParseTls(n, k, dir, &*c.tls);
               }},
              {"http_server_config",
               [&](const YAML::Node& n, const std::string& k) {
                 Keys(n, k,
                      {{"http2", [](const YAML::Node& v, const std::string& kk) { yaml::Boolean(v, kk); }},
                       {"headers", [&](const YAML::Node& v, const std::string& kk) {
                          // exporter-toolkit's list: security headers only, so
                          // the file cannot break the protocol (Content-Length...).
                          static const std::set<std::string> kAllowed{"Content-Security-Policy", "X-Frame-Options",
                                                                      "X-Content-Type-Options", "X-XSS-Protection",
                                                                      "Strict-Transport-Security"};
                          if (!v.IsMap()) throw Bad{LineOf(v), kk + " must be a map of header: value"};
                          for (const auto& h : v) {
                            const std::string name = h.first.Scalar();
                            if (!kAllowed.count(name)) {
                              throw Bad{LineOf(h.first), kk + ": header '" + name.substr(0, 40) +
                                                             "' cannot be set (allowed: Content-Security-Policy, "
                                                             "X-Frame-Options, X-Content-Type-Options, "
                                                             "X-XSS-Protection, Strict-Transport-Security)"};
                            }
                            const std::string value = yaml::String(h.second, kk + "." + name);
                            if (value.find_first_of("\r\n") != std::string::npos) {
                              throw Bad{LineOf(h.second), kk + "." + name + " must be one line"};
                            }
                            c.headers[name] = value;
                          }
                        }}});
               }},
              {"basic_auth_users", [&](const YAML::Node& n, const std::string& k) {
                 if (!n.IsMap()) throw Bad{LineOf(n), k + " must be a map of user: bcrypt hash"};
                 for (const auto& u : n) {
                   const std::string user = u.first.Scalar();
                   if (user.empty() || user.find(':') != std::string::npos) {
                     throw Bad{LineOf(u.first), k + ": user names must be non-empty and without ':'"};
                   }
                   const std::string hash = yaml::String(u.second, k + "." + user);
                   if (!IsBcryptHash(hash)) {
                     throw Bad{LineOf(u.second),
                               k + "." + user + " is not a bcrypt hash ($2a$, $2b$ or $2y$, 60 characters)"};
                   }
                   c.basic_auth_users[user] = hash;
                 }
               }}});
      },
      error);
  if (ok) *config = std::move(c);
  return ok;
}

bool LoadWebConfig(const std::string& path, WebConfig* config, std::string* error) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  return config::ParseFile(
      path, [&](const std::string& text, std::string* why) { return ParseWebConfig(text, dir, config, why); }, error);
}

}  // namespace ibfabric::exporter
