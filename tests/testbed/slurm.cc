#include "tests/testbed/slurm.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "tests/testbed/exporter_process.h"

namespace ibfabric::testbed {

std::unique_ptr<SlurmController> SlurmController::Start(const std::vector<std::string>& nodes,
                                                        const std::string& topology_conf, std::string* error) {
  std::unique_ptr<SlurmController> s(new SlurmController());
  s->dir_ = MakeTempDir("slurm");
  const std::string& d = s->dir_;
  for (const char* sub : {"/munge", "/state", "/spool"}) mkdir((d + sub).c_str(), 0700);
  // munged wants a key only its user reads, of random bytes.
  std::string key(1024, '\0');
  std::random_device random;
  for (char& c : key) c = static_cast<char>(random());
  if (!WriteFile(d + "/munge/key", key) || chmod((d + "/munge/key").c_str(), 0400) != 0) {
    *error = "cannot write munge's key in " + d;
    return nullptr;
  }
  SpawnOptions munge;
  munge.argv = {"munged",
                "--foreground",
                "--force",
                "--socket=" + d + "/munge/socket",
                "--key-file=" + d + "/munge/key",
                "--log-file=" + d + "/munge/log",
                "--pid-file=" + d + "/munge/pid",
                "--seed-file=" + d + "/munge/seed"};
  munge.stdout_path = d + "/munge/out";
  s->munged_ = Process::Spawn(munge, error);
  if (!s->munged_) return nullptr;
  if (!WaitUntilServing([&] { return access((d + "/munge/socket").c_str(), F_OK) == 0; }, *s->munged_,
                        std::chrono::seconds(10))) {
    *error = "munged did not start: " + ReadFile(d + "/munge/log");
    return nullptr;
  }
  std::string node_list;
  for (const std::string& n : nodes) node_list += (node_list.empty() ? "" : ",") + n;
  const int port = FreeLocalPort();
  std::ostringstream conf;
  conf << "ClusterName=ibfabric\nSlurmctldHost=localhost\nSlurmctldPort=" << port << "\nSlurmdPort=" << FreeLocalPort()
       << "\nAuthType=auth/munge\nAuthInfo=socket=" << d << "/munge/socket\nStateSaveLocation=" << d
       << "/state\nSlurmdSpoolDir=" << d << "/spool\nSlurmctldPidFile=" << d << "/slurmctld.pid\nSlurmctldLogFile=" << d
       << "/slurmctld.log\nSlurmUser=root\nSelectType=select/cons_tres\nTopologyPlugin=topology/tree\n"
       << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nMpiDefault=none\nMailProg=/bin/true\n"
       // No slurmd answers for the test's nodes: never set them DOWN for it
       // (SlurmdTimeout=0), however late a loaded machine's pings come.
       << "ReturnToService=2\nSlurmdTimeout=0\nNodeName=" << node_list << " NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN\n"
       << "PartitionName=all Nodes=ALL Default=YES State=UP\n";
  if (!WriteFile(d + "/slurm.conf", conf.str()) || !WriteFile(d + "/topology.conf", topology_conf)) {
    *error = "cannot write slurm.conf in " + d;
    return nullptr;
  }
  SpawnOptions ctld;
  ctld.argv = {"slurmctld", "-D", "-i"};
  ctld.env = s->SlurmEnv();
  ctld.stdout_path = d + "/slurmctld.out";
  s->slurmctld_ = Process::Spawn(ctld, error);
  if (!s->slurmctld_) return nullptr;
  const Env env = s->SlurmEnv();
  if (!WaitUntilServing(
          [&] {
            return RunCommand({"scontrol", "ping"}, env, std::chrono::seconds(10)).out.find("is UP") !=
                   std::string::npos;
          },
          *s->slurmctld_, std::chrono::seconds(30), std::chrono::milliseconds(500))) {
    *error = "slurmctld did not answer: " + ReadFile(d + "/slurmctld.out") + ReadFile(d + "/slurmctld.log");
    return nullptr;
  }
  return s;
}

SlurmController::~SlurmController() {
  if (slurmctld_) slurmctld_->Stop();
  if (munged_) munged_->Stop();
  RemoveTestDir(dir_);
}

std::set<std::string> SlurmController::Expand(const std::string& hostlist) const {
  std::set<std::string> out;
  const CommandResult r = RunCommand({"scontrol", "show", "hostnames", hostlist}, SlurmEnv(), std::chrono::seconds(10));
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) out.insert(line);
  }
  return out;
}

