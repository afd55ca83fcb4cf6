// Counter semantics on the fake transport: ClassPortInfo capability bits
// decide what is asked and what is exported; LIDs that moved are caught;
// opt-in clearing; pinned counters (collectors/reads/sweep.h).

#include "collectors/reads/sweep.h"

#include <gtest/gtest.h>

#include "collectors/metrics.h"
#include "tests/testbed/prom_text.h"
#include "tests/unit/fake_fabric.h"
#include "topology/discovery.h"
#include "transport/attributes.h"
#include "transport/codec.h"
#include "transport/mad_engine.h"

namespace ibfabric {
namespace {

using collectors::Counter;
using collectors::Index;
using std::chrono::milliseconds;
using topology::PortRef;

// The fake port answers at once, in real time: a timeout short enough to
// expire while a loaded machine has the test descheduled (10 ms did, once
// in three loaded runs) loses an answer the test counts on. Where nothing
// is meant to be lost, the engine waits this long; where a reply is lost or
// held back (Busy) on purpose, kLossTimeout.
const transport::EngineOptions kPatient{16, milliseconds(2000), 0};
constexpr milliseconds kLossTimeout{100};
namespace cap = transport::pma_cap;

// One switch with five CAs, each CA with other PMA capabilities.
struct Caps {
  testing::FakeFabric f;
  int sw, plain, noietf, old_ca, fancy, mute;
  Caps() {
    sw = f.AddSwitch("sw", 8, 10);
    plain = f.AddCa("plain", 1);    // ExtWidth | XmitWait (the default)
    noietf = f.AddCa("noietf", 1);  // ExtWidthNoIetf only
    old_ca = f.AddCa("old", 1);     // nothing: no extended counters, no XmitWait
    fancy = f.AddCa("fancy", 1);    // everything, 64-bit error counters too
    mute = f.AddCa("mute", 1);      // ClassPortInfo never answers
    int port = 1;
    std::uint16_t lid = 1;
    for (int ca : {plain, noietf, old_ca, fancy, mute}) {
      f.SetCaLid(ca, 1, lid++);
      f.Connect(ca, 1, sw, port++);
    }
    f.SetCapabilities(noietf, cap::kExtWidthNoIetf);
    f.SetCapabilities(old_ca, 0);
    f.SetCapabilities(fancy, cap::kExtWidth | cap::kXmitWait | cap::kQp1Dropped, cap::kAdditionalExtended);
    f.SetCapabilities(mute, 0, 0, false);
    transport::PortCountersExtended x;
    x.symbol_error = 1ULL << 40;  // only visible through the 64-bit error counters
    x.xmit_data = 5;
    f.SetExtended(fancy, 1, x);
    transport::PortCounters c;
    c.symbol_error = 7;
    c.qp1_dropped = 9;
    c.xmit_data = 11;
    c.xmit_wait = 13;
    for (int ca : {plain, noietf, old_ca, fancy, mute}) f.SetCounters(ca, 1, c);
    c.xmit_wait = 0;  // a PMA without PortXmitWait reads 0 there
    f.SetCounters(old_ca, 1, c);
  }
};

TEST(CapabilitiesTest, WhatIsAskedAndWhatIsExported) {
  Caps t;
  transport::testing::FakeMadPort mad(t.f.Responder(t.plain, 1));
  transport::MadEngine engine(mad, {16, kLossTimeout, 0});
  const auto d = topology::Discover(engine);
  ASSERT_TRUE(d.ok);
  const auto caps = collectors::ReadCapabilities(d.fabric, engine);
  EXPECT_EQ(caps.count(t.f.Guid(t.mute)), 0u) << "no answer: unknown, not guessed";
  ASSERT_TRUE(caps.at(t.f.Guid(t.old_ca)).known);
  const auto targets = collectors::SweepTargets(d.fabric, {}, caps);
  const std::size_t before = mad.sent_mads().size();
  const auto sweep = collectors::Sweep(targets, engine);
  EXPECT_EQ(sweep.failed_ports, 0u);

  // PortCountersExtended is asked of every port except the old CA's;
  // PortCounters of every port but the fancy CA's, whose extended counters
  // hold its error counters too (CapabilityMask2 bit 1): one GMP a port.
  std::size_t extended_asked = 0, basic_asked = 0;
  for (std::size_t i = before; i < mad.sent_mads().size(); ++i) {
    const auto h = transport::DecodeHeader(mad.sent_mads()[i]);
    if (h.mgmt_class == 0x04 && h.attr_id == transport::pma_attr::kPortCountersExtended) ++extended_asked;
    if (h.mgmt_class == 0x04 && h.attr_id == transport::pma_attr::kPortCounters) ++basic_asked;
  }
  EXPECT_EQ(extended_asked, targets.size() - 1);
  EXPECT_EQ(basic_asked, targets.size() - 1);

  std::map<std::uint64_t, collectors::PortSample> s;
  for (const auto& r : sweep.readings) {
    ASSERT_TRUE(sweep.SampleOf(r));
    if (r.target.port.node_guid != t.f.Guid(t.sw)) s[r.target.port.node_guid] = *sweep.SampleOf(r);
  }
  const auto& plain = s.at(t.f.Guid(t.plain));
  EXPECT_TRUE(plain.present.test(Index(Counter::kXmitWait)));
  EXPECT_TRUE(plain.present.test(Index(Counter::kUnicastXmitPkts)));
  EXPECT_FALSE(plain.present.test(Index(Counter::kQp1Dropped)));
  EXPECT_EQ(plain.Bits(Index(Counter::kXmitData)), 64);
  EXPECT_EQ(plain.value[Index(Counter::kSymbolError)], 7u);

  const auto& noietf = s.at(t.f.Guid(t.noietf));
  EXPECT_EQ(noietf.Bits(Index(Counter::kXmitData)), 64);
  EXPECT_FALSE(noietf.present.test(Index(Counter::kUnicastXmitPkts)));
  // Not claimed, but filled (as mlx5 HCAs do): read by its value.
  EXPECT_TRUE(noietf.present.test(Index(Counter::kXmitWait)));
  EXPECT_EQ(noietf.value[Index(Counter::kXmitWait)], 13u);

  const auto& old_ca = s.at(t.f.Guid(t.old_ca));
  EXPECT_EQ(old_ca.Bits(Index(Counter::kXmitData)), 32);
  EXPECT_EQ(old_ca.value[Index(Counter::kXmitData)], 11u);
  EXPECT_FALSE(old_ca.present.test(Index(Counter::kXmitWait))) << "not claimed and 0: not known to be there";
  EXPECT_FALSE(old_ca.present.test(Index(Counter::kUnicastXmitPkts)));

  const auto& fancy = s.at(t.f.Guid(t.fancy));
  EXPECT_EQ(fancy.Bits(Index(Counter::kXmitData)), 64);
  EXPECT_EQ(fancy.value[Index(Counter::kXmitData)], 5u);
  EXPECT_EQ(fancy.Bits(Index(Counter::kSymbolError)), 64);
  EXPECT_EQ(fancy.value[Index(Counter::kSymbolError)], 1ULL << 40);
  EXPECT_TRUE(fancy.present.test(Index(Counter::kQp1Dropped)));

  // Unknown capabilities: ask everything, export what answers.
  const auto& mute = s.at(t.f.Guid(t.mute));
  EXPECT_TRUE(mute.present.test(Index(Counter::kXmitWait)));
  EXPECT_EQ(mute.value[Index(Counter::kXmitWait)], 13u);
  EXPECT_EQ(mute.Bits(Index(Counter::kXmitData)), 64);
}

TEST(CapabilitiesTest, LostExtendedReplyDropsOnlyWhatItFeeds) {
  Caps t;
  // A port whose PortCountersExtended replies are lost, PortCounters not.
  auto inner = t.f.Responder(t.plain, 1);
  transport::testing::FakeMadPort mad([&](const transport::MadAddress& to, const transport::MadBytes& req) {
    const auto h = transport::DecodeHeader(req);
    if (h.attr_id == transport::pma_attr::kPortCountersExtended && (to.lid == 1 || to.lid == 4)) {
      return std::optional<transport::MadBytes>();
    }
    return inner(to, req);
  });
  transport::MadEngine engine(mad, {16, kLossTimeout, 0});
  const auto d = topology::Discover(engine);
  const auto caps = collectors::ReadCapabilities(d.fabric, engine);
  const auto sweep = collectors::Sweep(collectors::SweepTargets(d.fabric, {}, caps), engine);
  int checked = 0;
  for (const auto& r : sweep.readings) {
    const auto guid = r.target.port.node_guid;
    if (guid == t.f.Guid(t.plain)) {  // LID 1: errors from PortCounters either way
      const auto sample = sweep.SampleOf(r);
      ASSERT_TRUE(sample);
      EXPECT_FALSE(sample->present.test(Index(Counter::kXmitData))) << "not switched to 32 bits";
      EXPECT_FALSE(sample->present.test(Index(Counter::kUnicastXmitPkts)));
      EXPECT_EQ(sample->value[Index(Counter::kSymbolError)], 7u);
      EXPECT_EQ(sample->value[Index(Counter::kXmitWait)], 13u);
      ++checked;
    }
    if (guid == t.f.Guid(t.fancy)) {  // LID 4: its one read (PortCountersExtended) was lost
      EXPECT_FALSE(r.answered());
      EXPECT_FALSE(sweep.SampleOf(r));
      EXPECT_TRUE(r.timeout);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2);
}

// One switch, and CAs a and b (LIDs 1 and 2) on its ports 1 and 2.
struct TwoCas {
  testing::FakeFabric f;
  int sw = f.AddSwitch("sw", 4, 10);
  int a = f.AddCa("a", 1);
  int b = f.AddCa("b", 1);
  TwoCas() {
    f.SetCaLid(a, 1, 1);
    f.SetCaLid(b, 1, 2);
    f.Connect(a, 1, sw, 1);
    f.Connect(b, 1, sw, 2);
  }
};

TEST(LidMoveTest, ALidAnsweringForAnotherNodeIsCaught) {
  TwoCas t;
  testing::FakeFabric& f = t.f;
  const int a = t.a, b = t.b;
  transport::PortCounters c;
  c.rcv_errors = 55;
  f.SetCounters(b, 1, c);
  transport::testing::FakeMadPort mad(f.Responder(a, 1));
  transport::MadEngine engine(mad, kPatient);
  const auto d = topology::Discover(engine);
  const auto targets = collectors::SweepTargets(d.fabric, {}, {});
  EXPECT_TRUE(collectors::Sweep(targets, engine).moved_nodes.empty());

  f.SetCaLid(a, 1, 2);  // an SM gave the LIDs out the other way round
  f.SetCaLid(b, 1, 1);
  const auto sweep = collectors::Sweep(targets, engine);
  EXPECT_EQ(sweep.moved_nodes, (std::set<std::uint64_t>{f.Guid(a), f.Guid(b)}));
  for (const auto& r : sweep.readings) {
    if (r.target.port.node_guid == f.Guid(a)) {
      EXPECT_FALSE(r.answered()) << "b's 55 errors must not land on a";
      EXPECT_FALSE(sweep.SampleOf(r));
    }
  }
}

// Only "unsupported attribute" (0x000C) says a details attribute is
// absent; Busy past its retries is a lost read, asked again (issue 36: one
// Busy spell dropped the attribute for good).
TEST(SweepTest, ADetailsReadAnsweredBusyIsLostNotUnsupported) {
  TwoCas t;
  t.f.SetAttributeStatus(t.a, transport::pma_attr::kPortRcvErrorDetails, transport::kMadStatusBusy);
  t.f.SetAttributeStatus(t.b, transport::pma_attr::kPortRcvErrorDetails, transport::kMadStatusUnsupportedAttribute);
  transport::testing::FakeMadPort mad(t.f.Responder(t.a, 1));
  transport::MadEngine engine(mad, {16, kLossTimeout, 0});
  const auto d = topology::Discover(engine);
  auto targets = collectors::SweepTargets(d.fabric, {}, {});
  for (auto& target : targets) target.rcv_error_details = true;
  const auto r = collectors::Sweep(targets, engine);
  int seen = 0;
  for (const auto& reading : r.readings) {
    const std::uint64_t node = reading.target.port.node_guid;
    if (node == t.f.Guid(t.a)) {
      EXPECT_EQ(reading.details, collectors::DetailsRead::kLost);
      ++seen;
    } else if (node == t.f.Guid(t.b)) {
      EXPECT_EQ(reading.details, collectors::DetailsRead::kUnsupported);
      ++seen;
    }
    EXPECT_TRUE(reading.answered()) << "the counters themselves answered";
  }
  EXPECT_EQ(seen, 2);
}

// A read of a collector's own in the sweep's one batch (batch.h): its part
// asks PMA ClassPortInfo of each CA beside the counters, takes each answer,
// has its MADs tallied with its node's, and is told of the LIDs that
// answered for another node, to drop what came from them.
class ClassPortInfoPart : public collectors::BatchPart {
 public:
  explicit ClassPortInfoPart(std::vector<std::pair<std::uint64_t, std::uint16_t>> nodes) : nodes_(std::move(nodes)) {}
  void AddRequests(std::vector<transport::MadRequest>* out) override {
    for (const auto& [guid, lid] : nodes_) out->push_back(transport::PerfClassPortInfoQuery(lid));
  }
  std::uint64_t NodeOf(std::size_t i) const override { return nodes_[i].first; }
  void Take(std::size_t i, transport::MadResult&& m) override {
    answered[nodes_[i].first] =
        m.outcome == transport::MadOutcome::kOk && transport::DecodePerfClassPortInfo(m.response).capability_mask != 0;
  }
  void Finish(const std::set<std::uint16_t>& moved) override {
    for (const auto& [guid, lid] : nodes_) {
      if (moved.count(lid)) answered.erase(guid);
    }
    finished = true;
  }
  std::map<std::uint64_t, bool> answered;
  bool finished = false;

 private:
  std::vector<std::pair<std::uint64_t, std::uint16_t>> nodes_;
};

TEST(BatchTest, ACollectorsOwnPartRunsInTheSweepsBatchAndDropsWhatMovedLidsSaid) {
  TwoCas t;
  testing::FakeFabric& f = t.f;
  const int sw = t.sw, a = t.a, b = t.b;
  transport::testing::FakeMadPort mad(f.Responder(a, 1));
  transport::MadEngine engine(mad, kPatient);
  const auto d = topology::Discover(engine);
  const auto targets = collectors::SweepTargets(d.fabric, {}, {});
  const auto checks = collectors::LidChecks(targets, {});
  const auto plain = collectors::Sweep(targets, {}, checks, engine);

  ClassPortInfoPart part({{f.Guid(a), 1}, {f.Guid(b), 2}});
  const std::uint64_t requests = engine.stats().requests;
  const auto with = collectors::Sweep(targets, {}, checks, engine, {&part});
  EXPECT_EQ(engine.stats().requests - requests,
            with.mads.at(f.Guid(a)).asked + with.mads.at(f.Guid(b)).asked + with.mads.at(f.Guid(sw)).asked)
      << "every request of the batch tallied to its node";
  EXPECT_TRUE(part.finished);
  EXPECT_EQ(part.answered, (std::map<std::uint64_t, bool>{{f.Guid(a), true}, {f.Guid(b), true}}));
  EXPECT_EQ(with.mads.at(f.Guid(a)).asked, plain.mads.at(f.Guid(a)).asked + 1);
  EXPECT_EQ(with.mads.at(f.Guid(b)).asked, plain.mads.at(f.Guid(b)).asked + 1);
  EXPECT_EQ(with.readings.size(), plain.readings.size());
  for (const auto& r : with.readings) EXPECT_TRUE(r.answered()) << "the counters are read as without the part";

  f.SetCaLid(a, 1, 2);  // the LIDs given out the other way round
  f.SetCaLid(b, 1, 1);
  ClassPortInfoPart after({{f.Guid(a), 1}, {f.Guid(b), 2}});
  const auto moved = collectors::Sweep(targets, {}, checks, engine, {&after});
  EXPECT_EQ(moved.moved_nodes, (std::set<std::uint64_t>{f.Guid(a), f.Guid(b)}));
  EXPECT_TRUE(after.answered.empty()) << "what the moved LIDs answered is someone else's";
}

TEST(ClearTest, ThresholdMasksAndContinuity) {
  collectors::PortSample s;
  auto set = [&s](Counter c, std::uint64_t v, std::uint8_t bits) {
    s.Set(c, v, bits == 64);
    EXPECT_EQ(s.Bits(Index(c)), bits) << "a field the counter does not have";
  };
  set(Counter::kRcvErrors, 49150, 16);      // just below 75% of 65535 (49151)
  set(Counter::kXmitData, 1ULL << 50, 64);  // 64-bit: never cleared
  const collectors::SweepTarget t{{0x5, 1}, 9, {}};
  EXPECT_FALSE(collectors::ClearNeeded(t, s, 75));
  set(Counter::kRcvErrors, 49151, 16);
  set(Counter::kXmitWait, 0xF0000000u, 32);
  set(Counter::kLinkDowned, 255, 8);
  const auto req = collectors::ClearNeeded(t, s, 75);
  ASSERT_TRUE(req);
  EXPECT_EQ(req->select, (1u << 3) | (1u << 2));  // PortRcvErrors, LinkDownedCounter
  EXPECT_EQ(req->select2, 1u);                    // PortXmitWait
  EXPECT_TRUE(req->counters.test(Index(Counter::kRcvErrors)));
  EXPECT_FALSE(req->counters.test(Index(Counter::kXmitData)));

  // Totals stay continuous across our own clear.
  collectors::CounterStore st;
  st.Update({0x5, 1}, s, {});
  st.Commit();
  st.NoteCleared({0x5, 1}, req->counters);
  set(Counter::kRcvErrors, 4, 16);
  st.Update({0x5, 1}, s, {});
  EXPECT_EQ(st.ports().at({0x5, 1}).Total(Index(Counter::kRcvErrors)), 49155u);
}

TEST(ClearTest, SetReachesThePortOnTheWire) {
  testing::FakeFabric f;
  const int sw = f.AddSwitch("sw", 4, 10);
  const int a = f.AddCa("a", 1);
  f.SetCaLid(a, 1, 1);
  f.Connect(a, 1, sw, 1);
  transport::PortCounters c;
  c.rcv_errors = 60000;
  c.symbol_error = 12;
  f.SetCounters(sw, 1, c);
  transport::testing::FakeMadPort mad(f.Responder(a, 1));
  transport::MadEngine engine(mad, kPatient);
  const auto d = topology::Discover(engine);
  const auto sweep = collectors::Sweep(collectors::SweepTargets(d.fabric, {}, {}), engine);
  std::vector<collectors::ClearRequest> reqs;
  for (const auto& r : sweep.readings) {
    if (auto q = collectors::ClearNeeded(r.target, *sweep.SampleOf(r), 75)) reqs.push_back(*q);
  }
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(collectors::ClearCounters(reqs, engine), std::vector<bool>{true});
  EXPECT_EQ(f.sets(), 1);
  EXPECT_EQ(f.Counters(sw, 1).rcv_errors, 0);
  EXPECT_EQ(f.Counters(sw, 1).symbol_error, 12) << "only the selected counter is cleared";
}

TEST(PinnedTest, PinnedCountersAreExposed) {
  collectors::PortTotals t;
  t.present.set(Index(Counter::kRcvErrors));
  t.last_wide.reset(Index(Counter::kRcvErrors));
  t.SetTotal(Index(Counter::kRcvErrors), 65535);
  t.SetLastRaw(Index(Counter::kRcvErrors), 65535);
  EXPECT_TRUE(t.Pinned(Index(Counter::kRcvErrors)));
  t.last_wide.set(Index(Counter::kRcvErrors));
  EXPECT_FALSE(t.Pinned(Index(Counter::kRcvErrors)));
  t.last_wide.reset(Index(Counter::kRcvErrors));

  collectors::Snapshot s;
  s.fabric = std::make_shared<topology::Fabric>();
  s.nodes = std::make_shared<const collectors::NodeLabels>(
      collectors::NodeLabels{{0x9, {topology::NodeKind::kSwitch, "sw", {}}}});
  s.ports = std::make_shared<const collectors::PortTable>(
      collectors::PortTable{{{0x9, 4}, t}, {{0x9, 5}, collectors::PortTotals{}}});
  s.collectors = {"port_counters"};
  const auto m = testbed::Scrape::Parse(collectors::RenderExposition(s, "x"));
  EXPECT_EQ(m.Value("infiniband_switch_port_pinned_counters", {{"port", "4"}}), 1);
  EXPECT_EQ(m.Value("infiniband_switch_port_pinned_counters", {{"port", "5"}}), 0);
  EXPECT_EQ(m.Value("infiniband_switch_port_counter_pinned", {{"port", "4"}, {"counter", "receive_errors"}}), 1);
  EXPECT_EQ(m.Find("infiniband_switch_port_counter_pinned").size(), 1u);
}

}  // namespace
}  // namespace ibfabric
