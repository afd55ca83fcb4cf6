#pragma once
// A severity and the two levels that give it, shared by the alert engine
// (alerts.h) and its tables (ber_levels.h).

#include <cstdint>
#include <optional>

namespace ibfabric::collectors {

enum class Severity : std::uint8_t { kWarning, kCritical };
const char* ToString(Severity s);  // "warning", "critical"

// A value at or above `critical` is critical, else at or above `warning` a
// warning; an unset level never fires.
struct Threshold {
  std::optional<double> warning;
  std::optional<double> critical;
  std::optional<Severity> Judge(double value) const;
  // The level that stands for `s`.
  std::optional<double> LevelOf(Severity s) const { return s == Severity::kCritical ? critical : warning; }
};

}  // namespace ibfabric::collectors
