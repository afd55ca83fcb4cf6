// Job attribution: the Slurm mapping directory, the GPUs and their
// nearest HCAs on PCIe, the kubelet's reply, and the jobs collector's
// series, over sysfs trees laid out as the kernel's (tests/testbed/
// host_sysfs.h).

#include "host/jobs.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "collectors/jobs_collector.h"
#include "host/pod_resources.h"
#include "host/podresources.pb.h"
#include "tests/testbed/host_sysfs.h"
#include "tests/testbed/process.h"
#include "tests/unit/collector_bed.h"

namespace ibfabric::host {
namespace {

using testbed::HostSysfs;

// Two root complexes, each with a PCIe switch holding a GPU and an HCA
// (as an 8-GPU server pairs them), a GPU straight on a root port of the
// first, and a virtual function of the first HCA.
constexpr const char* kSwitch0 = "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0";
constexpr const char* kSwitch0Hca = "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0";
constexpr const char* kSwitch1 = "pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0";
constexpr const char* kSwitch1Hca = "pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:01.0";

void Server(HostSysfs& s) {
  s.AddGpu("0000:03:00.0", "GPU-aaaaaaaa-0000-0000-0000-000000000000", kSwitch0, 0);
  s.AddHca("mlx5_0", 0xa088c20300000001, "gpu0001 mlx5_0", "0000:04:00.0", kSwitch0Hca, 0);
  s.AddGpu("0000:83:00.0", "GPU-bbbbbbbb-0000-0000-0000-000000000000", kSwitch1, 1);
  s.AddHca("mlx5_1", 0xa088c20300000002, "gpu0001 mlx5_1", "0000:84:00.0", kSwitch1Hca, 1);
  s.AddGpu("0000:05:00.0", "GPU-cccccccc-0000-0000-0000-000000000000", "pci0000:00/0000:00:03.0", 0);
  s.AddVirtualFunction("0000:04:00.2", "0000:04:00.0", kSwitch0Hca);
}

TEST(JobsTest, GpusInPciOrderWithTheirUuids) {
  HostSysfs s;
  Server(s);
  const std::vector<Gpu> gpus = ReadGpus(s.root(), s.proc());
  ASSERT_EQ(gpus.size(), 3u);
  EXPECT_EQ(gpus[0].pci_address, "0000:03:00.0");
  EXPECT_EQ(gpus[1].pci_address, "0000:05:00.0");
  EXPECT_EQ(gpus[2].pci_address, "0000:83:00.0");
  EXPECT_EQ(gpus[2].index, 2);
  EXPECT_EQ(gpus[2].uuid, "GPU-bbbbbbbb-0000-0000-0000-000000000000");
  EXPECT_EQ(gpus[2].numa_node, 1);
  EXPECT_EQ(gpus[0].pci_path, std::string("devices/") + kSwitch0 + "/0000:03:00.0");
}

TEST(JobsTest, EachWayOfNamingADeviceReachesItsHca) {
  HostSysfs s;
  Server(s);
  const HostReading r = ReadSysfs(s.root());
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_EQ(r.devices[0].pci_path, std::string("devices/") + kSwitch0Hca + "/0000:04:00.0");
  const std::vector<Gpu> gpus = ReadGpus(s.root(), s.proc());
  const auto hca = [&](const std::string& id) { return HcaFor(id, r, gpus, s.root()).value_or("(none)"); };
  EXPECT_EQ(hca("mlx5_1"), "mlx5_1") << "an RDMA device by name";
  EXPECT_EQ(hca("0000:84:00.0"), "mlx5_1") << "an HCA by its PCI address";
  EXPECT_EQ(hca("0000:04:00.2"), "mlx5_0") << "a virtual function: its physical function's";
  EXPECT_EQ(hca("0"), "mlx5_0") << "GPU 0 shares a PCIe switch with mlx5_0";
  EXPECT_EQ(hca("GPU-bbbbbbbb-0000-0000-0000-000000000000"), "mlx5_1") << "by UUID, behind the other switch";
  EXPECT_EQ(hca("0000:83:00.0"), "mlx5_1") << "a GPU by its PCI address";
  EXPECT_EQ(hca("1"), "mlx5_0") << "GPU 1 (0000:05:00.0) on a root port of the first root complex";
  EXPECT_EQ(hca("rdma_shared_device_a_0"), "(none)") << "a shared device plugin's id names nothing";
  EXPECT_EQ(hca("7"), "(none)");
  EXPECT_EQ(hca("../../etc"), "(none)");
}

TEST(JobsTest, TheMappingDirectoryListsJobsPerDeviceAndNamesWhatItCannotRead) {
  const std::string dir = testbed::MakeTempDir("jobmap");
  std::ofstream(dir + "/mlx5_0") << "1234\n  5678 \n\n";
  std::ofstream(dir + "/3") << "99\n";
  std::ofstream(dir + "/mlx5_1") << "41; rm -rf /\n";
  std::ofstream(dir + "/.mlx5_0.tmp") << "1234\n";  // an epilog's rewrite in progress
  std::ofstream(dir + "/.lock");
  std::vector<std::string> problems;
  const std::vector<DeviceClaim> claims = ReadJobMappingDir(dir, &problems);
  std::vector<std::pair<std::string, std::string>> got;
  for (const auto& c : claims) {
    EXPECT_EQ(c.holder.source, "slurm");
    got.emplace_back(c.device_id, c.holder.hpc_job);
  }
  EXPECT_EQ(got,
            (std::vector<std::pair<std::string, std::string>>{{"3", "99"}, {"mlx5_0", "1234"}, {"mlx5_0", "5678"}}));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("mlx5_1: '41; rm -rf /' is not a job id"), std::string::npos) << problems[0];
  // A file past the size limit is named and left out, the others read.
  std::ofstream(dir + "/mlx5_2") << std::string(70000, '7') << "\n";
  problems.clear();
  EXPECT_EQ(ReadJobMappingDir(dir, &problems).size(), 3u);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[1].find("mlx5_2: over 65536 bytes"), std::string::npos) << problems[1];
  testbed::RemoveTree(dir);
  problems.clear();
  EXPECT_TRUE(ReadJobMappingDir(dir, &problems).empty());
  EXPECT_TRUE(problems.empty()) << "no directory yet: no job since boot";
  problems.clear();
  EXPECT_TRUE(ReadJobMappingDir("/etc/passwd", &problems).empty());
  EXPECT_EQ(problems.size(), 1u) << "a file where the directory should be";
}

