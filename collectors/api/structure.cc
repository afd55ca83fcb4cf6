// GET /api/v1/structure and /api/v1/search (collectors/api/json.h): what
// the status page loads to draw a fabric of any size and to find a node in
// it without loading the whole topology.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <map>

#include "collectors/api/json.h"
#include "config/text.h"

namespace ibfabric::collectors {
namespace {

using nlohmann::json;
using topology::Analysis;
using topology::Fabric;
using topology::FormatGuid;
using topology::Node;
using topology::NodeKind;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool AllOf(const std::string& s, int (*is)(int)) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [is](char c) { return is(static_cast<unsigned char>(c)) != 0; });
}

// How well `q` (lower case) finds node `n`: 0 exact, 1 host name, 2 starts
// or ends so, 3 anywhere; -1 not at all. *how says by what.
int Score(const Node& n, const std::string& q, const char** how) {
  int best = -1;
  const auto take = [&](int score, const char* by) {
    if (best < 0 || score < best) {
      best = score;
      *how = by;
    }
  };
  const std::string name = Lower(n.description);
  if (name == q) {
    take(0, "name");
  } else if (name.substr(0, name.find(' ')) == q) {
    take(1, "host");
  } else if (name.rfind(q, 0) == 0) {
    take(2, "name");
  } else if (name.find(q) != std::string::npos) {
    take(3, "name");
  }
  if (AllOf(q, isdigit) && q.size() <= 5) {
    const long lid = std::strtol(q.c_str(), nullptr, 10);
    for (const auto& p : n.ports) {
      if (p.lid != 0 && p.lid == lid) take(0, "lid");
    }
    if (n.lid != 0 && n.lid == lid) take(0, "lid");
  }
  const bool prefixed = q.rfind("0x", 0) == 0;
  const std::string hex = prefixed ? q.substr(2) : q;
  if (AllOf(hex, isxdigit) && hex.size() <= 16 && (prefixed || hex.size() >= 4)) {
    std::vector<std::uint64_t> guids{n.guid};
    for (const auto& p : n.ports) {
      if (p.guid != 0) guids.push_back(p.guid);
    }
    for (std::uint64_t g : guids) {
      const std::string digits = FormatGuid(g).substr(2);
      if (std::strtoull(hex.c_str(), nullptr, 16) == g && (prefixed || hex.size() == 16)) {
        take(0, "guid");
      } else if (digits.size() >= hex.size() && digits.compare(digits.size() - hex.size(), hex.size(), hex) == 0) {
        take(2, "guid");
      } else if (digits.find(hex) != std::string::npos) {
        take(3, "guid");
      }
    }
  }
  return best;
}

}  // namespace

json StructureJson(const Fabric& f, const Analysis& a, const topology::HostAnalysis* hosts) {
  const topology::Pods pods = topology::FindPods(f, a, hosts ? &hosts->leaf_unit : nullptr);
  struct Sw {
    const Node* node;
    int tier;
    int pod;
  };
  std::vector<Sw> switches;
  for (const Node& n : f.nodes()) {
    if (n.kind != NodeKind::kSwitch) continue;
    const auto s = a.switches.find(n.guid);
    const auto p = pods.of.find(n.guid);
    switches.push_back({&n, s == a.switches.end() ? -1 : s->second.tier, p == pods.of.end() ? -1 : p->second});
  }
  // Unranked switches last, then by tier, pod (pod-less last) and name.
  const auto key = [](int v) { return v < 0 ? 1 << 20 : v; };
  std::sort(switches.begin(), switches.end(), [&](const Sw& x, const Sw& y) {
    if (x.tier != y.tier) return key(x.tier) < key(y.tier);
    if (x.pod != y.pod) return key(x.pod) < key(y.pod);
    if (x.node->description != y.node->description)
      return topology::NaturalLess(x.node->description, y.node->description);
    return x.node->guid < y.node->guid;
  });
  std::map<std::uint64_t, std::size_t> index;
  json list = json::array();
  std::vector<int> pod_sizes(pods.names.size());
  std::map<int, int> tiers;
  for (const Sw& s : switches) {
    index[s.node->guid] = list.size();
    const auto sum = a.switches.find(s.node->guid);
    list.push_back({{"guid", FormatGuid(s.node->guid)},
                    {"name", s.node->description},
                    {"lid", s.node->lid},
                    {"tier", s.tier},
                    {"pod", s.pod < 0 ? json(nullptr) : json(s.pod)},
                    {"cas", sum == a.switches.end() ? 0 : sum->second.ca_links}});
    if (s.pod >= 0) ++pod_sizes[static_cast<std::size_t>(s.pod)];
    ++tiers[s.tier];
  }
  // Cables between two switches, and how many of them run degraded.
  std::map<std::pair<std::size_t, std::size_t>, std::pair<int, int>> groups;
  std::size_t ca_links = 0;
  for (const topology::Link& l : topology::Links(f)) {
    const auto x = index.find(l.a.node_guid), y = index.find(l.b.node_guid);
    if (x == index.end() || y == index.end()) {
      ca_links += x != index.end() || y != index.end();
      continue;
    }
    auto& g = groups[{std::min(x->second, y->second), std::max(x->second, y->second)}];
    ++g.first;
    g.second += a.degraded.count(l) > 0;
  }
  json links = json::array();
  for (const auto& [pair, g] : groups) links.push_back({pair.first, pair.second, g.first, g.second});
  json pod_list = json::array();
  for (std::size_t i = 0; i < pods.names.size(); ++i) {
    pod_list.push_back({{"name", pods.names[i]}, {"switches", pod_sizes[i]}});
  }
  json tier_list = json::array();
  for (const auto& [t, n] : tiers) tier_list.push_back({{"tier", t}, {"name", topology::TierName(t)}, {"switches", n}});
  return {{"schema_version", kTopologySchemaVersion},
          {"is_tree", a.is_tree},
          {"tiers", tier_list},
          {"cas", f.ca_count()},
          {"ca_links", ca_links},
          {"pods", std::move(pod_list)},
          {"switches", std::move(list)},
          {"links", std::move(links)}};
}

