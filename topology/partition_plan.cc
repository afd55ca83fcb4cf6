// The partition plan parser and P_Key wording: pure, no MADs (the fuzz
// target builds this file alone).
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <cstdlib>

#include "config/config_file.h"
#include "config/yaml.h"
#include "topology/partitions.h"

namespace ibfabric::topology {

std::string PartitionOf(std::uint16_t pkey) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%04x", pkey & 0x7fff);
  return buf;
}

const char* MembershipOf(std::uint16_t pkey) { return (pkey & 0x8000) ? "full" : "limited"; }

std::string DescribePKey(std::uint16_t pkey) { return PartitionOf(pkey) + " " + MembershipOf(pkey); }

namespace {

using config::yaml::Bad;
using config::yaml::LineOf;

std::set<std::string> Members(const YAML::Node& n, const std::string& what) {
  if (!n.IsSequence()) throw Bad{LineOf(n), what + " must be a list of node names or GUIDs (or 'all' for full)"};
  std::set<std::string> out;
  for (const auto& m : n) {
    if (!m.IsScalar() || m.Scalar().empty()) throw Bad{LineOf(m), what + ": members are node names or GUIDs"};
    out.insert(m.Scalar());
  }
  return out;
}

}  // namespace

bool ParsePartitionPlan(const std::string& text, PartitionPlan* plan, std::string* error) {
  PartitionPlan p;
  const bool ok = config::yaml::Parse(
      text,
      [&](const YAML::Node& root) {
        if (!root.IsMap() || !root["partitions"])
          throw Bad{root.IsNull() ? 1 : LineOf(root), "expected a map with 'partitions:'"};
        for (const auto& kv : root) {
          if (kv.first.Scalar() != "partitions")
            throw Bad{LineOf(kv.first), "unknown key '" + kv.first.Scalar() + "' (known: partitions)"};
        }
        const YAML::Node list = root["partitions"];
        if (!list.IsSequence()) throw Bad{LineOf(list), "partitions must be a list"};
        std::set<std::uint16_t> seen;
        for (const auto& item : list) {
          if (!item.IsMap()) throw Bad{LineOf(item), "each partition must be a map with name, pkey, full, limited"};
          PartitionPlan::Partition part;
          bool has_pkey = false;
          for (const auto& kv : item) {
            const std::string key = kv.first.Scalar();
            const YAML::Node& v = kv.second;
            if (key == "name") {
              part.name = v.IsScalar() ? v.Scalar() : "";
            } else if (key == "pkey") {
              const std::string s = v.IsScalar() ? v.Scalar() : "";
              char* end = nullptr;
              const unsigned long k = std::strtoul(s.c_str(), &end, 0);
              if (s.empty() || *end != '\0' || k > 0xffff || (k & 0x7fff) == 0) {
                throw Bad{LineOf(v), "pkey must be a P_Key such as 0x7fff or 0x8001, not '" + s.substr(0, 20) + "'"};
              }
              part.pkey = static_cast<std::uint16_t>(k & 0x7fff);
              has_pkey = true;
            } else if (key == "full") {
              if (v.IsScalar() && v.Scalar() == "all") {
                part.all_full = true;
              } else {
                part.full = Members(v, "full");
              }
            } else if (key == "limited") {
              part.limited = Members(v, "limited");
            } else {
              throw Bad{LineOf(kv.first),
                        "unknown key '" + key.substr(0, 40) + "' in a partition (known: name, pkey, full, limited)"};
            }
          }
          if (!has_pkey) throw Bad{LineOf(item), "a partition needs a pkey"};
          if (!seen.insert(part.pkey).second)
            throw Bad{LineOf(item), "partition " + DescribePKey(part.pkey).substr(0, 6) + " is listed twice"};
          for (const auto& m : part.limited) {
            if (part.full.count(m)) throw Bad{LineOf(item), m + " is both a full and a limited member"};
          }
          p.partitions.push_back(std::move(part));
        }
      },
      error);
  if (!ok) return false;
  *plan = std::move(p);
  return true;
}

bool LoadPartitionPlan(const std::string& path, PartitionPlan* plan, std::string* error) {
  return config::ParseFile(
      path, [plan](const std::string& text, std::string* why) { return ParsePartitionPlan(text, plan, why); }, error);
}

}  // namespace ibfabric::topology
