#pragma once
// The web configuration file (--web.config.file), in the format of
// Prometheus's exporter-toolkit, so the file an operator already keeps for
// node_exporter works here:
//
//   tls_server_config:
//     cert_file: server.crt          # PEM; relative paths are relative to this file
//     key_file: server.key
//     client_auth_type: RequireAndVerifyClientCert   # default NoClientCert
//     client_ca_file: clients.crt    # needed by the Verify* client auth types
//     min_version: TLS12             # TLS10, TLS11, TLS12 (default), TLS13
//     max_version: TLS13
//     prefer_server_cipher_suites: true
//   http_server_config:
//     http2: true                    # accepted; this server speaks HTTP/1.1
//     headers:                       # added to every response
//       Strict-Transport-Security: max-age=31536000
//   basic_auth_users:
//     prometheus: $2y$10$...         # bcrypt hashes only
//
// Unknown keys are errors, as in exporter-toolkit (it reads the file
// strictly). cipher_suites and curve_preferences take Go's names, which do
// not map one to one onto OpenSSL's: they are refused rather than ignored.

#include <map>
#include <optional>
#include <string>

namespace ibfabric::exporter {

enum class ClientAuth {
  kNone,              // NoClientCert
  kRequest,           // RequestClientCert: asked for, not required, not verified
  kRequireAny,        // RequireAnyClientCert: required, not verified
  kVerifyIfGiven,     // VerifyClientCertIfGiven
  kRequireAndVerify,  // RequireAndVerifyClientCert
};

struct TlsConfig {
  std::string cert_file;  // absolute after parsing
  std::string key_file;
  std::string client_ca_file;  // empty: none
  ClientAuth client_auth = ClientAuth::kNone;
  int min_version = 0x0303;  // TLS protocol numbers: 0x0301 TLS 1.0 .. 0x0304 TLS 1.3
  int max_version = 0;       // 0: the highest the library has
  bool prefer_server_cipher_suites = true;
};

struct WebConfig {
  std::optional<TlsConfig> tls;
  std::map<std::string, std::string> basic_auth_users;  // user -> bcrypt hash
  std::map<std::string, std::string> headers;           // added to every response
};

// Pure. `dir` resolves relative file names (the config file's folder).
// False with "line N: reason".
bool ParseWebConfig(const std::string& text, const std::string& dir, WebConfig* config, std::string* error);
// False with "FILE:N: reason" or "FILE: cannot read: ...".
bool LoadWebConfig(const std::string& path, WebConfig* config, std::string* error);

// True when `hash` is a bcrypt hash that crypt(3) accepts.
bool IsBcryptHash(const std::string& hash);
// Does `password` match the bcrypt `hash`? Constant time in the comparison.
bool CheckPassword(const std::string& password, const std::string& hash);
// A new bcrypt hash of `password` at `cost` (4..31); empty on failure.
std::string HashPassword(const std::string& password, int cost = 10);

}  // namespace ibfabric::exporter
