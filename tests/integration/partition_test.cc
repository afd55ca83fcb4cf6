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

}  // namespace
}  // namespace ibfabric::testbed
