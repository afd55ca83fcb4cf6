#pragma once
// Reads what tests/tools/mad_tap.cc saw cross libibumad (every request sent,
// every response received, from outside the exporter) and works out what
// was outstanding at every instant: per kind of MAD, per node as a target,
// and per switch a directed-route SMP passes through. Nodes are told apart
// the way the SMP addresses them: a LID, or a directed route from the
// local port (one route per node is what discovery uses).

#include <array>
#include <chrono>
#include <cstdint>
#include <string>

namespace ibfabric::testbed {

// The preload that taps MADs (built next to the tests), and the variable
// naming its output file.
const char* MadTapLibrary();
inline constexpr const char* kMadTapFileVariable = "MAD_TAP_FILE";

struct MadTapReport {
  bool ok = false;
  std::string error;  // when !ok: what could not be read
  // Requests sent and responses matched, by kind: directed-route SMPs,
  // LID-routed SMPs, GMPs (transport::MadKind order).
  std::array<std::uint64_t, 3> sent{};
  std::array<std::uint64_t, 3> answered{};
  // The most outstanding at once: per kind, over all kinds, with one node
  // as their target, and at one switch that directed-route SMPs pass
  // through (counting everything outstanding at it, its own requests too).
  std::array<int, 3> peak_kind{};
  int peak_total = 0;
  int peak_target = 0;
  std::string peak_target_node;  // "lid 12" or "route 1,3"
  int peak_transit = 0;
  std::string peak_transit_node;
};

// `expire`: a request with no response stops counting as outstanding this
// long after it was sent (the engine has given up on it by then).
MadTapReport ReadMadTap(const std::string& path,
                        std::chrono::milliseconds expire = std::chrono::milliseconds(1000));

}  // namespace ibfabric::testbed
