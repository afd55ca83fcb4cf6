#pragma once
// Times in the JSON APIs: UTC, whole seconds, "2026-11-22T05:01:21Z".

#include <chrono>
#include <string>

namespace ibfabric::collectors {

std::string Iso8601(std::chrono::system_clock::time_point t);

}  // namespace ibfabric::collectors
