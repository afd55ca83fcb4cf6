#pragma once
// A small logfmt logger to standard error. Owned by main and passed by
// reference; thread-safe (one line is written whole, by one fprintf).

#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace ibfabric::collectors {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

class Logger {
 public:
  // `context`: logfmt fields on every line, after msg (an exporter that
  // reads several fabrics gives each one's logger "subnet_prefix=0x...").
  explicit Logger(LogLevel min, std::string context = {}) : min_(min), context_(std::move(context)) {}
  static LogLevel LevelFrom(std::string_view name);

  void Log(LogLevel level, std::string_view msg, std::string_view fields = {});
  // Whether a line at `level` is written: to skip working out fields that
  // cost something when it is not.
  bool Enabled(LogLevel level) const { return level >= min_; }
  void Debug(std::string_view m, std::string_view f = {}) { Log(LogLevel::kDebug, m, f); }
  void Info(std::string_view m, std::string_view f = {}) { Log(LogLevel::kInfo, m, f); }
  void Warn(std::string_view m, std::string_view f = {}) { Log(LogLevel::kWarn, m, f); }
  void Error(std::string_view m, std::string_view f = {}) { Log(LogLevel::kError, m, f); }

 private:
  LogLevel min_;
  const std::string context_;
  std::mutex mu_;
};

// A logfmt value in double quotes, '"' and '\\' escaped (a JSON body, a
// server's error): `field=` + Quoted(text).
std::string Quoted(std::string_view text);

}  // namespace ibfabric::collectors