bool ParseSearchQuery(const std::multimap<std::string, std::string>& params, SearchQuery* query, std::string* error) {
  SearchQuery q;
  if (!EachParameterOnce(params, error)) return false;
  bool given = false;
  for (const auto& [key, value] : params) {
    if (key == "q") {
      const auto first = value.find_first_not_of(" \t");
      const auto last = value.find_last_not_of(" \t");
      q.text = first == std::string::npos ? "" : value.substr(first, last - first + 1);
      if (q.text.empty() || q.text.size() > 200) {
        *error = "q must be 1 to 200 characters: a node or host name, a LID or a GUID";
        return false;
      }
      given = true;
    } else if (key == "limit") {
      char* stop = nullptr;
      errno = 0;
      const long n = std::strtol(value.c_str(), &stop, 10);
      if (value.empty() || *stop != '\0' || errno != 0 || n < 1 || n > 200) {
        *error = "limit must be a number from 1 to 200, not '" + config::Excerpt(value, 40) + "'";
        return false;
      }
      q.limit = static_cast<int>(n);
    } else {
      *error = "unknown parameter '" + config::Excerpt(key, 40) + "' (q, limit)";
      return false;
    }
  }
  if (!given) {
    *error = "q is required: a node or host name, a LID or a GUID";
    return false;
  }
  *query = q;
  return true;
}

json SearchJson(const Fabric& f, const Analysis* a, const SearchQuery& query, const topology::HostAnalysis* hosts) {
  const std::string q = Lower(query.text);
  // Hosts first among equals: a host name finds the host, then its HCAs.
  struct HostHit {
    int score;
    const topology::Host* host;
  };
  std::vector<HostHit> host_hits;
  if (hosts) {
    for (const topology::Host& h : hosts->hosts) {
      const std::string name = Lower(h.name);
      const int score = name == q ? 0 : name.rfind(q, 0) == 0 ? 2 : name.find(q) != std::string::npos ? 3 : -1;
      if (score >= 0) host_hits.push_back({score, &h});
    }
  }
  struct Hit {
    int score;
    const Node* node;
    const char* how;
  };
  std::vector<Hit> hits;
  for (const Node& n : f.nodes()) {
    const char* how = "";
    const int score = Score(n, q, &how);
    if (score >= 0) hits.push_back({score, &n, how});
  }
  const std::size_t total = hits.size() + host_hits.size();
  const auto less = [](const Hit& x, const Hit& y) {
    if (x.score != y.score) return x.score < y.score;
    if (x.node->description != y.node->description)
      return topology::NaturalLess(x.node->description, y.node->description);
    return x.node->guid < y.node->guid;
  };
  const std::size_t keep = std::min(hits.size(), static_cast<std::size_t>(query.limit));
  std::partial_sort(hits.begin(), hits.begin() + static_cast<std::ptrdiff_t>(keep), hits.end(), less);
  hits.resize(keep);
  const topology::Pods pods = a ? topology::FindPods(f, *a, hosts ? &hosts->leaf_unit : nullptr) : topology::Pods{};
  json results = json::array();
  std::stable_sort(host_hits.begin(), host_hits.end(),
                   [](const HostHit& x, const HostHit& y) { return x.score < y.score; });
  std::size_t next_host = 0;
  const auto add_hosts_up_to = [&](int score) {
    for (; next_host < host_hits.size() && host_hits[next_host].score <= score &&
           results.size() < static_cast<std::size_t>(query.limit);
         ++next_host) {
      const topology::Host& h = *host_hits[next_host].host;
      results.push_back({{"type", "host"},
                         {"name", h.name},
                         {"hcas", h.hcas.size()},
                         {"unit", h.unit < 0 ? json(nullptr) : json(hosts->units[static_cast<std::size_t>(h.unit)])},
                         {"match", "host"}});
    }
  };
  for (const Hit& h : hits) {
    add_hosts_up_to(h.score);
    if (results.size() >= static_cast<std::size_t>(query.limit)) break;
    const Node& n = *h.node;
    json r{{"guid", FormatGuid(n.guid)},
           {"name", n.description},
           {"type", NodeTypeName(n)},
           {"lid", n.lid},
           {"match", h.how}};
    if (a) {
      if (auto s = a->switches.find(n.guid); s != a->switches.end())
        r["tier_name"] = topology::TierName(s->second.tier);
    }
    if (auto p = pods.of.find(n.guid); p != pods.of.end()) r["pod"] = pods.names[static_cast<std::size_t>(p->second)];
    if (n.kind != NodeKind::kSwitch) {
      json cables = json::array();
      for (const auto& p : n.ports) cables.push_back(PortJson(f, p));
      r["ports"] = std::move(cables);
    }
    results.push_back(std::move(r));
  }
  add_hosts_up_to(3);
  return {{"schema_version", kTopologySchemaVersion},
          {"query", config::ValidUtf8(query.text)},
          {"total", total},
          {"results", std::move(results)}};
}

}  // namespace ibfabric::collectors
