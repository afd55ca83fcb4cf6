// What survives a re-exec (exporter/state.h): totals, PortXmitWait
// seconds, names and remembered ports round-trip through the state file;
// bad files are refused.

#include "exporter/state.h"

#include <gtest/gtest.h>

namespace ibfabric {
namespace {

using collectors::Counter;
using collectors::Index;

TEST(StateTest, RoundTripAndRejects) {
  collectors::PersistedState st;
  collectors::PortTotals t;
  t.present.set(Index(Counter::kXmitData));
  t.SetTotal(Index(Counter::kXmitData), ~0ULL - 5);  // 64-bit values survive JSON exactly
  t.SetLastRaw(Index(Counter::kXmitData), 17);
  t.last_wide.set(Index(Counter::kXmitData));
  t.present.set(Index(Counter::kLinkDowned));
  t.SetTotal(Index(Counter::kLinkDowned), 255);
  t.SetLastRaw(Index(Counter::kLinkDowned), 255);  // its own 8-bit field
  t.stale = true;
  st.ports[{0xabc, 3}] = t;
  st.nodes[0xabc] = {topology::NodeKind::kCa, "cn0001 \"quoted\"", {{1, 0xabd}, {2, 0xabe}}};
  st.remembered.insert({0xdef, 7});
  st.collectors["xmit_wait_tick"] = nlohmann::json::parse(R"([[2748, 3, 0.00125, 123456789012345], [3567, 1, 0, 9]])");
  collectors::PersistedState back;
  std::string error;
  ASSERT_TRUE(collectors::LoadState(collectors::SaveState(st), &back, &error)) << error;
  const auto& bt = back.ports.at({0xabc, 3});
  EXPECT_EQ(bt.Total(Index(Counter::kXmitData)), ~0ULL - 5);
  EXPECT_EQ(bt.LastRaw(Index(Counter::kXmitData)), 17u);
  EXPECT_EQ(bt.LastBits(Index(Counter::kXmitData)), 64);
  EXPECT_EQ(bt.LastBits(Index(Counter::kLinkDowned)), 8);
  EXPECT_TRUE(bt.Pinned(Index(Counter::kLinkDowned))) << "sticky at its 8-bit maximum";
  EXPECT_TRUE(bt.stale);
  EXPECT_EQ(bt.present, t.present);
  EXPECT_EQ(back.nodes.at(0xabc).name, "cn0001 \"quoted\"");
  EXPECT_EQ(back.nodes.at(0xabc).port_guids, (std::map<std::uint8_t, std::uint64_t>{{1, 0xabd}, {2, 0xabe}}));
  EXPECT_EQ(back.remembered, st.remembered);
  EXPECT_EQ(back.collectors, st.collectors) << "what each collector saved, as it saved it";
  // A state written before the seconds were kept still loads; one written
  // before collectors saved their own hands its PortXmitWait seconds to
  // the collector that keeps them now.
  ASSERT_TRUE(collectors::LoadState(R"({"version": 1, "ports": [], "nodes": [], "remembered": []})", &back, &error))
      << error;
  EXPECT_TRUE(back.collectors.empty());
  ASSERT_TRUE(collectors::LoadState(
      R"({"version": 1, "ports": [], "nodes": [], "remembered": [], "waits": [[1, 2, 0.5, 7]]})", &back, &error))
      << error;
  EXPECT_EQ(back.collectors.at("xmit_wait_tick"), nlohmann::json::parse("[[1, 2, 0.5, 7]]"));

  EXPECT_FALSE(collectors::LoadState("{not json", &back, &error));
  EXPECT_NE(error.find("malformed state"), std::string::npos);
  EXPECT_FALSE(collectors::LoadState(R"({"version": 99, "ports": [], "nodes": [], "remembered": []})", &back, &error));
  EXPECT_NE(error.find("version"), std::string::npos);
  // A counter from a field it does not have (LinkDownedCounter is 8 bits
  // in PortCounters, 64 in PortCountersExtended).
  EXPECT_FALSE(
      collectors::LoadState(R"({"version": 1, "ports": [{"guid": 1, "port": 1, "stale": false, "counters": )"
                            R"({"link_downed": {"total": 3, "raw": 3, "bits": 16}}}], "nodes": [], "remembered": []})",
                            &back, &error));
  EXPECT_EQ(error, "state: counter link_downed from a 16-bit field (it has 8 or 64)");
}

}  // namespace
}  // namespace ibfabric
