// The binary's command line: bad input exits 2 with one clear line; --help
// and --version exit 0; a missing device is a clear error, not a crash.

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ibfabric::testbed
