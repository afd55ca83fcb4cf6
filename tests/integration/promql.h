#pragma once
// PromQL through a test's Prometheus server (tests/testbed/prometheus_server.h),
// for the suites that check what on-call's queries return, and the queries
// of the Grafana dashboards in dashboards/.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

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

// Grafana's variables as a person with "All" selected would have them; the
// interval variables as Grafana would fill them for a short time range.
// `sw` and `node`: what the switch and node variables expand to.
inline std::string Substitute(std::string expr, const std::string& sw = ".*", const std::string& node = ".*",
                              const std::string& topn = "10") {
  const std::vector<std::pair<std::string, std::string>> vars{{"$__rate_interval", "10s"},
                                                              {"$__range", "1m"},
                                                              {"$__interval", "2s"},
                                                              {"$fabric", "sim"},
                                                              {"$switch", sw},
                                                              {"$node", node},
                                                              {"$topn", topn},
                                                              {"$host", ".*"}};
  for (const auto& [k, v] : vars) {
    for (std::size_t at; (at = expr.find(k)) != std::string::npos;) expr.replace(at, k.size(), v);
  }
  return expr;
}

struct DashboardQuery {
  std::string dashboard;  // its file name
  std::string panel;      // its title
  std::string expr;
};

// Every query of every panel of the dashboards whose file `keep` takes.
inline std::vector<DashboardQuery> DashboardQueries(const std::function<bool(const std::string&)>& keep) {
  std::vector<DashboardQuery> out;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(IBFABRIC_SOURCE_DIR) + "/dashboards")) {
    if (entry.path().extension() != ".json" || !keep(entry.path().filename().string())) continue;
    std::ifstream in(entry.path());
    const nlohmann::json d = nlohmann::json::parse(in);
    std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& panels) {
      for (const auto& p : panels) {
        if (p.contains("panels")) walk(p["panels"]);
        if (!p.contains("targets")) continue;
        for (const auto& t : p["targets"]) {
          out.push_back({entry.path().filename().string(), p.value("title", ""), t.value("expr", "")});
        }
      }
    };
    walk(d["panels"]);
  }
  return out;
}

// The physical layer's dashboard wants a fabric of hardware personalities
// (FEC counters): PhysicalLayerTest runs it, the ecosystem suite the rest.
inline constexpr const char* kPhysicalLayerDashboard = "physical-layer.json";
// Its queries need the hosts' local exporters: HostSideTest runs them.
inline constexpr const char* kHostsDashboard = "hosts.json";

}  // namespace ibfabric::testbed
