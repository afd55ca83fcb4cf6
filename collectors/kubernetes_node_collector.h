#pragma once
// kubernetes_node: this host's verdict and its place in the fabric, written
// to its Kubernetes Node by the DaemonSet's exporter (local scope, one on
// every host), so that a scheduler keeps pods off a host whose cable is bad
// and places a job's pods under as few switches as it can. What it writes
// comes from the drain collector's list (collectors/parts/drain.h) and the
// fabric-scope exporter's placement (GET /api/v1/placement); it changes
// nothing in the fabric.
//
// - The condition InfinibandFabricHealthy on the Node's status (PATCH
//   /api/v1/nodes/NODE/status, a strategic merge patch: conditions merge by
//   type, the kubelet's and others' are left as they are): "False" while
//   the drain list names the host faulty (reason CableFault) or holding
//   (HoldingAfterFault), its message the list's one-line reason; "True"
//   when the list names it not, or to resume (CablesClean); "Unknown" before
//   a sweep has judged (NotJudged), past the cap (CapReached) or when the
//   fabric's list that the cap is counted on does not answer
//   (FabricListUnavailable). lastTransitionTime is when the status last
//   changed, lastHeartbeatTime the last write.
// - The cap, as the Slurm script's (deploy/slurm/ibfabric-drain): with
//   --kubernetes.fabric-url (an exporter that judges every host's cables:
//   --scope=fabric, one shard; another's list, whose `every_host` is false,
//   is refused: Unknown, FabricListUnavailable), at most
//   min(--kubernetes.max-unhealthy, --kubernetes.max-unhealthy-percent of
//   the fabric's hosts, rounded down) hosts are False at once. Every
//   DaemonSet exporter reads the same list and ranks its hosts alike (the
//   oldest fault first, then by name), so the first N are False and the
//   others Unknown without the exporters speaking to each other. Without
//   the fabric's list a host sees only itself: no cap (said at start).
// - Labels (PATCH /api/v1/nodes/NODE, a JSON merge patch; a label no longer
//   known is removed), prefix "ibfabric.io/": leaf (the switch its first
//   cabled port is on, as Slurm's topology.conf names it), spine-group (its
//   leaf's pod: the switches below the top tier that cables join, where
//   the fabric has pods), unit (its scalable unit on a rail-optimized
//   fabric), rails (how many rails its HCA ports are up on, there). From
//   --kubernetes.fabric-url's /api/v1/placement?host=; without it only leaf,
//   from this exporter's own one-hop walk. Values made label-safe
//   (letters, digits, '.', '-', '_'; 63 characters).
// - Written when what it would write changed and every
//   --kubernetes.heartbeat (5m); after a failed write not again for a
//   minute. Dry run unless --kubernetes.apply: each write it would make is
//   logged ("kubernetes node write" dry_run=true, the path and body) and
//   counted, nothing sent.
// - The API server and credentials of the pod's service account:
//   https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (or
//   --kubernetes.api-server), its token and CA under
//   --kubernetes.credentials (read again at every write: tokens rotate).
//   RBAC: nodes patch, nodes/status patch (deploy/kubernetes/rbac.yaml).
// - Off until --kubernetes.node names the node (the DaemonSet gives its
//   spec.nodeName); local scope only (a fabric-scope exporter is on no one
//   node: said once, nothing written). The host it judges is this host as
//   the fabric names it (its HCAs' host, host collector), else the node's
//   name; a host on several fabrics is judged on the first.
//
// Part: KubernetesNodeState under "kubernetes_node". Metrics:
// infiniband_kubernetes_node_condition{status} (1 for the status last
// written or that would be), infiniband_kubernetes_node_writes_total{what,
// result} (what: condition, labels; result: ok, error, dry_run).

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/framework/collector_info.h"
#include "collectors/parts/drain.h"

namespace ibfabric::collectors {

inline constexpr std::string_view kKubernetesNodeCollector = "kubernetes_node";
inline constexpr std::string_view kNodeConditionType = "InfinibandFabricHealthy";
inline constexpr std::string_view kNodeLabelPrefix = "ibfabric.io/";

struct KubernetesNodeOptions {
  std::string node;  // --kubernetes.node; empty: off
  bool apply = false;
  std::string api_server;  // empty: from $KUBERNETES_SERVICE_HOST and _PORT
  std::string credentials = "/var/run/secrets/kubernetes.io/serviceaccount";
  std::string fabric_url;  // the fabric-scope exporter; empty: no cap, leaf only
  int max_hosts = 4;
  int max_percent = 10;
  std::chrono::milliseconds heartbeat{300'000};
};

// What the condition says.
struct NodeVerdict {
  std::string status;  // "True", "False", "Unknown"
  std::string reason;  // CamelCase, as Kubernetes reasons are
  std::string message;
  bool operator==(const NodeVerdict&) const = default;
};

// Pure: the verdict of `host` (its fabric or Slurm name) from its own drain
// list (null: not judged yet), capped by the fabric's list (GET
// /api/v1/drain's body; null: no cap; a string: why it is not there).
NodeVerdict JudgeNode(const std::string& host, const DrainList* own, const nlohmann::json* fabric_list,
                      const KubernetesNodeOptions& options);
// Pure: the labels (without the prefix) from GET /api/v1/placement's body
// for one host; a value null there is null here (to be removed).
std::map<std::string, nlohmann::json> PlacementLabels(const nlohmann::json& placement);
// Pure: a value Kubernetes takes as a label's: letters, digits, '.', '-',
// '_' (others '_'), beginning and ending with a letter or digit, at most 63
// characters; empty when nothing is left.
std::string LabelValue(std::string_view text);

struct KubernetesNodeState {
  std::string node;  // the Kubernetes node
  std::string host;  // as the fabric names it
  bool dry_run = true;
  NodeVerdict verdict;                                                  // last written, or that would be
  std::map<std::string, nlohmann::json> labels;                         // without the prefix; null: removed
  std::map<std::pair<std::string, std::string>, std::uint64_t> writes;  // (what, result) -> count
};

// Its declaration (name, help, factory, render, reads, flags): the registry's line.
CollectorInfo KubernetesNodeCollectorInfo();
std::unique_ptr<Collector> MakeKubernetesNodeCollector(const CollectorOptions& options);
void RenderKubernetesNode(const Snapshot& s, const Emit& out);

}  // namespace ibfabric::collectors
