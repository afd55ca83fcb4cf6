// The binary's command line: bad input exits 2 with one clear line; --help
// and --version exit 0; a missing device is a clear error, not a crash.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/testbed/exporter_process.h"
#include "tests/testbed/process.h"

namespace ibfabric::testbed {
namespace {

using std::chrono::milliseconds;

CommandResult RunExporter(const std::vector<std::string>& args, const Env& env = {}) {
  std::vector<std::string> argv{ExporterBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, env, milliseconds(20000));
}

int Lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(CliTest, UnknownFlagExits2WithOneLine) {
  const auto r = RunExporter({"--no.such-flag"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("unknown flag --no.such-flag"), std::string::npos) << r.err;
}

TEST(CliTest, BadValuesExit2NamingTheFlag) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"--web.listen-address=nonsense", "--web.listen-address"},
      {"--web.listen-address=:99999", "--web.listen-address"},
      {"--sweep.interval=soon", "--sweep.interval"},
      {"--mad.window=0", "--mad.window"},
      {"--mad.retries=-1", "--mad.retries"},
      {"--log.level=loud", "--log.level"},
      {"--web.telemetry-path=metrics", "--web.telemetry-path"},
      {"--ib.port", "--ib.port"},
      {"--host.sysfs=/nonexistent/sys", "--host.sysfs"},
      {"--host.proc=/nonexistent/proc", "--host.proc"},
      {"--host.job-mapping-dir=/etc/passwd", "--host.job-mapping-dir"},
      {"--host.kubelet-socket=", "--host.kubelet-socket"},
  };
  for (const auto& [arg, flag] : cases) {
    const auto r = RunExporter({arg});
    EXPECT_EQ(r.exit_code, 2) << arg;
    EXPECT_EQ(Lines(r.err), 1) << arg << ": " << r.err;
    EXPECT_NE(r.err.find(flag), std::string::npos) << arg << ": " << r.err;
  }
}

