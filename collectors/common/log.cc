#include "collectors/common/log.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace ibfabric::collectors {

LogLevel Logger::LevelFrom(std::string_view name) {
  if (name == "debug") return LogLevel::kDebug;
  if (name == "warn") return LogLevel::kWarn;
  if (name == "error") return LogLevel::kError;
  return LogLevel::kInfo;
}

void Logger::Log(LogLevel level, std::string_view msg, std::string_view fields) {
  if (!Enabled(level)) return;
  static constexpr const char* kNames[] = {"debug", "info", "warn", "error"};
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
  std::lock_guard lock(mu_);
  std::fprintf(stderr, "ts=%s.%03lldZ level=%s msg=\"%.*s\"%s%s%s%.*s\n", ts, static_cast<long long>(ms),
               kNames[static_cast<int>(level)], static_cast<int>(msg.size()), msg.data(), context_.empty() ? "" : " ",
               context_.c_str(), fields.empty() ? "" : " ", static_cast<int>(fields.size()), fields.data());
}

std::string Quoted(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

}  // namespace ibfabric::collectors
