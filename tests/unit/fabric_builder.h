#pragma once
// Hand-built fabrics for unit tests of the topology analyses.

#include <stdexcept>
#include <string>
#include <vector>

#include "topology/fabric.h"

namespace ibfabric::testing {

class FabricBuilder {
 public:
  // Returns the node's index; GUIDs are 0x100 + index.
  int Switch(const std::string& name, int ports = 36) { return Add(name, topology::NodeKind::kSwitch, ports); }
  int Ca(const std::string& name, int ports = 1) { return Add(name, topology::NodeKind::kCa, ports); }
  int Router(const std::string& name, int ports = 2) { return Add(name, topology::NodeKind::kRouter, ports); }
  std::uint64_t Guid(int n) const { return 0x100 + static_cast<std::uint64_t>(n); }

  // Cables a[pa] to b[pb]; `width` and `speed` are the active PortInfo bits
  // (2 = 4x, 4 = QDR), enabled and supported 1x|4x and SDR..QDR as in ibsim.
  void Link(int a, int pa, int b, int pb, std::uint8_t width = 2, std::uint8_t speed = 4) {
    Set(a, pa, b, pb, width, speed);
    Set(b, pb, a, pa, width, speed);
  }
  // The next free port of a node, from 1.
  int Next(int n) { return ++next_[n]; }
  void Connect(int a, int b, std::uint8_t width = 2, std::uint8_t speed = 4) {
    Link(a, Next(a), b, Next(b), width, speed);
  }

  // A cabled port, to adjust before Build().
  topology::Port& PortOf(int n, int port) {
    for (auto& p : nodes_[n].ports) {
      if (p.number == port) return p;
    }
    throw std::out_of_range("no port " + std::to_string(port) + " on " + nodes_[n].description);
  }

  topology::Fabric Build() const { return topology::Fabric(nodes_); }

 private:
  int Add(const std::string& name, topology::NodeKind kind, int ports) {
    topology::Node n;
    n.guid = Guid(static_cast<int>(nodes_.size()));
    n.kind = kind;
    n.description = name;
    n.num_ports = static_cast<std::uint8_t>(ports);
    n.lid = static_cast<std::uint16_t>(nodes_.size() + 1);
    nodes_.push_back(n);
    next_.push_back(0);
    return static_cast<int>(nodes_.size()) - 1;
  }
  void Set(int n, int port, int peer, int peer_port, std::uint8_t width, std::uint8_t speed) {
    topology::Port p;
    p.number = static_cast<std::uint8_t>(port);
    p.lid = nodes_[n].lid;
    p.state = 4;
    p.phys_state = 5;
    p.width_active = width;
    p.width_enabled = 1 | 2;
    p.width_supported = 1 | 2;
    p.speed_active = speed;
    p.speed_enabled = 1 | 2 | 4;
    p.speed_supported = 1 | 2 | 4;
    p.remote = topology::PortRef{Guid(peer), static_cast<std::uint8_t>(peer_port)};
    nodes_[n].ports.push_back(p);
  }

  std::vector<topology::Node> nodes_;
  std::vector<int> next_;
};

}  // namespace ibfabric::testing
