#pragma once
// The JSON API, every view in one place: the bodies of GET /api/v1/topology
// (api_topology.cc), /api/v1/alerts and /api/v1/port (api_alerts.cc) and
// /api/v1/subnet_managers (api_subnet_managers.cc). Each schema is
// documented in docs/api.md and versioned by "schema_version"; fields are
// only ever added. All of them pure: they read an immutable part of the
// Snapshot and send nothing.

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "collectors/framework/snapshot.h"
#include "collectors/health/subnet_managers.h"
#include "topology/analysis.h"
#include "topology/fabric.h"
#include "topology/findings.h"
#include "topology/scope.h"

namespace ibfabric::collectors {

inline constexpr int kTopologySchemaVersion = 1;
inline constexpr int kAlertsSchemaVersion = 1;

// Every body's text: compact JSON in which a string that is not valid
// UTF-8 (nlohmann::json would throw type_error.316) has its bad bytes
// replaced by U+FFFD. What a request said is made valid before it is
// quoted (config/text.h); this is the guard for anything else.
inline std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A node's type as nodes[].type says it: "switch", "ca", "aggregation_node"
// (a SHARP Aggregation Node, topology/fabric.h), "router", "unknown".
const char* NodeTypeName(const topology::Node& node);

// Whether `query` names the node: its name (NodeDescription or the
// node-name map's) or its GUID in hex ("0x..."), as the node= filters take it.
bool NamesNode(const std::string& query, std::uint64_t guid, const std::string& name);

// What every query string of the API checks alike: no parameter given
// twice, and node= naming something (a name or a GUID, NamesNode). False
// with a one-line reason naming the parameter.
bool EachParameterOnce(const std::multimap<std::string, std::string>& params, std::string* error);
bool ParseNodeParameter(const std::string& value, std::string* node, std::string* error);

// --- GET /api/v1/topology

// One port as in nodes[].ports[]: number, LID, state, rate, remote end.
nlohmann::json PortJson(const topology::Fabric& fabric, const topology::Port& port);
// One node as in nodes[]: GUID, name, type, LID, ports, and for a switch
// its tier and summary.
nlohmann::json NodeJson(const topology::Fabric& fabric, const topology::Analysis& analysis, const topology::Node& node);

// What the topology body is made of; borrowed. "routing" and "partitions"
// are null where `routing` or `partitions` is (the tables were not read);
// "scope" is left out without `scope`.
struct TopologyParts {
  const topology::Fabric* fabric = nullptr;
  const topology::Analysis* analysis = nullptr;
  const topology::RoutingAnalysis* routing = nullptr;
  const topology::PartitionAnalysis* partitions = nullptr;
  const topology::Scope* scope = nullptr;
  const topology::HostAnalysis* hosts = nullptr;  // "hosts" is null without it
};

// What of it to answer, from the query string:
//   view=full (default)  everything below, filtered;
//   view=summary         the fabric-wide fields and "counts" only;
//   view=findings        those and "findings", filtered;
//   node=<name or GUID>  that node: nodes[] of it, the links, groups,
//                        findings, routing switches and partition ports
//                        with it at an end or about it;
//   tier=<leaf|spine|core|unranked|tierN|N>  the switches of that tier, alike.
// node and tier together select what both select. "counts" is always of
// the whole fabric.
struct TopologyQuery {
  enum class View { kFull, kSummary, kFindings };
  View view = View::kFull;
  std::string node;
  std::optional<int> tier;
};
// False with a one-line reason naming the parameter; unknown parameters are
// errors too.
bool ParseTopologyQuery(const std::multimap<std::string, std::string>& params, TopologyQuery* query,
                        std::string* error);

// The body, produced a piece at a time, so that a whole fabric's (tens of
// MB at 80k ports) is never held, as a document or as text: only the
// links, groups and findings selected are listed up front.
// Thread-safety: none; it borrows `parts` for its lifetime.
class TopologyWriter {
 public:
  TopologyWriter(const TopologyParts& parts, TopologyQuery query);
  // Non-empty when the query names a node the fabric does not have: then
  // nothing is to be written (a 404 names it).
  const std::string& error() const { return error_; }
  // Replaces *out with the next piece, at least `max` bytes unless it is
  // the last; false once everything was written.
  bool Next(std::string* out, std::size_t max);

 private:
  enum class Part { kHead, kNodes, kLinks, kGroups, kFindings, kPartitions, kEnd, kDone };
  struct Group {
    std::uint64_t a = 0, b = 0;  // a < b
    int links = 0;
  };
  bool Selected(std::uint64_t guid) const { return all_ || selected_.count(guid) > 0; }
  // Writes element `index_` of `part_` (or opens or closes it); false when
  // the part has no more.
  bool WriteNext(std::string* out);
  nlohmann::json Head() const;

