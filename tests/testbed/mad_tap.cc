#include "tests/testbed/mad_tap.h"

#include <algorithm>
#include <deque>
#include <fstream>
#include <map>
#include <queue>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "tests/testbed/sim_fabric.h"

namespace ibfabric::testbed {
namespace {

// The fields every tap line starts with (tests/tools/mad_tap.cc).
struct Head {
  char what = 0;  // 'S' sent, 'R' received
  unsigned long long ns = 0;
  std::uint32_t tid = 0;
  unsigned cls = 0;
  std::size_t kind() const {
    return static_cast<std::size_t>(transport::KindOf(static_cast<transport::MgmtClass>(cls)));
  }
};
// False when the line is no tap record.
bool ReadHead(std::istream& s, Head* h) {
  return static_cast<bool>(s >> h->what >> h->ns >> h->tid >> std::hex >> h->cls >> std::dec) &&
         (h->what == 'S' || h->what == 'R');
}

// The rest of a send record: the destination LID and, for a
// directed-route SMP, its route: "local" is one of no hop, to the
// exporter's own port, which never reaches the fabric.
struct Sent {
  unsigned lid = 0;
  std::string route;
  bool local = false;
  unsigned attr = 0;  // AttributeID
  unsigned mod = 0;   // AttributeModifier
};
Sent ReadSent(std::istream& s, const Head& h) {
  Sent x;
  s >> x.lid >> x.route >> std::hex >> x.attr >> x.mod >> std::dec;
  x.local = h.kind() == static_cast<std::size_t>(transport::MadKind::kDirectedSmp) && x.route == "local";
  return x;
}

struct Pending {
  std::vector<std::string> nodes;  // the target last
  std::size_t kind = 0;            // transport::MadKind
};

}  // namespace

Env MadTapEnv(const std::string& file) {
  // The whole list: the tap between the client and the RMPP layer (the
  // kernel's part), so it sees what the client sends and the SA's tables
  // whole, as on hardware, not their segments and acknowledgements.
  return {{"LD_PRELOAD", std::string(kUmad2SimPreload) + " " + IBFABRIC_MAD_TAP_LIB + " " + IBFABRIC_RMPP_LIB},
          {"MAD_TAP_FILE", file}};
}

std::string Describe(const MadTapReport& r) {
  std::string out = "sent";
  for (std::size_t k = 0; k < transport::kMadKinds; ++k) {
    out += std::string(k ? ", " : " ") + std::to_string(r.sent[k]) + " " +
           transport::ToString(static_cast<transport::MadKind>(k));
  }
  out += " (" + std::to_string(r.local_smps) + " of no hop; at most " + std::to_string(r.peak_per_100ms) +
         " in 100 ms); most in flight";
  for (std::size_t k = 0; k < transport::kMadKinds; ++k) {
    out += std::string(k ? ", " : " ") + transport::ToString(static_cast<transport::MadKind>(k)) + " " +
           std::to_string(r.peak_kind[k]);
  }
  out += ", all " + std::to_string(r.peak_total) + "; to one node " + std::to_string(r.peak_target) + " (" +
         r.peak_target_node + "); at one switch on a route " + std::to_string(r.peak_transit) + " (" +
         r.peak_transit_node + "); to the SA " + std::to_string(r.peak_sa);
  return out;
}

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
  std::array<int, transport::kMadKinds> kind_out{};
  int total = 0;
  std::deque<std::uint64_t> last_100ms;  // send times (ns) of the 100 ms before each send

