#pragma once
// What every collector's Render shares: building a metric family, and the
// labels a node, a port and a cable carry wherever they appear.

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>

#include <chrono>
#include <string>
#include <vector>

#include "collectors/framework/collector.h"
#include "collectors/framework/snapshot.h"
#include "topology/analysis.h"

namespace ibfabric::collectors {

prometheus::MetricFamily Family(std::string name, std::string help, prometheus::MetricType type);
// One series: a counter's or a gauge's value, by the family's type.
void Add(prometheus::MetricFamily& f, std::vector<prometheus::ClientMetric::Label> labels, double value);
// A family of one series without labels, emitted at once.
void EmitOne(const Emit& out, std::string name, std::string help, prometheus::MetricType type, double value);
// Emits `f` when it has a series.
void EmitNonEmpty(const Emit& out, prometheus::MetricFamily& f);

// A family of many series (one per port, per cable) emitted in parts as
// they are added, so that its series are never all held as objects (80k
// of them are tens of MB); the parts are one family in the exposition
// (collector.h Emit). While one is open nothing else may be emitted to the
// same Emit: build such families one after the other.
class FamilyParts {
 public:
  FamilyParts(const Emit& out, std::string name, std::string help, prometheus::MetricType type);
  FamilyParts(const FamilyParts&) = delete;
  FamilyParts& operator=(const FamilyParts&) = delete;
  void Add(std::vector<prometheus::ClientMetric::Label> labels, double value);
  // Emits what is left; a family without a series emits nothing.
  void Finish();

 private:
  static constexpr std::size_t kPartSeries = 1024;
  const Emit& out_;
  prometheus::MetricFamily f_;
};
// Unix seconds; 0 for the epoch (never).
double Seconds(std::chrono::system_clock::time_point t);
// "switch" or "hca": the metric prefix and the name label of a node kind.
// Routers are reported with CAs: both are end points of the fabric.
const char* Role(topology::NodeKind k);
// The node's label as last seen (kind unknown, no name when never seen).
const NodeLabel& LabelOf(const Snapshot& s, std::uint64_t guid);
// The host a CA belongs to (Snapshot::hosts, topology/hosts.h); empty
// where the CAs are not grouped into hosts or it is in none.
std::string HostOf(const Snapshot& s, std::uint64_t ca_guid);
// The `guid` of a port's series: a switch's node GUID, an HCA port's port
// GUID (treydock/infiniband_exporter's choice; the node GUID when the port
// GUID was never seen).
std::uint64_t SeriesGuid(const topology::PortRef& ref, const NodeLabel& label);
// {guid, port, switch|hca}: the labels of treydock/infiniband_exporter.
std::vector<prometheus::ClientMetric::Label> PortLabels(const topology::PortRef& ref, const NodeLabel& label);
// One exporter reports each fabric fact, so that joins `on (guid, port)`
// find one series however many exporters share the fabric (a DaemonSet of
// local exporters with inter-switch shards, or fabric shards):
// - a switch's own facts (info, up, collection health, capabilities): the
//   shard its GUID hashes to, in fabric or inter-switch scope; never a
//   local exporter;
// - a port's facts (uplink, state, rate; an HCA port's info): the
//   exporter that reads the port, or, for a switch port nobody reads (no
//   cable), the switch's owner.
bool OwnsSwitch(const Snapshot& s, std::uint64_t switch_guid);
bool OwnsPort(const Snapshot& s, const topology::Node& node, const topology::Port& port);
// A node's facts: a switch's owner; for an HCA, the reader of any of its ports.
bool OwnsNode(const Snapshot& s, std::uint64_t guid);
// Whether the node answers (exporter_node_stale and the rest of its
// health): for a switch, the exporter that reads its first port read at
// all (topology::HealthShard; the owner by GUID may read none of its
// ports), never a local one; for an HCA, the reader of any of its ports.
bool OwnsNodeHealth(const Snapshot& s, std::uint64_t guid);
// One end of a cable: guid, node (its name) and port.
std::vector<prometheus::ClientMetric::Label> EndLabels(const Snapshot& s, const topology::PortRef& p);
// A cable: both ends by GUID (unique) and name (readable); the second end's
// labels are remote_guid, remote_node and remote_port.
std::vector<prometheus::ClientMetric::Label> CableLabels(const Snapshot& s, const topology::Link& l);
// A cable as one label value, as the rules' label_join of a cable alert's
// guid, port, remote_guid and remote_port writes it (the `cable` label of
// infiniband_host_port_info and the blast radius): "0x...a/1/0x...b/7",
// its ends in canonical order (topology/analysis.h CableBetween).
std::string CableId(const topology::Link& l);

}  // namespace ibfabric::collectors
