#include "tests/testbed/mad_tap.h"

#include <fstream>
#include <map>
#include <queue>
#include <sstream>
#include <unordered_map>
#include <vector>

namespace ibfabric::testbed {
namespace {

int KindOfClass(unsigned cls) {
  if (cls == 0x81) return 0;  // directed-route SMP
  if (cls == 0x01) return 1;  // LID-routed SMP
  return 2;                   // GMP
}

struct Pending {
  std::vector<std::string> nodes;  // the target last
  int kind = 0;
};

}  // namespace

const char* MadTapLibrary() { return IBFABRIC_MAD_TAP_LIB; }

MadTapReport ReadMadTap(const std::string& path, std::chrono::milliseconds expire) {
  MadTapReport r;
  std::ifstream in(path);
  if (!in) {
    r.error = "cannot read " + path;
    return r;
  }
  const std::uint64_t expire_ns = static_cast<std::uint64_t>(expire.count()) * 1'000'000ULL;
  std::unordered_map<std::uint32_t, Pending> pending;
  std::priority_queue<std::pair<std::uint64_t, std::uint32_t>, std::vector<std::pair<std::uint64_t, std::uint32_t>>,
                      std::greater<>>
      deadlines;
  std::map<std::string, int> at_node, targeted;
  std::array<int, 3> kind_out{};
  int total = 0;

  auto settle = [&](std::uint32_t tid) {
    auto it = pending.find(tid);
    if (it == pending.end()) return false;
    for (const auto& n : it->second.nodes) --at_node[n];
    --targeted[it->second.nodes.back()];
    --kind_out[static_cast<std::size_t>(it->second.kind)];
    --total;
    pending.erase(it);
    return true;
  };

  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::istringstream s(line);
    char what = 0;
    unsigned long long ns = 0;
    std::uint32_t tid = 0;
    unsigned cls = 0;
    if (!(s >> what >> ns >> tid >> std::hex >> cls >> std::dec) || (what != 'S' && what != 'R')) {
      r.error = path + " line " + std::to_string(number) + ": not a tap record: " + line;
      return r;
    }
    while (!deadlines.empty() && deadlines.top().first < ns) {
      settle(deadlines.top().second);
      deadlines.pop();
    }
    const int kind = KindOfClass(cls);
    if (what == 'R') {
      if (settle(tid)) ++r.answered[static_cast<std::size_t>(kind)];
      continue;
    }
    unsigned lid = 0;
    std::string route;
    s >> lid >> route;
    Pending p;
    p.kind = kind;
    if (kind == 0) {
      std::string prefix;
      std::istringstream hops(route == "local" ? "" : route);
      std::string hop;
      while (std::getline(hops, hop, ',')) {
        prefix += (prefix.empty() ? "" : ",") + hop;
        p.nodes.push_back("route " + prefix);
      }
      if (p.nodes.empty()) p.nodes.push_back("route local");
    } else {
      p.nodes.push_back("lid " + std::to_string(lid));
    }
    settle(tid);  // a TID reused after it expired
    ++r.sent[static_cast<std::size_t>(kind)];
    for (std::size_t i = 0; i < p.nodes.size(); ++i) {
      const int n = ++at_node[p.nodes[i]];
      if (i + 1 < p.nodes.size() && n > r.peak_transit) {
        r.peak_transit = n;
        r.peak_transit_node = p.nodes[i];
      }
    }
    if (const int t = ++targeted[p.nodes.back()]; t > r.peak_target) {
      r.peak_target = t;
      r.peak_target_node = p.nodes.back();
    }
    r.peak_kind[static_cast<std::size_t>(kind)] =
        std::max(r.peak_kind[static_cast<std::size_t>(kind)], ++kind_out[static_cast<std::size_t>(kind)]);
    r.peak_total = std::max(r.peak_total, ++total);
    pending[tid] = std::move(p);
    deadlines.emplace(ns + expire_ns, tid);
  }
  r.ok = true;
  return r;
}

}  // namespace ibfabric::testbed
