// GET /api/v1/collectors' body: the registry as an exporter runs it.

#include <gtest/gtest.h>

#include <string>

#include "collectors/api/json.h"
#include "collectors/registry.h"

namespace ibfabric::collectors {
namespace {

using nlohmann::json;

const json* Named(const json& body, const std::string& name) {
  for (const json& c : body["collectors"]) {
    if (c["name"] == name) return &c;
  }
  return nullptr;
}

TEST(CollectorsJsonTest, EveryCollectorInRunOrderWithItsEndpointsAndLastRun) {
  Snapshot s;
  s.collectors = {"port_counters", "slurm_topology"};
  s.runs["port_counters"] = {true, false, 0.25, 3};
  s.runs["slurm_topology"] = {false, false, 0, 0};  // on, not run yet
  const json body = CollectorsJson(s);
  ASSERT_EQ(body["collectors"].size(), Registry().size());
  for (std::size_t i = 0; i < Registry().size(); ++i) {
    EXPECT_EQ(body["collectors"][i]["name"], std::string(Registry()[i].name)) << "run order";
  }
  const json* counters = Named(body, "port_counters");
  ASSERT_NE(counters, nullptr);
  EXPECT_TRUE((*counters)["enabled"]);
  EXPECT_EQ((*counters)["last_run"], (json{{"success", false}, {"duration_seconds", 0.25}}));
  EXPECT_EQ((*counters)["routes"], json::array());
  const json* slurm = Named(body, "slurm_topology");
  ASSERT_NE(slurm, nullptr);
  EXPECT_FALSE(slurm->contains("last_run")) << "not run yet";
  EXPECT_EQ((*slurm)["routes"], json::parse(R"([{"path": "api/v1/slurm/topology.conf", "title": "Slurm topology.conf"},
                                                {"path": "api/v1/slurm/topology.yaml", "title": "Slurm topology.yaml"},
                                                {"path": "api/v1/slurm/topology", "title": "Slurm topology JSON"},
                                                {"path": "api/v1/placement", "title": "Host placement JSON"}])"));
  const json* sms = Named(body, "subnet_managers");
  ASSERT_NE(sms, nullptr);
  EXPECT_FALSE((*sms)["enabled"]) << "off in this exporter";
  EXPECT_EQ((*sms)["routes"][0]["path"], "api/v1/subnet_managers");
  const json* host = Named(body, "host");
  ASSERT_NE(host, nullptr);
  EXPECT_TRUE((*host)["this_host"]);
  EXPECT_FALSE((*counters)["this_host"]);
}

}  // namespace
}  // namespace ibfabric::collectors
