#pragma once
// A real Slurm controller (Debian's slurmctld, 22.05 on bookworm) with a
// munged of its own, in a directory of its own on free loopback ports: the
// scheduler the exporter's topology.conf is written for. Its slurm.conf
// names `nodes` (at 127.0.0.1: no slurmd runs; the controller only plans)
// and reads topology.conf through the topology/tree plugin.

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tests/testbed/process.h"

namespace ibfabric::testbed {

// One line of `scontrol show topology`.
struct SlurmSwitchLine {
  int level = -1;
  std::set<std::string> nodes;     // expanded (`scontrol show hostnames`)
  std::set<std::string> switches;  // expanded
};

// One node as `scontrol show node -o` says it.
struct SlurmNodeState {
  std::set<std::string> state;  // "IDLE", "DRAIN", ... ('*' and '+' taken off)
  std::string reason;           // without Slurm's " [user@time]"
};

class SlurmController {
 public:
  // Null with a one-line reason when munged or slurmctld does not start, or
  // the controller does not answer within 30 s.
  static std::unique_ptr<SlurmController> Start(const std::vector<std::string>& nodes, const std::string& topology_conf,
                                                std::string* error);
  ~SlurmController();
  SlurmController(const SlurmController&) = delete;
  SlurmController& operator=(const SlurmController&) = delete;

  // `scontrol show topology`, by switch name; nullopt-like empty map with
  // *error when scontrol fails.
  std::map<std::string, SlurmSwitchLine> Topology(std::string* error) const;
  // A new topology.conf, read at `scontrol reconfigure`; false with why.
  bool Reconfigure(const std::string& topology_conf, std::string* error) const;
  // What slurmctld logged (its warnings about the topology among them).
  std::string Log() const;
  // Every node's state and reason; empty with *error when scontrol fails.
  std::map<std::string, SlurmNodeState> Nodes(std::string* error) const;
  // What a program run against this controller needs (SLURM_CONF).
  Env ClientEnv() const { return SlurmEnv(); }

 private:
  SlurmController() = default;
  Env SlurmEnv() const { return {{"SLURM_CONF", dir_ + "/slurm.conf"}}; }
  // `scontrol show WHAT...`'s output; nullopt with *error when it fails.
  std::optional<std::string> Show(const std::vector<std::string>& what, std::string* error) const;
  std::set<std::string> Expand(const std::string& hostlist) const;
  std::string dir_;
  std::unique_ptr<Process> munged_;
  std::unique_ptr<Process> slurmctld_;
};

}  // namespace ibfabric::testbed
