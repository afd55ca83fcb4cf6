// collectors/drain_collector.cc over the collector bed's small fabric
// (cn0001-cn0004 under two leaves): a host whose own cable goes bad is
// listed to drain with the alert's id and a reason an operator would
// write, by its Slurm name where the map gives one; held once clean, then
// listed to resume; a host= filter; its gauges.

#include "collectors/drain_collector.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>

#include "collectors/registry.h"
#include "tests/testbed/prom_text.h"
#include "tests/unit/collector_bed.h"
#include "tests/unit/fake_fabric.h"

namespace ibfabric::collectors {
namespace {

// cn0003's cable bad for four sweeps a second apart, then clean for ten.
// Returns the drain list after the bad sweeps and after the clean ones.
std::pair<nlohmann::json, nlohmann::json> BadThenClean(Bed& b, std::chrono::milliseconds resume_after,
                                                       testbed::Scrape* bad_scrape = nullptr,
                                                       std::optional<nlohmann::json>* saved = nullptr) {
  CollectorOptions o;
  o.alerts.raise_after = 2;
  o.alerts.clear_after = 2;
  o.alerts.window = std::chrono::seconds(3);
  o.slurm_node_names = {{"cn0003", "node-c"}};
  o.Own<DrainOptions>().resume_after = resume_after;
  auto tree = b.Make("fat_tree");
  auto caps = b.Make("capabilities");
  b.Run(*tree);
  b.Run(*caps);
  auto counters = b.Make("port_counters", o);
  auto health = b.Make("link_health", o);
  auto drain = b.Make("drain", o);
  const auto t0 = std::chrono::steady_clock::now();
  transport::PortCounters pc;
  int sweep = 0;
  for (; sweep < 4; ++sweep) {
    pc.symbol_error = static_cast<std::uint16_t>(1000 * sweep);
    b.f.SetCounters(b.hosts[2], 1, pc);
    b.SweepWith({counters.get(), health.get(), drain.get()}, t0 + std::chrono::seconds(sweep));
  }
  const auto* list = b.parts.by_collector.Get<DrainList>(kDrainCollector);
  EXPECT_NE(list, nullptr);
  const nlohmann::json bad = list ? DrainJson(*list) : nlohmann::json();
  if (bad_scrape) *bad_scrape = b.Render();
  for (; sweep < 14; ++sweep)
    b.SweepWith({counters.get(), health.get(), drain.get()}, t0 + std::chrono::seconds(sweep));
  list = b.parts.by_collector.Get<DrainList>(kDrainCollector);
  if (saved) *saved = drain->Saved();
  return {bad, list ? DrainJson(*list) : nlohmann::json()};
}

TEST(DrainCollectorTest, TheHostOfABadCableIsDrainedThenHeld) {
  Bed b;
  testbed::Scrape s;
  const auto [bad, clean] = BadThenClean(b, std::chrono::hours(1), &s);
  ASSERT_EQ(bad["drain"].size(), 1u) << bad.dump();
  const nlohmann::json& h = bad["drain"][0];
  EXPECT_EQ(h["host"], "cn0003");
  EXPECT_EQ(h["node"], "node-c");
  EXPECT_EQ(h["state"], "faulty");
  ASSERT_EQ(h["faults"].size(), 1u);
  const nlohmann::json& f = h["faults"][0];
  EXPECT_EQ(f["cause"], "bad_cable");
  EXPECT_EQ(f["severity"], "critical");
  ASSERT_NE(b.parts.health, nullptr);
  // Named as the exporter names ports everywhere (the CA's description), the host's end first.
  EXPECT_EQ(f["cable"].get<std::string>().rfind("cn0003 mlx5_0[1] - leaf1[", 0), 0u) << f.dump();
  EXPECT_EQ(h["reason"],
            "ibfabric: bad_cable " + f["cable"].get<std::string>() + " since " + f["since"].get<std::string>());
  EXPECT_EQ(f["alert_id"].get<std::string>().rfind("bad_cable:", 0), 0u);
  EXPECT_EQ(bad["fabric_hosts"], 4);
  EXPECT_TRUE(bad["resume"].empty());
  EXPECT_EQ(s.Value("infiniband_drain_hosts", {{"state", "faulty"}}), 1);
  EXPECT_EQ(s.Value("infiniband_drain_hosts", {{"state", "resume"}}), 0);
  const auto* list = b.parts.by_collector.Get<DrainList>(kDrainCollector);
  ASSERT_NE(list, nullptr);
  // Clean for longer than the alert takes to clear, not for an hour: held.
  ASSERT_EQ(clean["drain"].size(), 1u) << clean.dump();
  EXPECT_EQ(clean["drain"][0]["state"], "holding");
  EXPECT_TRUE(clean["drain"][0]["faults"].empty());
  EXPECT_FALSE(clean["drain"][0]["resume_at"].is_null());
  // By either name, and no other host.
  EXPECT_EQ(DrainJson(*list, "node-c")["drain"].size(), 1u);
  EXPECT_EQ(DrainJson(*list, "cn0003")["drain"].size(), 1u);
  EXPECT_TRUE(DrainJson(*list, "cn0001")["drain"].empty());
}

TEST(DrainCollectorTest, OnceCleanForLongEnoughTheHostIsListedToResume) {
  Bed b;
  const auto [bad, clean] = BadThenClean(b, std::chrono::milliseconds(0));
  ASSERT_EQ(bad["drain"].size(), 1u);
  EXPECT_TRUE(clean["drain"].empty()) << clean.dump();
  ASSERT_EQ(clean["resume"].size(), 1u) << clean.dump();
  EXPECT_EQ(clean["resume"][0]["node"], "node-c");
  EXPECT_EQ(clean["resume"][0]["reason"].get<std::string>().rfind("ibfabric: cables clean since ", 0), 0u);
  const ApiRoute& route = FindCollector("drain")->routes.at(0);
  EXPECT_EQ(route.path, "/api/v1/drain");
  EXPECT_EQ(route.reply(b.parts, {{"host", "node-c"}}).body["resume"].size(), 1u);
  EXPECT_EQ(route.reply(b.parts, {{"x", "1"}}).status, 400);
  EXPECT_EQ(route.reply(b.parts, {{"host", ""}}).status, 400);
}

// A re-exec (what it saved, through the state's JSON text) keeps the hold:
// the same host held since the same time; what cannot be read starts afresh.
TEST(DrainCollectorTest, ItsHistorySurvivesAReexec) {
  Bed b;
  std::optional<nlohmann::json> saved;
  const auto [bad, clean] = BadThenClean(b, std::chrono::hours(1), nullptr, &saved);
  ASSERT_EQ(clean["drain"].size(), 1u);
  ASSERT_TRUE(saved);
  CollectorOptions again;
  again.Own<DrainOptions>().resume_after = std::chrono::hours(1);
  again.restored["drain"] = nlohmann::json::parse(saved->dump());
  auto drain = FindCollector("drain")->make(again);
  b.SweepWith({drain.get()});
  const auto* list = b.parts.by_collector.Get<DrainList>(kDrainCollector);
  ASSERT_NE(list, nullptr);
  const nlohmann::json after = DrainJson(*list);
  ASSERT_EQ(after["drain"].size(), 1u) << after.dump();
  EXPECT_EQ(after["drain"][0]["host"], "cn0003");
  EXPECT_EQ(after["drain"][0]["state"], "holding");
  EXPECT_EQ(after["drain"][0]["clean_since"], clean["drain"][0]["clean_since"]);
  EXPECT_EQ(after["judging_since"], clean["judging_since"]);

  CollectorOptions garbled;
  garbled.restored["drain"] = nlohmann::json::parse(R"({"listed": 3})");
  auto fresh = FindCollector("drain")->make(garbled);
  b.SweepWith({fresh.get()});
  EXPECT_TRUE(DrainJson(*b.parts.by_collector.Get<DrainList>(kDrainCollector))["drain"].empty());
}

}  // namespace
}  // namespace ibfabric::collectors
