// collectors/fabric_jobs_collector.cc: the jobs on the fabric's host ports
// read back from Prometheus's instant query of the hosts'
// infiniband_host_port_job_info, through a fake HTTP client: the series'
// ports and jobs (Slurm ids, pods), answers that are not a vector refused
// with why, a read at most every --jobs.refresh and never awaited by the
// sweep, a failed read keeping the last good one, nothing outside fabric
// scope.

#include "collectors/fabric_jobs_collector.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "collectors/metrics.h"
#include "collectors/registry.h"
#include "tests/testbed/prom_text.h"

namespace ibfabric::collectors {
namespace {

using std::chrono::seconds;

// One series of infiniband_host_port_job_info as Prometheus answers it.
nlohmann::json Series(const std::string& guid, const std::string& port, const std::string& source,
                      const std::string& job, const std::string& pod = "") {
  nlohmann::json metric = {{"__name__", "infiniband_host_port_job_info"},
                           {"node_guid", guid},
                           {"port", port},
                           {"source", source},
                           {"hpc_job", job},
                           {"host", "cn0005"}};
  if (!pod.empty()) {
    metric["namespace"] = "team-a";
    metric["pod"] = pod;
  }
  return {{"metric", metric}, {"value", {1764460800.5, "1"}}};
}
std::string Answer(const nlohmann::json& result) {
  return nlohmann::json{{"status", "success"}, {"data", {{"resultType", "vector"}, {"result", result}}}}.dump();
}

TEST(FabricJobsTest, EachSeriesIsAPortAndItsJob) {
  std::string error;
  const auto at = ParseJobInfoQuery(
      Answer(nlohmann::json::array({Series("0x0000000000100005", "1", "slurm", "4242"),
                                    Series("0x0000000000100005", "1", "slurm", "5151"),
                                    Series("0x0000000000100009", "2", "kubernetes", "", "train-0"),
                                    Series("", "1", "slurm", "1"),  // no GUID: a device the host could not name
                                    Series("0x0000000000100009", "1", "slurm", ""),      // no job
                                    Series("0x0000000000100009", "0", "slurm", "3")})),  // no port 0 on an HCA
      &error);
  ASSERT_TRUE(at) << error;
  using Jobs = std::set<FabricJob>;
  EXPECT_EQ(*at, (std::map<topology::PortRef, Jobs>{
                     {{0x100005, 1}, Jobs{{"slurm", "4242"}, {"slurm", "5151"}}},
                     {{0x100009, 2}, Jobs{{"kubernetes", "team-a/train-0"}}},
                 }));
  EXPECT_TRUE(ParseJobInfoQuery(Answer(nlohmann::json::array()), &error)->empty());

  EXPECT_FALSE(ParseJobInfoQuery("<html>", &error));
  EXPECT_EQ(error, "not JSON");
  EXPECT_FALSE(ParseJobInfoQuery(R"({"status":"error","errorType":"bad_data","error":"parse error"})", &error));
  EXPECT_EQ(error, "the query failed: parse error");
  EXPECT_FALSE(ParseJobInfoQuery(R"({"status":"success","data":{"resultType":"matrix","result":[]}})", &error));
  EXPECT_EQ(error, "not an instant vector");
}

struct JobsBed {
  std::atomic<int> asked{0};
  std::atomic<int> status{200};
  std::string body = Answer(nlohmann::json::array({Series("0x0000000000100005", "1", "slurm", "4242")}));
  std::string url;
  Logger log{LogLevel::kError};
  topology::Fabric fabric;
  Snapshot parts;
  std::unique_ptr<Collector> c;
  std::chrono::steady_clock::time_point now{seconds(1000)};

