#include "tests/testbed/http_reply.h"

#include <strings.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "config/text.h"

namespace ibfabric::testbed {
namespace {

bool SameName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// A chunked body's data; false when the framing is broken.
bool Unchunk(std::string_view body, std::string* out) {
  while (true) {
    const auto eol = body.find("\r\n");
    if (eol == std::string_view::npos) return false;
    char* end = nullptr;
    const std::string size_text(body.substr(0, eol));
    const std::size_t size = std::strtoul(size_text.c_str(), &end, 16);
    if (size_text.empty() || *end != '\0') return false;
    body.remove_prefix(eol + 2);
    if (size == 0) return body == "\r\n";
    if (body.size() < size + 2 || body.substr(size, 2) != "\r\n") return false;
    out->append(body.substr(0, size));
    body.remove_prefix(size + 2);
  }
}

}  // namespace

std::optional<std::string> HttpReply::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (SameName(k, name)) return v;
  }
  return std::nullopt;
}

std::optional<HttpReply> ParseReply(std::string_view bytes, std::string* error) {
  HttpReply r;
  if (bytes.rfind("HTTP/1.1 ", 0) != 0 || bytes.size() < 12) {
    *error = "no status line";
    return std::nullopt;
  }
  r.status = std::atoi(std::string(bytes.substr(9, 3)).c_str());
  const auto head_end = bytes.find("\r\n\r\n");
  if (head_end == std::string_view::npos) {
    *error = "headers not ended";
    return std::nullopt;
  }
  for (std::size_t at = bytes.find("\r\n") + 2; at < head_end;) {
    const auto eol = bytes.find("\r\n", at);
    const std::string_view line = bytes.substr(at, eol - at);
    at = eol + 2;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) {
      *error = "a header line without a colon";
      return std::nullopt;
    }
    const auto value = line.find_first_not_of(' ', colon + 1);
    r.headers.emplace_back(line.substr(0, colon), value == std::string_view::npos ? "" : line.substr(value));
  }
  const std::string_view body = bytes.substr(head_end + 4);
  const auto coding = r.Header("Transfer-Encoding");
  if (coding && *coding == "chunked" && !body.empty()) {
    if (!Unchunk(body, &r.body)) {
      *error = "broken chunked framing";
      return std::nullopt;
    }
  } else {
    r.body = body;
  }
  return r;
}

std::string BrokenPromise(const HttpReply& reply, const std::string& body, const std::set<std::string>& documented) {
  if (reply.status < 100 || reply.status >= 500) return "status " + std::to_string(reply.status);
  for (const auto& [name, value] : reply.headers) {
    bool known = false;
    for (const auto& d : documented) known = known || SameName(d, name);
    if (!known) return "undocumented header " + name + ": " + config::Excerpt(value, 80);
  }
  const auto type = reply.Header("Content-Type");
  if (type && type->rfind("application/json", 0) == 0 && !body.empty()) {
    if (const auto bad = config::FirstInvalidUtf8(body)) return "JSON body not UTF-8 at byte " + std::to_string(*bad);
    if (!nlohmann::json::accept(body)) return "JSON body does not parse";
  }
  return {};
}

}  // namespace ibfabric::testbed
