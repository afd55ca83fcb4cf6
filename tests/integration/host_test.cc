// The host side on the simulator: a local exporter on a host of ibsim's
// fabric reads that host's kernel (a sysfs tree laid out as the kernel's,
// through --host.sysfs) beside its cable, and the status page's host view
// shows what the kernel says: the PCIe link against its maximum, firmware,
// NUMA node and the transport errors the host rules watch. Which jobs hold
// the host's HCA come from a fake kubelet speaking the real pod-resources
// gRPC API and a Slurm mapping directory, one series per HCA port and job,
// gone at the first scrape after the pod ends.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "tests/integration/fabric_suite.h"
#include "tests/integration/promql.h"
#include "tests/testbed/browser.h"
#include "tests/testbed/fake_kubelet.h"
#include "tests/testbed/host_sysfs.h"
#include "tests/testbed/prometheus_server.h"

namespace ibfabric::testbed {
namespace {

using nlohmann::json;
using std::chrono::seconds;

class HostSideTest : public FabricSuite {
 protected:
  // The what-if with the jobs (GET /api/v1/whatif), from a fabric exporter
  // that reads them back from this Prometheus (--jobs.prometheus-url): the
  // cable of a host with a job waits for that job, naming it; a host cable
  // under no job is safe now; a spine cable names exactly the jobs with a
  // host among the routes it lists (all of them: limit 1000) and is safe now.
  static void WhatIfWaitsForTheJobs(const Scrape& f, const PrometheusServer& prometheus,
                                    const std::map<int, std::vector<std::string>>& jobs_of) {
    auto fabric = StartExporter({"--sweep.interval=300ms", "--jobs.refresh=1s",
                                 "--jobs.prometheus-url=http://127.0.0.1:" + std::to_string(prometheus.port())});
    ASSERT_NE(fabric, nullptr);
    const auto whatif = [&](const std::string& guid, int port) {
      json j;
      EXPECT_TRUE(WaitUntil(
          [&] {
            int status = 0;
            j = json::parse(
                fabric->Get("/api/v1/whatif?cable=" + guid + ":" + std::to_string(port) + "&limit=1000", &status),
                nullptr, false);
            return status == 200 && j["jobs_source"]["known"] == true;
          },
          seconds(30), std::chrono::milliseconds(250)))
          << j.dump() << fabric->Log();
      return j;
    };
    const auto short_name = [](const std::string& host) { return host.substr(0, host.find(' ')); };
    const int with_job = jobs_of.begin()->first;  // cn0005: job 4242 alone
    const std::string host = short_name(tree_->Host(with_job));
    json w = whatif(NodeGuid(f, tree_->Host(with_job)), 1);
    EXPECT_EQ(w["verdict"], "wait") << w.dump();
    EXPECT_EQ(w["reason"], "wait for job " + jobs_of.at(with_job)[0] + " (" + host +
                               " loses every path); 1 hosts lose "
                               "every path (" +
                               host + ")");
    bool named = false;
    for (const json& j : w["jobs"]) {
      if (j["job"] != jobs_of.at(with_job)[0]) continue;
      named = true;
      EXPECT_EQ(j["source"], "slurm");
      EXPECT_EQ(j["hosts_cut_off"], json::array({host}));
    }
    EXPECT_TRUE(named) << w["jobs"].dump();

    const std::string idle = short_name(tree_->Host(3));  // no job
    w = whatif(NodeGuid(f, tree_->Host(3)), 1);
    EXPECT_EQ(w["verdict"], "safe now") << w.dump();
    EXPECT_EQ(w["reason"], "1 hosts lose every path (" + idle +
                               ") but run no job: drain them first so that none "
                               "starts there");

    // A spine cable: the jobs named are those with a host among the routes.
    const Endpoint uplink = tree_->LeafUplink(2, 1);
    w = whatif(Guid(f, uplink.node), uplink.port);
    EXPECT_EQ(w["verdict"], "safe now") << w.dump();
    ASSERT_EQ(w["listed"].size(), w["routes"].get<std::size_t>());
    std::set<std::string> on_routes;
    for (const json& r : w["listed"]) {
      for (const char* end : {"from", "to"}) {
        const std::string port = r[end].get<std::string>();
        on_routes.insert(short_name(port.substr(0, port.rfind('['))));
      }
    }
    std::set<std::string> want, named_jobs;
    for (const auto& [h, ids] : jobs_of) {
      if (on_routes.count(short_name(tree_->Host(h)))) want.insert(ids.begin(), ids.end());
    }
    for (const json& j : w["jobs"]) named_jobs.insert(j["job"].get<std::string>());
    EXPECT_EQ(named_jobs, want) << w["jobs"].dump();
    EXPECT_FALSE(want.empty()) << "the spine cable carries a route of a host with a job";
    std::cout << "[ figures  ] what-if with jobs: a spine cable moves the routes of " << want.size() << " jobs\n";
  }
  static void SetUpTestSuite() {
    // Four leaves of four hosts, two spines: 16 host ports, 240 routes
    // between them, routed by opensm.
    FatTreeSpec spec = Spec(4, 2, 4, 1, 8);
    spec.hcas_per_host = 1;  // "cn0001 mlx5_0", as rdma-ndd names them: hosts
    StartFabric(spec);
    if (!sim_) return;
    StartResidentSm();
  }

