#include "host/jobs.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace ibfabric::host {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxMappingFiles = 4096;          // devices of a host, many times over
constexpr std::uintmax_t kMaxMappingFileBytes = 65536;  // thousands of job ids
constexpr std::size_t kMaxMappingProblems = 16;

bool IsJobId(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '+';
  });
}

std::string Trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

std::string FirstLine(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return Trim(line);
}

// The path's components from the sysfs root, after every link.
std::vector<std::string> Components(const std::string& path) {
  std::vector<std::string> out;
  for (const auto& c : fs::path(path)) out.push_back(c.string());
  return out;
}

std::size_t Shared(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

const HostDevice* ByPciAddress(const HostReading& r, const std::string& address) {
  for (const HostDevice& d : r.devices) {
    if (!address.empty() && d.pci_address == address) return &d;
  }
  return nullptr;
}

// An HCA a GPU's traffic can be pinned to: a physical function with an
// InfiniBand port (no RoCE device, no SR-IOV virtual function).
bool InfiniBandFunction(const HostDevice& d) {
  return !d.virtual_function &&
         std::any_of(d.ports.begin(), d.ports.end(), [](const HostPort& p) { return p.infiniband(); });
}

// The HCA nearest a GPU on PCIe: the one sharing the most of its path from
// the root complex (a PCIe switch shared beats a root port shared beats the
// root complex alone), at least the root complex; on a tie, or where none
// shares one, the only such HCA on the GPU's NUMA node; else none (counted
// by the caller as unmatched, never guessed).
const HostDevice* Nearest(const Gpu& gpu, const HostReading& r) {
  const auto g = Components(gpu.pci_path);
  const HostDevice* best = nullptr;
  std::size_t best_shared = 0;
  bool tie = false;
  for (const HostDevice& d : r.devices) {
    if (!InfiniBandFunction(d) || d.pci_path.empty() || g.empty()) continue;
    const std::size_t n = Shared(g, Components(d.pci_path));
    if (n < 2) continue;  // "devices", "pci0000:3a": the same root complex at least
    if (n > best_shared) {
      best = &d;
      best_shared = n;
      tie = false;
    } else if (n == best_shared) {
      tie = true;
    }
  }
  if (best && !tie) return best;
  if (gpu.numa_node < 0) return nullptr;
  const HostDevice* only = nullptr;
  for (const HostDevice& d : r.devices) {
    if (!InfiniBandFunction(d) || d.numa_node != gpu.numa_node) continue;
    if (only) return nullptr;  // several on its node: which one is not known
    only = &d;
  }
  return only;
}

}  // namespace

std::vector<DeviceClaim> ReadJobMappingDir(const std::string& dir, std::vector<std::string>* problems) {
  std::vector<DeviceClaim> out;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return out;  // no job has started since boot (the prolog makes it)
  if (!fs::is_directory(dir, ec)) {
    problems->push_back(dir + ": not a directory");
    return out;
  }
  const auto problem = [problems](const std::string& what) {
    if (problems->size() < kMaxMappingProblems) problems->push_back(what);
  };
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    // A dot file is a lock or a list being rewritten (deploy/slurm/epilog.sh).
    if (e.is_regular_file(ec) && e.path().filename().string()[0] != '.') files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (files.size() > kMaxMappingFiles) {
    problem(dir + ": " + std::to_string(files.size()) + " files, only the first " + std::to_string(kMaxMappingFiles) +
            " read");
    files.resize(kMaxMappingFiles);
  }
  for (const fs::path& f : files) {
    std::ifstream in(f);
    if (!in) {
      problem(f.string() + ": cannot be read");
      continue;
    }
    if (fs::file_size(f, ec) > kMaxMappingFileBytes) {
      problem(f.string() + ": over " + std::to_string(kMaxMappingFileBytes) + " bytes, not read");
      continue;
    }
    std::string line;
    while (std::getline(in, line)) {
      const std::string id = Trim(line);
      if (id.empty()) continue;
      if (!IsJobId(id)) {
        problem(f.string() + ": '" + id.substr(0, 40) + "' is not a job id");
        continue;
      }
      DeviceClaim c;
      c.device_id = f.filename().string();
      c.holder.source = "slurm";
      c.holder.hpc_job = id;
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::vector<Gpu> ReadGpus(const std::string& sysfs_root, const std::string& proc_root) {
  std::vector<Gpu> out;
  const fs::path devices = fs::path(sysfs_root) / "bus" / "pci" / "devices";
  std::error_code ec;
  std::vector<fs::path> functions;
  for (const auto& e : fs::directory_iterator(devices, ec)) functions.push_back(e.path());
  std::sort(functions.begin(), functions.end());
  for (const fs::path& f : functions) {
    if (FirstLine(f / "vendor") != "0x10de" || FirstLine(f / "class").rfind("0x03", 0) != 0) continue;
    Gpu g;
    g.index = static_cast<int>(out.size());
    g.pci_address = f.filename().string();
    g.pci_path = PathUnderRoot(sysfs_root, f.string());
    const std::string numa = FirstLine(f / "numa_node");
    g.numa_node = numa.empty() ? -1 : std::atoi(numa.c_str());
    std::ifstream info(fs::path(proc_root) / "driver" / "nvidia" / "gpus" / g.pci_address / "information");
    for (std::string line; std::getline(info, line);) {
      if (line.rfind("GPU UUID:", 0) == 0) g.uuid = Trim(line.substr(9));
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::optional<std::string> HcaFor(const std::string& device_id, const HostReading& reading,
                                  const std::vector<Gpu>& gpus, const std::string& sysfs_root) {
  for (const HostDevice& d : reading.devices) {
    if (d.name == device_id) return d.name;
  }
  if (const HostDevice* d = ByPciAddress(reading, device_id)) return d->name;
  for (const Gpu& g : gpus) {
    const bool named =
        g.pci_address == device_id || (!g.uuid.empty() && g.uuid == device_id) || std::to_string(g.index) == device_id;
    if (!named) continue;
    const HostDevice* d = Nearest(g, reading);
    return d ? std::optional<std::string>(d->name) : std::nullopt;
  }
  // A virtual function of an HCA (SR-IOV): its physical function's.
  std::error_code ec;
  const fs::path physfn = fs::path(sysfs_root) / "bus" / "pci" / "devices" / device_id / "physfn";
  if (device_id.find('/') == std::string::npos && fs::exists(physfn, ec)) {
    const fs::path pf = fs::canonical(physfn, ec);
    if (!ec) {
      if (const HostDevice* d = ByPciAddress(reading, pf.filename().string())) return d->name;
    }
  }
  return std::nullopt;
}

}  // namespace ibfabric::host
