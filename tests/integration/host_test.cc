// The host side on the simulator: a local exporter on a host of ibsim's
// fabric reads that host's kernel (a sysfs tree laid out as the kernel's,
// through --host.sysfs) beside its cable, and the status page's host view
// shows what the kernel says: the PCIe link against its maximum, firmware,
// NUMA node and the transport errors the host rules watch.

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/integration/fabric_suite.h"
#include "tests/testbed/browser.h"
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
  static std::unique_ptr<ExporterProcess> Local(int h, const HostSysfs& sysfs) {
    std::string error;
    auto e = ExporterProcess::Start(
        *sim_, {"--scope=local", "--sweep.interval=300ms", "--mad.timeout=20ms", "--host.sysfs=" + sysfs.root()},
        &error, {}, FabricEnv({{"SIM_HOST", tree_->Host(h)}}));
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

}  // namespace
}  // namespace ibfabric::testbed
