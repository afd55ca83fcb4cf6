#include "exporter/recovery.h"

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace ibfabric::exporter {

bool ProbeLocalPort(const std::vector<std::string>& port_args, int timeout_ms, std::string* detail) {
  char out_path[] = "/tmp/ibfabric-probe-XXXXXX";
  const int out_fd = mkstemp(out_path);
  if (out_fd < 0) {
    *detail = std::string("mkstemp: ") + std::strerror(errno);
    return false;
  }
  std::vector<std::string> args{"/proc/self/exe", "--check"};
  args.insert(args.end(), port_args.begin(), port_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  // Nothing else of ours: the probe opens its own port from scratch.
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out_fd);
  bool ok = false;
  if (rc != 0) {
    *detail = std::string("spawn: ") + std::strerror(rc);
  } else {
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    pid_t done = 0;
    while ((done = waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (done == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      *detail = "probe timed out";
    } else {
      ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      std::ifstream f(out_path);
      std::stringstream ss;
      ss << f.rdbuf();
      *detail = ss.str();
      while (!detail->empty() && detail->back() == '\n') detail->pop_back();
    }
  }
  unlink(out_path);
  return ok;
}

std::string ReexecWithState(char** argv, const collectors::PersistedState& state) {
  char path[] = "/tmp/ibfabric-state-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return std::string("cannot save state: ") + std::strerror(errno);
  const std::string text = collectors::SaveState(state);
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!written) {
    unlink(path);
    return "cannot save state: short write";
  }
  setenv(kRestoreStateEnv, path, 1);
  // The new image opens its port afresh; descriptors of the old one (the
  // umad device, umad2sim's sockets, named after this very PID) must not
  // survive into it.
  if (DIR* d = opendir("/proc/self/fd")) {
    const int own = dirfd(d);
    while (dirent* e = readdir(d)) {
      const int n = std::atoi(e->d_name);
      if (n > 2 && n != own) fcntl(n, F_SETFD, FD_CLOEXEC);
    }
    closedir(d);
  }
  execv("/proc/self/exe", argv);
  const std::string why = std::string("exec failed: ") + std::strerror(errno);
  unsetenv(kRestoreStateEnv);
  unlink(path);
  return why;
}

std::optional<collectors::PersistedState> TakeRestoredState(std::string* error) {
  const char* path = std::getenv(kRestoreStateEnv);
  if (path == nullptr) return std::nullopt;
  const std::string file = path;
  unsetenv(kRestoreStateEnv);
  std::ifstream f(file);
  std::stringstream ss;
  ss << f.rdbuf();
  unlink(file.c_str());
  collectors::PersistedState state;
  if (!collectors::LoadState(ss.str(), &state, error)) return std::nullopt;
  return state;
}

}  // namespace ibfabric::exporter
