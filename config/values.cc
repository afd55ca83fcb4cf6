#include "config/values.h"

#include <charconv>

namespace ibfabric::config {

bool ParseDuration(const std::string& text, std::chrono::milliseconds* out) {
  std::size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  if (i == 0 || i > 12) return false;
  const long long n = std::stoll(text.substr(0, i));
  const std::string unit = text.substr(i);
  long long ms_per = 0;
  if (unit == "ms")
    ms_per = 1;
  else if (unit == "s")
    ms_per = 1000;
  else if (unit == "m")
    ms_per = 60'000;
  else if (unit == "h")
    ms_per = 3'600'000;
  else
    return false;
  *out = std::chrono::milliseconds(n * ms_per);
  return true;
}

bool ParseInt(const std::string& text, long long lo, long long hi, long long* out) {
  long long v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

std::string DurationValue(const std::string& text, std::chrono::milliseconds min, std::chrono::milliseconds* out) {
  std::chrono::milliseconds d;
  if (!ParseDuration(text, &d)) return "'" + text + "' is not a duration (e.g. 500ms, 10s, 5m)";
  if (d < min) return "must be at least " + std::to_string(min.count()) + "ms";
  *out = d;
  return "";
}

std::string IntValue(const std::string& text, long long lo, long long hi, int* out) {
  long long n = 0;
  if (!ParseInt(text, lo, hi, &n)) {
    return "'" + text + "' is not an integer in " + std::to_string(lo) + ".." + std::to_string(hi);
  }
  *out = static_cast<int>(n);
  return "";
}

std::string UrlValue(const std::string& text, std::string* out) {
  if (text.rfind("http://", 0) != 0 && text.rfind("https://", 0) != 0) return "'" + text + "' is not an http(s):// URL";
  std::string u = text;
  while (u.size() > 8 && u.back() == '/') u.pop_back();
  *out = u;
  return "";
}

}  // namespace ibfabric::config