std::optional<std::string> SlurmController::Show(const std::vector<std::string>& what, std::string* error) const {
  std::vector<std::string> argv{"scontrol", "show"};
  argv.insert(argv.end(), what.begin(), what.end());
  const CommandResult r = RunCommand(argv, SlurmEnv(), std::chrono::seconds(10));
  if (r.exit_code == 0) return r.out;
  *error = "scontrol show " + what.front() + ": " + r.err;
  return std::nullopt;
}

std::map<std::string, SlurmSwitchLine> SlurmController::Topology(std::string* error) const {
  const auto text = Show({"topology"}, error);
  if (!text) return {};
  // "SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=cn[0001-0002] Switches=..."
  static const std::regex kField(R"((\w+)=(\S+))");
  std::map<std::string, SlurmSwitchLine> out;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    std::map<std::string, std::string> fields;
    for (auto it = std::sregex_iterator(line.begin(), line.end(), kField); it != std::sregex_iterator(); ++it) {
      fields[(*it)[1]] = (*it)[2];
    }
    if (!fields.count("SwitchName")) continue;
    SlurmSwitchLine& s = out[fields["SwitchName"]];
    s.level = fields.count("Level") ? std::stoi(fields["Level"]) : -1;
    if (fields.count("Nodes")) s.nodes = Expand(fields["Nodes"]);
    if (fields.count("Switches")) s.switches = Expand(fields["Switches"]);
  }
  return out;
}

std::map<std::string, SlurmNodeState> SlurmController::Nodes(std::string* error) const {
  const auto text = Show({"node", "-o"}, error);
  if (!text) return {};
  // "NodeName=cn0001 Arch=... State=IDLE+DRAIN ... Reason=text with spaces [root@2026-...] ..."
  static const std::regex kKey(R"(^[A-Za-z]+=)");
  std::map<std::string, SlurmNodeState> out;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    std::map<std::string, std::string> fields;
    std::string key;
    std::istringstream words(line);
    for (std::string w; words >> w;) {
      if (std::regex_search(w, kKey)) {
        key = w.substr(0, w.find('='));
        fields[key] = w.substr(w.find('=') + 1);
      } else if (!key.empty()) {
        fields[key] += " " + w;
      }
    }
    if (!fields.count("NodeName")) continue;
    SlurmNodeState& n = out[fields["NodeName"]];
    std::string state = fields["State"];
    state.erase(std::remove(state.begin(), state.end(), '*'), state.end());
    std::istringstream parts(state);
    for (std::string p; std::getline(parts, p, '+');) n.state.insert(p);
    n.reason = fields["Reason"];
    const auto who = n.reason.rfind(" [");
    if (who != std::string::npos && n.reason.back() == ']' && n.reason.find('@', who) != std::string::npos) {
      n.reason.resize(who);
    }
  }
  return out;
}

bool SlurmController::Reconfigure(const std::string& topology_conf, std::string* error) const {
  if (!WriteFile(dir_ + "/topology.conf", topology_conf)) {
    *error = "cannot write topology.conf";
    return false;
  }
  const CommandResult r = RunCommand({"scontrol", "reconfigure"}, SlurmEnv(), std::chrono::seconds(20));
  if (r.exit_code != 0) *error = "scontrol reconfigure: " + r.out + r.err;
  return r.exit_code == 0;
}

std::string SlurmController::Log() const { return ReadFile(dir_ + "/slurmctld.log"); }

}  // namespace ibfabric::testbed
