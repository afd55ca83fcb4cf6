#pragma once
// One HTTP reply as the bytes a client received, and what the exporter's
// HTTP layer promises of every reply (exporter/http_routes.h): checked the
// same way by the HTTP fuzz target (tests/fuzz/http_fuzz.cc, on replies
// from memory) and integration.http (on replies of the real binary).

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ibfabric::testbed {

struct HttpReply {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // in order, as sent
  std::string body;                                          // what follows the headers; chunked framing undone

  // The first header of that name, without regard to case; nullopt if none.
  std::optional<std::string> Header(std::string_view name) const;
};

// `bytes` as exactly one reply (a HEAD reply's body is empty); nullopt with
// *error when it is not one: no status line, headers not ended, broken
// chunked framing.
std::optional<HttpReply> ParseReply(std::string_view bytes, std::string* error);

// What broke of the promises, empty when none did: the status is below 500;
// every header is one of `documented` (compared without regard to case);
// a JSON body (`body`: the reply's, inflated where it was compressed; empty
// for a HEAD reply) is valid UTF-8 and parses as JSON.
std::string BrokenPromise(const HttpReply& reply, const std::string& body, const std::set<std::string>& documented);

}  // namespace ibfabric::testbed
