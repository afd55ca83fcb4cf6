#pragma once
// Names for groups of switches (pods, units), shared by the tree analysis
// (pods) and the hosts analysis (scalable units). Pure; on names only.

#include <string>
#include <vector>

namespace ibfabric::topology {

// What names a group of switches (pods, units): what their names share up
// to the last separator ("ib-p01" for ib-p01-leaf01 and ib-p01-agg01);
// empty when that is nothing.
std::string SharedName(const std::vector<std::string>& names);

// Groups of switches (pods, units) in order and named: ordered by their
// first name in natural order (NaturalLess), each named by SharedName, or
// "<fallback> N" (1-based, in that order) where that is empty or another
// group's too. `position[i]` is where group i went; `names` in that order.
struct NamedGroups {
  std::vector<int> position;
  std::vector<std::string> names;
};
NamedGroups NameGroups(std::vector<std::vector<std::string>> groups, const std::string& fallback);

}  // namespace ibfabric::topology
