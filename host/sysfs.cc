#include "host/sysfs.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace ibfabric::host {
namespace {

namespace fs = std::filesystem;

// A sysfs file's text without its trailing newline; nullopt when it is
// not there or cannot be read.
std::optional<std::string> Read(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  std::string s = text.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// What the kernel writes for a state: "4: ACTIVE" -> "ACTIVE".
std::string AfterColon(const std::string& s) {
  const auto colon = s.find(": ");
  return colon == std::string::npos ? s : s.substr(colon + 2);
}

class Reader {
 public:
  explicit Reader(fs::path root) : root_(std::move(root)) {}

  HostReading Read() {
    const fs::path cls = root_ / "class" / "infiniband";
    std::error_code ec;
    if (!fs::is_directory(cls, ec)) return std::move(out_);
    std::vector<fs::path> devices;
    for (const auto& e : fs::directory_iterator(cls, ec)) devices.push_back(e.path());
    std::sort(devices.begin(), devices.end());
    for (const fs::path& d : devices) out_.devices.push_back(Device(d));
    return std::move(out_);
  }

 private:
  // The path as the problems name it: from the root.
  std::string Name(const fs::path& p) const { return p.lexically_relative(root_).string(); }
  void Problem(const fs::path& p, const std::string& what) { out_.problems.push_back(Name(p) + ": " + what); }

  std::string Text(const fs::path& p) { return host::Read(p).value_or(""); }

  // Every file of a counters directory, each a decimal count.
  std::map<std::string, std::uint64_t> Counters(const fs::path& dir) {
    std::map<std::string, std::uint64_t> out;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return out;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (!e.is_regular_file(ec)) continue;
      // hw_counters/lifespan is no counter: how long (ms) the driver keeps
      // the counters it read before reading them again, a setting (Linux
      // drivers/infiniband/core/sysfs.c, show_stats_lifespan).
      if (e.path().filename() == "lifespan") continue;
      const auto text = host::Read(e.path());
      if (!text) {
        Problem(e.path(), "cannot be read");
        continue;
      }
      char* end = nullptr;
      errno = 0;
      const unsigned long long v = std::strtoull(text->c_str(), &end, 10);
      if (text->empty() || !std::isdigit(static_cast<unsigned char>((*text)[0])) || *end != '\0' || errno != 0) {
        Problem(e.path(), "not a number");
        continue;
      }
      out[e.path().filename().string()] = v;
    }
    return out;
  }

  HostDevice Device(const fs::path& d) {
    HostDevice dev;
    dev.name = d.filename().string();
    dev.fw_ver = Text(d / "fw_ver");
    dev.board_id = Text(d / "board_id");
    dev.hca_type = Text(d / "hca_type");
    dev.node_guid = Text(d / "node_guid");
    dev.node_desc = Text(d / "node_desc");
    dev.hw_counters = Counters(d / "hw_counters");
    std::error_code ec;
    const fs::path pci = d / "device";
    if (fs::exists(pci, ec)) {
      const fs::path target = fs::is_symlink(pci, ec) ? fs::read_symlink(pci, ec) : pci;
      dev.pci_address = target.filename().string();
      dev.pci_path = PathUnderRoot(root_.string(), pci.string());
      dev.virtual_function = fs::exists(pci / "physfn", ec);
      Pcie(pci, &dev);
    }
    std::vector<std::pair<int, fs::path>> ports;
    for (const auto& e : fs::directory_iterator(d / "ports", ec)) {
      char* end = nullptr;
      const std::string n = e.path().filename().string();
      const long number = std::strtol(n.c_str(), &end, 10);
      if (!n.empty() && *end == '\0' && number > 0 && number < 256)
        ports.emplace_back(static_cast<int>(number), e.path());
    }
    std::sort(ports.begin(), ports.end());
    for (const auto& [number, p] : ports) dev.ports.push_back(Port(number, p));
    return dev;
  }

  void Pcie(const fs::path& pci, HostDevice* dev) {
    const auto speed = host::Read(pci / "current_link_speed");
    const auto width = host::Read(pci / "current_link_width");
    if (speed || width) {
      PcieLink link;
      link.speed_gts = ParsePcieSpeed(speed.value_or(""));
      link.width = std::atoi(width.value_or("0").c_str());
      link.max_speed_gts = ParsePcieSpeed(Text(pci / "max_link_speed"));
      link.max_width = std::atoi(Text(pci / "max_link_width").c_str());
      dev->pcie = link;
    }
    if (const auto numa = host::Read(pci / "numa_node")) dev->numa_node = std::atoi(numa->c_str());
  }

  HostPort Port(int number, const fs::path& p) {
    HostPort port;
    port.number = number;
    port.link_layer = Text(p / "link_layer");
    port.state = AfterColon(Text(p / "state"));
    port.phys_state = AfterColon(Text(p / "phys_state"));
    port.rate = Text(p / "rate");
    if (port.infiniband()) {
      // "0x1a", as the kernel writes a LID.
      const std::string lid = Text(p / "lid");
      port.lid = static_cast<std::uint16_t>(std::strtoul(lid.c_str(), nullptr, 16));
    }
    port.counters = Counters(p / "counters");
    port.hw_counters = Counters(p / "hw_counters");
    return port;
  }

  fs::path root_;
  HostReading out_;
};

}  // namespace

bool PcieLink::degraded() const {
  const bool slow = speed_gts > 0 && max_speed_gts > 0 && speed_gts < max_speed_gts;
  const bool narrow = width > 0 && max_width > 0 && width < max_width;
  return slow || narrow;
}

std::string PathUnderRoot(const std::string& root, const std::string& path) {
  std::error_code real_ec, base_ec;
  const fs::path real = fs::canonical(path, real_ec);
  const fs::path base = fs::canonical(root, base_ec);
  if (real_ec || base_ec) return "";
  const fs::path rel = real.lexically_relative(base);
  return rel.empty() || *rel.begin() == ".." ? "" : rel.string();
}

double ParsePcieSpeed(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || v <= 0) return 0;
  while (*end == ' ') ++end;
  return std::string(end).rfind("GT/s", 0) == 0 ? v : 0;
}

std::uint64_t ParseSysfsGuid(const std::string& text) {
  if (text.size() != 19) return 0;
  std::uint64_t guid = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (i % 5 == 4) {
      if (c != ':') return 0;
      continue;
    }
    if (!std::isxdigit(static_cast<unsigned char>(c))) return 0;
    guid = guid << 4 | static_cast<std::uint64_t>(
                           std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(c) - 'a' + 10);
  }
  return guid;
}

HostReading ReadSysfs(const std::string& root) { return Reader(root).Read(); }

}  // namespace ibfabric::host
