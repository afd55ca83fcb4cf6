// Scope and shard modes on the simulated fabric: which ports each exporter
// reads. A local exporter on a host reads exactly that host's cables' two
// ends; n shards read every port exactly once; local exporters on every host
// plus inter-switch shards read every cabled port exactly once.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "tests/integration/fabric_suite.h"

namespace ibfabric::testbed {
namespace {

using std::chrono::seconds;

// node name -> ports whose counters the scrape carries.
using PortSet = std::set<Endpoint>;

PortSet PortsRead(const Scrape& s) {
  PortSet out;
  for (const auto& x : s.Find("infiniband_switch_port_symbol_error_total")) {
    out.insert({x.labels.at("switch"), std::stoi(x.labels.at("port"))});
  }
  for (const auto& x : s.Find("infiniband_hca_port_symbol_error_total")) {
    out.insert({x.labels.at("hca"), std::stoi(x.labels.at("port"))});
  }
  return out;
}

// The facts a scrape states about the fabric, each as "family guid[/port]":
// the ones dashboards join on. Across the exporters of one deployment each
// must come from exactly one of them.
std::map<std::string, int> Facts(const Scrape& s) {
  std::map<std::string, int> out;
  for (const char* family :
       {"infiniband_switch_info", "infiniband_hca_info", "infiniband_switch_uplink_info", "infiniband_hca_uplink_info",
        "infiniband_switch_port_state", "infiniband_hca_port_state", "infiniband_switch_up", "infiniband_hca_up",
        "infiniband_node_pma_capabilities_info", "infiniband_exporter_node_stale"}) {
    for (const auto& x : s.Find(family)) {
      const auto port = x.labels.find("port");
      ++out[std::string(family) + " " + x.labels.at("guid") + (port == x.labels.end() ? "" : "/" + port->second)];
    }
  }
  return out;
}
void AddFacts(const Scrape& s, std::map<std::string, int>* into) {
  for (const auto& [k, n] : Facts(s)) (*into)[k] += n;
}
// Facts stated more than once, and the families with none.
std::string Repeated(const std::map<std::string, int>& facts) {
  std::string out;
  for (const auto& [k, n] : facts) {
    if (n != 1) out += k + " x" + std::to_string(n) + "\n";
  }
  return out;
}

std::string Show(const PortSet& ports) {
  std::string s;
  for (const auto& e : ports) s += e.node + "[" + std::to_string(e.port) + "] ";
  return s;
}

class ScopeTest : public FabricSuite {
 protected:
  static void SetUpTestSuite() { StartFabric(Spec(4, 2, 4, 2, 12)); }