  TopologyParts parts_;
  TopologyQuery query_;
  std::string error_;
  bool all_ = true;                   // no filter: every node selected
  std::set<std::uint64_t> selected_;  // else the nodes selected
  std::vector<topology::Link> links_;
  std::vector<Group> groups_;
  std::vector<topology::Finding> findings_;
  std::size_t link_count_ = 0, degraded_links_ = 0, group_count_ = 0;
  std::map<std::string, int> findings_by_kind_;
  Part part_ = Part::kHead;
  bool opened_ = false;                                  // the part's array is opened
  std::size_t index_ = 0;                                // the next element of it (nodes: of the fabric's)
  std::size_t written_ = 0;                              // elements written of it
  topology::PartitionTables::const_iterator partition_;  // the next partition port
};

// The whole body as a document (tests, small fabrics).
nlohmann::json TopologyJson(const TopologyParts& parts, const TopologyQuery& query = {});

// --- GET /api/v1/alerts

// Filters from the query string: severity=warning|critical (exactly that
// severity), node=<name or GUID> (either end), state=active|cleared|all.
struct AlertFilter {
  std::optional<Severity> severity;
  std::string node;
  bool active = true;
  bool cleared = true;
};
// False with a one-line reason naming the parameter; unknown parameters are
// errors too, so a typo does not silently return everything.
bool ParseAlertFilter(const std::multimap<std::string, std::string>& params, AlertFilter* filter, std::string* error);

nlohmann::json AlertsJson(const Snapshot& snapshot, const AlertFilter& filter);

// --- GET /api/v1/port?guid=0x...&port=N: one port for a drill-down; the
// GUID a node's or one of its ports' (an HCA port's, as the metrics' and
// the alert rules' `guid` label carries it). False
// with a one-line reason naming the parameter.
bool ParsePortQuery(const std::multimap<std::string, std::string>& params, topology::PortRef* port, std::string* error);

// --- GET /api/v1/route?from=GUID:PORT&to=GUID:PORT: the route between two
// host ports as the switches' forwarding tables give it (topology/
// blast_radius.h TraceRoute; ibtracert's answer from what the exporter
// read, without a MAD): "hops", each port it leaves by with the port it
// reaches ("to"), whether it "arrives", and the ids of the active alerts
// whose cable or congestion root it leaves by. An HCA's GUID may be its
// node's or its port's. Null where the tables are not read here (not
// fabric scope or shard 0) or `from` is no CA port or `to` has no LID.
struct RouteQuery {
  topology::PortRef from, to;
};
bool ParseRouteQuery(const std::multimap<std::string, std::string>& params, RouteQuery* query, std::string* error);
nlohmann::json RouteJson(const Snapshot& snapshot, const RouteQuery& query);
// The port's state and rate, its counter totals (pinned ones named),
// its link's health over the window (this end and the far one), and the
// alerts on its cable; null when the snapshot knows no such port.
nlohmann::json PortDetailJson(const Snapshot& snapshot, const topology::PortRef& port);

// --- GET /api/v1/node?guid=G: one node for the status page's node page
// (G a node's GUID or one of its ports').
// False with a one-line reason naming the parameter.
bool ParseNodeQuery(const std::multimap<std::string, std::string>& params, std::uint64_t* guid, std::string* error);
// The node (as in the topology's nodes[], without ports, with "pod" where
// it is in one), every port as PortDetailJson gives it (without the
// per-port "alerts"), the active alerts with the node at either end, and
// the findings about it or its cables; null when the fabric has no such node.
nlohmann::json NodeDetailJson(const Snapshot& snapshot, std::uint64_t guid);

// --- GET /api/v1/host?name=H: one host (topology/hosts.h) for the status
// page: its HCAs in rail order, each cabled port's leaf port, rail, unit,
// state and rate, the active alerts on their cables and the findings about
// them; null when no host has that name. An HCA the exporter also reads
// from the host's own sysfs (local scope, host_collector.h) has "kernel":
// firmware, PCI address, NUMA node, the PCIe link against its maximum
// (`degraded`) and, per port, the transport error counters the host rules
// watch; null elsewhere. False with a one-line reason.
bool ParseHostQuery(const std::multimap<std::string, std::string>& params, std::string* name, std::string* error);
nlohmann::json HostDetailJson(const Snapshot& snapshot, const std::string& name);

// --- GET /api/v1/structure: the switches and the cables between them,
// compact, to draw tiers and pods as matrices at any size. Switches in
// order of tier, pod and name (topology::NaturalLess), each with its
// tier, pod (topology::FindPods) and CA links; "links" as
// [i, j, cables, degraded cables] between switches i < j of that list.
// About 0.6 MB for 16k hosts in 1,536 switches.
// `hosts` (may be null): a rail-optimized fabric's units, which its pods
// join (topology::FindPods).
nlohmann::json StructureJson(const topology::Fabric& fabric, const topology::Analysis& analysis,
                             const topology::HostAnalysis* hosts = nullptr);

// --- GET /api/v1/collectors: every collector of the registry, in run
// order, as this exporter has it: name, help, whether it is on, whether
// it reads this host rather than the fabric, its last run (absent before
// one) and the endpoints it answers ({path, title}; relative paths
// without the leading "/", as the status page links them). What the
// status page builds its links and its loads from.
nlohmann::json CollectorsJson(const Snapshot& snapshot);

// --- GET /api/v1/search?q=TEXT[&limit=N]: nodes by name (case-blind,
// anywhere in it; the host name is its first word), LID (a port's, in
// decimal) or GUID (node or port, hex, "0x" optional; a part of it, of 4
// digits or more without "0x"). Best matches first: an exact name, LID or
// GUID, then a host name, then a name or GUID that starts or ends so, then
// the rest; alike in natural order of names. At most `limit` (1-200,
// default 20); "total" counts every match.
struct SearchQuery {
  std::string text;
  int limit = 20;
};
bool ParseSearchQuery(const std::multimap<std::string, std::string>& params, SearchQuery* query, std::string* error);
// Hosts (`hosts`, may be null) match by name like nodes, ahead of their
// HCAs: {"type": "host", "name", "hcas", "unit"}.
nlohmann::json SearchJson(const topology::Fabric& fabric, const topology::Analysis* analysis, const SearchQuery& query,
                          const topology::HostAnalysis* hosts = nullptr);

// GET /api/v1/subnet_managers: the subnet_managers collector's route
// (subnet_managers_collector.h).

}  // namespace ibfabric::collectors