  // The local exporter of host h over `sysfs`, after its first sweep.
  static std::unique_ptr<ExporterProcess> Local(int h, const HostSysfs& sysfs,
                                                const std::vector<std::string>& more = {}) {
    std::string error;
    std::vector<std::string> args{"--scope=local", "--sweep.interval=300ms", "--mad.timeout=20ms",
                                  "--host.sysfs=" + sysfs.root(), "--host.proc=" + sysfs.proc()};
    args.insert(args.end(), more.begin(), more.end());
    auto e = ExporterProcess::Start(*sim_, args, &error, {}, FabricEnv({{"SIM_HOST", tree_->Host(h)}}));
    EXPECT_NE(e, nullptr) << error;
    if (e && !e->WaitForSweeps(1, seconds(60))) {
      ADD_FAILURE() << "no sweep: " << e->Log();
      return nullptr;
    }
    return e;
  }
  // The node GUID of host h's HCA as a fabric exporter reads it.
  static std::uint64_t HcaGuid(int h) {
    auto fabric = StartExporter({"--sweep.interval=1s"});
    if (!fabric) return 0;
    return std::stoull(NodeGuid(fabric->ScrapeMetrics(), tree_->Host(h)), nullptr, 16);
  }
};

TEST_F(HostSideTest, TheHostViewShowsWhatItsKernelSaysBesideItsCable) {
  const int h = 3;
  const std::string host = tree_->Host(h).substr(0, tree_->Host(h).find(' '));  // "cn0003"
  HostSysfs sysfs;
  sysfs.AddHca("mlx5_0", HcaGuid(h), tree_->Host(h), "0000:3b:00.0");
  sysfs.SetPcieLink("0000:3b:00.0", "16.0 GT/s PCIe", 8);
  sysfs.SetHwCounter("mlx5_0", 1, "local_ack_timeout_err", 12);
  sysfs.SetHwCounter("mlx5_0", 1, "out_of_buffer", 0);
  const std::string jobs = MakeTempDir("host-view-jobs");
  ASSERT_TRUE(WriteFile(jobs + "/mlx5_0", "777\n"));
  const auto local = Local(h, sysfs, {"--host.job-mapping-dir=" + jobs});
  ASSERT_NE(local, nullptr);

  int status = 0;
  const json d = json::parse(local->Get("/api/v1/host?name=" + host, &status), nullptr, false);
  ASSERT_EQ(status, 200) << d.dump();
  ASSERT_EQ(d["hcas"].size(), 1u) << d.dump();
  const json& k = d["hcas"][0]["kernel"];
  ASSERT_TRUE(k.is_object()) << d.dump();
  EXPECT_EQ(k["device"], "mlx5_0");
  EXPECT_EQ(k["firmware_version"], "28.39.1002");
  EXPECT_EQ(k["pci_address"], "0000:3b:00.0");
  EXPECT_EQ(k["numa_node"], 0);
  EXPECT_EQ(k["pcie"], (json{{"transfers_per_second", 16e9},
                             {"width", 8},
                             {"max_transfers_per_second", 32e9},
                             {"max_width", 16},
                             {"degraded", true}}));
  EXPECT_EQ(k["ports"][0]["transport_errors"], (json{{"local_ack_timeout_err", 12}, {"out_of_buffer", 0}}));
  EXPECT_EQ(
      k["ports"][0]["jobs"],
      (json::array({{{"source", "slurm"}, {"hpc_job", "777"}, {"namespace", ""}, {"pod", ""}, {"container", ""}}})));
  // A fabric exporter does not read the host: no kernel view.
  {
    auto fabric = StartExporter({"--sweep.interval=1s"});
    ASSERT_NE(fabric, nullptr);
    const json f = json::parse(fabric->Get("/api/v1/host?name=" + host, &status), nullptr, false);
    ASSERT_EQ(status, 200);
    EXPECT_TRUE(f["hcas"][0]["kernel"].is_null()) << f.dump();
  }

  // The status page's host view, in a browser.
  std::string error;
  auto browser = Browser::Start(&error);
  ASSERT_NE(browser, nullptr) << error;
  ASSERT_TRUE(browser->Navigate("http://127.0.0.1:" + std::to_string(local->port()) + "/#host=" + host, &error))
      << error;
  ASSERT_TRUE(browser->WaitFor("return document.querySelector('#host-kernel tbody tr') !== null;", seconds(30), &error))
      << error;
  const auto row = browser->Execute(R"(
      const r = document.querySelector('#host-kernel tbody tr');
      return {device: r.dataset.device, pcie: r.dataset.pcie, cells: [...r.children].map((c) => c.textContent)};)",
                                    &error);
  ASSERT_TRUE(row) << error;
  EXPECT_EQ((*row)["device"], "mlx5_0");
  EXPECT_EQ((*row)["pcie"], "degraded");
  EXPECT_EQ((*row)["cells"],
            (json{"mlx5_0", "28.39.1002", "16 GT/s x8 of 32 GT/s x16", "0", "local_ack_timeout_err 12", "job 777"}))
      << row->dump();
  EXPECT_TRUE(browser->Screenshot(std::string(IBFABRIC_ARTIFACT_DIR) + "/status-host-kernel.png", &error)) << error;
  RemoveTree(jobs);
}

TEST_F(HostSideTest, JobsFromTheKubeletAndSlurmAreOneSeriesPerHcaPortAndGoWithTheirPods) {
  const int h = 2;
  const std::string host = tree_->Host(h).substr(0, tree_->Host(h).find(' '));
  // The HCA behind a PCIe switch with a GPU; a virtual function of it.
  const std::string sw = "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0";
  const std::string sw_hca = "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0";
  HostSysfs sysfs;
  sysfs.AddHca("mlx5_0", HcaGuid(h), tree_->Host(h), "0000:04:00.0", sw_hca);
  sysfs.AddGpu("0000:03:00.0", "GPU-5e1f0c1a-8d2b-4c3e-9f4a-000000000001", sw);
  sysfs.AddVirtualFunction("0000:04:00.2", "0000:04:00.0", sw_hca);
  const std::string dir = MakeTempDir("host-jobs");
  // Slurm's prolog for job 4242 (no GPUs: every HCA of the node) and job
  // 4343 (GPU 0: the exporter finds its HCA), the shipped scripts.
  const auto slurm = [&](const std::string& script, const std::string& job, const std::string& gpus) {
    Env env{{"SLURM_JOB_ID", job}, {"IBFABRIC_JOB_MAPPING_DIR", dir + "/slurm"}, {"IBFABRIC_SYSFS", sysfs.root()}};
    if (!gpus.empty()) env["SLURM_JOB_GPUS"] = gpus;
    const CommandResult r =
        RunCommand({"sh", std::string(IBFABRIC_SOURCE_DIR) + "/deploy/slurm/" + script}, env, std::chrono::seconds(10));
    EXPECT_EQ(r.exit_code, 0) << script << " " << job << ": " << r.err;
  };
  slurm("prolog.sh", "4242", "");
  slurm("prolog.sh", "4343", "0");
  std::string error;
  auto kubelet = FakeKubelet::Start(dir + "/kubelet.sock", &error);
  ASSERT_NE(kubelet, nullptr) << error;
  const FakePod train{
      "ml", "train-0", {{"trainer", {{"nvidia.com/gpu", {"GPU-5e1f0c1a-8d2b-4c3e-9f4a-000000000001"}}}}}};
  const FakePod infer{"ml", "infer-1", {{"server", {{"nvidia.com/mlnx_sriov_rdma", {"0000:04:00.2"}}}}}};
  const FakePod other{"default", "web", {{"nginx", {{"example.com/thing", {"thing-0"}}}}}};
  kubelet->SetPods({train, infer, other});
  const auto local =
      Local(h, sysfs, {"--host.kubelet-socket=" + dir + "/kubelet.sock", "--host.job-mapping-dir=" + dir + "/slurm"});
  ASSERT_NE(local, nullptr);
  const auto jobs = [](const Scrape& s) {
    std::set<std::string> out;
    for (const auto& x : s.Find("infiniband_host_port_job_info")) {
      EXPECT_EQ(x.value, 1);
      EXPECT_EQ(x.labels.at("device"), "mlx5_0");
      EXPECT_EQ(x.labels.at("port"), "1");
      out.insert(x.labels.at("source") + " " + x.labels.at("hpc_job") + " " + x.labels.at("namespace") + "/" +
                 x.labels.at("pod") + "/" + x.labels.at("container") + " " + x.labels.at("resource") + " " +
                 x.labels.at("host"));
    }
    return out;
  };
  Scrape s = local->ScrapeMetrics();
  EXPECT_EQ(jobs(s), (std::set<std::string>{"kubernetes  ml/train-0/trainer nvidia.com/gpu " + host,
                                            "kubernetes  ml/infer-1/server nvidia.com/mlnx_sriov_rdma " + host,
                                            "slurm 4242 //  " + host, "slurm 4343 //  " + host}));
  EXPECT_EQ(s.Value("infiniband_host_job_unmatched_devices", {{"source", "kubernetes"}}), 1) << "thing-0";
  EXPECT_EQ(s.Value("infiniband_host_job_source_up", {{"source", "kubernetes"}}), 1);
  EXPECT_EQ(s.Value("infiniband_host_job_source_up", {{"source", "slurm"}}), 1);
  EXPECT_EQ(s.Find("infiniband_host_port_job_info")[0].labels.at("node_guid"),
            NodeGuid(local->ScrapeMetrics(), tree_->Host(h)))
      << "joins the fabric's infiniband_hca_info on node_guid";

  // train-0 ends and the Slurm job's epilog runs: neither is in the first
  // scrape after the exporter's next sweep that followed the kubelet's word.
  kubelet->SetPods({infer, other});
  slurm("epilog.sh", "4242", "");
  const int asked = kubelet->lists();
  ASSERT_TRUE(WaitUntil([&] { return kubelet->lists() > asked; }, seconds(10), std::chrono::milliseconds(20)));
  const double sweeps = local->ScrapeMetrics().Value("infiniband_exporter_sweeps_total").value_or(0);
  ASSERT_TRUE(local->WaitForSweeps(sweeps + 1, seconds(10)));
  EXPECT_EQ(jobs(local->ScrapeMetrics()),
            (std::set<std::string>{"kubernetes  ml/infer-1/server nvidia.com/mlnx_sriov_rdma " + host,
                                   "slurm 4343 //  " + host}));
  slurm("epilog.sh", "4343", "");
  EXPECT_FALSE(std::filesystem::exists(dir + "/slurm/0")) << "a device no job holds loses its file";
  EXPECT_FALSE(std::filesystem::exists(dir + "/slurm/mlx5_0"));

  // The kubelet goes away: its source is down and says so, no pod is guessed.
  kubelet.reset();
  ASSERT_TRUE(local->WaitFor(
      [](const Scrape& x) {
        return x.Value("infiniband_host_job_source_up", {{"source", "kubernetes"}}) == 0;
      },
      seconds(15)))
      << local->Log();
  EXPECT_TRUE(local->ScrapeMetrics().Find("infiniband_host_port_job_info").empty());
  RemoveTree(dir);
}

// The hops of `ibtracert SRC_LID DST_LID` as cables: each "[out] -> ...
// port {guid}[in] lid ... \"name\"" line leaves the previous node by `out`
// and reaches `name` by `in`. Names and ports, "name[port]".
std::vector<std::pair<std::string, std::string>> Traced(const std::string& out) {
  std::vector<std::pair<std::string, std::string>> hops;
  std::string from;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    const auto q1 = line.find('"'), q2 = line.rfind('"');
    if (q1 == std::string::npos || q2 <= q1) continue;
    const std::string name = line.substr(q1 + 1, q2 - q1 - 1);
    if (line.rfind("From ", 0) == 0) {
      from = name;
    } else if (line[0] == '[') {
      const std::string out_port = line.substr(1, line.find(']') - 1);
      const auto b = line.find("}[");
      const std::string in_port = line.substr(b + 2, line.find(']', b + 2) - b - 2);
      hops.emplace_back(from + "[" + out_port + "]", name + "[" + in_port + "]");
      from = name;
    }
  }
  return hops;
}

