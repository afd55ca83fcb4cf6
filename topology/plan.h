#pragma once
// The cabling the fabric should have, and how the discovered one differs.
//
// Two sources:
//  - ibnetdiscover's output saved from the healthy fabric (nodes are matched
//    by the GUID in their "S-<guid>"/"H-<guid>" ids), or a file in the same
//    grammar keyed by names, such as ibsim's net files: node headers
//    `Switch|Ca|Hca|Rt <ports> "<id>" [# "<description>" ...]` and port lines
//    `[<port>](<guid>)? "<peer id>"[<peer port>](<guid>)? [# ... <rate>]`,
//    where a trailing token like 4xQDR is the expected rate.
//  - a JSON plan:
//      {"links": [{"a": {"node": "leaf01", "port": 19},
//                  "b": {"node": "spine01", "port": 1, "guid": "0x..."},
//                  "rate": "4xHDR"}, ...],
//       "tiers": {"leaf01": "leaf", "spine01": "spine"}}
//    "guid" and "rate" are optional; so is "tiers".
//  - the same plan in YAML:
//      links:
//        - {a: {node: leaf01, port: 19}, b: {node: spine01, port: 1}, rate: 4xHDR}
//      tiers: {leaf01: leaf, spine01: spine}
//    An end may name an HCA by its host and device instead of a node:
//      {a: {host: gpu042, hca: mlx5_3, port: 1}, b: {node: su1-leaf04, port: 5}}
// Malformed input is rejected with the line and the reason.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "topology/analysis.h"
#include "topology/fabric.h"
#include "topology/hosts.h"

namespace ibfabric::topology {

struct PlanNode {
  std::string name;  // "<host> <hca>" for a node named by host and HCA
  std::optional<std::uint64_t> guid;
  // An HCA named by its host and device ({host: gpu042, hca: mlx5_3}):
  // matched against the hosts grouped from the fabric (hosts.h), so it
  // holds whatever the site's description pattern.
  std::string host, hca;
};

struct PlanEnd {
  std::size_t node = 0;  // index into CablingPlan::nodes
  int port = 0;
};

struct PlanLink {
  PlanEnd a;
  PlanEnd b;
  std::string rate;  // e.g. "4xQDR"; empty: not checked
  int line = 0;      // where the plan says so
};

struct CablingPlan {
  std::vector<PlanNode> nodes;
  std::vector<PlanLink> links;
  std::map<std::string, std::string> tiers;  // node name -> tier name (JSON plans)
};

// Pure parsers; false with "line N: reason".
bool ParseIbnetdiscoverPlan(std::string_view text, CablingPlan* plan, std::string* error);
bool ParseJsonPlan(std::string_view text, CablingPlan* plan, std::string* error);
bool ParseYamlPlan(std::string_view text, CablingPlan* plan, std::string* error);

enum class PlanFormat { kIbnetdiscover, kJson, kYaml };
// By extension (.json, .yaml, .yml), else by the first line that is not a
// comment: '{' JSON; "---", "links:" or "tiers:" YAML; else ibnetdiscover.
PlanFormat PlanFormatOf(std::string_view path, std::string_view text);
// Reads and parses in the format PlanFormatOf names. False with
// "FILE:N: reason" or "FILE: cannot read: ...".
bool LoadPlan(const std::string& path, CablingPlan* plan, std::string* error);

// One finding per planned cable that is not as planned, one per cable
// that is in the fabric but not in the plan, one per planned node not
// found, and one per tier that differs from the plan's. `analysis` gives
// the tiers; nodes are matched by GUID where the plan has one, else by
// name (the node description, after any node-name map).
// A planned cable running at another rate is also a degraded link
// (kPlanRateMismatch), over what the tree analysis says of it.
struct PlanDiff {
  std::vector<Finding> findings;
  std::map<Link, FindingKind> degraded;
  std::set<std::uint64_t> planned;  // the fabric's nodes the plan has (resolved)
};
// `hosts` (may be null) resolves ends named by host and HCA, and gives the
// plan's rails: a planned leaf's rail is the device most of the HCAs the
// plan puts on it are. An HCA on another leaf than planned, whose device
// is not that leaf's planned rail, is kPlanWrongRail rather than a wrong
// remote node.
PlanDiff DiffAgainstPlan(const Fabric& fabric, const CablingPlan& plan, const Analysis& analysis,
                         const HostAnalysis* hosts = nullptr);

}  // namespace ibfabric::topology