TEST(CliTest, HelpAndVersion) {
  const auto help = RunExporter({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const char* flag : {"--web.listen-address", "--ib.ca", "--ib.port", "--sweep.interval", "--mad.window"}) {
    EXPECT_NE(help.out.find(flag), std::string::npos) << flag;
  }
  const auto version = RunExporter({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.out.find("version"), std::string::npos);
}

TEST(CliTest, MalformedNodeNameMapExits2WithFileAndLine) {
  const std::string dir = MakeTempDir("cli");
  WriteFile(dir + "/names", "0x1 \"ok\"\nzzz bad\n");
  const auto r = RunExporter({"--ib.node-name-map=" + dir + "/names", "--once"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(dir + "/names:2: 'zzz' is not a GUID"), std::string::npos) << r.err;
  const auto missing = RunExporter({"--ib.node-name-map=" + dir + "/absent", "--once"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find(dir + "/absent: cannot read"), std::string::npos) << missing.err;
  RemoveTree(dir);
}

TEST(CliTest, MalformedPlanExits2WithFileAndLine) {
  const std::string dir = MakeTempDir("cli");
  WriteFile(dir + "/plan.json", "{\"links\": [\n  {\"a\": {\"node\": \"x\", \"port\": 1}}\n]}\n");
  const auto r = RunExporter({"--topology.plan=" + dir + "/plan.json", "--once"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(dir + "/plan.json:2: links[0]: missing \"b\""), std::string::npos) << r.err;
  WriteFile(dir + "/plan.net", "Switch 8 \"a\"\n[1] \"b\"[1]\nrubbish\n");
  const auto n = RunExporter({"--topology.plan=" + dir + "/plan.net", "--once"});
  EXPECT_EQ(n.exit_code, 2);
  EXPECT_NE(n.err.find(dir + "/plan.net:3: neither a node nor a port line"), std::string::npos) << n.err;
  RemoveTree(dir);
}

TEST(CliTest, MalformedAlertConfigExits2WithFileAndLine) {
  const std::string dir = MakeTempDir("cli");
  WriteFile(dir + "/alerts.yaml", "window: 1m\nbad_cable:\n  rcv_errors_per_second: {warning: 5, critical: 2}\n");
  const auto r = RunExporter({"--alerts.config=" + dir + "/alerts.yaml", "--once"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(dir + "/alerts.yaml:3: bad_cable.rcv_errors_per_second: warning must not be above critical"),
            std::string::npos)
      << r.err;
  WriteFile(dir + "/typo.yaml", "raise_afterr: 2\n");
  const auto t = RunExporter({"--alerts.config=" + dir + "/typo.yaml", "--once"});
  EXPECT_EQ(t.exit_code, 2);
  EXPECT_NE(t.err.find(dir + "/typo.yaml:1: unknown key 'raise_afterr'"), std::string::npos) << t.err;
  const auto missing = RunExporter({"--alerts.config=" + dir + "/absent.yaml", "--once"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find(dir + "/absent.yaml: cannot read"), std::string::npos) << missing.err;
  RemoveTree(dir);
}

TEST(CliTest, MissingDeviceIsAClearError) {
  // Without the simulator preload there is no InfiniBand device here (or, on
  // a machine with one, no device by this name).
  const auto r = RunExporter({"--ib.ca=no_such_hca0", "--once"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("no_such_hca0"), std::string::npos) << r.err;
}

// --analyze judges a saved fabric with no InfiniBand port (none is here
// without the simulator's preload): what it prints, its exit codes, and a
// bad file's one line.
TEST(CliTest, AnalyzeJudgesASavedFabricWithoutAPort) {
  const std::string captures = std::string(IBFABRIC_SOURCE_DIR) + "/tests/real-fabrics/";
  const auto small = RunExporter({"--analyze=" + captures + "ufm-small-topo.net"});
  EXPECT_EQ(small.exit_code, 0) << small.err;
  EXPECT_EQ(small.err, "");
  EXPECT_EQ(small.out.rfind("fabric: 2 switches, 12 HCAs (12 cabled ports), 1 Aggregation Nodes and routers\n", 0), 0u)
      << small.out;
  EXPECT_NE(small.out.find("hosts: 5, layout host_per_leaf\n"), std::string::npos) << small.out;

  // The PuTTY log: its banner and its closing prompt are skipped, each said.
  const std::string director = captures + "ufm-ndt-director-putty.net";
  const auto d = RunExporter({"--analyze=" + director});
  EXPECT_EQ(d.err.find(director + ":2: neither a node nor a port line: '=~=~="), 0u) << d.err;
  EXPECT_NE(d.err.find(director + ":33822: neither a node nor a port line: 'sat11-0101-0902-02ufm"), std::string::npos)
      << d.err;
  EXPECT_EQ(Lines(d.err), 2) << d.err;
  EXPECT_EQ(d.out.rfind("fabric: 400 switches, 2328 HCAs (2328 cabled ports)", 0), 0u) << d.out;
  // Its five missing cables would alert (exit 1), each once; a shared name
  // is information.
  EXPECT_EQ(d.exit_code, 1) << d.out;
  EXPECT_NE(d.out.find("findings: 10 (5 would alert)\n"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("  alert missing_cable: "), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("  info  duplicate_name: "), std::string::npos) << d.out;

  const auto as_json = RunExporter({"--analyze=" + captures + "ufm-small-topo.net", "--analyze.format=json"});
  EXPECT_EQ(as_json.exit_code, 0);
  const nlohmann::json j = nlohmann::json::parse(as_json.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << as_json.out;
  ASSERT_TRUE(j.contains("findings")) << as_json.out;
  ASSERT_FALSE(j["findings"].empty());
  EXPECT_EQ(j["findings"][0]["kind"], "not_a_tree");

  // Two HCAs cabled to each other: a finding that alerts, exit 1.
  const std::string dir = MakeTempDir("cli");
  WriteFile(dir + "/b2b.net",
            "Ca 1 \"H-0000000000000001\" # \"a mlx5_0\"\n[1](1) \"H-0000000000000002\"[1](2) # lid 1 lmc 0 \"b "
            "mlx5_0\" lid 2 4xHDR\n"
            "Ca 1 \"H-0000000000000002\" # \"b mlx5_0\"\n[1](2) \"H-0000000000000001\"[1](1) # lid 2 lmc 0 \"a "
            "mlx5_0\" lid 1 4xHDR\n");
  const auto b2b = RunExporter({"--analyze=" + dir + "/b2b.net"});
  EXPECT_EQ(b2b.exit_code, 1) << b2b.out << b2b.err;
  EXPECT_NE(b2b.out.find("  alert ca_to_ca: "), std::string::npos) << b2b.out;

  WriteFile(dir + "/bad.net", "Switch 8 \"a\"\n[300] \"b\"[1]\n");
  const auto bad = RunExporter({"--analyze=" + dir + "/bad.net"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "ibfabric_exporter: invalid --analyze: " + dir + "/bad.net:2: port numbers must be 0..254\n");
  const auto missing = RunExporter({"--analyze=" + dir + "/absent.net"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find(dir + "/absent.net: cannot read"), std::string::npos) << missing.err;
  const auto format = RunExporter({"--analyze=" + dir + "/b2b.net", "--analyze.format=xml"});
  EXPECT_EQ(format.exit_code, 2);
  EXPECT_NE(format.err.find("--analyze.format"), std::string::npos) << format.err;
  RemoveTree(dir);
}

}  // namespace
}  // namespace ibfabric::testbed