  // One discovery and sweep (--once) attached at `host`; the scrape it printed.
  static Scrape Once(const std::string& host, const std::vector<std::string>& flags) {
    Env env = sim_->ClientEnv();
    env["SIM_HOST"] = host;
    std::vector<std::string> argv{ExporterBinary(), "--once", "--log.level=warn"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    const CommandResult r = RunCommand(argv, env, std::chrono::milliseconds(60000));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Scrape::Parse(r.out);
  }

  // Every port with a cable, from the generator's own list.
  static PortSet Cabled() {
    PortSet out;
    for (const auto& c : tree_->cables()) {
      out.insert(c.a);
      out.insert(c.b);
    }
    return out;
  }
};

TEST_F(ScopeTest, LocalReadsExactlyTheHostsCableEndsAndSeesAPlantedCounterThere) {
  const Endpoint leaf_end = tree_->LeafHostPort(6);
  Plant(leaf_end, "PortCounters.PortRcvErrors", 17);
  for (int h : {1, 6, 16}) {
    const Scrape s = Once(tree_->Host(h), {"--scope=local"});
    const PortSet want{tree_->HostPort(h), tree_->LeafHostPort(h)};
    EXPECT_EQ(PortsRead(s), want) << "host " << h << " read " << Show(PortsRead(s));
    EXPECT_EQ(s.Value("infiniband_exporter_sweep_ports", {{"result", "ok"}}), 2);
    EXPECT_EQ(s.Value("infiniband_exporter_scope_info", {{"scope", "local"}, {"shard", "0"}, {"shards", "1"}}), 1);
    // A local exporter sees its neighbours only: no fabric-wide findings.
    EXPECT_TRUE(s.Find("infiniband_topology_tiers").empty());
    const auto planted = s.Find("infiniband_switch_port_receive_errors_total",
                                {{"switch", leaf_end.node}, {"port", std::to_string(leaf_end.port)}});
    if (h == 6) {
      ASSERT_EQ(planted.size(), 1u);
      EXPECT_EQ(planted[0].value, 17);
    } else {
      EXPECT_TRUE(planted.empty());
    }
    // Discovery stopped at the leaf: no spine is known.
    EXPECT_TRUE(s.Find("infiniband_switch_info", {{"switch", tree_->Spine(1)}}).empty());
  }
  Plant(leaf_end, "PortCounters.PortRcvErrors", 0);
}

// The local exporter on a host also serves that host's RDMA devices as
// its kernel shows them (--host.sysfs, here a tree laid out as the
// kernel's: an HCA whose driver counts out_of_buffer, on a PCIe link
// below its maximum), beside its cable's two ends; a fabric exporter
// reads no host.
TEST_F(ScopeTest, LocalServesTheHostsOwnDevicesBesideItsCable) {
  const std::string sys = MakeTempDir("host-sysfs");
  const auto file = [&](const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(sys + "/" + path).parent_path());
    ASSERT_TRUE(WriteFile(sys + "/" + path, text + "\n")) << path;
  };
  const std::string pci = sys + "/devices/pci0000:00/0000:00:01.0/0000:01:00.0";
  file("devices/pci0000:00/0000:00:01.0/0000:01:00.0/current_link_speed", "16.0 GT/s PCIe");
  file("devices/pci0000:00/0000:00:01.0/0000:01:00.0/current_link_width", "8");
  file("devices/pci0000:00/0000:00:01.0/0000:01:00.0/max_link_speed", "32.0 GT/s PCIe");
  file("devices/pci0000:00/0000:00:01.0/0000:01:00.0/max_link_width", "16");
  file("class/infiniband/mlx5_0/fw_ver", "28.39.1002");
  file("class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand");
  file("class/infiniband/mlx5_0/ports/1/hw_counters/out_of_buffer", "42");
  file("class/infiniband/mlx5_0/ports/1/hw_counters/lifespan", "10");  // the kernel's: a setting in ms
  std::filesystem::create_directory_symlink(pci, sys + "/class/infiniband/mlx5_0/device");
  const int h = 3;
  const Scrape s = Once(tree_->Host(h), {"--scope=local", "--host.sysfs=" + sys});
  EXPECT_EQ(PortsRead(s), (PortSet{tree_->HostPort(h), tree_->LeafHostPort(h)}));
  EXPECT_EQ(s.Value("infiniband_host_port_hw_counters_total",
                    {{"device", "mlx5_0"}, {"port", "1"}, {"counter", "out_of_buffer"}}),
            42);
  EXPECT_EQ(s.Find("infiniband_host_port_hw_counters_total", {{"device", "mlx5_0"}}).size(), 1u)
      << "hw_counters/lifespan is no counter";
  EXPECT_EQ(s.Value("infiniband_host_pcie_link_degraded", {{"device", "mlx5_0"}}), 1);
  EXPECT_EQ(s.Value("infiniband_host_device_info", {{"device", "mlx5_0"}, {"firmware_version", "28.39.1002"}}), 1);
  EXPECT_TRUE(Once(tree_->Host(h), {"--host.sysfs=" + sys}).Find("infiniband_host_device_info").empty())
      << "a fabric exporter reads no host";
  RemoveTree(sys);
}

// A host of two HCAs on one fabric (a GPU server's rails: here cn0002 and
// cn0007's, on leaves 1 and 2, one host as the exporter sees it: mlx5_1
// is cn0007's port): its local exporter reads both cables, both ends, the
// second by LID with its far end from the SA (a resident opensm), counters
// planted there exact on exactly those series. Without an SA that cable is
// said unread, never guessed.
TEST_F(ScopeTest, LocalReadsEveryCableOfAHostOfSeveralHcas) {
  const int own = 1, other = 6;
  const Endpoint far = tree_->LeafHostPort(other), near = tree_->HostPort(other);
  Plant(far, "PortCounters.PortRcvErrors", 23);
  Plant(near, "PortCounters.SymbolErrorCounter", 31);
  const auto run = [&]() {
    Env env = sim_->ClientEnv();
    env["SIM_HOST"] = tree_->Host(own);
    const Env more = MoreFabricEnv("mlx5_1", *sim_, tree_->Host(other));
    env["LD_PRELOAD"] += " " + more.at("LD_PRELOAD");
    env["MORE_FABRICS"] = more.at("MORE_FABRICS");
    const CommandResult r = RunCommand({ExporterBinary(), "--once", "--log.level=warn", "--scope=local"}, env,
                                       std::chrono::milliseconds(60000));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return std::make_pair(Scrape::Parse(r.out), r.err);
  };
  StartTrapSm(tree_->Host(15));
  const auto [s, log] = run();
  StopTrapSm();
  EXPECT_EQ(PortsRead(s), (PortSet{tree_->HostPort(own), tree_->LeafHostPort(own), near, far}))
      << Show(PortsRead(s)) << log;
  EXPECT_EQ(s.Value("infiniband_switch_port_receive_errors_total",
                    {{"switch", far.node}, {"port", std::to_string(far.port)}}),
            23);
  EXPECT_EQ(s.Value("infiniband_hca_port_symbol_error_total", {{"hca", near.node}, {"port", "1"}}), 31);
  EXPECT_EQ(s.Find("infiniband_switch_port_receive_errors_total", {{"switch", far.node}}).size(), 1u)
      << "no other port of that leaf";
  EXPECT_EQ(s.Value("infiniband_link_up", {{"node", far.node}, {"port", std::to_string(far.port)}})
                .value_or(s.Value("infiniband_link_up",
                                  {{"remote_node", far.node}, {"remote_port", std::to_string(far.port)}})
                              .value_or(-1)),
            1);
  EXPECT_TRUE(s.Find("infiniband_exporter_local_ports_unread").empty());
  EXPECT_EQ(s.Value("infiniband_exporter_sweep_ports", {{"result", "ok"}}), 4);

  const auto [without, why] = run();
  EXPECT_EQ(PortsRead(without), (PortSet{tree_->HostPort(own), tree_->LeafHostPort(own)})) << Show(PortsRead(without));
  EXPECT_EQ(without.Value("infiniband_exporter_local_ports_unread", {{"ca", "mlx5_1"}, {"port", "1"}}), 1);
  EXPECT_NE(why.find("this host's port mlx5_1/1 (LID "), std::string::npos) << why;
  EXPECT_NE(why.find("gave no LinkRecord for it"), std::string::npos) << why;
  Plant(far, "PortCounters.PortRcvErrors", 0);
  Plant(near, "PortCounters.SymbolErrorCounter", 0);
}

// The same host's second rail pulled and put back while its local
// exporter runs: the leaf's end of that cable reads down (a series at 0,
// not a series gone), then up again once the SM brings the port back.
TEST_F(ScopeTest, LocalShowsAnotherHcasCableDownAndBackUp) {
  const int own = 2, other = 9;
  const Endpoint far = tree_->LeafHostPort(other);
  StartTrapSm(tree_->Host(15));
  Env env;
  env["SIM_HOST"] = tree_->Host(own);
  const Env more = MoreFabricEnv("mlx5_1", *sim_, tree_->Host(other));
  env["LD_PRELOAD"] = more.at("LD_PRELOAD");
  env["MORE_FABRICS"] = more.at("MORE_FABRICS");
  auto e = SpawnExporter({"--scope=local", "--sweep.interval=500ms", "--discovery.interval=1h"}, false, env);
  ASSERT_TRUE(e);
  const auto far_up = [&](const Scrape& s) {
    return s.Value("infiniband_link_up", {{"node", far.node}, {"port", std::to_string(far.port)}})
        .value_or(s.Value("infiniband_link_up", {{"remote_node", far.node}, {"remote_port", std::to_string(far.port)}})
                      .value_or(-1));
  };
  auto s = e->WaitFor([&](const Scrape& x) { return far_up(x) == 1; }, seconds(60));
  ASSERT_TRUE(s) << e->Log();
  const auto walks = [](const Scrape& x) {
    return x.Value("infiniband_exporter_discoveries_total", {{"mode", "full"}}).value_or(0);
  };
  const double walked = walks(*s);
  Console("Unlink " + At(far));
  // The change forces a walk (local scope walks rather than re-walks);
  // after it, and a sweep more, the end is still there, down.
  s = e->WaitFor([&](const Scrape& x) { return far_up(x) == 0 && walks(x) > walked; }, seconds(60));
  ASSERT_TRUE(s) << "no walk, or the end stayed up: " << far_up(e->ScrapeMetrics()) << "\n" << e->Log();
  s = e->WaitForSweeps(s->Value("infiniband_exporter_sweeps_total").value_or(0) + 2, seconds(30));
  ASSERT_TRUE(s);
  EXPECT_EQ(far_up(*s), 0) << "the cable's end vanished with the walk: " << e->Log();
  // Still read (not a stale series): its counters, and the own cable's ends.
  EXPECT_EQ(s->Value("infiniband_exporter_sweep_ports", {{"result", "ok"}}), 3) << e->Log();
  EXPECT_TRUE(s->Find("infiniband_exporter_local_ports_unread").empty());
  Console("ReLink " + At(far));
  s = e->WaitFor([&](const Scrape& x) { return far_up(x) == 1; }, seconds(90));
  EXPECT_TRUE(s) << e->Log();
  e.reset();
  StopTrapSm();
}

TEST_F(ScopeTest, ShardsReadEveryPortExactlyOnceAndOneReportsTopology) {
  const PortSet all = PortsRead(Once(tree_->Host(1), {}));
  ASSERT_EQ(all, Cabled()) << Show(all);
  const std::map<std::string, int> whole = Facts(Once(tree_->Host(1), {}));
  for (int n : {2, 3}) {
    std::map<std::string, int> facts;  // each once, and the same as one exporter's
    std::map<Endpoint, int> times;
    std::map<Endpoint, int> shard_of;
    for (int i = 0; i < n; ++i) {
      const Scrape s = Once(tree_->Host(1), {"--shard=" + std::to_string(i) + "/" + std::to_string(n)});
      AddFacts(s, &facts);
      for (const auto& e : PortsRead(s)) {
        ++times[e];
        shard_of[e] = i;
      }
      EXPECT_EQ(s.Find("infiniband_topology_tiers").size(), i == 0 ? 1u : 0u) << "shard " << i << "/" << n;
    }
    PortSet covered;
    for (const auto& [e, k] : times) {
      covered.insert(e);
      EXPECT_EQ(k, 1) << e.node << "[" << e.port << "] read by " << k << " of " << n << " shards";
    }
    EXPECT_EQ(covered, all) << n << " shards";
    // A cable is read whole by one shard (a host's with its switch), so
    // that one exporter judges it; and the work is spread.
    std::set<int> used;
    for (const auto& c : tree_->cables()) {
      EXPECT_EQ(shard_of[c.a], shard_of[c.b])
          << c.a.node << "[" << c.a.port << "] - " << c.b.node << "[" << c.b.port << "] split over shards";
      used.insert(shard_of[c.a]);
    }
    EXPECT_EQ(used.size(), static_cast<std::size_t>(n));
    EXPECT_EQ(Repeated(facts), "") << n << " shards";
    EXPECT_EQ(facts, whole) << n << " shards state other facts than one exporter";
  }
}

TEST_F(ScopeTest, LocalOnEveryHostPlusInterSwitchShardsReadEachCabledPortOnce) {
  std::map<Endpoint, int> times;
  std::map<std::string, int> facts;
  for (const auto& host : tree_->hosts()) {
    const Scrape s = Once(host, {"--scope=local"});
    AddFacts(s, &facts);
    for (const auto& e : PortsRead(s)) ++times[e];
  }
  for (int i = 0; i < 2; ++i) {
    const Scrape s = Once(tree_->Host(1), {"--scope=inter-switch", "--shard=" + std::to_string(i) + "/2"});
    AddFacts(s, &facts);
    for (const auto& e : PortsRead(s)) {
      ++times[e];
      EXPECT_EQ(e.node.rfind("ib-", 0), 0u) << "inter-switch read a host port " << e.node;
    }
  }
  PortSet covered;
  for (const auto& [e, k] : times) {
    covered.insert(e);
    EXPECT_EQ(k, 1) << e.node << "[" << e.port << "] read " << k << " times";
  }
  EXPECT_EQ(covered, Cabled()) << Show(covered);
  // Every fact once, and the same facts as one fabric exporter states.
  EXPECT_EQ(Repeated(facts), "");
  EXPECT_EQ(facts, Facts(Once(tree_->Host(1), {})));
}

TEST_F(ScopeTest, ShardWithLocalScopeAndBadShardsAreFlagErrors) {
  for (const auto& [flags, want] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--scope=local", "--shard=0/2"}, "--shard applies to the fabric and inter-switch scopes"},
           {{"--shard=2/2"}, "invalid value for --shard: '2/2' is not I/N"},
           {{"--shard=1"}, "invalid value for --shard"},
           {{"--scope=host"}, "invalid value for --scope: 'host' is not one of fabric, local, inter-switch"}}) {
    std::vector<std::string> argv{ExporterBinary()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    const CommandResult r = RunCommand(argv, {}, std::chrono::milliseconds(10000));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace ibfabric::testbed
