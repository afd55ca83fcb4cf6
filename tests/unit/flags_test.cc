#include "exporter/flags.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "collectors/health/subnet_managers.h"
#include "collectors/jobs_collector.h"
#include "collectors/partitions_collector.h"
#include "collectors/registry.h"
#include "collectors/routing_collector.h"
#include "tests/testbed/process.h"

namespace ibfabric::exporter {
namespace {

using Action = ParsedFlags::Action;

TEST(FlagsTest, Defaults) {
  const auto r = ParseFlags({});
  EXPECT_EQ(r.action, Action::kRun);
  EXPECT_EQ(r.config.listen_port, 9315);
  EXPECT_EQ(r.config.telemetry_path, "/metrics");
  EXPECT_EQ(r.config.sweep_interval, std::chrono::seconds(10));
  EXPECT_EQ(r.config.discovery_interval, std::chrono::hours(1)) << "full walks; changes re-walked in between";
  EXPECT_EQ(r.config.sweep_rotation, std::chrono::minutes(5));
  EXPECT_TRUE(r.config.sm_traps);
  EXPECT_EQ(r.config.mad_rate_limit, 100'000) << "docs/mad-limits.md: the rate limit";
  EXPECT_TRUE(r.config.collector.Get<collectors::PartitionsOptions>().pkeys_from_sa);
  EXPECT_FALSE(r.config.sa_key.has_value());
}

TEST(FlagsTest, RotationAndTraps) {
  const auto r = ParseFlags({"--sweep.rotation=90s", "--sm.no-traps", "--discovery.interval=2h"});
  ASSERT_EQ(r.action, Action::kRun) << r.error;
  EXPECT_EQ(r.config.sweep_rotation, std::chrono::seconds(90));
  EXPECT_FALSE(r.config.sm_traps);
  EXPECT_EQ(r.config.discovery_interval, std::chrono::hours(2));
  const auto bad = ParseFlags({"--sweep.rotation=50ms"});
  EXPECT_EQ(bad.action, Action::kError);
  EXPECT_NE(bad.error.find("--sweep.rotation"), std::string::npos) << bad.error;
  EXPECT_EQ(ParseFlags({"--sm.no-traps=1"}).action, Action::kError);
}

TEST(FlagsTest, BothValueForms) {
  const auto r = ParseFlags({"--web.listen-address", "127.0.0.1:9000", "--ib.ca=mlx5_1", "--ib.port", "2",
                             "--sweep.interval=1500ms", "--mad.window=256", "--once"});
  ASSERT_EQ(r.action, Action::kRun) << r.error;
  EXPECT_EQ(r.config.listen_host, "127.0.0.1");
  EXPECT_EQ(r.config.listen_port, 9000);
  EXPECT_EQ(r.config.ca_name, "mlx5_1");
  EXPECT_EQ(r.config.ca_port, 2);
  EXPECT_EQ(r.config.sweep_interval, std::chrono::milliseconds(1500));
  EXPECT_EQ(r.config.mad_window, 256);
  EXPECT_TRUE(r.config.once);
}

TEST(FlagsTest, ListenAddressForms) {
  EXPECT_EQ(ParseFlags({"--web.listen-address=:9100"}).config.listen_host, "0.0.0.0");
  EXPECT_EQ(ParseFlags({"--web.listen-address=[::1]:9100"}).config.listen_host, "::1");
  EXPECT_EQ(ParseFlags({"--web.listen-address=9100"}).action, Action::kError);
}

TEST(FlagsTest, ErrorsNameTheFlag) {
  for (const auto& [args, needle] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--bogus"}, "unknown flag --bogus"},
           {{"--mad.window=x"}, "--mad.window"},
           {{"--mad.timeout=0ms"}, "--mad.timeout"},
           {{"--once=yes"}, "takes no value"},
           {{"--ib.ca"}, "needs a value"},
           {{"stray"}, "unexpected argument 'stray'"},
           {{"--sweep.interval=10"}, "not a duration"},
           {{"--counters.groups=errors,pkts"}, "--counters.groups: 'pkts' is not a group"},
           {{"--counters.groups="}, "'' is not a group"},
           {{"--topology.host-pattern=(a"}, "--topology.host-pattern: not a regular expression"},
           {{"--topology.host-pattern=^(\\S+)$"}, "--topology.host-pattern: needs exactly two groups"}}) {
    const auto r = ParseFlags(args);
    EXPECT_EQ(r.action, Action::kError) << args[0];
    EXPECT_NE(r.error.find(needle), std::string::npos) << r.error;
    EXPECT_EQ(r.error.find('\n'), std::string::npos);
  }
}

// The M_Key: 0x-hex or decimal, by flag or file, one of them; an error
// never repeats the value (it may be a key with a typo).
TEST(FlagsTest, MKeyByFlagOrFileNeverEchoed) {
  auto r = ParseFlags({"--ib.m-key=0x00000000DEADBEEF"});
  ASSERT_EQ(r.action, Action::kRun) << r.error;
  EXPECT_EQ(r.config.m_key, 0xdeadbeefULL);
  r = ParseFlags({"--ib.m-key", "18446744073709551615"});
  EXPECT_EQ(r.config.m_key, 0xffffffffffffffffULL);
  for (const char* bad : {"0xSECRETKEY", "123456789012345678901234", "0x", "-5", "12 34"}) {
    r = ParseFlags({std::string("--ib.m-key=") + bad});
    EXPECT_EQ(r.action, Action::kError) << bad;
    EXPECT_EQ(r.error, "invalid value for --ib.m-key: not one 64-bit number (0x-prefixed hex or decimal)");
  }
  r = ParseFlags({"--ib.m-key=1", "--ib.m-key-file=/etc/key"});
  EXPECT_EQ(r.error, "give --ib.m-key or --ib.m-key-file, not both");

  std::uint64_t key = 0;
  EXPECT_TRUE(ParseKey("  0xAbC\n", &key));
  EXPECT_EQ(key, 0xabcULL);
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "/m_key_good", bad = dir + "/m_key_bad";
  {
    std::ofstream(good) << "0x5eed0000c0ffee01\n";
    std::ofstream(bad) << "secret-key-with-a-typo\n";
  }
  std::string why;
  EXPECT_TRUE(LoadKey(good, &key, &why)) << why;
  EXPECT_EQ(key, 0x5eed0000c0ffee01ULL);
  EXPECT_FALSE(LoadKey(bad, &key, &why));
  EXPECT_EQ(why, bad + ": does not hold one 64-bit key (0x-prefixed hex or decimal)");
  EXPECT_FALSE(LoadKey(dir + "/none", &key, &why));
  EXPECT_EQ(why, dir + "/none: cannot be read");
}

TEST(FlagsTest, HostPattern) {
  EXPECT_FALSE(ParseFlags({}).config.collector.host_pattern.has_value());
  const auto r = ParseFlags({"--topology.host-pattern=^(node\\d+)-(hca\\d+)$"});
  ASSERT_TRUE(r.config.collector.host_pattern.has_value());
  EXPECT_EQ(r.config.collector.host_pattern->text, "^(node\\d+)-(hca\\d+)$");
  EXPECT_EQ(r.config.other_fabrics.host_pattern->text, "^(node\\d+)-(hca\\d+)$") << "not one fabric's";
  EXPECT_EQ(ParseFlags({"--topology.host-pattern=(x)"}).action, Action::kError);
}

// A collector's flag fills its own options struct; one that describes one
// fabric (a plan) reaches the first fabric's options only; a file it names
// is read by the flag, and a bad one is the flag's one-line error.
TEST(FlagsTest, CollectorsFlagsFillTheirOwnOptions) {
  auto r = ParseFlags(
      {"--routing.tables=switches", "--sm.stall-after=90s", "--phy.interval=2s", "--host.kubelet-socket=none"});
  ASSERT_EQ(r.action, Action::kRun) << r.error;
  EXPECT_FALSE(r.config.collector.Get<collectors::RoutingOptions>().tables_from_sa);
  EXPECT_FALSE(r.config.other_fabrics.Get<collectors::RoutingOptions>().tables_from_sa);
  EXPECT_TRUE(r.config.collector.Get<collectors::PartitionsOptions>().pkeys_from_sa) << "untouched: its default";
  EXPECT_EQ(r.config.collector.Get<collectors::SmMonitorOptions>().stall_after, std::chrono::seconds(90));
  EXPECT_EQ(r.config.collector.phy_interval, std::chrono::seconds(2));
  EXPECT_EQ(r.config.collector.Get<collectors::JobsOptions>().kubelet_socket, "");
  EXPECT_EQ(ParseFlags({}).config.collector.Get<collectors::JobsOptions>().kubelet_socket,
            host::kKubeletPodResourcesSocket);

  const testbed::TempDir temp("collector-flags");
  const std::string dir = temp.path();
  std::ofstream(dir + "/plan.yaml") << "partitions:\n  - name: default\n    pkey: 0x7fff\n    full: all\n";
  r = ParseFlags({"--partitions.plan=" + dir + "/plan.yaml"});
  ASSERT_EQ(r.action, Action::kRun) << r.error;
  EXPECT_TRUE(r.config.collector.Get<collectors::PartitionsOptions>().plan.has_value());
  EXPECT_FALSE(r.config.other_fabrics.Get<collectors::PartitionsOptions>().plan.has_value()) << "one fabric's";

  std::ofstream(dir + "/alerts.yaml") << "window: 5m\nraise_after: many\n";
  r = ParseFlags({"--alerts.config=" + dir + "/alerts.yaml"});
  ASSERT_EQ(r.action, Action::kError);
  EXPECT_EQ(r.error.rfind("invalid value for --alerts.config: " + dir + "/alerts.yaml:2: ", 0), 0u) << r.error;
  EXPECT_EQ(r.error.find('\n'), std::string::npos);
  r = ParseFlags({"--routing.tables=lft"});
  EXPECT_EQ(r.error, "invalid value for --routing.tables: 'lft' is not one of sa, switches");

  // Every collector flag is taken under its own name (none shadowed by the
  // exporter's or another's) and listed with its help.
  const std::string help = HelpText("x");
  std::set<std::string> names;
  for (const collectors::CollectorFlag* f : collectors::AllFlags()) {
    EXPECT_TRUE(names.insert(std::string(f->name)).second) << f->name;
    EXPECT_NE(help.find("--" + std::string(f->name) + (f->placeholder.empty() ? " " : "=")), std::string::npos)
        << f->name;
    EXPECT_NE(help.find(std::string(f->help).substr(0, 30)), std::string::npos) << f->name;
  }
  EXPECT_GE(names.size(), 13u);
}

TEST(FlagsTest, PortGroups) {
  auto r = ParseFlags({});
  EXPECT_TRUE(r.config.collector.port_groups_auto);
  r = ParseFlags({"--counters.groups=errors,data"});
  ASSERT_EQ(r.action, Action::kRun) << r.error;
  EXPECT_FALSE(r.config.collector.port_groups_auto);
  EXPECT_EQ(r.config.collector.port_groups, collectors::PortGroups()
                                                .set(static_cast<std::size_t>(collectors::PortGroup::kErrors))
                                                .set(static_cast<std::size_t>(collectors::PortGroup::kData)));
  r = ParseFlags({"--counters.groups=all"});
  EXPECT_FALSE(r.config.collector.port_groups_auto);
  EXPECT_TRUE(r.config.collector.port_groups.all());
}

// --collector.NAME and --no-collector.NAME come from the registry; an
// unknown name is an error naming it (and the collectors there are).
TEST(FlagsTest, CollectorsFromTheRegistry) {
  auto f = ParseFlags({"--no-collector.routing", "--no-collector.partitions", "--collector.fat_tree"});
  ASSERT_EQ(f.action, ParsedFlags::Action::kRun) << f.error;
  EXPECT_EQ(f.config.collectors,
            (std::map<std::string, bool>{{"fat_tree", true}, {"partitions", false}, {"routing", false}}));
  std::vector<std::string> on;
  std::string error;
  ASSERT_TRUE(collectors::EnabledCollectors(f.config.collectors, &on, &error)) << error;
  // Every collector of the registry, in its order, but the two turned off
  // (all are on by default; fat_tree was already).
  std::vector<std::string> expected;
  for (const auto& c : collectors::Registry()) {
    ASSERT_TRUE(c.default_on) << c.name;
    if (c.name != "routing" && c.name != "partitions") expected.emplace_back(c.name);
  }
  EXPECT_EQ(on, expected);
  EXPECT_EQ(on.size(), collectors::Registry().size() - 2);
  f = ParseFlags({"--no-collector.routers"});
  ASSERT_EQ(f.action, ParsedFlags::Action::kError);
  EXPECT_EQ(f.error.find('\n'), std::string::npos);
  EXPECT_NE(f.error.find("unknown collector 'routers' in --no-collector.routers"), std::string::npos) << f.error;
  EXPECT_NE(f.error.find("routing"), std::string::npos) << f.error;
  f = ParseFlags({"--collector.routing=false"});
  EXPECT_EQ(f.action, ParsedFlags::Action::kError);
  EXPECT_NE(HelpText("x").find("subnet_managers (on)"), std::string::npos);
  EXPECT_FALSE(collectors::EnabledCollectors({{"nope", true}}, &on, &error));
  EXPECT_EQ(error, "unknown collector: nope");
}

}  // namespace
}  // namespace ibfabric::exporter
