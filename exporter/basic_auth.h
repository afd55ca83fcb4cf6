#pragma once
// HTTP Basic authentication (RFC 7617) against the web config's users and
// their bcrypt hashes (exporter/web_config.h), as the exporter toolkit's
// web config defines it. A credential that passed bcrypt once is
// remembered by its SHA-256 digest only (bcrypt on every scrape would cost
// ~50 ms of CPU each); an unknown user is checked against a decoy hash at
// the users' cost, so timing does not tell which names exist.

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace ibfabric::exporter {

// RFC 4648 base64 (the Basic credentials' encoding); nullopt when malformed.
std::optional<std::string> DecodeBase64(const std::string& in);

// Ownership: copies the users (name -> bcrypt hash). Thread-safety: Check
// from any thread.
class BasicAuth {
 public:
  explicit BasicAuth(std::map<std::string, std::string> users);
  BasicAuth(const BasicAuth&) = delete;
  BasicAuth& operator=(const BasicAuth&) = delete;

  // Whether a request with this Authorization header value may go on:
  // always, without users.
  bool Check(const std::string& authorization);

 private:
  const std::map<std::string, std::string> users_;
  std::string decoy_hash_;  // checked for unknown users, so they cost as much as known ones
  std::mutex mu_;
  std::set<std::string> verified_;  // SHA-256 of Authorization values that passed bcrypt
};

}  // namespace ibfabric::exporter