  auto settle = [&](std::uint32_t tid) {
    auto it = pending.find(tid);
    if (it == pending.end()) return false;
    for (const auto& n : it->second.nodes) --at_node[n];
    --targeted[it->second.nodes.back()];
    --kind_out[it->second.kind];
    --total;
    pending.erase(it);
    return true;
  };

  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::istringstream s(line);
    Head h;
    if (!ReadHead(s, &h)) {
      r.error = path + " line " + std::to_string(number) + ": not a tap record: " + line;
      return r;
    }
    while (!deadlines.empty() && deadlines.top().first < h.ns) {
      settle(deadlines.top().second);
      deadlines.pop();
    }
    const std::size_t kind = h.kind();
    if (h.what == 'R') {
      if (settle(h.tid)) ++r.answered[kind];
      continue;
    }
    const Sent sent = ReadSent(s, h);
    Pending p;
    p.kind = kind;
    if (kind == static_cast<std::size_t>(transport::MadKind::kDirectedSmp)) {
      std::string prefix;
      std::istringstream hops(sent.local ? "" : sent.route);
      std::string hop;
      while (std::getline(hops, hop, ',')) {
        prefix += (prefix.empty() ? "" : ",") + hop;
        p.nodes.push_back("route " + prefix);
      }
      if (p.nodes.empty()) {  // no hop
        p.nodes.push_back("route local");
        ++r.local_smps;
      }
    } else if (h.cls == static_cast<unsigned>(transport::MgmtClass::kSubnAdm)) {
      p.nodes.push_back("sa at lid " + std::to_string(sent.lid));  // the SM's process, not the node's agent
    } else {
      p.nodes.push_back("lid " + std::to_string(sent.lid));
    }
    settle(h.tid);  // a TID reused after it expired
    ++r.sent[kind];
    last_100ms.push_back(h.ns);
    while (last_100ms.front() + 100'000'000ULL <= h.ns) last_100ms.pop_front();
    r.peak_per_100ms = std::max<std::uint64_t>(r.peak_per_100ms, last_100ms.size());
    for (std::size_t i = 0; i < p.nodes.size(); ++i) {
      const int n = ++at_node[p.nodes[i]];
      if (i + 1 < p.nodes.size() && n > r.peak_transit) {
        r.peak_transit = n;
        r.peak_transit_node = p.nodes[i];
      }
    }
    const int t = ++targeted[p.nodes.back()];
    if (p.nodes.back().rfind("sa ", 0) == 0) {
      r.peak_sa = std::max(r.peak_sa, t);
    } else if (t > r.peak_target) {
      r.peak_target = t;
      r.peak_target_node = p.nodes.back();
    }
    r.peak_kind[kind] = std::max(r.peak_kind[kind], ++kind_out[kind]);
    r.peak_total = std::max(r.peak_total, ++total);
    pending[h.tid] = std::move(p);
    deadlines.emplace(h.ns + expire_ns, h.tid);
  }
  r.ok = true;
  return r;
}

namespace {
// Calls `each` with every send record within [from, to).
template <typename Each>
void SendsBetween(const std::string& path, std::chrono::steady_clock::time_point from,
                  std::chrono::steady_clock::time_point to, Each each) {
  const auto ns_of = [](std::chrono::steady_clock::time_point t) {
    return static_cast<unsigned long long>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
  };
  const unsigned long long lo = ns_of(from), hi = ns_of(to);
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    Head h;
    if (!ReadHead(s, &h) || h.what != 'S' || h.ns < lo || h.ns >= hi) continue;
    each(h, ReadSent(s, h));
  }
}
}  // namespace

std::array<std::uint64_t, transport::kMadKinds> SentBetween(const std::string& path,
                                                            std::chrono::steady_clock::time_point from,
                                                            std::chrono::steady_clock::time_point to) {
  std::array<std::uint64_t, transport::kMadKinds> out{};
  SendsBetween(path, from, to, [&](const Head& h, const Sent& sent) {
    if (!sent.local) ++out[h.kind()];
  });
  return out;
}

std::uint64_t GmpsToLidBetween(const std::string& path, std::uint16_t lid, std::chrono::steady_clock::time_point from,
                               std::chrono::steady_clock::time_point to) {
  std::uint64_t n = 0;
  SendsBetween(path, from, to, [&](const Head& h, const Sent& sent) {
    n += h.kind() == static_cast<std::size_t>(transport::MadKind::kGmp) && sent.lid == lid;
  });
  return n;
}

std::uint64_t SentOfAttribute(const std::string& path, transport::MgmtClass mgmt_class, std::uint16_t attr,
                              std::uint16_t lid, std::chrono::steady_clock::time_point from,
                              std::chrono::steady_clock::time_point to) {
  std::uint64_t n = 0;
  SendsBetween(path, from, to, [&](const Head& h, const Sent& sent) {
    n +=
        h.cls == static_cast<unsigned>(mgmt_class) && sent.attr == attr && !sent.local && (lid == 0 || sent.lid == lid);
  });
  return n;
}

std::uint64_t SentOfRegister(const std::string& path, std::uint16_t register_id, std::uint16_t lid,
                             std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to) {
  std::uint64_t n = 0;
  SendsBetween(path, from, to, [&](const Head& h, const Sent& sent) {
    n += h.cls == static_cast<unsigned>(transport::MgmtClass::kVendorNvidia) &&
         sent.attr == transport::vs_attr::kAccessRegister && sent.mod == register_id && (lid == 0 || sent.lid == lid);
  });
  return n;
}

}  // namespace ibfabric::testbed
