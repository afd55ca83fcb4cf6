// The host side on the simulator: a local exporter on a host of ibsim's
// fabric reads that host's kernel (a sysfs tree laid out as the kernel's,
// through --host.sysfs) beside its cable, and the status page's host view
// shows what the kernel says: the PCIe link against its maximum, firmware,
// NUMA node and the transport errors the host rules watch. Which jobs hold
// the host's HCA come from a fake kubelet speaking the real pod-resources
// gRPC API and a Slurm mapping directory, one series per HCA port and job,
// gone at the first scrape after the pod ends.

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/integration/fabric_suite.h"
#include "tests/testbed/browser.h"
#include "tests/testbed/fake_kubelet.h"
#include "tests/testbed/host_sysfs.h"

namespace ibfabric::testbed {
namespace {

using nlohmann::json;
using std::chrono::seconds;

class HostSideTest : public FabricSuite {
 protected:
  static void SetUpTestSuite() {
    FatTreeSpec spec = Spec(2, 2, 2, 1, 8);
    spec.hcas_per_host = 1;  // "cn0001 mlx5_0", as rdma-ndd names them: hosts
    StartFabric(spec);
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
  const auto local = Local(h, sysfs);
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
            (json{"mlx5_0", "28.39.1002", "16 GT/s x8 of 32 GT/s x16", "0", "local_ack_timeout_err 12"}))
      << row->dump();
  EXPECT_TRUE(browser->Screenshot(std::string(IBFABRIC_ARTIFACT_DIR) + "/status-host-kernel.png", &error)) << error;
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

}  // namespace
}  // namespace ibfabric::testbed
