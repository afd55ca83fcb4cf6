#pragma once
// A running simulated fabric: ibsim on a net file, its console through a
// fifo, and opensm run under the umad2sim preload to assign LIDs. Tools and
// the exporter attach with ClientEnv(). The destructor ends every process it
// started, also when the test failed.

#include <signal.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tests/testbed/process.h"

namespace ibfabric::testbed {

inline constexpr const char* kUmad2SimPreload = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";
// What every client of the simulated fabric preloads, opensm too: umad2sim
// and the kernel's RMPP of the SA's long answers (tests/tools/rmpp.cc).
std::string SimPreload();

struct SimOptions {
  std::string attach;                 // SIM_HOST for clients (a node name)
  int max_nodes = 4096;               // ibsim -N
  int max_switches = 512;             // ibsim -S
  int max_ports = 32768;              // ibsim -P
  int linear_cap = 0;                 // ibsim -L (its LFT's LIDs); 0: ibsim's default (30,720)
  bool sweep_once = true;             // opensm -o at start; false: the caller starts a resident SM
  std::chrono::seconds timeout{120};  // for ibsim start and each opensm sweep
  std::string partitions;             // opensm partitions.conf contents (-P); empty: opensm's default
  // IBSIM_SOCKNAME of this ibsim and its clients: another name lets a
  // second ibsim run beside one of the default name. Empty: the test
  // process's IBSIM_SOCKNAME (ctest gives each lane of suites its own),
  // else ibsim's default, "sim".
  std::string socket_name;
  // opensm -F file contents for every sweep, e.g. "subnet_prefix 0xfe80000000000002\n".
  std::string sm_config;
};

class SimFabric {
 public:
  // Starts ibsim and sweeps once with opensm (unless !sweep_once). nullptr and a reason on failure
  // (the reason carries the tail of the failing process's log).
  static std::unique_ptr<SimFabric> Start(const std::string& net_file, const SimOptions& options, std::string* error);
  ~SimFabric();
  SimFabric(const SimFabric&) = delete;
  SimFabric& operator=(const SimFabric&) = delete;

  // Sends console commands (PerformanceSet, Unlink, ReLink, Link, Error,
  // Baselid, ...; several are one a line, taken in one write) and waits for
  // ibsim's prompt after each. Returns what ibsim printed for them. *ok is
  // false when ibsim did not answer in time or rejected one (unknown
  // command, node not found, ...).
  std::string Console(const std::string& command, bool* ok = nullptr);
  // Disconnects the clients ibsim still lists whose process is gone (one
  // killed before umad2sim said goodbye keeps its slot, and as an SM client
  // keeps any other SM client off its node). Returns how many.
  int DisconnectDeadClients();

  // Runs opensm once more (-o), e.g. after links changed. With
  // `forget_lids`, opensm starts without its guid2lid cache, so LIDs a
  // Baselid changed stay changed (as after an SM restart). False on failure.
  bool SweepSubnet(std::string* error, bool forget_lids = false);
  // The partitions.conf later sweeps and resident SMs program (opensm -P);
  // empty: opensm's default.
  void SetPartitions(const std::string& conf) { options_.partitions = conf; }

  // Starts opensm as a resident SM/SA (tools such as ibqueryerrors ask the
  // SA for paths) and waits for SUBNET UP, or for STANDBY when `standby`;
  // nullptr and a reason on failure. Each call gets its own log and cache.
  struct SmOptions {
    std::string attach;      // SIM_HOST of this SM; empty: the fabric's
    int priority = -1;       // opensm -p (0-15); -1: opensm's default
    int sweep_seconds = -1;  // opensm -s (0: no periodic sweeps); -1: default
    std::string config;      // opensm -F file contents, e.g. "sminfo_polling_timeout 500\n"
    bool standby = false;    // wait for STANDBY instead of SUBNET UP
  };
  std::unique_ptr<Process> StartSubnetManager(std::string* error) { return StartSubnetManager(SmOptions{}, error); }
  std::unique_ptr<Process> StartSubnetManager(const SmOptions& options, std::string* error);

  // Freezes ibsim (SIGSTOP) and thaws it (SIGCONT): while frozen, no MAD is
  // answered at all, as on a fabric that hangs. (A MAD ibsim drops through
  // `Error` comes back at once with status ETIMEDOUT instead.) Clients'
  // writes to the frozen ibsim queue up in the socket limits Start raised.
  void Pause() { ibsim_->Signal(SIGSTOP); }
  void Resume() { ibsim_->Signal(SIGCONT); }

  // Kills ibsim (SIGKILL), as a crash would.
  void Kill();
  // Starts ibsim again on the same net file and console, and sweeps.
  bool Restart(std::string* error);

  // Environment for clients: LD_PRELOAD and SIM_HOST.
  Env ClientEnv() const;
  // For opensm: ClientEnv() and the kernel's MAD timeouts, which opensm
  // waits on and umad2sim has not (tests/tools/mad_timeouts.cc).
  Env SmEnv() const;
  // Runs a tool (perfquery, ibnetdiscover, ...) attached to the fabric.
  CommandResult Tool(const std::vector<std::string>& argv,
                     std::chrono::milliseconds timeout = std::chrono::milliseconds(60000)) const;

  const std::string& dir() const { return dir_; }
  const std::string& socket_name() const { return options_.socket_name; }
  bool Alive() { return ibsim_ && ibsim_->Running(); }
  pid_t ibsim_pid() const { return ibsim_ ? ibsim_->pid() : 0; }

 private:
  SimFabric() = default;
  bool Launch(std::string* error);

  SimOptions options_;
  std::string dir_;
  int sysctl_holder_fd_ = -1;  // holds the raised sysctls (see RaiseSysctls in the .cc)
  int console_fd_ = -1;
  std::mutex console_mutex_;
  std::unique_ptr<Process> ibsim_;
  int sm_runs_ = 0;
  int resident_sms_ = 0;
};

// What a client's environment adds for a further HCA device `device`
// attached to `node` of `other` (an ibsim of its own socket name beside
// the one umad2sim attaches to: tests/tools/more_fabrics.cc). For
// ExporterProcess::Start (which puts the preload after umad2sim), or on
// top of ClientEnv() with LD_PRELOAD joined by hand.
Env MoreFabricEnv(const std::string& device, const SimFabric& other, const std::string& node);

}  // namespace ibfabric::testbed
