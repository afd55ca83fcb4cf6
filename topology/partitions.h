#pragma once
// Partition membership from the CA ports' P_Key tables (IBTA 14.2.5.7,
// 10.9): which partitions each port belongs to and how (full or limited),
// ports whose membership differs from most CA ports on the same leaf, and
// ports that differ from an expected partition plan. Reading sends SMPs;
// the analysis and the plan parser are pure.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "topology/analysis.h"
#include "topology/fabric.h"
#include "transport/mad_engine.h"

namespace ibfabric::topology {

// CA port -> its P_Keys: non-empty entries, each partition once (a full
// membership wins over a limited one), ascending.
using PartitionTables = std::map<PortRef, std::vector<std::uint16_t>>;

struct ReadPartitionsResult {
  PartitionTables tables;
  std::vector<std::string> problems;
  std::size_t smps = 0;
};
// Every block up to NodeInfo.PartitionCap (at most 32 blocks) of every CA
// port with a LID, LID routed and pipelined.
ReadPartitionsResult ReadPartitions(const Fabric& fabric, transport::MadEngine& engine);

// "0x7fff full" / "0x0001 limited": the partition (low 15 bits) and membership.
std::string DescribePKey(std::uint16_t pkey);

// The expected partitions (--partitions.plan), YAML:
//   partitions:
//     - name: default
//       pkey: 0x7fff
//       full: all                 # every CA port; or a list of node names or GUIDs
//     - name: tenant-a
//       pkey: 0x0001
//       full: [cn0001, cn0002]
//       limited: [cn0003]
// A node in no list of a partition must not be a member of it.
struct PartitionPlan {
  struct Partition {
    std::string name;
    std::uint16_t pkey = 0;  // low 15 bits
    bool all_full = false;
    std::set<std::string> full;     // node names or 0x GUIDs
    std::set<std::string> limited;
  };
  std::vector<Partition> partitions;
};
// Pure. False with "line N: reason".
bool ParsePartitionPlan(const std::string& text, PartitionPlan* plan, std::string* error);
// False with "FILE:N: reason".
bool LoadPartitionPlan(const std::string& path, PartitionPlan* plan, std::string* error);

// Pure. Fills analysis->partitions and partitions_read; appends
// kPartitionMismatch for a CA port whose P_Keys differ from those of a
// strict majority of the CA ports on its leaf (leaves with 3 or more), and,
// with a plan, kPartitionPlanMismatch for a port that differs from it.
void AnalyzePartitions(const Fabric& fabric, const PartitionTables& tables, const PartitionPlan* plan,
                       Analysis* analysis);

}  // namespace ibfabric::topology
