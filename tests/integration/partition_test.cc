// Partitions on the simulated fabric: opensm programs P_Key tables from a
// partitions.conf; the exporter reports the membership of every CA port and
// of the leaf ports facing them (checked against `smpquery pkeys`), flags
// the HCA ports whose partitions differ from most ports on their leaf, a
// leaf port whose table differs from its HCA's, and compares them with a
// partition plan.

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tests/integration/fabric_suite.h"

namespace ibfabric::testbed {
namespace {

using std::chrono::milliseconds;

class PartitionTest : public FabricSuite {
 protected:
  static void SetUpTestSuite() { StartFabric(Spec(4, 2, 4, 1, 8)); }

  static Scrape Once(const std::vector<std::string>& flags = {}) {
    std::vector<std::string> argv{ExporterBinary(), "--once", "--log.level=error"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    const CommandResult r = sim_->Tool(argv, milliseconds(60000));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Scrape::Parse(r.out);
  }
  static std::string Lid(const Scrape& s, const std::string& host) {
    return s.Find("infiniband_hca_info", {{"hca", host}}).at(0).labels.at("lid");
  }
  // The port GUID, from `smpquery nodeinfo LID`.
  static std::string PortGuid(const std::string& lid) {
    const CommandResult r = sim_->Tool({"smpquery", "nodeinfo", lid});
    std::smatch m;
    static const std::regex kGuid(R"(PortGuid:\.*(0x[0-9a-f]+))");
    EXPECT_TRUE(std::regex_search(r.out, m, kGuid)) << r.out;
    return m.size() > 1 ? m[1].str() : "";
  }
  // `smpquery pkeys LID [PORT]`: the non-empty P_Keys, as "0x7fff full".
  static std::set<std::string> ToolPKeys(const std::string& lid, const std::string& port = "") {
    std::vector<std::string> argv{"smpquery", "pkeys", lid};
    if (!port.empty()) argv.push_back(port);
    const CommandResult r = sim_->Tool(argv);
    std::set<std::string> out;
    static const std::regex kKey(R"(0x([0-9a-f]{4}))");
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      if (line.find(':') == std::string::npos || line.find("capacity") != std::string::npos) continue;
      const std::string values = line.substr(line.find(':') + 1);
      for (auto it = std::sregex_iterator(values.begin(), values.end(), kKey); it != std::sregex_iterator(); ++it) {
        const unsigned k = std::stoul((*it)[1].str(), nullptr, 16);
        if ((k & 0x7fff) == 0) continue;
        char buf[24];
        std::snprintf(buf, sizeof buf, "0x%04x %s", k & 0x7fff, (k & 0x8000) ? "full" : "limited");
        out.insert(buf);
      }
    }
    return out;
  }
  // Our P_Keys of an HCA port, or with `metric` infiniband_switch_port_partition_info, of a switch port.
  static std::set<std::string> Ours(const Scrape& s, const std::string& node, const std::string& port = "1",
                                    const std::string& metric = "infiniband_port_partition_info") {
    std::set<std::string> out;
    for (const auto& x : s.Find(metric, {{"node", node}, {"port", port}})) {
      out.insert(x.labels.at("pkey") + " " + x.labels.at("membership"));
    }
    return out;
  }
  static std::map<std::string, std::string> FindingsOf(const Scrape& s, const std::string& kind) {
    std::map<std::string, std::string> out;  // node -> port
    for (const auto& x : s.Find("infiniband_topology_finding", {{"kind", kind}}))
      out[x.labels.at("node")] = x.labels.at("port");
    return out;
  }
  static std::string SwitchLid(const Scrape& s, const std::string& sw) {
    return s.Find("infiniband_switch_info", {{"switch", sw}}).at(0).labels.at("lid");
  }
};

TEST_F(PartitionTest, MembershipMatchesSmpqueryAndOddPortsOnALeafAreFlagged) {
  const Scrape first = Once();
  // opensm's default: everybody a full member of the default partition only.
  for (int h : {1, 6}) EXPECT_EQ(Ours(first, tree_->Host(h)), (std::set<std::string>{"0x7fff full"}));
  EXPECT_TRUE(FindingsOf(first, "partition_mismatch").empty());

  // A tenant on hosts 1-3 of leaf 1 (not 4), and host 6 alone as a limited member on leaf 2.
  std::string members;
  for (int h : {1, 2, 3}) members += PortGuid(Lid(first, tree_->Host(h))) + "=full, ";
  members += PortGuid(Lid(first, tree_->Host(6))) + "=limited";
  sim_->SetPartitions("Default=0x7fff, ipoib : ALL=full ;\nTenantA=0x8001 : " + members + " ;\n");
  std::string error;
  ASSERT_TRUE(sim_->SweepSubnet(&error)) << error;
  const Scrape s = Once();
  EXPECT_EQ(Ours(s, tree_->Host(1)), (std::set<std::string>{"0x7fff full", "0x0001 full"}));
  EXPECT_EQ(Ours(s, tree_->Host(4)), (std::set<std::string>{"0x7fff full"}));
  EXPECT_EQ(Ours(s, tree_->Host(6)), (std::set<std::string>{"0x7fff full", "0x0001 limited"}));
  for (int h : {1, 4, 6, 9}) {
    EXPECT_EQ(Ours(s, tree_->Host(h)), ToolPKeys(Lid(s, tree_->Host(h)))) << tree_->Host(h);
  }
  EXPECT_EQ(FindingsOf(s, "partition_mismatch"),
            (std::map<std::string, std::string>{{tree_->Host(4), "1"}, {tree_->Host(6), "1"}}));
  EXPECT_EQ(s.Value("infiniband_topology_findings", {{"kind", "partition_mismatch"}}), 2);

  // opensm copies each HCA's table to the leaf port facing it (partition
  // enforcement); ibsim keeps the enforcement bits at 0.
  const std::string kSwitchPort = "infiniband_switch_port_partition_info";
  for (int h : {1, 4, 6}) {
    const Endpoint leaf = tree_->LeafHostPort(h);
    const std::string port = std::to_string(leaf.port);
    EXPECT_EQ(Ours(s, leaf.node, port, kSwitchPort), Ours(s, tree_->Host(h))) << leaf.node << "[" << port << "]";
    EXPECT_EQ(Ours(s, leaf.node, port, kSwitchPort), ToolPKeys(SwitchLid(s, leaf.node), port))
        << leaf.node << "[" << port << "]";
    EXPECT_EQ(s.Value("infiniband_switch_port_partition_enforcement",
                      {{"node", leaf.node}, {"port", port}, {"direction", "inbound"}}),
              0);
  }
  EXPECT_TRUE(s.Find(kSwitchPort, {{"node", tree_->Spine(1)}}).empty()) << "spine ports face no HCA";
  EXPECT_TRUE(s.Find("infiniband_port_partition_info", {{"node", tree_->Leaf(1)}}).empty()) << "HCA ports only";
  EXPECT_TRUE(FindingsOf(s, "partition_enforcement_mismatch").empty());

  // A leaf port that lost the tenant's P_Key (planted with SubnSet): the
  // cable from it to host 2 is flagged, and nothing else.
  const Endpoint leaf2 = tree_->LeafHostPort(2);
  const CommandResult set =
      sim_->Tool({IBFABRIC_SMP_SET_BIN, "pkeys", SwitchLid(s, leaf2.node), std::to_string(leaf2.port), "0xffff"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  const Scrape planted = Once();
  EXPECT_EQ(Ours(planted, leaf2.node, std::to_string(leaf2.port), kSwitchPort), (std::set<std::string>{"0x7fff full"}));
  EXPECT_EQ(ToolPKeys(SwitchLid(s, leaf2.node), std::to_string(leaf2.port)), (std::set<std::string>{"0x7fff full"}));
  const auto flagged = planted.Find("infiniband_topology_finding", {{"kind", "partition_enforcement_mismatch"}});
  ASSERT_EQ(flagged.size(), 1u);
  EXPECT_EQ(flagged[0].labels.at("node"), leaf2.node);
  EXPECT_EQ(flagged[0].labels.at("port"), std::to_string(leaf2.port));
  EXPECT_EQ(flagged[0].labels.at("remote_node"), tree_->Host(2));
  EXPECT_EQ(flagged[0].labels.at("remote_port"), "1");

  // Against a plan that says so: nothing. Against one that wants host 4 in
  // the tenant too: host 4.
  const std::string dir = MakeTempDir("partitions");
  const std::string tenant = "  - name: tenant-a\n    pkey: 0x8001\n    full: [" + tree_->Host(1) + ", " +
                             tree_->Host(2) + ", " + tree_->Host(3) + "]\n    limited: [" + tree_->Host(6) + "]\n";
  WriteFile(dir + "/right.yaml", "partitions:\n  - name: default\n    pkey: 0x7fff\n    full: all\n" + tenant);
  Scrape planned = Once({"--partitions.plan=" + dir + "/right.yaml"});
  EXPECT_TRUE(FindingsOf(planned, "partition_plan_mismatch").empty());
  std::string wrong = "partitions:\n  - name: default\n    pkey: 0x7fff\n    full: all\n" + tenant;
  wrong.replace(wrong.find(tree_->Host(3) + "]"), tree_->Host(3).size(), tree_->Host(3) + ", " + tree_->Host(4));
  WriteFile(dir + "/wrong.yaml", wrong);
  planned = Once({"--partitions.plan=" + dir + "/wrong.yaml"});
  EXPECT_EQ(FindingsOf(planned, "partition_plan_mismatch"),
            (std::map<std::string, std::string>{{tree_->Host(4), "1"}}));
  // A broken plan is a one-line error naming the line, exit 2.
  WriteFile(dir + "/bad.yaml", "partitions:\n  - name: x\n    pkey: 0x0000\n");
  const CommandResult bad =
      RunCommand({ExporterBinary(), "--once", "--partitions.plan=" + dir + "/bad.yaml"}, {}, milliseconds(10000));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("bad.yaml:3: pkey must be a P_Key"), std::string::npos) << bad.err;
  RemoveTree(dir);
  sim_->SetPartitions("");
  ASSERT_TRUE(sim_->SweepSubnet(&error)) << error;
}

// The tables from the SA (--partitions.tables=sa, the default) where a
// resident SM answers and the exporter has its key (opensm's sa_key, 1 by
// default): every CA port's and facing switch port's from its
// P_KeyTableRecords (one SubnAdmGetTable a CA port or switch), equal to
// smpquery's, and no P_KeyTable SMP sent. Without the key the SA is not
// asked (these records are for trusted requests) and the ports are read
// themselves; with a wrong one the SA discards that query (and only that:
// the forwarding tables still come from it), the log says so, and the
// ports are read. What the SA holds is the SM's copy: a P_Key taken out of
// a leaf port behind its back shows only where the ports are read.
TEST_F(PartitionTest, TablesFromTheSaWithItsKeyElseFromThePorts) {
  const Scrape before = Once();
  std::string members;
  for (int h : {1, 2}) members += PortGuid(Lid(before, tree_->Host(h))) + "=full, ";
  members += PortGuid(Lid(before, tree_->Host(6))) + "=limited";
  sim_->SetPartitions("Default=0x7fff, ipoib : ALL=full ;\nTenantB=0x8002 : " + members + " ;\n");
  std::string error;
  SimFabric::SmOptions quiet;
  quiet.sweep_seconds = 0;  // nothing reprograms a port meanwhile
  auto sm = sim_->StartSubnetManager(quiet, &error);
  ASSERT_NE(sm, nullptr) << error;
  // The CA ports (one each) and the leaf ports facing them.
  const int hosts = tree_->spec().leaves * tree_->spec().hosts_per_leaf;
  const auto run = [&](const std::vector<std::string>& flags, std::string* log, const std::string& credentials = "") {
    std::vector<std::string> argv{ExporterBinary(), "--once", "--log.level=debug"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    Env env = sim_->ClientEnv();
    if (!credentials.empty()) env["CREDENTIALS_DIRECTORY"] = credentials;
    const CommandResult r = RunCommand(argv, env, milliseconds(60000));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    *log = r.err;
    return Scrape::Parse(r.out);
  };
  const auto tables = [](const Scrape& s, const char* source) {
    return s.Value("infiniband_partition_tables", {{"source", source}}).value_or(-1);
  };
  // "partition tables read ports=N from_sa=N sa_queries=N smps=N", the last of the log.
  const auto read_line = [](const std::string& log) {
    const std::size_t at = log.rfind("partition tables read");
    return at == std::string::npos ? std::string() : log.substr(at, log.find('\n', at) - at);
  };
  const Endpoint leaf1 = tree_->LeafHostPort(1);
  const std::string kSwitchPort = "infiniband_switch_port_partition_info";

  std::string log;
  const Scrape sa = run({"--ib.sa-key=1"}, &log);
  EXPECT_EQ(tables(sa, "sa"), 2 * hosts) << log;
  EXPECT_EQ(tables(sa, "port"), 0);
  // One query a CA port and a leaf: not one P_KeyTable SMP.
  const std::string line = read_line(log);
  EXPECT_NE(line.find("from_sa=" + std::to_string(2 * hosts)), std::string::npos) << line;
  EXPECT_NE(line.find("sa_queries=" + std::to_string(hosts + tree_->spec().leaves)), std::string::npos) << line;
  EXPECT_NE(line.find(" smps=0"), std::string::npos) << line;
  for (int h : {1, 3, 6}) {
    EXPECT_EQ(Ours(sa, tree_->Host(h)), ToolPKeys(Lid(sa, tree_->Host(h)))) << tree_->Host(h);
    const Endpoint leaf = tree_->LeafHostPort(h);
    EXPECT_EQ(Ours(sa, leaf.node, std::to_string(leaf.port), kSwitchPort),
              ToolPKeys(SwitchLid(sa, leaf.node), std::to_string(leaf.port)));
  }
  EXPECT_EQ(Ours(sa, tree_->Host(6)), (std::set<std::string>{"0x7fff full", "0x0002 limited"}));

  // Without the key: the SA not asked, every table from its port.
  const Scrape keyless = run({}, &log);
  EXPECT_EQ(tables(keyless, "sa"), 0);
  EXPECT_EQ(tables(keyless, "port"), 2 * hosts);
  EXPECT_NE(read_line(log).find("sa_queries=0 "), std::string::npos) << read_line(log);
  EXPECT_EQ(log.find("P_KeyTableRecords"), std::string::npos) << log;
  for (int h : {1, 6}) EXPECT_EQ(Ours(keyless, tree_->Host(h)), Ours(sa, tree_->Host(h)));
  // A wrong key: the first query discarded, said, every table from its
  // port; the other SA queries carry no key and are answered.
  const Scrape untrusted = run({"--ib.sa-key=2"}, &log);
  EXPECT_EQ(tables(untrusted, "sa"), 0);
  EXPECT_EQ(tables(untrusted, "port"), 2 * hosts);
  EXPECT_NE(log.find("gave no P_KeyTableRecords (an SA discards a request whose SM_Key is not its key: is "
                     "--ib.sa-key its sa_key?)"),
            std::string::npos)
      << log;
  EXPECT_EQ(untrusted.Value("infiniband_routing_tables", {{"source", "sa"}}),
            sa.Value("infiniband_routing_tables", {{"source", "sa"}}));
  EXPECT_GT(untrusted.Value("infiniband_routing_tables", {{"source", "sa"}}).value_or(0), 0);
  EXPECT_NE(read_line(log).find("sa_queries=1 "), std::string::npos) << read_line(log);
  for (int h : {1, 6}) EXPECT_EQ(Ours(untrusted, tree_->Host(h)), Ours(sa, tree_->Host(h)));

  // Host 1's leaf port loses the tenant behind the SM's back.
  const CommandResult set =
      sim_->Tool({IBFABRIC_SMP_SET_BIN, "pkeys", SwitchLid(sa, leaf1.node), std::to_string(leaf1.port), "0xffff"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  const std::string port1 = std::to_string(leaf1.port);
  // The key from the credentials directory this time (systemd's
  // LoadCredential=sa_key, the Kubernetes Secret).
  const std::string credentials = MakeTempDir("sa-key");
  WriteFile(credentials + "/sa_key", "0x1\n");
  const Scrape copy = run({}, &log, credentials);
  EXPECT_EQ(tables(copy, "sa"), 2 * hosts);
  EXPECT_EQ(Ours(copy, leaf1.node, port1, kSwitchPort), (std::set<std::string>{"0x7fff full", "0x0002 full"}))
      << "the SM's copy";
  WriteFile(credentials + "/sa_key", "not a key\n");
  Env bad_env = sim_->ClientEnv();
  bad_env["CREDENTIALS_DIRECTORY"] = credentials;
  const CommandResult bad = RunCommand({ExporterBinary(), "--once"}, bad_env, milliseconds(10000));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("invalid sa_key credential ($CREDENTIALS_DIRECTORY/sa_key): " + credentials +
                         "/sa_key: does not hold one 64-bit key"),
            std::string::npos)
      << bad.err;
  EXPECT_EQ(bad.err.find("not a key"), std::string::npos) << "a key file's contents are never echoed";
  RemoveTree(credentials);
  const Scrape own = run({"--ib.sa-key=1", "--partitions.tables=switches"}, &log);
  EXPECT_EQ(Ours(own, leaf1.node, port1, kSwitchPort), (std::set<std::string>{"0x7fff full"}));
  EXPECT_EQ(tables(own, "port"), 2 * hosts);
  EXPECT_EQ(own.Find("infiniband_topology_finding", {{"kind", "partition_enforcement_mismatch"}}).size(), 1u);

  sm.reset();
  sim_->SetPartitions("");
  ASSERT_TRUE(sim_->SweepSubnet(&error)) << error;
}

}  // namespace
}  // namespace ibfabric::testbed
