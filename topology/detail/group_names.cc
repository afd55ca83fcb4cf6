#include "topology/detail/group_names.h"

#include <algorithm>

#include "topology/fabric.h"

namespace ibfabric::topology {

std::string SharedName(const std::vector<std::string>& names) {
  if (names.empty()) return "";
  std::string common = names[0];
  for (const std::string& n : names) {
    std::size_t k = 0;
    while (k < common.size() && k < n.size() && common[k] == n[k]) ++k;
    common.resize(k);
  }
  const auto cut = common.find_last_of("-_. /");
  return cut == std::string::npos ? "" : common.substr(0, cut);
}

NamedGroups NameGroups(std::vector<std::vector<std::string>> groups, const std::string& fallback) {
  std::vector<std::size_t> order(groups.size());
  for (std::size_t i = 0; i < groups.size(); ++i) {
    std::sort(groups[i].begin(), groups[i].end(),
              [](const std::string& x, const std::string& y) { return NaturalLess(x, y); });
    order[i] = i;
  }
  const auto first = [&](std::size_t i) { return groups[i].empty() ? std::string() : groups[i][0]; };
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return NaturalLess(first(x), first(y)); });
  NamedGroups out;
  out.position.resize(groups.size());
  for (std::size_t k = 0; k < order.size(); ++k) {
    out.position[order[k]] = static_cast<int>(k);
    out.names.push_back(SharedName(groups[order[k]]));
  }
  // A name two groups share, or none, says nothing: those are numbered.
  std::vector<bool> numbered(out.names.size());
  for (std::size_t k = 0; k < out.names.size(); ++k) {
    numbered[k] = out.names[k].empty() || std::count(out.names.begin(), out.names.end(), out.names[k]) > 1;
  }
  for (std::size_t k = 0; k < out.names.size(); ++k) {
    if (numbered[k]) out.names[k] = fallback + " " + std::to_string(k + 1);
  }
  return out;
}

}  // namespace ibfabric::topology
