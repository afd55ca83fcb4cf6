#pragma once
// Child processes for the test bed. Every child runs in its own process
// group and gets SIGKILL if the test process dies (PR_SET_PDEATHSIG), and
// the destructor ends the group: a failing test leaves nothing running.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ibfabric::testbed {

using Env = std::map<std::string, std::string>;

struct SpawnOptions {
  std::vector<std::string> argv;
  Env env;                  // added to (or replacing in) the test's environment
  std::string stdin_path;   // empty: /dev/null
  std::string stdout_path;  // empty: /dev/null
  std::string stderr_path;  // empty: same as stdout
};

class Process {
 public:
  static std::unique_ptr<Process> Spawn(const SpawnOptions& options, std::string* error);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  bool Running();
  // Waits for exit; returns the exit status (128+signal when killed), or -1
  // when the process is still running after `timeout`.
  int Wait(std::chrono::milliseconds timeout);
  // SIGTERM to the group, SIGKILL after `grace`.
  void Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));
  void Signal(int sig);

 private:
  explicit Process(pid_t pid) : pid_(pid) {}
  pid_t pid_;
  bool reaped_ = false;
  int status_ = 0;
};

struct CommandResult {
  int exit_code = -1;  // -1: timed out (the command was killed)
  std::string out;
  std::string err;
};

// Runs a command to completion (or kills it after `timeout`).
CommandResult RunCommand(const std::vector<std::string>& argv, const Env& env, std::chrono::milliseconds timeout);

// `promtool check metrics` on an exposition: its exit status and what it said.
CommandResult PromtoolCheckMetrics(const std::string& exposition);

std::string ReadFile(const std::string& path);
// A memory figure of a running process from /proc/PID/status, in MiB:
// `field` "VmRSS:" (now) or "VmHWM:" (its peak). 0 when it cannot be read.
double StatusMiB(pid_t pid, const std::string& field);
bool WriteFile(const std::string& path, const std::string& content);
// A fresh directory under $TMPDIR (or /tmp).
std::string MakeTempDir(const std::string& prefix);

// Calls `done` every `step` until it returns true (then true) or `timeout`
// passes (then false).
bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout,
               std::chrono::milliseconds step = std::chrono::milliseconds(50));
// Calls `done` every `step` until it returns true (then true), or until
// `process` stops running or `timeout` passes (then false). For servers the
// tests start: up once they answer, given up on once they exit.
bool WaitUntilServing(const std::function<bool()>& done, Process& process, std::chrono::milliseconds timeout,
                      std::chrono::milliseconds step = std::chrono::milliseconds(50));
void RemoveTree(const std::string& path);
// Removes a test's directory (its own, the simulator's, an exporter's)
// unless IBFABRIC_KEEP_SIM is set, which keeps them all to look at.
void RemoveTestDir(const std::string& path);

// A fresh directory (MakeTempDir) removed with what it holds when this
// goes, however the test ends; kept with IBFABRIC_KEEP_SIM=1, as the
// simulator's are.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix) : path_(MakeTempDir(prefix)) {}
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace ibfabric::testbed
