#pragma once
// A rail-optimized fabric built by hand for unit tests: scalable units of
// servers whose HCA r is cabled to their unit's rail-r leaf, two spines
// over every leaf (topology/hosts.h learns rails and units from it).

#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "tests/unit/fabric_builder.h"
#include "topology/fabric.h"

namespace ibfabric::testing {

// Where HCA `rail` of server `s` of unit `u` (all 0-based) is cabled: the
// leaf of (unit, rail) it goes to, and which port of its HCA.
struct Target {
  int unit, rail;
};
using Cabling = std::function<Target(int u, int s, int r)>;

// `units` units of `servers` servers with one HCA per device in `devices`
// (HCA r on the rail-r leaf of its unit unless `where` says otherwise),
// leaves "su<u>-leaf<r>" (1-based), two spines. With `ports` 2 every HCA
// is dual-port: HCA r's port p is rail 2r+p-1, and `devices` are per HCA.
struct RailFabric {
  FabricBuilder b;
  std::vector<std::vector<int>> leaf;                                // [unit][rail]
  std::map<std::tuple<int, int, int>, int> hca;                      // (unit, server, HCA) -> node
  std::map<std::tuple<int, int, int>, topology::PortRef> leaf_port;  // (unit, server, rail) -> leaf port it reached
  topology::Fabric fabric;
  RailFabric(int units, int servers, const std::vector<std::string>& devices, const Cabling& where = {}, int ports = 1,
             const std::function<std::string(int u, int s, int h)>& name = {}) {
    const int rails = static_cast<int>(devices.size()) * ports;
    for (int u = 0; u < units; ++u) {
      leaf.emplace_back();
      for (int r = 0; r < rails; ++r) {
        leaf[u].push_back(b.Switch("su" + std::to_string(u + 1) + "-leaf" + std::to_string(r + 1), 64));
      }
    }
    const int spine1 = b.Switch("spine1", 64), spine2 = b.Switch("spine2", 64);
    for (auto& row : leaf) {
      for (int l : row) {
        b.Connect(l, spine1);
        b.Connect(l, spine2);
      }
    }
    for (int u = 0; u < units; ++u) {
      for (int s = 0; s < servers; ++s) {
        const std::string host = "gpu" + std::to_string(u + 1) + std::to_string(s + 1);
        for (int h = 0; h < static_cast<int>(devices.size()); ++h) {
          hca[{u, s, h}] = b.Ca(name ? name(u, s, h) : host + " " + devices[static_cast<std::size_t>(h)], ports);
        }
      }
    }
    for (int u = 0; u < units; ++u) {
      for (int s = 0; s < servers; ++s) {
        for (int r = 0; r < rails; ++r) {
          const Target t = where ? where(u, s, r) : Target{u, r};
          const int node = hca[{u, s, r / ports}];
          const int to = leaf[static_cast<std::size_t>(t.unit)][static_cast<std::size_t>(t.rail)];
          const int p = b.Next(to);
          b.Link(node, r % ports + 1, to, p);
          leaf_port[{u, s, r}] = {b.Guid(to), static_cast<std::uint8_t>(p)};
        }
      }
    }
    fabric = b.Build();
  }
  topology::PortRef HcaPort(int u, int s, int r, int ports = 1) const {
    return {b.Guid(hca.at({u, s, r / ports})), static_cast<std::uint8_t>(r % ports + 1)};
  }
};

}  // namespace ibfabric::testing
