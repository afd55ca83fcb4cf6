// Routing analysis on hand-built forwarding tables: a balanced two-tier
// tree, an uplink that carries nothing, an LFT hole, a route that goes down
// and up again, and one that loops.

#include "topology/routing.h"

#include <gtest/gtest.h>

#include "collectors/api/json.h"
#include "tests/unit/routed_tree.h"
#include "transport/attributes.h"
#include "transport/codec.h"
#include "transport/testing/encoders.h"
#include "transport/testing/fake_mad_port.h"

namespace ibfabric::topology {
namespace {

// The shared small tree (tests/unit/routed_tree.h) and its analyses.
struct Tree : testing::RoutedTree {
  Analysis analysis = Analyze(fabric);
  RoutingAnalysis routing;

  std::map<FindingKind, int> Run() {
    routing = AnalyzeRouting(fabric, tables, analysis);
    std::map<FindingKind, int> out;
    for (const auto& f : routing.findings) ++out[f.kind];
    return out;
  }
};

TEST(RoutingTest, BalancedTablesHaveNoFinding) {
  Tree t;
  ASSERT_TRUE(t.analysis.is_tree);
  EXPECT_TRUE(t.Run().empty());
  const SwitchRouting& l1 = t.routing.switches.at(t.b.Guid(t.leaf[0]));
  EXPECT_EQ(l1.direction, "up");
  EXPECT_EQ(l1.destinations, (std::map<std::uint8_t, int>{{3, 2}, {4, 2}}));  // 4 remote hosts over 2 uplinks
  EXPECT_EQ(l1.spread, 0);
  EXPECT_EQ(l1.max_min_ratio, 1.0);
  const SwitchRouting& s1 = t.routing.switches.at(t.b.Guid(t.spine[0]));
  EXPECT_EQ(s1.direction, "down");
  EXPECT_EQ(s1.destinations, (std::map<std::uint8_t, int>{{1, 2}, {2, 2}, {3, 2}}));
  EXPECT_EQ(t.routing.routes_traced, 3 * 4);
  EXPECT_EQ(t.routing.down_up_routes, 0);
}

TEST(RoutingTest, AnUplinkCarryingNothingIsAnImbalance) {
  Tree t;
  for (int h = 2; h < 6; ++h) t.Route(t.leaf[0], t.Lid(t.host[h]), 3);  // every remote host via spine1
  const auto found = t.Run();
  EXPECT_EQ(found, (std::map<FindingKind, int>{{FindingKind::kRoutingImbalance, 1}}));
  const SwitchRouting& l1 = t.routing.switches.at(t.b.Guid(t.leaf[0]));
  EXPECT_EQ(l1.destinations, (std::map<std::uint8_t, int>{{3, 4}, {4, 0}}));
  EXPECT_EQ(l1.spread, 4);
  EXPECT_FALSE(l1.max_min_ratio);
  EXPECT_NE(t.routing.findings[0].detail.find("leaf1 routes 4 destinations through port 3 and 0 through port 4"),
            std::string::npos)
      << t.routing.findings[0].detail;
  // Fabric-wide: the worst spread, one imbalanced switch; in the JSON too.
  const RoutingTotals totals = SummarizeRouting(t.routing);
  EXPECT_EQ(totals.max_spread, 4);
  EXPECT_EQ(totals.imbalanced_switches, 1);
  EXPECT_EQ(totals.switches_with_unrouted, 0);
  const auto j = collectors::TopologyJson({&t.fabric, &t.analysis, &t.routing})["routing"];
  EXPECT_EQ(j["fabric"]["max_spread"], 4);
  EXPECT_EQ(j["fabric"]["imbalanced_switches"], 1);
  EXPECT_EQ(j["switches"].size(), 5u);
  EXPECT_EQ(j["switches"][0]["name"], "leaf1");
  EXPECT_EQ(j["switches"][0]["destinations_by_port"], (nlohmann::json{{"3", 4}, {"4", 0}}));
  EXPECT_TRUE(j["switches"][0]["max_min_ratio"].is_null());
}

// With adaptive routing on at a leaf, its table is a fallback: the same
// skewed table is no imbalance there, is left out of the fabric-wide
// spread, and its unrouted destinations say the table is static.
// Hosts 3 to 1 over two uplinks, but the switches' LIDs all on the one
// with fewer: over every LID the table is balanced as opensm balances it,
// so the hosts' share alone is no finding (the spread is still reported).
// The same hosts' share with nothing else on the ports is one.
TEST(RoutingTest, HostsUnevenWhereOtherLidsEvenThePortsOutAreNoImbalance) {
  Tree t;
  t.Route(t.leaf[0], t.Lid(t.host[3]), 3);  // cn4 via spine1 too: 3 and 1
  for (int sw : {t.leaf[1], t.leaf[2], t.spine[0], t.spine[1]}) t.Route(t.leaf[0], t.Lid(sw), 4);
  EXPECT_TRUE(t.Run().empty()) << t.routing.findings[0].detail;
  const SwitchRouting& l1 = t.routing.switches.at(t.b.Guid(t.leaf[0]));
  EXPECT_EQ(l1.destinations, (std::map<std::uint8_t, int>{{3, 3}, {4, 1}}));
  EXPECT_EQ(l1.spread, 2);

  Tree bare;
  bare.Route(bare.leaf[0], bare.Lid(bare.host[3]), 3);
  EXPECT_EQ(bare.Run(), (std::map<FindingKind, int>{{FindingKind::kRoutingImbalance, 1}}));
  EXPECT_NE(bare.routing.findings[0].detail.find(
                "leaf1 routes 3 destinations through port 3 and 1 through port 4 (uplinks): 200% more, and 2 more "
                "LIDs of every kind"),
            std::string::npos)
      << bare.routing.findings[0].detail;
}

TEST(RoutingTest, AnAdaptiveSwitchsStaticTableIsNoImbalance) {
  Tree t;
  for (int h = 2; h < 6; ++h) t.Route(t.leaf[0], t.Lid(t.host[h]), 3);
  t.tables[t.b.Guid(t.leaf[0])].resize(t.Lid(t.host[5]));  // and one LID it cannot forward
  t.routing = AnalyzeRouting(t.fabric, t.tables, t.analysis, {t.b.Guid(t.leaf[0])});
  ASSERT_EQ(t.routing.findings.size(), 1u);
  EXPECT_EQ(t.routing.findings[0].kind, FindingKind::kUnroutedDestination);
  EXPECT_NE(t.routing.findings[0].detail.find("(in its static table; adaptive routing is on there)"), std::string::npos)
      << t.routing.findings[0].detail;
  const SwitchRouting& l1 = t.routing.switches.at(t.b.Guid(t.leaf[0]));
  EXPECT_TRUE(l1.adaptive);
  EXPECT_EQ(l1.spread, 3);  // still what the table says
  EXPECT_EQ(SummarizeRouting(t.routing).max_spread, 0);
  EXPECT_EQ(SummarizeRouting(t.routing).switches_with_unrouted, 1);
  const auto j = collectors::TopologyJson({&t.fabric, &t.analysis, &t.routing})["routing"];
  EXPECT_EQ(j["switches"][0]["adaptive_routing"], true);
  EXPECT_TRUE(j["switches"][0]["destinations_by_port"].is_null()) << "withheld";
  EXPECT_TRUE(j["switches"][0]["spread"].is_null());
  EXPECT_EQ(j["switches"][0]["unrouted"], 1);
  EXPECT_EQ(j["switches"][1]["adaptive_routing"], false);
  EXPECT_FALSE(j["switches"][1]["destinations_by_port"].is_null());
}

TEST(RoutingTest, HolesAndDownPortsAreUnrouted) {
  Tree t;
  t.Route(t.spine[1], t.Lid(t.host[4]), transport::kLftNoPort);  // a hole
  t.tables[t.b.Guid(t.leaf[1])].resize(t.Lid(t.host[5]));        // LinearFDBTop below a LID
  const auto found = t.Run();
  EXPECT_EQ(found.at(FindingKind::kUnroutedDestination), 2);
  EXPECT_EQ(t.routing.switches.at(t.b.Guid(t.spine[1])).unrouted, 1);
  EXPECT_EQ(t.routing.switches.at(t.b.Guid(t.leaf[1])).unrouted, 1);
}

TEST(RoutingTest, DownAndUpAgainAndLoopsAreFound) {
  Tree t;
  // leaf1 -> spine1 -> leaf3 (down to the wrong leaf) -> spine2 -> leaf2: down and up.
  const auto lid = t.Lid(t.host[2]);  // on leaf2
  t.Route(t.spine[0], lid, 3);
  t.Route(t.leaf[2], lid, 4);
  // And a loop: leaf1 -> spine2 -> leaf1 for host 4 (on leaf2 as well).
  const auto loop = t.Lid(t.host[3]);
  t.Route(t.leaf[0], loop, 4);
  t.Route(t.spine[1], loop, 1);
  const auto found = t.Run();
  EXPECT_GE(found.at(FindingKind::kDownUpRoute), 1);
  EXPECT_GE(t.routing.down_up_routes, 2);
  bool named = false;
  for (const auto& f : t.routing.findings) {
    if (f.kind == FindingKind::kDownUpRoute && f.node == t.b.Guid(t.leaf[0])) named = true;
  }
  EXPECT_TRUE(named);
}

// The tree's tables served two ways, four blocks each (LIDs 0-255): LFT
// blocks by LID-routed SMP, and the SA's LinearForwardingTableRecords of
// a switch's LID as one reassembled RMPP transfer (what UmadPort hands
// over: 288 bytes of records, 200 in the first MAD, the rest its tail). Switches can be missing a block at the SA, or
// have no records.
struct TableServer {
  Tree t;
  std::map<std::uint16_t, std::vector<std::uint8_t>> by_lid;  // switch LID -> its table
  std::map<std::uint64_t, transport::SwitchInfo> info;
  std::set<std::uint16_t> sa_one_block, sa_none;
  enum class Sa { kAnswers, kSilent, kUnsupported } sa = Sa::kAnswers;
  int sa_queries = 0, lft_smps = 0;