  explicit JobsBed(const std::vector<std::string>& flags) {
    CollectorOptions o;
    for (const std::string& f : flags) {
      const auto eq = f.find('=');
      for (const CollectorFlag* flag : AllFlags()) {
        if (flag->name == f.substr(2, eq - 2)) {
          EXPECT_EQ(flag->apply(o, f.substr(eq + 1)), "");
        }
      }
    }
    o.http = [this](const HttpRequest& r) {
      url = r.url;
      ++asked;
      return HttpAnswer{status, status == 200 ? body : "", status == 0 ? "connection refused" : ""};
    };
    c = FindCollector("fabric_jobs")->make(o);
  }
  // One sweep at `now`, then its part.
  const FabricJobs* Sweep(topology::ScopeKind kind = topology::ScopeKind::kFabric) {
    Cycle cycle;
    cycle.fabric = &fabric;
    cycle.parts = &parts;
    cycle.log = &log;
    cycle.now = now;
    cycle.scope.kind = kind;
    c->Update(cycle);
    c->Publish(&parts);
    return parts.by_collector.Get<FabricJobs>(kFabricJobsCollector);
  }
  // Sweeps at `now` until the part differs from the one published before
  // (the answer to the read asked now, or to one asked by an earlier sweep,
  // taken: the client answers at once, its thread may not have run yet).
  // The first sweep may take an earlier read's answer itself.
  const FabricJobs* Settle() {
    const FabricJobs* before = parts.by_collector.Get<FabricJobs>(kFabricJobsCollector);
    const auto give_up = std::chrono::steady_clock::now() + seconds(10);
    const FabricJobs* j = Sweep();
    while (j == before && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      j = Sweep();
    }
    EXPECT_NE(j, before) << "no answer taken within 10 s";
    return j;
  }
};

TEST(FabricJobsTest, ReadAtMostEachRefreshAndAFailureKeepsTheLastGoodRead) {
  JobsBed b({"--jobs.prometheus-url=http://prom:9090/", "--jobs.refresh=30s"});
  const FabricJobs* j = b.Sweep();
  ASSERT_NE(j, nullptr);
  EXPECT_FALSE(j->known) << "asked, not yet taken";
  j = b.Settle();
  EXPECT_TRUE(j->known);
  EXPECT_EQ(j->error, "");
  EXPECT_EQ(b.url, "http://prom:9090/api/v1/query?query=infiniband_host_port_job_info");
  EXPECT_EQ(j->at.at({0x100005, 1}), (std::set<FabricJob>{{"slurm", "4242"}}));
  EXPECT_EQ(b.asked, 1);
  b.now += seconds(29);
  b.Sweep();
  EXPECT_EQ(b.asked, 1) << "within the refresh";

  // Prometheus gone: the last good read stays, with why.
  b.status = 0;
  b.now += seconds(1);
  j = b.Settle();
  EXPECT_EQ(b.asked, 2);
  EXPECT_TRUE(j->known);
  EXPECT_EQ(j->at.size(), 1u);
  EXPECT_EQ(j->error, "http://prom:9090/api/v1/query?query=infiniband_host_port_job_info: connection refused");
  b.parts.collectors = {"fabric_jobs"};
  testbed::Scrape m = testbed::Scrape::Parse(RenderExposition(b.parts, "test"));
  EXPECT_EQ(m.Value("infiniband_fabric_jobs_source_up"), 0);

  // Back, with the job gone.
  b.status = 200;
  b.body = Answer(nlohmann::json::array());
  b.now += seconds(30);
  j = b.Settle();
  EXPECT_EQ(j->error, "");
  EXPECT_TRUE(j->at.empty());
  m = testbed::Scrape::Parse(RenderExposition(b.parts, "test"));
  EXPECT_EQ(m.Value("infiniband_fabric_jobs_source_up"), 1);
  EXPECT_EQ(m.Value("infiniband_fabric_jobs"), 0);
}

TEST(FabricJobsTest, OffWithoutAUrlAndOutsideFabricScope) {
  JobsBed off({});
  EXPECT_EQ(off.Sweep(), nullptr);
  EXPECT_EQ(off.asked, 0);
  JobsBed local({"--jobs.prometheus-url=http://prom:9090"});
  EXPECT_EQ(local.Sweep(topology::ScopeKind::kLocal), nullptr);
  EXPECT_EQ(local.asked, 0);
  CollectorOptions o;
  for (const CollectorFlag* flag : AllFlags()) {
    if (flag->name == "jobs.prometheus-url") {
      EXPECT_EQ(flag->apply(o, "prom:9090"), "'prom:9090' is not an http(s):// URL");
    }
    if (flag->name == "jobs.refresh") {
      EXPECT_NE(flag->apply(o, "10ms"), "");
    }
  }
}

}  // namespace
}  // namespace ibfabric::collectors