TEST(JobsTest, AGpuWithNoHcaOnItsPathTakesTheOnlyOneOnItsNumaNodeElseNone) {
  HostSysfs s;
  // Two HCAs on root complex 0 (NUMA 0), one on root complex 1 (NUMA 1)
  // beside a RoCE device; GPUs on root complexes of their own.
  s.AddHca("mlx5_0", 1, "h mlx5_0", "0000:10:00.0", "pci0000:10/0000:10:01.0", 0);
  s.AddHca("mlx5_1", 2, "h mlx5_1", "0000:11:00.0", "pci0000:10/0000:10:02.0", 0);
  s.AddHca("mlx5_2", 3, "h mlx5_2", "0000:90:00.0", "pci0000:90/0000:90:01.0", 1);
  s.AddHca("mlx5_3", 4, "h mlx5_3", "0000:91:00.0", "pci0000:90/0000:90:02.0", 1);
  s.Write("class/infiniband/mlx5_3/ports/1/link_layer", "Ethernet");
  s.AddGpu("0000:20:00.0", "GPU-numa0", "pci0000:20/0000:20:01.0", 0);
  s.AddGpu("0000:a0:00.0", "GPU-numa1", "pci0000:a0/0000:a0:01.0", 1);
  s.AddGpu("0000:12:00.0", "GPU-tie", "pci0000:10/0000:10:03.0", 0);
  const HostReading r = ReadSysfs(s.root());
  const std::vector<Gpu> gpus = ReadGpus(s.root(), s.proc());
  const auto hca = [&](const std::string& id) { return HcaFor(id, r, gpus, s.root()).value_or("(none)"); };
  EXPECT_EQ(hca("GPU-numa0"), "(none)") << "two InfiniBand HCAs on its node: not guessed";
  EXPECT_EQ(hca("GPU-numa1"), "mlx5_2") << "the only InfiniBand one on its node (mlx5_3 is RoCE)";
  EXPECT_EQ(hca("GPU-tie"), "(none)") << "two HCAs share as much of its path: not guessed";
}

TEST(JobsTest, TheKubeletsReplyIsOneClaimPerContainerDevice) {
  v1::ListPodResourcesResponse reply;
  v1::PodResources* pod = reply.add_pod_resources();
  pod->set_name("train-0");
  pod->set_namespace_("ml");
  v1::ContainerResources* c = pod->add_containers();
  c->set_name("trainer");
  v1::ContainerDevices* gpus = c->add_devices();
  gpus->set_resource_name("nvidia.com/gpu");
  gpus->add_device_ids("GPU-aaaaaaaa-0000-0000-0000-000000000000");
  gpus->add_device_ids("GPU-bbbbbbbb-0000-0000-0000-000000000000");
  v1::ContainerDevices* vf = c->add_devices();
  vf->set_resource_name("nvidia.com/mlnx_sriov_rdma");
  vf->add_device_ids("0000:04:00.2");
  reply.add_pod_resources()->set_name("idle");  // no containers, no devices
  const std::vector<DeviceClaim> claims = ClaimsOf(reply);
  ASSERT_EQ(claims.size(), 3u);
  EXPECT_EQ(claims[2].device_id, "0000:04:00.2");
  EXPECT_EQ(claims[2].holder, (JobHolder{"kubernetes", "", "ml", "train-0", "trainer", "nvidia.com/mlnx_sriov_rdma"}));
  EXPECT_EQ(claims[0].holder.resource, "nvidia.com/gpu");
}

}  // namespace
}  // namespace ibfabric::host

