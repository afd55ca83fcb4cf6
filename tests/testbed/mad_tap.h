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

#include "tests/testbed/process.h"
#include "transport/mad.h"

namespace ibfabric::testbed {

// The environment that preloads the tap (built next to the tests) and has
// it write to `file`; for ExporterProcess::Start. Its LD_PRELOAD is a whole
// list: umad2sim, the tap, then the RMPP layer (tests/tools/rmpp.cc), which
// plays the kernel's part and so sits below where MADs cross libibumad.
Env MadTapEnv(const std::string& file);

struct MadTapReport {
  bool ok = false;
  std::string error;  // when !ok: what could not be read
  // Requests sent and responses matched, by kind (transport::MadKind order).
  std::array<std::uint64_t, transport::kMadKinds> sent{};
  std::array<std::uint64_t, transport::kMadKinds> answered{};
  // Of the directed-route SMPs sent: those of no hop, which the local HCA's
  // SMA answers and which never go onto the fabric.
  std::uint64_t local_smps = 0;
  // The most outstanding at once: per kind, over all kinds, with one node
  // as their target, and at one switch that directed-route SMPs pass
  // through (counting everything outstanding at it, its own requests too).
  std::array<int, transport::kMadKinds> peak_kind{};
  int peak_total = 0;
  int peak_target = 0;
  std::string peak_target_node;  // "lid 12" or "route 1,3"
  // SA queries (SubnAdm) outstanding at once to one SA: its own agent (the
  // SM's process), kept apart from peak_target as the engine keeps it.
  int peak_sa = 0;
  int peak_transit = 0;
  std::string peak_transit_node;
  // The most requests sent (retries too) in any 100 ms: what a rate limit
  // bounds.
  std::uint64_t peak_per_100ms = 0;
};

// One line: what was sent by kind, and the peaks with where they were.
std::string Describe(const MadTapReport& r);

// `expire`: a request with no response stops counting as outstanding this
// long after it was sent (the engine has given up on it by then).
MadTapReport ReadMadTap(const std::string& path, std::chrono::milliseconds expire = std::chrono::milliseconds(1000));

// Requests sent onto the fabric within [from, to), by kind: a
// directed-route SMP of no hop (the local HCA's SMA answers it) is not
// counted. The tap's clock is
// CLOCK_MONOTONIC, which is what steady_clock reads on Linux. Empty (all
// zero) when the file cannot be read.
std::array<std::uint64_t, transport::kMadKinds> SentBetween(const std::string& path,
                                                            std::chrono::steady_clock::time_point from,
                                                            std::chrono::steady_clock::time_point to);

// GMPs (PMA and SA requests) sent to `lid` within [from, to), as SentBetween.
std::uint64_t GmpsToLidBetween(const std::string& path, std::uint16_t lid, std::chrono::steady_clock::time_point from,
                               std::chrono::steady_clock::time_point to);

// Requests of class `mgmt_class` and attribute `attr` sent onto the fabric
// (the no-hop directed-route SMPs left out, as SentBetween), to `lid` (0:
// any), within [from, to) (by default all the file holds).
std::uint64_t SentOfAttribute(const std::string& path, transport::MgmtClass mgmt_class, std::uint16_t attr,
                              std::uint16_t lid = 0, std::chrono::steady_clock::time_point from = {},
                              std::chrono::steady_clock::time_point to = std::chrono::steady_clock::time_point::max());

// AccessRegister requests (NVIDIA's vendor class) for register
// `register_id` (their AttributeModifier), to `lid` (0: any), as
// SentOfAttribute.
std::uint64_t SentOfRegister(const std::string& path, std::uint16_t register_id, std::uint16_t lid = 0,
                             std::chrono::steady_clock::time_point from = {},
                             std::chrono::steady_clock::time_point to = std::chrono::steady_clock::time_point::max());

}  // namespace ibfabric::testbed
