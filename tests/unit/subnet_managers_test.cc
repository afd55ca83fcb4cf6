// The subnet manager monitor on hand-made SMInfo readings: master and
// standby, a failover with when/from/to, ActCount activity against our own
// queries, several masters, none, and the JSON.

#include "collectors/health/subnet_managers.h"

#include <gtest/gtest.h>

#include "collectors/api/json.h"
#include "collectors/subnet_managers_collector.h"

namespace ibfabric::collectors {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using transport::SmState;

// Two SM hosts and `switches` switches.
topology::Fabric TwoHosts(int switches = 0) {
  std::vector<topology::Node> nodes;
  for (int i = 1; i <= switches; ++i) {
    topology::Node sw;
    sw.guid = 0x9000 + static_cast<std::uint64_t>(i);
    sw.kind = topology::NodeKind::kSwitch;
    sw.lid = static_cast<std::uint16_t>(100 + i);
    sw.num_ports = 8;
    nodes.push_back(sw);
  }
  for (std::uint64_t i = 1; i <= 2; ++i) {
    topology::Node n;
    n.guid = 0x100 * i;
    n.kind = topology::NodeKind::kCa;
    n.description = "cn000" + std::to_string(i);
    n.num_ports = 1;
    topology::Port p;
    p.number = 1;
    p.guid = n.guid + 1;
    p.lid = static_cast<std::uint16_t>(i);
    p.is_sm = true;
    n.ports.push_back(p);
    nodes.push_back(n);
  }
  return topology::Fabric(std::move(nodes));
}

SmReading Answer(std::uint64_t node, std::uint32_t act, SmState state, std::uint8_t priority) {
  transport::SmInfo info;
  info.guid = node + 1;
  info.act_count = act;
  info.state = state;
  info.priority = priority;
  return {{{node, 1}, static_cast<std::uint16_t>(node / 0x100)}, info, transport::MadOutcome::kOk};
}
SmReading Silent(std::uint64_t node) {
  return {{{node, 1}, static_cast<std::uint16_t>(node / 0x100)}, std::nullopt, transport::MadOutcome::kTimeout};
}

std::set<std::string> Conditions(const SmReport& r) {
  std::set<std::string> out;
  for (const auto& c : r.conditions) out.insert(ToString(c.condition));
  return out;
}

TEST(SubnetManagersTest, TargetsAreTheIsSmPortsWithALid) {
  const auto fabric = TwoHosts();
  const auto t = SmTargets(fabric);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].port, (topology::PortRef{0x100, 1}));
  EXPECT_EQ(t[0].lid, 1);
}

// SMs started since the last walk, named by LID (MasterSMLID, the SA's
// records): the port behind each LID that no known target has; a switch's
// by its port 0; LIDs of nobody, 0 and known ones are skipped.
TEST(SubnetManagersTest, UnknownTargetsAreThePortsBehindNewLids) {
  std::vector<topology::Node> nodes;
  for (std::uint64_t i = 1; i <= 3; ++i) {
    topology::Node n;
    n.guid = 0x100 * i;
    n.kind = topology::NodeKind::kCa;
    n.num_ports = 1;
    topology::Port p;
    p.number = 1;
    p.lid = static_cast<std::uint16_t>(i);
    p.is_sm = i == 1;  // only host 1 had IsSM at the walk
    n.ports.push_back(p);
    nodes.push_back(n);
  }
  topology::Node sw;
  sw.guid = 0x900;
  sw.kind = topology::NodeKind::kSwitch;
  sw.lid = 9;
  sw.num_ports = 2;
  nodes.push_back(sw);
  const topology::Fabric fabric(std::move(nodes));
  const auto known = SmTargets(fabric);
  ASSERT_EQ(known.size(), 1u);
  const auto t = UnknownSmTargets(fabric, known, {0, 1, 3, 9, 42});
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].port, (topology::PortRef{0x300, 1}));
  EXPECT_EQ(t[0].lid, 3);
  EXPECT_EQ(t[1].port, (topology::PortRef{0x900, 0}));
  EXPECT_EQ(t[1].lid, 9);
  EXPECT_TRUE(UnknownSmTargets(fabric, known, {1}).empty());
}