TEST_F(HostSideTest, ABadSpineCableHurtsExactlyTheRoutesIbtracertSendsThroughIt) {
  const std::string dir = MakeTempDir("blast");
  ASSERT_TRUE(WriteFile(dir + "/alerts.yaml", kPagingAlerts));
  auto fabric = StartExporter({"--sweep.interval=300ms", "--alerts.config=" + dir + "/alerts.yaml"});
  ASSERT_NE(fabric, nullptr);
  const Endpoint leaf = tree_->LeafUplink(2, 1);
  const Endpoint spine = *tree_->Peer(leaf);
  const auto name = [](const Endpoint& e) { return e.node + "[" + std::to_string(e.port) + "]"; };
  const std::set<std::string> bad{name(leaf), name(spine)};
  Ramp ramp(leaf, "PortCounters.SymbolErrorCounter", 10, 60000);
  json alert;
  ASSERT_TRUE(WaitUntil(
      [&] {
        const json a = json::parse(fabric->Get("/api/v1/alerts?state=active"), nullptr, false);
        for (const json& x : a.is_discarded() ? json::array() : a["active"]) {
          if (x["cause"] != "bad_cable" || x["blast_radius"].is_null()) continue;
          std::set<std::string> ends;
          for (const json& e : x["ends"])
            ends.insert(e["node"].get<std::string>() + "[" + std::to_string(e["port"].get<int>()) + "]");
          if (ends == bad) alert = x;
        }
        return !alert.is_null();
      },
      seconds(60), std::chrono::milliseconds(250)))
      << fabric->Get("/api/v1/alerts?state=active");

  // Every ordered pair of the 16 host ports: ibtracert between their LIDs
  // against the exporter's route and its counts.
  const Scrape s = fabric->ScrapeMetrics();
  struct HostPort {
    std::string name, guid, lid;
  };
  std::vector<HostPort> hosts;
  for (const auto& x : s.Find("infiniband_hca_info")) {
    hosts.push_back({x.labels.at("hca"), x.labels.at("node_guid"), x.labels.at("lid")});
  }
  ASSERT_EQ(hosts.size(), 16u);
  std::size_t crossing = 0, pairs = 0;
  std::map<std::string, std::pair<int, int>> per_port;  // name -> sends, receives
  for (const HostPort& a : hosts) {
    for (const HostPort& b : hosts) {
      if (a.name == b.name) continue;
      ++pairs;
      const CommandResult t = sim_->Tool({"ibtracert", a.lid, b.lid}, std::chrono::milliseconds(20000));
      ASSERT_EQ(t.exit_code, 0) << a.name << " -> " << b.name << ": " << t.err;
      bool through = false;
      for (const auto& [x, y] : Traced(t.out)) through = through || (bad.count(x) && bad.count(y));
      int status = 0;
      const json r =
          json::parse(fabric->Get("/api/v1/route?from=" + a.guid + ":1&to=" + b.guid + ":1", &status), nullptr, false);
      ASSERT_EQ(status, 200) << r.dump();
      EXPECT_TRUE(r["arrives"].get<bool>()) << r.dump();
      ASSERT_EQ(r["hops"].size(), Traced(t.out).size()) << a.name << " -> " << b.name << "\n" << t.out << r.dump();
      const bool counted = std::find(r["alerts"].begin(), r["alerts"].end(), alert["id"]) != r["alerts"].end();
      EXPECT_EQ(counted, through) << a.name << " -> " << b.name << "\n" << t.out << r.dump();
      if (through) {
        ++crossing;
        ++per_port[a.name].first;
        ++per_port[b.name].second;
      }
    }
  }
  EXPECT_EQ(pairs, 240u);
  EXPECT_GT(crossing, 0u);
  const json& radius = alert["blast_radius"];
  EXPECT_EQ(radius["routes"], crossing);
  EXPECT_EQ(radius["ports"], per_port.size());
  EXPECT_EQ(radius["routing"], "static");
  for (const json& x : radius["listed"]) {
    const auto it = per_port.find(x["node"].get<std::string>());
    ASSERT_NE(it, per_port.end()) << x.dump();
    EXPECT_EQ(x["sends"], it->second.first) << x.dump();
    EXPECT_EQ(x["receives"], it->second.second) << x.dump();
  }
  EXPECT_EQ(s.Value("infiniband_alert_blast_radius_routes", {{"cause", "bad_cable"}, {"node", leaf.node}}),
            static_cast<double>(crossing));
  std::cout << "[ figures  ] " << crossing << " of " << pairs << " routes between " << per_port.size()
            << " host ports cross " << name(leaf) << " - " << name(spine) << "\n";

  // The status page: the bad cable's evidence says what it hurts.
  std::string error;
  auto browser = Browser::Start(&error);
  ASSERT_NE(browser, nullptr) << error;
  ASSERT_TRUE(browser->Navigate("http://127.0.0.1:" + std::to_string(fabric->port()) + "/", &error)) << error;
  ASSERT_TRUE(browser->WaitFor(
      "return document.querySelector(\"#problems tr.problem[data-causes~='bad_cable'] td.what\") !== null;",
      seconds(30), &error))
      << error;
  ASSERT_TRUE(browser->Click("#problems tr.problem[data-causes~='bad_cable'] td.what", &error)) << error;
  ASSERT_TRUE(
      browser->WaitFor("return document.querySelector('#problems tr.evidence .blast') !== null;", seconds(10), &error))
      << error;
  const auto blast = browser->Execute(R"(
      const b = document.querySelector('#problems tr.evidence .blast');
      return {routes: b.dataset.routes, ports: b.dataset.ports, text: b.textContent,
              listed: document.querySelectorAll('#problems tr.evidence .blast-list li').length};)",
                                      &error);
  ASSERT_TRUE(blast) << error;
  EXPECT_EQ((*blast)["routes"], std::to_string(crossing));
  EXPECT_EQ((*blast)["ports"], std::to_string(per_port.size()));
  EXPECT_EQ((*blast)["listed"], std::min<std::size_t>(per_port.size(), 20));
  EXPECT_EQ((*blast)["text"], "Hurts " + std::to_string(crossing) + " routes between " +
                                  std::to_string(per_port.size()) + " host ports:");
  // Beside it, what taking that cable out now would cost: the what-if's verdict.
  int status = 0;
  const json whatif = json::parse(fabric->Get("/api/v1/whatif?limit=0", &status), nullptr, false);
  ASSERT_EQ(status, 200) << whatif.dump();
  json mine;
  for (const json& w : whatif["alerts"]) {
    if (w["alert_id"] == alert["id"]) mine = w;
  }
  ASSERT_FALSE(mine.is_null()) << whatif.dump();
  EXPECT_EQ(mine["routes"], crossing) << "the cable's what-if hurts what its blast radius does";
  EXPECT_EQ(mine["verdict"], "safe now");
  const auto shown = browser->Execute(R"(
      const w = document.querySelector('#problems tr.evidence .whatif');
      return w ? {verdict: w.dataset.verdict, text: w.textContent} : null;)",
                                      &error);
  ASSERT_TRUE(shown && !shown->is_null()) << error;
  EXPECT_EQ((*shown)["verdict"], "safe now");
  EXPECT_EQ((*shown)["text"], "Taking this cable out now: safe now, " + mine["reason"].get<std::string>() + ".");
  EXPECT_TRUE(browser->Screenshot(std::string(IBFABRIC_ARTIFACT_DIR) + "/status-blast-radius.png", &error)) << error;
  RemoveTree(dir);
}

