#pragma once
// PromQL through a test's Prometheus server (tests/testbed/prometheus_server.h),
// for the suites that check what on-call's queries return.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/testbed/prometheus_server.h"

namespace ibfabric::testbed {

// An instant query's result; an API error fails the test and yields [].
inline nlohmann::json RunPromQL(const PrometheusServer& p, const std::string& expr) {
  std::string error;
  auto r = p.Query(expr, &error);
  EXPECT_TRUE(r) << expr << ": " << error;
  return r ? *r : nlohmann::json::array();
}

// The value of a query that yields one series (0 when it yields none or fails).
inline double PromQLNumber(const PrometheusServer& p, const std::string& expr) {
  std::string error;
  auto r = p.Query(expr, &error);
  if (!r || r->empty()) return 0;
  return std::stod((*r)[0]["value"][1].get<std::string>());
}

}  // namespace ibfabric::testbed