TEST(SubnetManagersTest, MasterStandbyFailoverAndNoMaster) {
  const auto fabric = TwoHosts();
  SmMonitor m({seconds(30), seconds(600), 10});
  const auto t0 = std::chrono::steady_clock::time_point{} + seconds(1000);
  const auto w0 = std::chrono::system_clock::time_point{} + seconds(1'700'000'000);
  std::uint32_t act = 100;
  for (int i = 0; i < 3; ++i, act += 20) {
    m.Update({Answer(0x100, act, SmState::kMaster, 10), Answer(0x200, 5 + i, SmState::kStandby, 1)}, fabric,
             t0 + seconds(10 * i), w0 + seconds(10 * i));
  }
  SmReport r = m.Report();
  EXPECT_EQ(r.masters, 1u);
  EXPECT_EQ(r.standbys, 1u);
  EXPECT_TRUE(r.master_sweeping);
  EXPECT_TRUE(Conditions(r).empty());
  ASSERT_EQ(r.sms.size(), 2u);
  EXPECT_EQ(r.sms[0].node, "cn0001");  // the master first
  EXPECT_EQ(r.sms[0].guid, 0x101u);

  // The master stops answering, the standby becomes master.
  m.Update({Silent(0x100), Answer(0x200, 50, SmState::kMaster, 1)}, fabric, t0 + seconds(40), w0 + seconds(40));
  r = m.Report();
  EXPECT_EQ(r.master_changes, 1u);
  ASSERT_EQ(r.events.size(), 1u);
  ASSERT_TRUE(r.events[0].from);
  EXPECT_EQ(r.events[0].from->node, "cn0001");
  EXPECT_EQ(r.events[0].to.node, "cn0002");
  EXPECT_EQ(r.events[0].when, w0 + seconds(40));
  EXPECT_EQ(Conditions(r), (std::set<std::string>{"failover", "no_standby"}));
  EXPECT_EQ(r.sms.back().node, "cn0001");
  EXPECT_FALSE(r.sms.back().answering);

  // Nobody answers: no master; the failover is still recent.
  m.Update({Silent(0x100), Silent(0x200)}, fabric, t0 + seconds(50), w0 + seconds(50));
  r = m.Report();
  EXPECT_EQ(Conditions(r), (std::set<std::string>{"failover", "no_master"}));
  // Long after, only the lack of a master remains.
  m.Update({Silent(0x100), Silent(0x200)}, fabric, t0 + seconds(2000), w0 + seconds(2000));
  EXPECT_EQ(Conditions(m.Report()), (std::set<std::string>{"no_master"}));
}

TEST(SubnetManagersTest, OurOwnQueriesAloneDoNotCountAsSweeping) {
  const auto fabric = TwoHosts();
  SmMonitor m({seconds(30), seconds(600), 10});
  const auto t0 = std::chrono::steady_clock::time_point{} + seconds(1000);
  const auto w0 = std::chrono::system_clock::time_point{} + seconds(1'700'000'000);
  // ActCount moves by one per round (the reply to our SMInfo Get) and by
  // two now and then (a standby's poll): idle.
  std::uint32_t act = 7;
  for (int i = 0; i <= 40; ++i) {
    act += i % 5 == 0 ? 3 : 1;
    m.Update({Answer(0x100, act, SmState::kMaster, 3), Answer(0x200, 1, SmState::kStandby, 1)}, fabric, t0 + seconds(i),
             w0 + seconds(i));
  }
  SmReport r = m.Report();
  EXPECT_FALSE(r.master_sweeping);
  EXPECT_EQ(Conditions(r), (std::set<std::string>{"master_not_sweeping"}));
  // A light sweep (one SMP per switch and more) is activity again.
  act += 40;
  m.Update({Answer(0x100, act, SmState::kMaster, 3), Answer(0x200, 1, SmState::kStandby, 1)}, fabric, t0 + seconds(41),
           w0 + seconds(41));
  EXPECT_TRUE(m.Report().master_sweeping);
  EXPECT_TRUE(Conditions(m.Report()).empty());
}

// Other readers (two more exporters at our interval, a standby's polls)
// rise a quiet master's ActCount every round, unevenly: a round a reader's
// poll slipped out of, one that caught two of them, a round the loaded
// machine stretched to 2.5 s. In a fabric of 4 switches none of that is a
// sweep; a sweep of 4 SMPs in some rounds is, and so is one in every round
// (an SM sweeping as often as we read, the rise never back at the readers').
TEST(SubnetManagersTest, OtherReadersAreNotSweepsAndSweepsAreSeenAmongThem) {
  const auto fabric = TwoHosts(4);
  const auto t0 = std::chrono::steady_clock::time_point{} + seconds(1000);
  const auto w0 = std::chrono::system_clock::time_point{} + seconds(1'700'000'000);
  using std::chrono::milliseconds;
  // Each round: how long it took, and the SMPs beyond ours in it.
  const std::vector<std::pair<int, std::uint32_t>> readers = {{1000, 2}, {1000, 4}, {1000, 0}, {1000, 2}, {2500, 5},
                                                              {1000, 2}, {1000, 3}, {1000, 4}, {1000, 2}, {1000, 1}};
  auto run = [&](SmMonitor& m, std::uint32_t sweep, int every, int rounds) {
    std::uint32_t act = 50;
    auto t = t0;
    for (int i = 0; i < rounds; ++i) {
      const auto& [ms, foreign] = readers[static_cast<std::size_t>(i) % readers.size()];
      t += milliseconds(ms);
      act += 1 + foreign + (every > 0 && i % every == 0 ? sweep : 0);
      m.Update({Answer(0x100, act, SmState::kMaster, 3), Answer(0x200, 1, SmState::kStandby, 1)}, fabric, t,
               w0 + (t - t0));
    }
    return m.Report();
  };
  {
    SmMonitor quiet({seconds(10), seconds(600), 10});
    const SmReport r = run(quiet, 0, 0, 60);
    EXPECT_FALSE(r.master_sweeping);
    EXPECT_EQ(Conditions(r), (std::set<std::string>{"master_not_sweeping"}));
  }
  for (int every : {1, 3, 7}) {
    SmMonitor sweeping({seconds(10), seconds(600), 10});
    const SmReport r = run(sweeping, 4, every, 60);
    EXPECT_TRUE(r.master_sweeping) << "a sweep every " << every << " rounds";
    EXPECT_TRUE(Conditions(r).empty()) << "a sweep every " << every << " rounds";
  }
  // One SMP short of a sweep in some rounds is still the readers.
  SmMonitor short_of({seconds(10), seconds(600), 10});
  EXPECT_FALSE(run(short_of, 1, 3, 60).master_sweeping);
}

TEST(SubnetManagersTest, TwoMastersAndTheJson) {
  const auto fabric = TwoHosts();
  SmMonitor m;
  const auto t0 = std::chrono::steady_clock::time_point{} + seconds(1000);
  const auto w0 = std::chrono::system_clock::time_point{} + seconds(1'700'000'000);
  m.Update({Answer(0x100, 10, SmState::kMaster, 5), Answer(0x200, 10, SmState::kMaster, 5)}, fabric, t0, w0);
  const SmReport r = m.Report();
  EXPECT_EQ(r.masters, 2u);
  EXPECT_EQ(Conditions(r), (std::set<std::string>{"multiple_masters", "no_standby"}));
  const auto j = SubnetManagersJson(r, w0);
  EXPECT_EQ(j["master_count"], 2);
  EXPECT_TRUE(j["master"].is_null()) << "no single master";
  EXPECT_EQ(j["sms"].size(), 2u);
  EXPECT_EQ(j["sms"][0]["state"], "master");
  EXPECT_EQ(j["conditions"][0]["condition"], "multiple_masters");
  EXPECT_EQ(j["conditions"][0]["severity"], "critical");
  EXPECT_NE(j["conditions"][0]["summary"].get<std::string>().find("cn0001[1]"), std::string::npos);
  EXPECT_EQ(j["generated"], "2023-11-14T22:13:20Z");
  EXPECT_NE(j["conditions"][0]["action"].get<std::string>().find("ignore_other_sm"), std::string::npos);
  // The condition names both masters' ports.
  EXPECT_EQ(r.conditions[0].sms, (std::vector<topology::PortRef>{{0x100, 1}, {0x200, 1}}));
}

// SM conditions in /api/v1/alerts: cause subnet_manager, the SM ports as
// ends (none for no_master), critical ones first, counted, and filtered by
// severity and node like cable alerts.
TEST(SubnetManagersTest, ConditionsAreAlertsInTheAlertsJson) {
  const auto fabric = TwoHosts();
  SmMonitor m;
  const auto t0 = std::chrono::steady_clock::time_point{} + seconds(1000);
  const auto w0 = std::chrono::system_clock::time_point{} + seconds(1'700'000'000);
  m.Update({Answer(0x100, 10, SmState::kMaster, 5), Answer(0x200, 10, SmState::kMaster, 5)}, fabric, t0, w0);
  Snapshot s;
  s.fabric = std::make_shared<topology::Fabric>(fabric);
  s.nodes = LabelsOf(fabric);
  s.subnet_managers = std::make_shared<SmReport>(m.Report());
  s.published = w0;
  json j = AlertsJson(s, {});
  EXPECT_EQ(j["active_counts"]["critical"], 1);
  EXPECT_EQ(j["active_counts"]["warning"], 1);
  ASSERT_EQ(j["active"].size(), 2u);
  EXPECT_EQ(j["active"][0]["id"], "subnet_manager:multiple_masters");
  EXPECT_EQ(j["active"][0]["cause"], "subnet_manager");
  EXPECT_EQ(j["active"][0]["severity"], "critical");
  ASSERT_EQ(j["active"][0]["ends"].size(), 2u);
  EXPECT_EQ(j["active"][0]["ends"][0]["node"], "cn0001");
  EXPECT_EQ(j["active"][0]["ends"][1]["node"], "cn0002");
  EXPECT_EQ(j["active"][0]["since"], "2023-11-14T22:13:20Z");
  EXPECT_EQ(j["active"][1]["condition"], "no_standby");
  AlertFilter critical;
  critical.severity = Severity::kCritical;
  EXPECT_EQ(AlertsJson(s, critical)["active"].size(), 1u);
  AlertFilter node;
  node.node = "cn0002";
  j = AlertsJson(s, node);
  ASSERT_EQ(j["active"].size(), 1u) << "no_standby names the first master only";
  EXPECT_EQ(j["active"][0]["condition"], "multiple_masters");
  AlertFilter cleared;
  cleared.active = false;
  EXPECT_TRUE(AlertsJson(s, cleared)["active"].empty());

  // With no SM answering: no_master, on no port.
  m.Update({}, fabric, t0 + seconds(1), w0 + seconds(1));
  s.subnet_managers = std::make_shared<SmReport>(m.Report());
  j = AlertsJson(s, {});
  ASSERT_EQ(j["active"].size(), 1u) << j.dump();
  EXPECT_EQ(j["active"][0]["condition"], "no_master");
  EXPECT_TRUE(j["active"][0]["ends"].empty());
}

}  // namespace
}  // namespace ibfabric::collectors
