#include "tests/testbed/sim_fabric.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

namespace ibfabric::testbed {
namespace {

std::string Tail(const std::string& text, std::size_t n = 600) {
  return text.size() <= n ? text : "..." + text.substr(text.size() - n);
}

// What a file holds from `offset` on (the log ibsim keeps appending to:
// reading it whole at every poll grows slower as the log grows).
std::string ReadFrom(const std::string& path, off_t offset) {
  std::string out;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[65536];
  for (ssize_t n; (n = pread(fd, buf, sizeof buf, offset)) > 0; offset += n)
    out.append(buf, static_cast<std::size_t>(n));
  close(fd);
  return out;
}

off_t SizeOf(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_size : 0;
}

// umad2sim writes each MAD to ibsim's datagram socket while holding a
// process-wide lock that its poll() wrapper (used by every thread of the
// client, HTTP server included) also takes. A write blocks once ibsim's
// socket holds net.unix.max_dgram_qlen datagrams (10 by default) or the
// client's own socket has net.core.wmem_default bytes in flight (212992:
// about 200 MADs), so a busy or frozen ibsim (Pause) would stall unrelated
// threads of the exporter within seconds, its HTTP server first, which no
// real HCA does. Both are read when a socket is created: they are raised
// before ibsim and its clients start (as root), enough for every client of
// a test to go on sending into a frozen simulator for minutes.
//
// Simulators of several test processes run at once (ctest runs two
// suites, each with its own IBSIM_SOCKNAME), so the values are the
// machine's, shared: the first simulator raises them and keeps what they
// were in kSaved; the last one to stop puts them back. kMutex (flock,
// held for moments) orders raising and restoring; every running simulator
// holds kHolders shared, so whoever stops and can then take it alone was
// the last. A test process killed midway leaves kSaved for the next run.
constexpr std::pair<const char*, long> kFloors[] = {{"/proc/sys/net/unix/max_dgram_qlen", 65536},
                                                    {"/proc/sys/net/core/wmem_default", 64L << 20}};
constexpr char kMutex[] = "/tmp/ibfabric-sim-sysctls.lock";
constexpr char kHolders[] = "/tmp/ibfabric-sim-sysctls.holders";
constexpr char kSaved[] = "/tmp/ibfabric-sim-sysctls.saved";  // "PATH VALUE" lines

int LockFile(const char* path, int how) {
  const int fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 && flock(fd, how) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Raises the sysctls below their floor (saving what they were) and
// returns the descriptor that holds kHolders shared (-1 if it cannot).
int RaiseSysctls() {
  const int mutex = LockFile(kMutex, LOCK_EX);
  std::string saved = ReadFile(kSaved);
  for (const auto& [path, floor] : kFloors) {
    const std::string was = ReadFile(path);
    if (was.empty() || std::atol(was.c_str()) >= floor) continue;
    if (!WriteFile(path, std::to_string(floor) + "\n")) continue;
    if (saved.find(std::string(path) + " ") == std::string::npos) saved += std::string(path) + " " + was;
  }
  if (!saved.empty()) WriteFile(kSaved, saved);
  const int holder = LockFile(kHolders, LOCK_SH);
  if (mutex >= 0) close(mutex);
  return holder;
}

// Lets go of kHolders; the last simulator puts the saved values back.
void ReleaseSysctls(int holder) {
  if (holder < 0) return;
  const int mutex = LockFile(kMutex, LOCK_EX);
  close(holder);
  const int alone = LockFile(kHolders, LOCK_EX | LOCK_NB);
  if (alone >= 0) {
    std::istringstream in(ReadFile(kSaved));
    for (std::string path, value; in >> path >> value;) WriteFile(path, value + "\n");
    unlink(kSaved);
    close(alone);
  }
  if (mutex >= 0) close(mutex);
}

}  // namespace

std::unique_ptr<SimFabric> SimFabric::Start(const std::string& net_file, const SimOptions& options,
                                            std::string* error) {
  // ibsim's control socket is an abstract name (IBSIM_SOCKNAME, "sim" by
  // default), so one simulator runs per name; a second prints "ready" and
  // then dies on bind.
  std::unique_ptr<SimFabric> sim(new SimFabric());
  sim->options_ = options;
  if (sim->options_.socket_name.empty()) {
    const char* env = std::getenv("IBSIM_SOCKNAME");
    sim->options_.socket_name = env && *env ? env : "sim";
  }
  const std::string ctl = "@" + sim->options_.socket_name + ":ctl@";
  if (ReadFile("/proc/net/unix").find(ctl) != std::string::npos) {
    *error = "another ibsim is already running (socket " + ctl + " is in use); stop it first";
    return nullptr;
  }
  sim->sysctl_holder_fd_ = RaiseSysctls();
  sim->dir_ = MakeTempDir("sim");
  if (sim->dir_.empty()) {
    *error = "cannot create a temporary directory";
    return nullptr;
  }
  WriteFile(sim->dir_ + "/net", net_file);
  const std::string fifo = sim->dir_ + "/console";
  if (mkfifo(fifo.c_str(), 0600) != 0) {
    *error = "mkfifo: " + std::string(std::strerror(errno));
    return nullptr;
  }
  // O_RDWR on a fifo does not block; holding it open keeps ibsim from
  // seeing end of file on its console.
  sim->console_fd_ = open(fifo.c_str(), O_RDWR);
  if (!sim->Launch(error)) return nullptr;
  if (options.sweep_once && !sim->SweepSubnet(error)) return nullptr;
  if (!sim->ibsim_->Running()) {
    *error = "ibsim died after start: " + Tail(ReadFile(sim->dir_ + "/ibsim.log"));
    return nullptr;
  }
  return sim;
}

bool SimFabric::Launch(std::string* error) {
  SpawnOptions o;
  o.argv = {"ibsim",      "-s",
            "-N",         std::to_string(options_.max_nodes),
            "-S",         std::to_string(options_.max_switches),
            "-P",         std::to_string(options_.max_ports),
            dir_ + "/net"};
  if (options_.linear_cap > 0) o.argv.insert(o.argv.end() - 1, {"-L", std::to_string(options_.linear_cap)});
  o.env["IBSIM_SOCKNAME"] = options_.socket_name;
  o.stdin_path = dir_ + "/console";
  o.stdout_path = dir_ + "/ibsim.log";
  ibsim_ = Process::Spawn(o, error);
  if (!ibsim_) return false;
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  while (true) {
    const std::string log = ReadFile(o.stdout_path);
    if (log.find("Network simulator ready.") != std::string::npos) return true;
    if (!ibsim_->Running() || log.find("ibpanic") != std::string::npos) {
      *error = "ibsim failed to start: " + Tail(log);
      return false;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      *error = "ibsim not ready after " + std::to_string(options_.timeout.count()) + "s";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void SimFabric::Kill() {
  if (ibsim_) {
    ibsim_->Signal(SIGKILL);
    ibsim_->Wait(std::chrono::milliseconds(5000));
  }
}

bool SimFabric::Restart(std::string* error) {
  Kill();
  // The dead simulator's sockets go away with it; wait until its name is free.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  const std::string ctl = "@" + options_.socket_name + ":ctl@";
  while (ReadFile("/proc/net/unix").find(ctl) != std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) {
      *error = "socket " + ctl + " still in use after ibsim was killed";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Launch(error) && SweepSubnet(error);
}

SimFabric::~SimFabric() {
  if (ibsim_) {
    ibsim_->Signal(SIGCONT);  // a paused simulator cannot act on SIGTERM
    ibsim_->Stop();
  }
  ReleaseSysctls(sysctl_holder_fd_);
  if (console_fd_ >= 0) close(console_fd_);
  RemoveTestDir(dir_);
}

int SimFabric::DisconnectDeadClients() {
  // "Client 3: pid 1234 connected at ..." (ibsim.c list_connections).
  std::istringstream in(Console("Attached"));
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    int id = 0, pid = 0;
    if (std::sscanf(line.c_str(), "Client %d: pid %d", &id, &pid) != 2 || pid <= 0) continue;
    // more_fabrics' devices carry their number above a pid's 22 bits.
    if (kill(pid & ((1 << 22) - 1), 0) == 0 || errno != ESRCH) continue;
    Console("X " + std::to_string(id));
    ++n;
  }
  return n;
}

std::string SimFabric::Console(const std::string& command, bool* ok) {
  // One command at a time: ramps on other threads share the console, and
  // each command's answer is what ibsim printed up to its prompt.
  std::lock_guard<std::mutex> lock(console_mutex_);
  const std::string path = dir_ + "/ibsim.log";
  const off_t before = SizeOf(path);
  const std::string line = command + "\n";
  bool answered = write(console_fd_, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  // ibsim prompts after each line it took.
  const auto commands = static_cast<std::size_t>(std::count(line.begin(), line.end(), '\n'));
  const auto prompts = [](const std::string& text) {
    std::size_t n = 0;
    for (auto at = text.find("sim> "); at != std::string::npos; at = text.find("sim> ", at + 1)) ++n;
    return n;
  };
  std::string out;
  while (answered && prompts(out = ReadFrom(path, before)) < commands) {
    if (std::chrono::steady_clock::now() > deadline || !ibsim_->Running()) {
      answered = false;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!answered) {
    if (ok) *ok = false;
    return "";
  }
  out = out.substr(0, out.rfind("sim> "));
  // ibsim says nothing on success and one of these on a rejected command.
  // Its packet warnings ("ibwarn: ... routing failed") about MADs in
  // flight meanwhile may land in between: they say nothing of the command.
  bool rejected = false;
  std::istringstream lines(out);
  for (std::string l; std::getline(lines, l);) {
    if (l.find("ibwarn:") != std::string::npos) continue;
    for (const char* bad : {"unknown", "not found", "error", "invalid", "failed", "bad "}) {
      rejected = rejected || l.find(bad) != std::string::npos;
    }
  }
  if (ok) *ok = !rejected;
  return out;
}

bool SimFabric::SweepSubnet(std::string* error, bool forget_lids) {
  const std::string log = dir_ + "/opensm." + std::to_string(++sm_runs_) + ".log";
  const std::string cache = dir_ + "/osm-cache";
  if (forget_lids) RemoveTree(cache);
  mkdir(cache.c_str(), 0700);
  Env env = SmEnv();
  env["OSM_CACHE_DIR"] = cache;
  std::vector<std::string> argv{"opensm", "-o", "-f", log};
  if (!options_.sm_config.empty()) {
    WriteFile(dir_ + "/opensm.conf", options_.sm_config);
    argv.insert(argv.end(), {"-F", dir_ + "/opensm.conf"});
  }
  if (!options_.partitions.empty()) {
    WriteFile(dir_ + "/partitions.conf", options_.partitions);
    argv.insert(argv.end(), {"-P", dir_ + "/partitions.conf"});
  }
  const auto r = RunCommand(argv, env, std::chrono::duration_cast<std::chrono::milliseconds>(options_.timeout));
  const std::string text = ReadFile(log);
  if (text.find("SUBNET UP") == std::string::npos) {
    *error =
        "opensm did not bring the subnet up (exit " + std::to_string(r.exit_code) + "): " + Tail(text + r.out + r.err);
    return false;
  }
  return true;
}

std::unique_ptr<Process> SimFabric::StartSubnetManager(const SmOptions& options, std::string* error) {
  const std::string name = "opensm.resident" + (resident_sms_++ ? std::to_string(resident_sms_) : std::string());
  const std::string log = dir_ + "/" + name + ".log";
  const std::string cache = dir_ + "/" + name + "-cache";
  mkdir(cache.c_str(), 0700);
  SpawnOptions o;
  o.argv = {"opensm", "-d2", "-f", log};  // -d2: flush the log after each message
  if (options.priority >= 0) o.argv.insert(o.argv.end(), {"-p", std::to_string(options.priority)});
  if (options.sweep_seconds >= 0) o.argv.insert(o.argv.end(), {"-s", std::to_string(options.sweep_seconds)});
  if (!options.config.empty() || !options_.sm_config.empty()) {
    WriteFile(dir_ + "/" + name + ".conf", options_.sm_config + options.config);
    o.argv.insert(o.argv.end(), {"-F", dir_ + "/" + name + ".conf"});
  }
  if (!options_.partitions.empty()) {
    WriteFile(dir_ + "/partitions.conf", options_.partitions);
    o.argv.insert(o.argv.end(), {"-P", dir_ + "/partitions.conf"});
  }
  o.env = SmEnv();
  if (!options.attach.empty()) o.env["SIM_HOST"] = options.attach;
  o.env["OSM_CACHE_DIR"] = cache;
  o.stdout_path = dir_ + "/" + name + ".out";
  auto sm = Process::Spawn(o, error);
  if (!sm) return nullptr;
  const char* wanted = options.standby ? "Entering STANDBY state" : "SUBNET UP";
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  while (ReadFile(log).find(wanted) == std::string::npos) {
    if (!sm->Running() || std::chrono::steady_clock::now() > deadline) {
      *error = name + " did not reach '" + wanted + "': " + Tail(ReadFile(log));
      return nullptr;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return sm;
}

std::string SimPreload() { return std::string(kUmad2SimPreload) + " " + IBFABRIC_RMPP_LIB; }

Env SimFabric::ClientEnv() const {
  Env env{{"LD_PRELOAD", SimPreload()}};
  if (!options_.attach.empty()) env["SIM_HOST"] = options_.attach;
  env["IBSIM_SOCKNAME"] = options_.socket_name;
  return env;
}

Env SimFabric::SmEnv() const {
  Env env = ClientEnv();
  env["LD_PRELOAD"] += std::string(" ") + IBFABRIC_MAD_TIMEOUTS_LIB;
  return env;
}

CommandResult SimFabric::Tool(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) const {
  return RunCommand(argv, ClientEnv(), timeout);
}

Env MoreFabricEnv(const std::string& device, const SimFabric& other, const std::string& node) {
  return {{"LD_PRELOAD", IBFABRIC_MORE_FABRICS_LIB}, {"MORE_FABRICS", device + "=" + other.socket_name() + "@" + node}};
}

}  // namespace ibfabric::testbed
