#pragma once
// Which ports one exporter reads, so that many exporters on one fabric read
// every port once between them instead of the whole fabric each:
//
// - fabric (default): every port, or with shards (--shard=i/n) the ports of
//   the switches whose GUID hashes to shard i, plus the CA ports cabled to
//   those switches; but a switch-to-switch cable goes whole (both ends) to
//   the shard of the switch at its first end (lower GUID), so that one
//   exporter judges each cable. n shards read every port exactly once.
// - local: the ports of the node this exporter runs on, of the host's other
//   ports on the fabric (another HCA, the other port of a dual-port one:
//   topology::DiscoverOptions::host_ports), and the port at the other end
//   of each of their cables (the DaemonSet on every host). Only those
//   nodes are discovered.
// - inter-switch: both ends of every switch-to-switch cable whose first end
//   (lower GUID) is on the shard's switches. With local scope on every
//   host, every cabled port is read exactly once.

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "topology/fabric.h"

namespace ibfabric::topology {

enum class ScopeKind { kFabric, kLocal, kInterSwitch };
const char* ToString(ScopeKind k);

struct Scope {
  ScopeKind kind = ScopeKind::kFabric;
  int shard = 0;  // 0 <= shard < shards
  int shards = 1;

  bool everything() const { return kind == ScopeKind::kFabric && shards == 1; }
  // Only one exporter of a set reports fabric-wide topology findings: the
  // first shard of a fabric or inter-switch deployment, never a local one.
  bool reports_topology() const { return kind != ScopeKind::kLocal && shard == 0; }
};

// Parses "fabric", "local", "inter-switch"; false when unknown.
bool ParseScopeKind(const std::string& text, ScopeKind* out);
// Parses "i/n" with 0 <= i < n <= 4096; false when malformed.
bool ParseShard(const std::string& text, int* shard, int* shards);

// The shard a switch belongs to: a mix of its GUID (consecutive GUIDs
// spread evenly), modulo `shards`.
int ShardOf(std::uint64_t switch_guid, int shards);
// Whether an exporter of `scope` states a switch's own facts (its
// environment, its hardware): never a local one, else the shard its GUID
// falls in, whatever ports that shard reads.
bool OwnsSwitchFacts(const Scope& scope, std::uint64_t switch_guid);

// Pure. The ports of `fabric` in `scope`; `local_node` is the GUID of the
// node the exporter's own port is on, and `host_ports` the port GUIDs of
// the host's other ports on the fabric (local scope reads them too, and
// the far end of each: DiscoverOptions::host_ports).
std::set<PortRef> PortsInScope(const Fabric& fabric, const Scope& scope, std::uint64_t local_node,
                               const std::set<std::uint64_t>& host_ports = {});

// Pure. The shard of a fabric or inter-switch deployment that states
// whether switch `sw` answers (its node health): the one that reads its
// lowest-numbered port any shard of that kind reads, so that one exporter
// states it however its ports are spread over shards. nullopt in local
// scope (never a local exporter) or when no shard reads any of its ports.
std::optional<int> HealthShard(const Fabric& fabric, const Scope& scope, const Node& sw);

}  // namespace ibfabric::topology
