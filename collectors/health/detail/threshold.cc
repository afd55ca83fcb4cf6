#include "collectors/health/detail/threshold.h"

namespace ibfabric::collectors {

const char* ToString(Severity s) { return s == Severity::kCritical ? "critical" : "warning"; }

std::optional<Severity> Threshold::Judge(double value) const {
  if (critical && value >= *critical) return Severity::kCritical;
  if (warning && value >= *warning) return Severity::kWarning;
  return std::nullopt;
}

}  // namespace ibfabric::collectors
