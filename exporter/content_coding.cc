#include "exporter/content_coding.h"

#include <cstdlib>
#include <vector>

namespace ibfabric::exporter {
namespace {

// The codings an Accept-Encoding lists: each one's name and its whole
// entry (name and parameters, e.g. "gzip;q=0.5"), blanks around trimmed.
struct Coding {
  std::string name;
  std::string entry;
};
std::vector<Coding> Codings(const std::string& accept) {
  std::vector<Coding> out;
  std::size_t start = 0;
  while (start < accept.size()) {
    std::size_t end = accept.find(',', start);
    if (end == std::string::npos) end = accept.size();
    const std::string token = accept.substr(start, end - start);
    start = end + 1;
    const auto first = token.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    const auto name_end = token.find_first_of(" \t;", first);
    out.push_back({token.substr(first, name_end == std::string::npos ? std::string::npos : name_end - first),
                   token.substr(first)});
  }
  return out;
}

}  // namespace

std::string WithoutBrotli(const std::string& accept) {
  std::string out;
  for (const Coding& c : Codings(accept)) {
    if (c.entry.find("br") == std::string::npos) out += (out.empty() ? "" : ", ") + c.entry;
  }
  return out;
}

bool AcceptsGzip(const std::string& accept) {
  for (const Coding& c : Codings(accept)) {
    if (c.name != "gzip" && c.name != "x-gzip" && c.name != "*") continue;
    const auto q = c.entry.find("q=");
    if (q == std::string::npos || std::strtod(c.entry.c_str() + q + 2, nullptr) > 0) return true;
  }
  return false;
}

}  // namespace ibfabric::exporter
