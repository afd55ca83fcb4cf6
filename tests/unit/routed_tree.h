#pragma once
// A small two-tier fat tree with balanced forwarding tables, for unit tests
// of what the tables say (routing balance, congestion trees).
//
// Three leaves with two hosts each, two spines, one cable per pair. Node
// indices: leaves 0-2, spines 3-4, hosts 5-10; LID = index + 1. Leaf ports
// 1-2 go to its hosts, 3-4 to the spines; spine port 1 + l to leaf l. Host h
// (0-5) is on leaf h / 2, port h % 2 + 1; the other leaves reach it through
// spine h % 2, the spines send it down to its leaf.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tests/unit/fabric_builder.h"
#include "topology/routing.h"
#include "transport/attributes.h"

namespace ibfabric::testing {

// Tables as the tests write them (switch GUID -> egress port by LID), handed
// to the code under test as ForwardingTables.
struct PlainTables : std::map<std::uint64_t, std::vector<std::uint8_t>> {
  using Plain = std::map<std::uint64_t, std::vector<std::uint8_t>>;
  operator topology::ForwardingTables() const {  // implicit on purpose: the tests pass these where tables go
    return topology::ForwardingTables(static_cast<const Plain&>(*this));
  }
};

struct RoutedTree {
  FabricBuilder b;
  int leaf[3], spine[2], host[6];
  topology::Fabric fabric;
  PlainTables tables;

  RoutedTree() {
    for (int i = 0; i < 3; ++i) leaf[i] = b.Switch("leaf" + std::to_string(i + 1), 8);
    for (int i = 0; i < 2; ++i) spine[i] = b.Switch("spine" + std::to_string(i + 1), 8);
    for (int i = 0; i < 6; ++i) host[i] = b.Ca("cn" + std::to_string(i + 1));
    for (int h = 0; h < 6; ++h) b.Link(leaf[h / 2], h % 2 + 1, host[h], 1);
    for (int l = 0; l < 3; ++l) {
      for (int s = 0; s < 2; ++s) b.Link(leaf[l], 3 + s, spine[s], 1 + l);
    }
    fabric = b.Build();
    for (int sw = 0; sw < 5; ++sw) tables[b.Guid(sw)].assign(16, transport::kLftNoPort);
    for (int h = 0; h < 6; ++h) {
      const std::uint16_t lid = Lid(host[h]);
      for (int l = 0; l < 3; ++l) Route(leaf[l], lid, l == h / 2 ? h % 2 + 1 : 3 + h % 2);
      for (int s = 0; s < 2; ++s) Route(spine[s], lid, 1 + h / 2);
    }
  }
  // Switch `sw` forwards `lid` out of `port`.
  void Route(int sw, std::size_t lid, int port) { tables[b.Guid(sw)][lid] = static_cast<std::uint8_t>(port); }
  std::uint16_t Lid(int node) const { return static_cast<std::uint16_t>(node + 1); }
};

}  // namespace ibfabric::testing
