#include "topology/scope.h"

#include <algorithm>
#include <charconv>

namespace ibfabric::topology {

const char* ToString(ScopeKind k) {
  switch (k) {
    case ScopeKind::kFabric: return "fabric";
    case ScopeKind::kLocal: return "local";
    case ScopeKind::kInterSwitch: return "inter-switch";
  }
  return "fabric";
}

bool ParseScopeKind(const std::string& text, ScopeKind* out) {
  for (ScopeKind k : {ScopeKind::kFabric, ScopeKind::kLocal, ScopeKind::kInterSwitch}) {
    if (text == ToString(k)) {
      *out = k;
      return true;
    }
  }
  return false;
}

bool ParseShard(const std::string& text, int* shard, int* shards) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) return false;
  int i = 0;
  int n = 0;
  const char* a = text.data();
  const char* mid = a + slash;
  const char* end = a + text.size();
  auto r1 = std::from_chars(a, mid, i);
  auto r2 = std::from_chars(mid + 1, end, n);
  if (slash == 0 || r1.ec != std::errc() || r1.ptr != mid || r2.ec != std::errc() || r2.ptr != end) return false;
  if (n < 1 || n > 4096 || i < 0 || i >= n) return false;
  *shard = i;
  *shards = n;
  return true;
}

int ShardOf(std::uint64_t guid, int shards) {
  // splitmix64's finaliser: GUIDs of one vendor differ in their low bits only.
  std::uint64_t z = guid + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<int>(z % static_cast<std::uint64_t>(shards));
}

bool OwnsSwitchFacts(const Scope& scope, std::uint64_t switch_guid) {
  if (scope.kind == ScopeKind::kLocal) return false;
  return scope.shards <= 1 || ShardOf(switch_guid, scope.shards) == scope.shard;
}

namespace {

bool IsSwitch(const Fabric& fabric, std::uint64_t guid) {
  const Node* n = fabric.FindNode(guid);
  return n != nullptr && n->kind == NodeKind::kSwitch;
}

// The shard a CA's ports go with: that of the switch its first cabled port
// leads to, or its own GUID's when it is cabled to no switch.
int CaShard(const Fabric& fabric, const Node& ca, int shards) {
  for (const auto& p : ca.ports) {
    if (p.remote && IsSwitch(fabric, p.remote->node_guid)) return ShardOf(p.remote->node_guid, shards);
  }
  return ShardOf(ca.guid, shards);
}

// The shard that reads both ends of a switch-to-switch cable: that of the
// switch at its first end, so that one exporter sees the whole cable.
int CableShard(const PortRef& a, const PortRef& b, int shards) { return ShardOf(std::min(a, b).node_guid, shards); }

}  // namespace

std::set<PortRef> PortsInScope(const Fabric& fabric, const Scope& scope, std::uint64_t local_node,
                               const std::set<std::uint64_t>& host_ports) {
  std::set<PortRef> out;
  for (const auto& node : fabric.nodes()) {
    const bool is_switch = node.kind == NodeKind::kSwitch;
    switch (scope.kind) {
      case ScopeKind::kFabric: {
        if (!is_switch) {
          if (CaShard(fabric, node, scope.shards) != scope.shard) break;
          for (const auto& p : node.ports) out.insert({node.guid, p.number});
          break;
        }
        const int own = ShardOf(node.guid, scope.shards);
        for (const auto& p : node.ports) {
          const PortRef ref{node.guid, p.number};
          const bool inter_switch = p.remote && IsSwitch(fabric, p.remote->node_guid);
          if ((inter_switch ? CableShard(ref, *p.remote, scope.shards) : own) == scope.shard) out.insert(ref);
        }
        break;
      }
      case ScopeKind::kLocal:
        for (const auto& p : node.ports) {
          if (node.guid != local_node && (is_switch || !host_ports.count(p.guid))) continue;
          out.insert({node.guid, p.number});
          if (p.remote) out.insert(*p.remote);
        }
        break;
      case ScopeKind::kInterSwitch:
        if (!is_switch) break;
        for (const auto& p : node.ports) {
          const PortRef ref{node.guid, p.number};
          if (p.remote && IsSwitch(fabric, p.remote->node_guid) &&
              CableShard(ref, *p.remote, scope.shards) == scope.shard) {
            out.insert(ref);
          }
        }
        break;
    }
  }
  return out;
}

std::optional<int> HealthShard(const Fabric& fabric, const Scope& scope, const Node& sw) {
  if (scope.kind == ScopeKind::kLocal || sw.kind != NodeKind::kSwitch) return std::nullopt;
  // The same choice, port by port, as PortsInScope makes.
  for (const auto& p : sw.ports) {
    if (p.remote && IsSwitch(fabric, p.remote->node_guid))
      return CableShard({sw.guid, p.number}, *p.remote, scope.shards);
    if (scope.kind == ScopeKind::kFabric) return ShardOf(sw.guid, scope.shards);
  }
  return std::nullopt;
}

}  // namespace ibfabric::topology