namespace ibfabric::collectors {
namespace {

TEST(JobsCollectorTest, EachHcaPortHoldsItsJobsAndAPodThatEndsIsGone) {
  testbed::HostSysfs s;
  host::Server(s);
  const std::string dir = testbed::MakeTempDir("jobmap");
  std::ofstream(dir + "/mlx5_1") << "777\n";
  std::vector<host::DeviceClaim> pods;
  auto gpu_claim = [](const std::string& pod, const std::string& id) {
    host::DeviceClaim c;
    c.device_id = id;
    c.holder = {"kubernetes", "", "ml", pod, "trainer", "nvidia.com/gpu"};
    return c;
  };
  pods.push_back(gpu_claim("train-0", "GPU-aaaaaaaa-0000-0000-0000-000000000000"));
  pods.push_back(gpu_claim("train-1", "2"));
  pods.push_back(gpu_claim("shared", "rdma_shared_device_a_0"));
  CollectorOptions o;
  o.host_sysfs = s.root();
  o.Own<JobsOptions>().proc = s.proc();
  o.Own<JobsOptions>().mapping_dir = dir;
  o.Own<JobsOptions>().kubelet_socket = dir + "/kubelet.sock";
  bool answering = true;
  std::string asked;
  o.pod_resources = [&pods, &answering, &asked](const std::string& socket) -> PodDevices {
    asked = socket;
    return [&pods, &answering](std::string* error) {
      if (answering) return std::optional<std::vector<host::DeviceClaim>>(pods);
      *error = "the kubelet's pod-resources List failed: Deadline Exceeded";
      return std::optional<std::vector<host::DeviceClaim>>();
    };
  };
  Bed b;
  b.parts.scope.kind = topology::ScopeKind::kLocal;
  auto host = b.Make("host", o);
  auto jobs = b.Make("jobs", o);
  EXPECT_EQ(asked, dir + "/kubelet.sock");
  b.SweepWith({host.get(), jobs.get()});
  Scrape m = b.Render();
  const auto job = [&](const std::string& device, const std::string& pod) {
    return m.Find("infiniband_host_port_job_info", {{"device", device}, {"port", "1"}, {"pod", pod}}).size();
  };
  EXPECT_EQ(job("mlx5_0", "train-0"), 1u) << "GPU 0 by UUID: mlx5_0";
  EXPECT_EQ(job("mlx5_1", "train-1"), 1u) << "GPU 2 (0000:83:00.0): mlx5_1";
  EXPECT_EQ(m.Value("infiniband_host_port_job_info",
                    {{"device", "mlx5_1"}, {"source", "slurm"}, {"hpc_job", "777"}, {"host", "gpu0001"}}),
            1);
  EXPECT_EQ(m.Value("infiniband_host_port_job_info", {{"device", "mlx5_0"},
                                                      {"node_guid", "0xa088c20300000001"},
                                                      {"namespace", "ml"},
                                                      {"container", "trainer"},
                                                      {"resource", "nvidia.com/gpu"}}),
            1);
  EXPECT_EQ(m.Find("infiniband_host_port_job_info").size(), 3u);
  EXPECT_EQ(m.Value("infiniband_host_job_unmatched_devices", {{"source", "kubernetes"}}), 1);
  EXPECT_EQ(m.Value("infiniband_host_job_unmatched_devices", {{"source", "slurm"}}), 0);
  EXPECT_EQ(m.Value("infiniband_host_job_source_up", {{"source", "kubernetes"}}), 1);

  // train-0 ends, the Slurm job too: gone at the next sweep.
  pods.erase(pods.begin());
  std::filesystem::remove(dir + "/mlx5_1");
  b.SweepWith({host.get(), jobs.get()});
  m = b.Render();
  EXPECT_EQ(m.Find("infiniband_host_port_job_info").size(), 1u);
  EXPECT_EQ(job("mlx5_1", "train-1"), 1u);

  // The kubelet stops answering: its source down, its pods gone.
  answering = false;
  b.SweepWith({host.get(), jobs.get()});
  m = b.Render();
  EXPECT_EQ(m.Value("infiniband_host_job_source_up", {{"source", "kubernetes"}}), 0);
  EXPECT_TRUE(m.Find("infiniband_host_port_job_info").empty());

  Bed fabric;
  auto fh = fabric.Make("host", o);
  auto fj = fabric.Make("jobs", o);
  fabric.SweepWith({fh.get(), fj.get()});
  EXPECT_TRUE(fabric.Render().Find("infiniband_host_job_source_up").empty()) << "fabric scope: no jobs";
  testbed::RemoveTree(dir);
}

}  // namespace
}  // namespace ibfabric::collectors