// The shipped rule, in Prometheus, over the fabric exporter's blast radius
// and three hosts' local exporters with their Slurm jobs: job 4242 on
// cn0005 and cn0009, job 5151 on cn0009 and cn0013. A bad cable at
// cn0005's own port hurts job 4242 alone; a bad spine cable both.
TEST_F(HostSideTest, TheShippedRuleNamesTheJobsOnTheHostsAFaultHurts) {
  const std::string dir = MakeTempDir("hurt-jobs");
  ASSERT_TRUE(WriteFile(dir + "/alerts.yaml", kPagingAlerts));
  auto fabric = StartExporter({"--sweep.interval=300ms", "--alerts.config=" + dir + "/alerts.yaml"});
  ASSERT_NE(fabric, nullptr);
  const Scrape f = fabric->ScrapeMetrics();
  const int hosts[3] = {5, 9, 13};
  const std::vector<std::string> jobs[3] = {{"4242"}, {"4242", "5151"}, {"5151"}};
  std::vector<std::unique_ptr<HostSysfs>> sysfs;
  std::vector<std::unique_ptr<ExporterProcess>> local;
  std::string targets = "'127.0.0.1:" + std::to_string(fabric->port()) + "'";
  for (int i = 0; i < 3; ++i) {
    const std::string host = tree_->Host(hosts[i]);
    sysfs.push_back(std::make_unique<HostSysfs>());
    sysfs.back()->AddHca("mlx5_0", std::stoull(NodeGuid(f, host), nullptr, 16), host, "0000:3b:00.0");
    sysfs.back()->SetHwCounter("mlx5_0", 1, "local_ack_timeout_err", 3);
    sysfs.back()->SetHwCounter("mlx5_0", 1, "np_cnp_sent", 40);
    const std::string map = dir + "/jobs" + std::to_string(i);
    std::filesystem::create_directories(map);
    std::string ids;
    for (const std::string& j : jobs[i]) ids += j + "\n";
    ASSERT_TRUE(WriteFile(map + "/mlx5_0", ids));
    // Judging its own cable as the fabric exporter does (the same window).
    local.push_back(
        Local(hosts[i], *sysfs.back(), {"--host.job-mapping-dir=" + map, "--alerts.config=" + dir + "/alerts.yaml"}));
    ASSERT_NE(local.back(), nullptr);
    targets += ", '127.0.0.1:" + std::to_string(local.back()->port()) + "'";
  }
  std::string error;
  auto prometheus = PrometheusServer::Start(
      "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
      "rule_files: [rules.yml, jobs-rules.yml]\n"
      "scrape_configs:\n"
      "  - job_name: infiniband\n"
      "    static_configs: [{targets: [" +
          targets + "], labels: {fabric: sim}}]\n",
      {{"rules.yml", ForInSeconds(SourceFile("deploy/prometheus/infiniband-rules.yml"))},
       {"jobs-rules.yml", ForInSeconds(SourceFile("deploy/prometheus/infiniband-jobs-rules.yml"))}},
      &error);
  ASSERT_NE(prometheus, nullptr) << error;
  // The jobs the rule names as hurt, with the faults it names.
  const auto hurt = [&](std::set<std::string>* faults) {
    std::set<std::string> out;
    const auto r = prometheus->Query("ALERTS{alertname=\"InfinibandFaultHurtsJob\",alertstate=\"firing\"}", &error);
    for (const json& x : r ? *r : json::array()) {
      out.insert(x["metric"].value("hpc_job", ""));
      if (faults) faults->insert(x["metric"].value("faults", ""));
    }
    return out;
  };
  // Before any fault, once Prometheus has every host's jobs and evaluated
  // the rules over them: nobody is hurt.
  ASSERT_TRUE(WaitUntil([&] { return RunPromQL(*prometheus, "infiniband_host_port_job_info").size() == 4; },
                        seconds(30), std::chrono::milliseconds(250)));
  std::this_thread::sleep_for(seconds(3));
  EXPECT_TRUE(hurt(nullptr).empty());
  WhatIfWaitsForTheJobs(f, *prometheus, {{hosts[0], jobs[0]}, {hosts[1], jobs[1]}, {hosts[2], jobs[2]}});

  // cn0005's own cable: its job alone.
  const Endpoint own = tree_->LeafHostPort(hosts[0]);
  {
    Ramp ramp(own, "PortCounters.SymbolErrorCounter", 10, 60000);
    ASSERT_TRUE(WaitUntil([&] { return !hurt(nullptr).empty(); }, seconds(60), std::chrono::milliseconds(250)))
        << prometheus->Log();
    std::this_thread::sleep_for(seconds(3));  // the other job would be there by now
    std::set<std::string> faults;
    EXPECT_EQ(hurt(&faults), (std::set<std::string>{"4242"}));
    EXPECT_EQ(faults, (std::set<std::string>{"bad_cable " + tree_->Peer(own)->node + "[1] - " + own.node + "[" +
                                             std::to_string(own.port) + "]"}))
        << "the cable named by its ends in GUID order (the generator's hosts' are lower)";
  }
  ASSERT_TRUE(WaitUntil([&] { return hurt(nullptr).empty(); }, seconds(60), std::chrono::milliseconds(250)))
      << "cleared with the cable";

  // A spine cable: every host's routes cross it, both jobs.
  const Endpoint uplink = tree_->LeafUplink(2, 1);
  Ramp ramp(uplink, "PortCounters.SymbolErrorCounter", 10, 60000);
  ASSERT_TRUE(WaitUntil([&] { return hurt(nullptr).size() == 2; }, seconds(60), std::chrono::milliseconds(250)))
      << prometheus->Log();
  EXPECT_EQ(hurt(nullptr), (std::set<std::string>{"4242", "5151"}));

  // The hosts dashboard, on this Prometheus: every query has data, and its
  // table of hurt jobs names the two.
  const auto queries = DashboardQueries([](const std::string& file) { return file == kHostsDashboard; });
  EXPECT_GE(queries.size(), 12u);
  for (const auto& q : queries) {
    const json r = RunPromQL(*prometheus, Substitute(q.expr));
    EXPECT_FALSE(r.empty()) << q.panel << ": no data for " << Substitute(q.expr);
    if (q.panel != "Jobs a fault hurts") continue;
    std::set<std::string> named;
    for (const json& x : r) named.insert(x["metric"].value("hpc_job", ""));
    EXPECT_EQ(named, (std::set<std::string>{"4242", "5151"})) << r.dump();
  }
  RemoveTree(dir);
}

