#pragma once
// Partition membership from the P_Key tables (IBTA 14.2.5.7, 10.9) of the
// CA ports and of the switch ports facing them: which partitions each port
// belongs to and how (full or limited), CA ports whose membership differs
// from most CA ports on the same leaf or from an expected partition plan,
// and switch ports whose table (what partition enforcement lets through)
// differs from the CA port at the other end of the cable. Reading sends
// SMPs; the analysis and the plan parser are pure.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "topology/analysis.h"
#include "topology/fabric.h"
#include "transport/attributes.h"
#include "transport/mad_engine.h"

namespace ibfabric::topology {

// Port -> its P_Keys: non-empty entries, each partition once (a full
// membership wins over a limited one), ascending by partition.
using PartitionTables = std::map<PortRef, std::vector<std::uint16_t>>;

struct ReadPartitionsResult {
  PartitionTables tables;
  std::vector<std::string> problems;
  std::size_t smps = 0;
  // From the SA: the GetTable queries sent, the ports whose table came
  // from their records, and whether the SA answered at all (false: it
  // stayed silent, or refused: these records are for trusted requests).
  std::size_t sa_queries = 0;
  std::set<PortRef> from_sa;
  bool sa_answered = false;
  bool sa_refused = false;  // it answered the first query with an error status (a request it does not trust)
};
// Where the tables come from.
struct PartitionSource {
  // The SA's LID (0: none; it answers only trusted requests: give it only
  // with the engine's SA key). Each CA port's table and each switch's are asked of it first, as their
  // P_KeyTableRecords (one SubnAdmGetTable a CA port, one a switch for all
  // its ports: the SM's copy of what it set); a port it has no record of
  // is read itself.
  std::uint16_t sa_lid = 0;
};
// Every block up to NodeInfo.PartitionCap (at most 32 blocks) of every CA
// port with a LID, and up to SwitchInfo.PartitionEnforcementCap of every
// switch port cabled to a CA port (switches absent from `switch_info`, or
// with no enforcement capability, have no such table): from the SA where
// `source` names one and it answers (one query first: not answered, or
// answered with an error status, no other is sent), else LID routed from
// the ports, pipelined. Thread-safety: uses the engine exclusively for its
// duration.
ReadPartitionsResult ReadPartitions(const Fabric& fabric,
                                    const std::map<std::uint64_t, transport::SwitchInfo>& switch_info,
                                    transport::MadEngine& engine, PartitionSource source = {});

// "0x7fff": the partition of a P_Key (its low 15 bits).
std::string PartitionOf(std::uint16_t pkey);
// "full" or "limited": the membership of a P_Key (bit 15).
const char* MembershipOf(std::uint16_t pkey);
// "0x7fff full" / "0x0001 limited": both.
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
    std::set<std::string> full;  // node names or 0x GUIDs
    std::set<std::string> limited;
  };
  std::vector<Partition> partitions;
};
// Pure. False with "line N: reason".
bool ParsePartitionPlan(const std::string& text, PartitionPlan* plan, std::string* error);
// False with "FILE:N: reason".
bool LoadPartitionPlan(const std::string& path, PartitionPlan* plan, std::string* error);

// What the P_Key tables say, one pass of its own.
struct PartitionAnalysis {
  // CA port, and switch port facing a CA port -> its P_Keys (membership bit
  // included), as read.
  PartitionTables ports;
  std::vector<Finding> findings;
  // Of `ports`, those whose table came from the SA's P_KeyTableRecords
  // (the others from the ports themselves): the reader's to fill in.
  std::size_t from_sa = 0;
};
// Pure. kPartitionMismatch for a CA port whose P_Keys differ from those of
// a strict majority of the CA ports on its leaf (leaves with 3 or more);
// with a plan, kPartitionPlanMismatch for a CA port that differs from it;
// and kPartitionEnforcementMismatch (a: the switch port, b: the CA port)
// where a switch port's partitions differ from those of the CA port it
// faces: with enforcement on, the CA's traffic in a partition the switch
// port lacks is dropped there (PortRcvConstraintErrors); with it off the
// table is stale and drops that traffic once enforcement is switched on.
PartitionAnalysis AnalyzePartitions(const Fabric& fabric, const PartitionTables& tables, const PartitionPlan* plan);

}  // namespace ibfabric::topology
