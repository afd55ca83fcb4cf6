#pragma once
// The values flags and configuration files take, parsed one way wherever
// they are given: durations ("500ms", "10s", "2m", "1h"), bounded
// integers and service URLs. Pure.

#include <chrono>
#include <string>

namespace ibfabric::config {

// "10s", "500ms", "2m", "1h" into milliseconds; false when malformed (no
// digits, a fraction, another unit, more than 12 digits).
bool ParseDuration(const std::string& text, std::chrono::milliseconds* out);

// A decimal integer in lo..hi, nothing else in `text`; false otherwise.
bool ParseInt(const std::string& text, long long lo, long long hi, long long* out);

// The same as a flag's value: "" and `*out` set, or what is wrong with it
// in one line that names no flag ("'x' is not a duration (e.g. 500ms, 10s,
// 5m)", "must be at least 100ms", "'x' is not an integer in 1..64").
std::string DurationValue(const std::string& text, std::chrono::milliseconds min, std::chrono::milliseconds* out);
std::string IntValue(const std::string& text, long long lo, long long hi, int* out);
// An http:// or https:// URL of a service, its trailing '/'s dropped
// ("'x' is not an http(s):// URL" otherwise).
std::string UrlValue(const std::string& text, std::string* out);

}  // namespace ibfabric::config
