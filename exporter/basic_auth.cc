#include "exporter/basic_auth.h"

#include <openssl/sha.h>

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>

#include "exporter/web_config.h"

namespace ibfabric::exporter {
namespace {

std::string Sha256(const std::string& s) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> d{};
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d.data());
  return std::string(d.begin(), d.end());
}

}  // namespace

std::optional<std::string> DecodeBase64(const std::string& in) {
  static constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  if (in.empty() || in.size() % 4 != 0) return std::nullopt;
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  std::size_t pad = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '=') {
      if (i + 2 < in.size() || ++pad > 2) return std::nullopt;
      continue;
    }
    if (pad > 0) return std::nullopt;
    const auto v = kAlphabet.find(in[i]);
    if (v == std::string_view::npos) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {
  // A hash of nothing anybody knows, at the users' cost ($2y$NN$...).
  if (!users_.empty()) {
    const std::string& some = users_.begin()->second;
    decoy_hash_ = HashPassword(Sha256(some), std::stoi(some.substr(4, 2)));
  }
}

bool BasicAuth::Check(const std::string& authorization) {
  if (users_.empty()) return true;
  if (authorization.size() < 6 || authorization.compare(0, 6, "Basic ") != 0) return false;
  const std::string digest = Sha256(authorization);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (verified_.count(digest)) return true;
  }
  const auto decoded = DecodeBase64(authorization.substr(6));
  if (!decoded) return false;
  const auto colon = decoded->find(':');
  if (colon == std::string::npos) return false;
  const auto user = users_.find(decoded->substr(0, colon));
  const std::string password = decoded->substr(colon + 1);
  const bool ok = CheckPassword(password, user == users_.end() ? decoy_hash_ : user->second) && user != users_.end();
  if (ok) {
    std::lock_guard<std::mutex> lock(mu_);
    if (verified_.size() >= 64) verified_.clear();
    verified_.insert(digest);
  }
  return ok;
}

}  // namespace ibfabric::exporter