// What taking a cable or a switch out would cost (GET /api/v1/whatif), for
// a spine cable, a host's only cable and a spine: every route it lists is the one
// ibtracert walks, all of them listed (its count); the host of the host
// cable is cut off and the verdict says wait; the leaf uplinks the routes
// use equal a recount from the leaves' tables (ibtracert from a host of
// each leaf to every host of the others), one fewer after a used uplink goes.
TEST_F(HostSideTest, TheWhatIfOfACableOrASwitchIsWhatIbtracertWalks) {
  auto fabric = StartExporter({"--sweep.interval=300ms"});
  ASSERT_NE(fabric, nullptr);
  const Scrape s = fabric->ScrapeMetrics();
  std::map<std::string, std::string> lid_of, guid_of;
  for (const auto& x : s.Find("infiniband_hca_info")) {
    lid_of[x.labels.at("hca")] = x.labels.at("lid");
    guid_of[x.labels.at("hca")] = x.labels.at("node_guid");
  }
  ASSERT_EQ(lid_of.size(), 16u);
  const auto whatif = [&](const std::string& query) {
    json j;
    WaitUntil(
        [&] {
          int status = 0;
          j = json::parse(fabric->Get("/api/v1/whatif?" + query + "&limit=1000", &status), nullptr, false);
          return status == 200;
        },
        seconds(30), std::chrono::milliseconds(250));
    return j;
  };
  // Each listed route hop by hop as ibtracert walks it.
  const auto check_listed = [&](const json& w) {
    ASSERT_EQ(w["listed"].size(), w["routes"].get<std::size_t>()) << "all listed under the limit";
    for (const json& r : w["listed"]) {
      const std::string from = r["from"].get<std::string>(), to = r["to"].get<std::string>();
      const std::string a = from.substr(0, from.rfind('[')), b = to.substr(0, to.rfind('['));
      const CommandResult t = sim_->Tool({"ibtracert", lid_of.at(a), lid_of.at(b)}, std::chrono::milliseconds(20000));
      ASSERT_EQ(t.exit_code, 0) << t.err;
      json walked = json::array();
      for (const auto& [out, in] : Traced(t.out)) walked.push_back(out);
      EXPECT_EQ(r["hops"], walked) << from << " -> " << to << "\n" << t.out;
    }
  };

  // A spine cable: routes move, nobody is cut off.
  const Endpoint leaf = tree_->LeafUplink(2, 1);
  const std::string leaf_guid = Guid(s, leaf.node);
  json w = whatif("cable=" + leaf_guid + ":" + std::to_string(leaf.port));
  ASSERT_TRUE(w.contains("routes")) << w.dump();
  EXPECT_GT(w["routes"].get<int>(), 0);
  EXPECT_EQ(w["hosts_cut_off"], json::array());
  EXPECT_EQ(w["verdict"], "safe now") << w.dump();
  check_listed(w);

  // The leaf uplinks used, recounted from the leaves' tables.
  std::set<std::string> used;
  for (int l = 1; l <= 4; ++l) {
    const std::string src = tree_->Host((l - 1) * 4 + 1);
    for (int h = 1; h <= 16; ++h) {
      if ((h - 1) / 4 + 1 == l) continue;
      const CommandResult t =
          sim_->Tool({"ibtracert", lid_of.at(src), lid_of.at(tree_->Host(h))}, std::chrono::milliseconds(20000));
      ASSERT_EQ(t.exit_code, 0) << t.err;
      const auto hops = Traced(t.out);
      ASSERT_GE(hops.size(), 2u) << t.out;
      used.insert(hops[1].first + " - " + hops[1].second);  // the leaf's way up
    }
  }
  const std::string cable = tree_->Leaf(2) + "[" + std::to_string(leaf.port) + "]";
  const bool crossing =
      std::any_of(used.begin(), used.end(), [&](const std::string& c) { return c.rfind(cable + " ", 0) == 0; });
  EXPECT_EQ(w["uplinks"]["cables_before"], used.size()) << w["uplinks"].dump();
  EXPECT_EQ(w["uplinks"]["cables_after"], used.size() - (crossing ? 1 : 0)) << w["uplinks"].dump();
  EXPECT_GT(w["uplinks"]["gbps_before"].get<double>(), w["uplinks"]["gbps_after"].get<double>() - 1e-9);

  // A host's only cable: that host is cut off; wait.
  const std::string host = tree_->Host(3);
  w = whatif("cable=" + guid_of.at(host) + ":1");
  EXPECT_EQ(w["hosts_cut_off"], json::array({host.substr(0, host.find(' '))})) << w.dump();
  EXPECT_EQ(w["verdict"], "wait");
  EXPECT_EQ(w["routes"], 30) << "its 15 sends and 15 receives";
  check_listed(w);
  std::cout << "[ figures  ] what-if: " << used.size() << " leaf uplinks used; a spine cable crosses "
            << whatif("cable=" + leaf_guid + ":" + std::to_string(leaf.port))["routes"] << " routes\n";

  // A spine: every route that goes over it moves, nobody is cut off, and
  // the uplinks left are those the recount found on the other spine.
  const std::string spine = tree_->Spine(1);
  w = whatif("switch=" + Guid(s, spine));
  EXPECT_EQ(w["switch"], spine) << w.dump();
  EXPECT_GT(w["routes"].get<int>(), 0);
  EXPECT_EQ(w["hosts_cut_off"], json::array());
  EXPECT_EQ(w["verdict"], "safe now");
  check_listed(w);
  std::size_t on_other = 0;
  for (const std::string& c : used) on_other += c.find(" - " + spine + "[") == std::string::npos ? 1 : 0;
  EXPECT_EQ(w["uplinks"]["cables_after"], on_other) << w["uplinks"].dump();

  // Bad requests: one line, the right status.
  int status = 0;
  EXPECT_NE(fabric->Get("/api/v1/whatif?cable=zz:1", &status).find("cable must be GUID:PORT"), std::string::npos);
  EXPECT_EQ(status, 400);
  fabric->Get("/api/v1/whatif?cable=" + leaf_guid + ":1x", &status);
  EXPECT_EQ(status, 400) << "a port number and nothing after it";
  fabric->Get("/api/v1/whatif?switch=0x1", &status);
  EXPECT_EQ(status, 404);
}

}  // namespace
}  // namespace ibfabric::testbed
