#include "tests/testbed/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace ibfabric::testbed {
namespace {

int OpenOr(const std::string& path, int flags, const char* fallback) {
  return open(path.empty() ? fallback : path.c_str(), flags, 0644);
}

}  // namespace

std::unique_ptr<Process> Process::Spawn(const SpawnOptions& o, std::string* error) {
  if (o.argv.empty()) {
    *error = "empty argv";
    return nullptr;
  }
  // Build everything the child needs before fork: only async-signal-safe
  // calls happen between fork and exec.
  Env env;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : o.env) env[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = o.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  const int in = OpenOr(o.stdin_path, O_RDONLY, "/dev/null");
  const int out = OpenOr(o.stdout_path, O_WRONLY | O_CREAT | O_TRUNC, "/dev/null");
  const int err = o.stderr_path.empty() ? dup(out) : open(o.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (in < 0 || out < 0 || err < 0) {
    *error = "cannot open redirections for " + o.argv[0] + ": " + std::strerror(errno);
    for (int fd : {in, out, err})
      if (fd >= 0) close(fd);
    return nullptr;
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    return nullptr;
  }
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    for (int fd = 3; fd < 1024; ++fd) close(fd);
    execvpe(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  setpgid(pid, pid);
  close(in);
  close(out);
  close(err);
  return std::unique_ptr<Process>(new Process(pid));
}

Process::~Process() { Stop(std::chrono::milliseconds(1000)); }

bool Process::Running() { return Wait(std::chrono::milliseconds(0)) == -1; }

int Process::Wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!reaped_) {
    const pid_t r = waitpid(pid_, &status_, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      reaped_ = true;
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) return 128 + WTERMSIG(status_);
  return -1;
}

void Process::Signal(int sig) {
  if (!reaped_) kill(-pid_, sig);
}

void Process::Stop(std::chrono::milliseconds grace) {
  if (reaped_) {
    kill(-pid_, SIGKILL);  // anything the child left in its group
    return;
  }
  kill(-pid_, SIGTERM);
  if (Wait(grace) == -1) {
    kill(-pid_, SIGKILL);
    Wait(std::chrono::milliseconds(5000));
  }
  kill(-pid_, SIGKILL);
}

CommandResult RunCommand(const std::vector<std::string>& argv, const Env& env, std::chrono::milliseconds timeout) {
  CommandResult r;
  const std::string dir = MakeTempDir("cmd");
  SpawnOptions o{argv, env, "", dir + "/out", dir + "/err"};
  std::string error;
  auto p = Process::Spawn(o, &error);
  if (!p) {
    r.err = error;
    RemoveTree(dir);
    return r;
  }
  const int code = p->Wait(timeout);
  if (code == -1) p->Stop();
  r.exit_code = code;
  r.out = ReadFile(dir + "/out");
  r.err = ReadFile(dir + "/err");
  RemoveTree(dir);
  return r;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

double StatusMiB(pid_t pid, const std::string& field) {
  const std::string status = ReadFile("/proc/" + std::to_string(pid) + "/status");
  const auto at = status.find(field);
  return at == std::string::npos ? 0 : std::atof(status.c_str() + at + field.size()) / 1024.0;
}

bool WriteFile(const std::string& path, const std::string& content) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << content;
  return static_cast<bool>(f);
}

bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout, std::chrono::milliseconds step) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(step);
  }
  return false;
}

bool WaitUntilServing(const std::function<bool()>& done, Process& process, std::chrono::milliseconds timeout,
                      std::chrono::milliseconds step) {
  bool serving = false;
  WaitUntil([&] { return (serving = done()) || !process.Running(); }, timeout, step);
  return serving;
}

std::string MakeTempDir(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/ibfabric-" + prefix + "-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) return "";
  return buf.data();
}

void RemoveTree(const std::string& path) {
  std::error_code ec;
  if (!path.empty()) std::filesystem::remove_all(path, ec);
}

void RemoveTestDir(const std::string& path) {
  if (std::getenv("IBFABRIC_KEEP_SIM") == nullptr) RemoveTree(path);
}

TempDir::~TempDir() { RemoveTestDir(path_); }

CommandResult PromtoolCheckMetrics(const std::string& exposition) {
  const std::string dir = MakeTempDir("promtool");
  WriteFile(dir + "/metrics.txt", exposition);
  CommandResult r =
      RunCommand({"sh", "-c", "promtool check metrics < " + dir + "/metrics.txt"}, {}, std::chrono::seconds(60));
  RemoveTree(dir);
  return r;
}

}  // namespace ibfabric::testbed