  TableServer() {
    for (auto& [guid, table] : t.tables) {
      table.resize(256, transport::kLftNoPort);
      table[100] = 1;  // something in the later blocks too
      table[250] = 2;
      const Node* n = t.fabric.FindNode(guid);
      by_lid[n->lid] = table;
      info[guid].linear_fdb_top = 255;
    }
  }
  transport::testing::FakeMadPort Port() {
    transport::testing::FakeMadPort port([this](const transport::MadAddress& to, const transport::MadBytes& req) {
      const transport::MadHeader h = transport::DecodeHeader(req);
      std::optional<transport::MadBytes> none;
      if (h.mgmt_class != static_cast<std::uint8_t>(transport::MgmtClass::kSubnLidRouted) ||
          h.attr_id != transport::smp_attr::kLinearForwardingTable || !by_lid.count(to.lid)) {
        return none;
      }
      ++lft_smps;
      const auto& table = by_lid.at(to.lid);
      std::vector<std::uint8_t> block(table.begin() + h.attr_mod * 64, table.begin() + (h.attr_mod + 1) * 64);
      return std::optional<transport::MadBytes>(transport::EncodeResponse(req, block));
    });
    port.set_transfers([this](const transport::MadAddress&, const transport::MadBytes& req) {
      std::optional<transport::InboundMad> none;
      const transport::MadHeader h = transport::DecodeHeader(req);
      if (h.mgmt_class != static_cast<std::uint8_t>(transport::MgmtClass::kSubnAdm)) return none;
      ++sa_queries;
      if (sa == Sa::kSilent) return none;
      if (sa == Sa::kUnsupported) {
        return std::optional(transport::testing::EncodeSaTableTransfer(req, 72, {}, 0x000c));
      }
      const std::uint16_t lid = static_cast<std::uint16_t>(req[56] << 8 | req[57]);  // the record's LID
      std::vector<std::uint8_t> records;
      if (by_lid.count(lid) && !sa_none.count(lid)) {
        for (std::uint16_t b = 0; b < (sa_one_block.count(lid) ? 1 : 4); ++b) {
          const std::uint8_t head[8] = {static_cast<std::uint8_t>(lid >> 8),
                                        static_cast<std::uint8_t>(lid),
                                        0,
                                        static_cast<std::uint8_t>(b),
                                        0,
                                        0,
                                        0,
                                        0};
          records.insert(records.end(), head, head + 8);
          const auto& table = by_lid.at(lid);
          records.insert(records.end(), table.begin() + b * 64, table.begin() + (b + 1) * 64);
        }
      }
      return std::optional(transport::testing::EncodeSaTableTransfer(req, 72, records));
    });
    return port;
  }
  ReadTablesResult Read() {
    auto port = Port();
    transport::MadEngine engine(port, {16, std::chrono::milliseconds(50), 1});
    return ReadForwardingTables(t.fabric, info, engine, TableSource{7});
  }
};

TEST(RoutingTablesTest, FromTheSaWhereItHasThemWholeElseFromTheSwitch) {
  TableServer s;
  const std::uint16_t partial = s.t.Lid(s.t.leaf[1]), none = s.t.Lid(s.t.spine[0]);
  s.sa_one_block = {partial};
  s.sa_none = {none};
  const ReadTablesResult r = s.Read();
  EXPECT_TRUE(r.sa_answered);
  EXPECT_EQ(r.sa_queries, 5u);
  EXPECT_EQ(s.sa_queries, 5);
  // Every table whole and as the switch holds it, whichever way it came.
  ASSERT_EQ(r.tables.size(), 5u);
  for (std::uint64_t guid : r.tables.Switches()) {
    EXPECT_EQ(r.tables.Find(guid)->Entries(), s.by_lid.at(s.t.fabric.FindNode(guid)->lid)) << guid;
  }
  // Three from their records (a transfer longer than a MAD each), the
  // other two read from the switch: their four blocks, nobody else's.
  EXPECT_EQ(r.from_sa.size(), 3u);
  EXPECT_FALSE(r.from_sa.count(s.t.b.Guid(s.t.leaf[1])));
  EXPECT_FALSE(r.from_sa.count(s.t.b.Guid(s.t.spine[0])));
  EXPECT_EQ(r.smps, 8u);
  EXPECT_EQ(s.lft_smps, 8);
}

TEST(RoutingTablesTest, AnSaThatIsSilentOrHasNoSuchRecordsIsAskedOnce) {
  for (const auto mode : {TableServer::Sa::kSilent, TableServer::Sa::kUnsupported}) {
    TableServer s;
    s.sa = mode;
    const ReadTablesResult r = s.Read();
    EXPECT_FALSE(r.sa_answered);
    EXPECT_EQ(s.sa_queries, mode == TableServer::Sa::kSilent ? 2 : 1);  // one query (and its retry)
    EXPECT_EQ(r.sa_queries, 1u);
    EXPECT_TRUE(r.from_sa.empty());
    ASSERT_EQ(r.tables.size(), 5u);
    for (std::uint64_t guid : r.tables.Switches()) {
      EXPECT_EQ(r.tables.Find(guid)->Entries(), s.by_lid.at(s.t.fabric.FindNode(guid)->lid));
    }
    EXPECT_EQ(s.lft_smps, 20);
  }
}

TEST(RoutingTablesTest, NoSaNoQuery) {
  TableServer s;
  auto port = s.Port();
  transport::MadEngine engine(port, {16, std::chrono::milliseconds(50), 1});
  const ReadTablesResult r = ReadForwardingTables(s.t.fabric, s.info, engine);
  EXPECT_EQ(s.sa_queries, 0);
  EXPECT_EQ(r.tables.size(), 5u);
  EXPECT_EQ(s.lft_smps, 20);
}

}  // namespace
}  // namespace ibfabric::topology
