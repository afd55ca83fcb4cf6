// The HTTP endpoint against a hand-published snapshot: readiness, paths.

#include <gtest/gtest.h>
#include <httplib.h>

#include "exporter/http_server.h"

namespace ibfabric::exporter {
namespace {

TEST(HttpServerTest, ReadyOnlyAfterASweepAndUnknownPathsAre404) {
  SnapshotHolder holder;
  auto first = std::make_shared<collectors::Snapshot>();
  first->fabric = std::make_shared<topology::Fabric>();
  first->exposition = "# nothing yet\n";
  holder.Publish(first);
  HttpServer http(holder, HttpOptions{"127.0.0.1", 0, "/metrics"});
  std::string error;
  ASSERT_TRUE(http.Start(&error)) << error;
  httplib::Client c("127.0.0.1", http.bound_port());

  auto r = c.Get("/readyz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  r = c.Get("/api/v1/topology");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503) << "no discovery yet";
  r = c.Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);

  auto swept = std::make_shared<collectors::Snapshot>(*first);
  swept->sweeps = 1;
  swept->exposition = "infiniband_exporter_sweeps_total 1\n";
  holder.Publish(swept);
  r = c.Get("/readyz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  r = c.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "infiniband_exporter_sweeps_total 1\n");
  r = c.Get("/no/such/path");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  http.Stop();
}

}  // namespace
}  // namespace ibfabric::exporter
