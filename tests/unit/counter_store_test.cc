#include "collectors/health/counter_store.h"

#include <gtest/gtest.h>

namespace ibfabric::collectors {
namespace {

PortSample One(Counter c, std::uint64_t v, std::uint8_t bits = 16) {
  PortSample s;
  s.Set(c, v, bits == 64);
  EXPECT_EQ(s.Bits(Index(c)), bits) << "a field the counter does not have";
  return s;
}

const topology::PortRef kPort{0x42, 7};

std::uint64_t Total(const CounterStore& st, Counter c) { return st.ports().at(kPort).Total(Index(c)); }

// A reading as a sweep folds it in: a port read for the first time joins
// the table at the Commit after the sweep's readings.
void Read(CounterStore& st, const topology::PortRef& port, const PortSample& sample) {
  st.Update(port, sample, {});
  st.Commit();
}

TEST(CounterStoreTest, FirstReadingIsTheTotalThenDeltasAdd) {
  CounterStore st;
  Read(st, kPort, One(Counter::kRcvErrors, 100));
  EXPECT_EQ(Total(st, Counter::kRcvErrors), 100u);
  Read(st, kPort, One(Counter::kRcvErrors, 130));
  EXPECT_EQ(Total(st, Counter::kRcvErrors), 130u);
}

// Whether a counter moved, as everyone asks it (Increase): what the fold adds.
TEST(CounterStoreTest, IncreaseIsWhatTheFoldAdds) {
  CounterStore st;
  const auto ld = Index(Counter::kLinkDowned);
  EXPECT_EQ(Increase(PortTotals{}, One(Counter::kLinkDowned, 4, 8), ld), 0u) << "a first reading moved nothing";
  Read(st, kPort, One(Counter::kLinkDowned, 4, 8));
  const auto cases = std::vector<std::pair<std::uint64_t, std::uint64_t>>{
      {4, 0},  // the same
      {6, 2},  // two more
      {0, 0},  // cleared elsewhere: nothing new
      {1, 1},  // cleared, then one
  };
  std::uint64_t total = Total(st, Counter::kLinkDowned);
  for (const auto& [raw, want] : cases) {
    const PortTotals before = st.ports().at(kPort);
    EXPECT_EQ(Increase(before, One(Counter::kLinkDowned, raw, 8), ld), want) << raw;
    Read(st, kPort, One(Counter::kLinkDowned, raw, 8));
    total += want;
    EXPECT_EQ(Total(st, Counter::kLinkDowned), total) << "the fold adds exactly that";
  }
  const PortTotals before = st.ports().at(kPort);
  EXPECT_EQ(Increase(before, One(Counter::kLinkDowned, 9, 64), ld), 0u) << "another field: re-based";
  EXPECT_EQ(Increase(before, One(Counter::kRcvErrors, 9), ld), 0u) << "not in the sample";
}

// An error counter cleared out of band (ibclearerrors: the data go on) is
// held for a reading, then taken as cleared: the total never goes back.
TEST(CounterStoreTest, AClearNeverMakesTheTotalGoBack) {
  CounterStore st;
  Read(st, kPort, One(Counter::kRcvErrors, 65535));
  Read(st, kPort, One(Counter::kRcvErrors, 5));  // cleared out of band, 5 new: or a wrong reading
  EXPECT_EQ(Total(st, Counter::kRcvErrors), 65535u);
  EXPECT_TRUE(st.ports().at(kPort).held.test(Index(Counter::kRcvErrors)));
  Read(st, kPort, One(Counter::kRcvErrors, 12));  // still below: it was cleared, 12 since
  EXPECT_EQ(Total(st, Counter::kRcvErrors), 65547u);
  EXPECT_FALSE(st.ports().at(kPort).held.test(Index(Counter::kRcvErrors)));
  Read(st, kPort, One(Counter::kRcvErrors, 20));
  EXPECT_EQ(Total(st, Counter::kRcvErrors), 65555u);
}

// A counter that falls while the data go on and is back at the next
// reading: the fallen reading was wrong (issue 63's companion lost, the
// errors read 0), and is counted so; nothing of it reaches the total. One
// that falls with the data is a restart, taken at once.
TEST(CounterStoreTest, AFallThatComesBackWasAWrongReadingAndARestartIsTakenAtOnce) {
  CounterStore st;
  PortSample s;
  s.Set(Counter::kSymbolError, 500, true);
  s.Set(Counter::kXmitData, 1000, true);
  Read(st, kPort, s);
  s.Set(Counter::kSymbolError, 0, true);
  s.Set(Counter::kXmitData, 1100, true);
  Folded f = st.Update(kPort, s, {});
  EXPECT_FALSE(f.rejected);
  EXPECT_EQ(Total(st, Counter::kSymbolError), 500u);
  EXPECT_EQ(Total(st, Counter::kXmitData), 1100u);
  EXPECT_EQ(Increase(st.ports().at(kPort), s, Index(Counter::kSymbolError)), 0u) << "held: no move";
  s.Set(Counter::kSymbolError, 503, true);
  f = st.Update(kPort, s, {});
  ASSERT_TRUE(f.rejected);
  EXPECT_EQ(*f.rejected, Implausible::kFellAndRose);
  EXPECT_EQ(f.counter, Index(Counter::kSymbolError));
  EXPECT_EQ(Total(st, Counter::kSymbolError), 503u) << "3 since the last good reading";
  // A restart: the data fell too; every counter below is all new at once.
  s.Set(Counter::kSymbolError, 2, true);
  s.Set(Counter::kXmitData, 40, true);
  f = st.Update(kPort, s, {});
  EXPECT_FALSE(f.rejected);
  EXPECT_EQ(Total(st, Counter::kSymbolError), 505u);
  EXPECT_EQ(Total(st, Counter::kXmitData), 1140u);
  EXPECT_EQ(st.ports().at(kPort).resets, 1u);
}

// A held fall is a clear when any held counter is still below (ibclearerrors
// clears them together; LinkDowned may count a flap back up meanwhile), or
// when the port restarted; our own clear ends a hold.
TEST(CounterStoreTest, HeldCountersBackUpAfterAClearOrARestartCountAll) {
  CounterStore st;
  PortSample s;
  s.Set(Counter::kSymbolError, 50, true);
  s.Set(Counter::kLinkDowned, 1, true);
  s.Set(Counter::kXmitData, 1000, true);
  Read(st, kPort, s);
  s.Set(Counter::kSymbolError, 0, true);  // ibclearerrors
  s.Set(Counter::kLinkDowned, 0, true);
  s.Set(Counter::kXmitData, 1100, true);
  Read(st, kPort, s);
  s.Set(Counter::kSymbolError, 3, true);  // still below 50: a clear
  s.Set(Counter::kLinkDowned, 1, true);   // one flap since it, back at 1
  const PortTotals before = st.ports().at(kPort);
  EXPECT_EQ(Increase(before, s, Index(Counter::kLinkDowned)), 1u) << "what the fold adds";
  const Folded f = st.Update(kPort, s, {});
  EXPECT_FALSE(f.rejected);
  EXPECT_EQ(Total(st, Counter::kSymbolError), 53u);
  EXPECT_EQ(Total(st, Counter::kLinkDowned), 2u) << "the flap after the clear counted";
  // A restart while a counter is held: all of it is new.
  s.Set(Counter::kSymbolError, 0, true);
  s.Set(Counter::kXmitData, 1200, true);
  Read(st, kPort, s);  // held
  s.Set(Counter::kSymbolError, 9, true);
  s.Set(Counter::kXmitData, 10, true);  // the port restarted
  EXPECT_FALSE(st.Update(kPort, s, {}).rejected);
  EXPECT_EQ(Total(st, Counter::kSymbolError), 62u);
  // Our own clear of a held counter ends its hold.
  s.Set(Counter::kSymbolError, 0, true);
  s.Set(Counter::kXmitData, 20, true);
  Read(st, kPort, s);
  ASSERT_TRUE(st.ports().at(kPort).held.test(Index(Counter::kSymbolError)));
  st.NoteCleared(kPort, std::bitset<kCounterCount>().set(Index(Counter::kSymbolError)));
  EXPECT_FALSE(st.ports().at(kPort).held.test(Index(Counter::kSymbolError)));
  s.Set(Counter::kSymbolError, 4, true);
  EXPECT_FALSE(st.Update(kPort, s, {}).rejected);
  EXPECT_EQ(Total(st, Counter::kSymbolError), 66u);
}

// A wrong fall of the data is taken as a restart (at once, for host resets);
// the right readings after it then rise too fast. The first is rejected,
// the second re-bases the port on itself, adding nothing: never stuck.
TEST(CounterStoreTest, TwoRejectionsInARowRebaseThePort) {
  topology::Port qdr;
  qdr.width_supported = 2;
  qdr.speed_supported = 4;
  const PortLimits limits = LimitsOf(&qdr);
  using std::chrono::seconds;
  const std::chrono::system_clock::time_point t0{seconds(1'000'000)};
  CounterStore st;
  PortSample s;
  s.Set(Counter::kXmitData, 900'000'000'000, true);
  st.Update(kPort, s, t0, &limits);
  st.Commit();
  s.Set(Counter::kXmitData, 5, true);  // wrong: read as a restart
  EXPECT_FALSE(st.Update(kPort, s, t0 + seconds(1), &limits).rejected);
  EXPECT_EQ(Total(st, Counter::kXmitData), 900'000'000'005u);
  s.Set(Counter::kXmitData, 900'000'100'000, true);
  const Folded first = st.Update(kPort, s, t0 + seconds(2), &limits);
  ASSERT_TRUE(first.rejected);
  EXPECT_EQ(*first.rejected, Implausible::kData);
  s.Set(Counter::kXmitData, 900'000'200'000, true);
  EXPECT_FALSE(st.Update(kPort, s, t0 + seconds(3), &limits).rejected) << "re-based";
  EXPECT_EQ(Total(st, Counter::kXmitData), 900'000'000'005u) << "nothing added by the re-base";
  s.Set(Counter::kXmitData, 900'000'300'000, true);
  EXPECT_FALSE(st.Update(kPort, s, t0 + seconds(4), &limits).rejected);
  EXPECT_EQ(Total(st, Counter::kXmitData), 900'000'100'005u) << "and on from there";
  // The steady clock's floor: a wall clock stepped back to a moment after
  // the last reading narrows nothing.
  PortLimits floored = limits;
  floored.seconds_at_least = 10;
  s.Set(Counter::kXmitData, 900'000'300'000 + 10'000'000'000, true);  // 40 GB: 10 s at 4 GB/s
  EXPECT_FALSE(st.Update(kPort, s, t0 + seconds(4) + std::chrono::milliseconds(10), &floored).rejected);
}

// Rises no link can produce in the time since the port's last reading are
// not folded in (the reading whole), and say why; the next plausible
// reading goes on from the last one folded in. At 4xQDR: 4 GB/s of data,
// 40 Gbaud; 2 x 1 s + 1 s allowed.
TEST(CounterStoreTest, ReadingsNoLinkCanProduceAreNotFoldedIn) {
  topology::Port qdr;
  qdr.width_supported = 2;  // 4x
  qdr.speed_supported = 4;  // QDR
  const PortLimits limits = LimitsOf(&qdr);
  EXPECT_EQ(limits.bytes_per_second, 4e9);
  EXPECT_EQ(limits.symbols_per_second, 40e9);
  const PortLimits fastest = LimitsOf(nullptr);
  EXPECT_EQ(fastest.bytes_per_second, 12 * 200e9 / 8) << "12x XDR where unknown";

  using std::chrono::seconds;
  const std::chrono::system_clock::time_point t0{seconds(1'000'000)};
  CounterStore st;
  PortSample s;
  s.Set(Counter::kXmitWait, 10, true);
  s.Set(Counter::kXmitData, 1000, true);
  s.Set(Counter::kSymbolError, 7, true);
  st.Update(kPort, s, t0, &limits);
  st.Commit();
  struct Case {
    Counter counter;
    std::uint64_t rise;  // over 1 s
    std::optional<Implausible> want;
  };
  // A rejection never follows another (the second in a row re-bases:
  // TwoRejectionsInARowRebaseThePort).
  const Case cases[] = {
      {Counter::kXmitWait, 11'000'000'000, std::nullopt},  // 3 s at a count a byte: 12e9
      {Counter::kXmitWait, 13'000'000'000, Implausible::kXmitWait},
      {Counter::kXmitData, 2'900'000'000, std::nullopt},  // words: 11.6 GB of 12
      {Counter::kXmitWait, std::uint64_t{1} << 56, Implausible::kXmitWait},
      {Counter::kSymbolError, 110'000'000'000, std::nullopt},
      {Counter::kXmitData, 3'100'000'000, Implausible::kData},
      {Counter::kSymbolError, 1, std::nullopt},
      {Counter::kSymbolError, 130'000'000'000, Implausible::kErrors},
  };

  auto now = t0;
  for (const Case& c : cases) {
    const PortTotals before = st.ports().at(kPort);
    PortSample next = s;
    next.value[Index(c.counter)] = before.LastRaw(Index(c.counter)) + c.rise;
    now += seconds(1);
    const Folded f = st.Update(kPort, next, now, &limits);
    EXPECT_EQ(f.rejected, c.want) << CounterSpecs()[Index(c.counter)].metric << " +" << c.rise;
    const PortTotals& after = st.ports().at(kPort);
    if (c.want) {
      EXPECT_EQ(after.Total(Index(c.counter)), before.Total(Index(c.counter)));
      EXPECT_EQ(after.last_update, before.last_update) << "the time goes on from the last good reading";
      now -= seconds(1);  // so the next case is over 1 s again
    } else {
      EXPECT_EQ(after.Total(Index(c.counter)), before.Total(Index(c.counter)) + c.rise);
      s = next;
    }
  }
  EXPECT_FALSE(st.Update(kPort, s, now, nullptr).rejected) << "no limits: not judged";
}

// The last reading is kept as its distance below the total (none until a
// clear or a wrap): each counter's apart, exact, and a copy taken before
// keeps its own.
TEST(CounterStoreTest, TheLastReadingIsKeptPerCounterAcrossClears) {
  CounterStore st;
  PortSample both = One(Counter::kRcvErrors, 65535);
  both.Set(Counter::kSymbolError, 40, false);
  Read(st, kPort, both);
  const auto before = st.Share();
  both.value[Index(Counter::kRcvErrors)] = 5;  // cleared out of band, 5 new (held: the next reading tells)
  both.value[Index(Counter::kSymbolError)] = 41;
  Read(st, kPort, both);
  both.value[Index(Counter::kRcvErrors)] = 6;
  Read(st, kPort, both);
  const PortTotals& t = st.ports().at(kPort);
  EXPECT_EQ(t.LastRaw(Index(Counter::kRcvErrors)), 6u);
  EXPECT_EQ(t.LastRaw(Index(Counter::kSymbolError)), 41u);
  EXPECT_EQ(t.Total(Index(Counter::kRcvErrors)), 65541u);
  EXPECT_FALSE(t.Pinned(Index(Counter::kRcvErrors)));
  EXPECT_EQ(before->at(kPort).LastRaw(Index(Counter::kRcvErrors)), 65535u);
  EXPECT_TRUE(before->at(kPort).Pinned(Index(Counter::kRcvErrors)));
  both.value[Index(Counter::kRcvErrors)] = 9;
  Read(st, kPort, both);
  EXPECT_EQ(st.ports().at(kPort).Total(Index(Counter::kRcvErrors)), 65544u);
  EXPECT_EQ(st.ports().at(kPort).LastRaw(Index(Counter::kRcvErrors)), 9u);
  EXPECT_EQ(st.ports().at(kPort).LastRaw(Index(Counter::kSymbolError)), 41u);
}

TEST(CounterStoreTest, DataCountersGoingBackwardsAreAResetOursAreNot) {
  CounterStore st;
  Read(st, kPort, One(Counter::kRcvData, 1'000'000, 64));
  Read(st, kPort, One(Counter::kRcvErrors, 9));  // an error counter cleared: not a restart
  Read(st, kPort, One(Counter::kRcvErrors, 3));
  EXPECT_EQ(st.ports().at(kPort).resets, 0u);
  Read(st, kPort, One(Counter::kRcvData, 500, 64));  // the port's counters restarted (a reboot)
  EXPECT_EQ(st.ports().at(kPort).resets, 1u);
  EXPECT_EQ(Total(st, Counter::kRcvData), 1'000'500u) << "the total still never goes back";
  st.NoteCleared(kPort, std::bitset<kCounterCount>().set(Index(Counter::kRcvData)));
  Read(st, kPort, One(Counter::kRcvData, 20, 64));  // our own clear
  EXPECT_EQ(st.ports().at(kPort).resets, 1u);
}

TEST(CounterStoreTest, AChangeOfSourceWidthRebases) {
  CounterStore st;
  Read(st, kPort, One(Counter::kXmitData, 1000, 64));
  Read(st, kPort, One(Counter::kXmitData, 50, 32));  // other field: add nothing
  Read(st, kPort, One(Counter::kXmitData, 80, 32));
  EXPECT_EQ(Total(st, Counter::kXmitData), 1030u);
}

TEST(CounterStoreTest, AbsentCountersStayAbsentAndStaleIsKept) {
  CounterStore st;
  Read(st, kPort, One(Counter::kRcvErrors, 3));
  EXPECT_FALSE(st.ports().at(kPort).present.test(Index(Counter::kSymbolError)));
  st.MarkStale(kPort);
  EXPECT_TRUE(st.ports().at(kPort).stale);
  EXPECT_EQ(Total(st, Counter::kRcvErrors), 3u);
  Read(st, kPort, One(Counter::kRcvErrors, 4));
  EXPECT_FALSE(st.ports().at(kPort).stale);
  st.MarkStale({0x99, 1});  // unknown port: nothing happens
  EXPECT_EQ(st.ports().size(), 1u);
}

TEST(CounterStoreTest, PortsReadForTheFirstTimeJoinAtCommitInOrder) {
  CounterStore st;
  // A sweep reads switches, then HCAs: not in port order.
  const topology::PortRef ports[] = {{0x50, 2}, {0x50, 1}, {0x90, 1}, {0x10, 7}, {0x60, 1}};
  std::uint64_t n = 0;
  for (const auto& p : ports) {
    const PortTotals& t = *st.Update(p, One(Counter::kRcvErrors, ++n), {}).totals;
    EXPECT_EQ(t.Total(Index(Counter::kRcvErrors)), n);  // the totals after the reading, before Commit
  }
  EXPECT_TRUE(st.ports().empty());
  st.Commit();
  ASSERT_EQ(st.ports().size(), 5u);
  std::vector<topology::PortRef> order;
  for (const auto& [ref, t] : st.ports()) order.push_back(ref);
  EXPECT_EQ(order, (std::vector<topology::PortRef>{{0x10, 7}, {0x50, 1}, {0x50, 2}, {0x60, 1}, {0x90, 1}}));
  EXPECT_EQ(st.ports().at({0x90, 1}).Total(Index(Counter::kRcvErrors)), 3u);
  // One more, between two: in its place; the others keep their totals.
  st.Update({0x55, 1}, One(Counter::kRcvErrors, 40), {});
  st.Update({0x50, 1}, One(Counter::kRcvErrors, 12), {});
  st.Commit();
  EXPECT_EQ(std::next(st.ports().begin(), 3)->first, (topology::PortRef{0x55, 1}));
  EXPECT_EQ(st.ports().at({0x50, 1}).Total(Index(Counter::kRcvErrors)), 12u);
  EXPECT_EQ(st.ports().count({0x51, 1}), 0u);
  EXPECT_THROW(st.ports().at({0x51, 1}), std::out_of_range);
}

TEST(CounterStoreTest, WhatWasSharedNeverChangesAndIsCopiedOnlyOnce) {
  CounterStore st;
  Read(st, kPort, One(Counter::kRcvErrors, 3));
  const auto published = st.Share();
  EXPECT_EQ(published.get(), st.Share().get());  // shared, not copied
  Read(st, kPort, One(Counter::kRcvErrors, 10));
  st.MarkStale(kPort);
  st.NoteCleared(kPort, std::bitset<kCounterCount>().set(Index(Counter::kRcvErrors)));
  // The published table is as it was; the store moved on.
  EXPECT_EQ(published->at(kPort).Total(Index(Counter::kRcvErrors)), 3u);
  EXPECT_FALSE(published->at(kPort).stale);
  EXPECT_EQ(published->at(kPort).LastRaw(Index(Counter::kRcvErrors)), 3u);
  EXPECT_EQ(Total(st, Counter::kRcvErrors), 10u);
  EXPECT_TRUE(st.ports().at(kPort).stale);
  EXPECT_EQ(st.ports().at(kPort).LastRaw(Index(Counter::kRcvErrors)), 0u);
  // One copy at the first change, then changed in place.
  const PortTable* after = &st.ports();
  Read(st, kPort, One(Counter::kRcvErrors, 11));
  EXPECT_EQ(&st.ports(), after);
  EXPECT_NE(&st.ports(), published.get());
}

// PortVLXmitWaitCounters totals: the first reading is the total, then the
// differences; a lower reading (cleared elsewhere) is all new counts.
// The details' totals (PortRcvErrorDetails, PortXmitDiscardDetails) are
// held apart, only by ports that read them, and a copy that shares them
// keeps its own when the original changes.
TEST(CounterStoreTest, DetailsHeldOnlyWhereReadAndCopiedBeforeAChange) {
  PortTotals t;
  t.SetTotal(Index(Counter::kLoopingErrors), 0);
  EXPECT_EQ(t.Total(Index(Counter::kLoopingErrors)), 0u);
  t.SetTotal(Index(Counter::kLoopingErrors), 7);
  t.SetTotal(Index(Counter::kSwitchHoqLifetimeLimitDiscards), 9);
  t.SetTotal(Index(Counter::kMulticastRcvPkts), 11);  // the last of the main counters
  const PortTotals copy = t;
  t.SetTotal(Index(Counter::kLoopingErrors), 8);
  EXPECT_EQ(t.Total(Index(Counter::kLoopingErrors)), 8u);
  EXPECT_EQ(copy.Total(Index(Counter::kLoopingErrors)), 7u) << "the copy keeps its own";
  EXPECT_EQ(copy.Total(Index(Counter::kSwitchHoqLifetimeLimitDiscards)), 9u);
  EXPECT_EQ(t.Total(Index(Counter::kMulticastRcvPkts)), 11u);
  EXPECT_LT(sizeof(PortTotals), 256u) << "the 32 totals are not all held in place";

  CounterStore st;
  Read(st, kPort, One(Counter::kDlidMappingErrors, 3));
  const auto published = st.Share();
  Read(st, kPort, One(Counter::kDlidMappingErrors, 5));
  EXPECT_EQ(published->at(kPort).Total(Index(Counter::kDlidMappingErrors)), 3u);
  EXPECT_EQ(Total(st, Counter::kDlidMappingErrors), 5u);
}

TEST(VlWaitTotalsTest, FirstReadingThenDifferencesAndClears) {
  VlWaitTotals t;
  std::array<std::uint16_t, transport::kVlCount> raw{};
  raw[0] = 100;
  raw[3] = 0xffff;
  t.Add(raw);
  EXPECT_EQ(t.total[0], 100u);
  EXPECT_EQ(t.total[3], 0xffffu);
  raw[0] = 250;
  t.Add(raw);
  EXPECT_EQ(t.total[0], 250u);
  EXPECT_EQ(t.total[3], 0xffffu) << "pinned: nothing seen move";
  raw[0] = 40;  // cleared, then 40 more
  raw[3] = 5;
  t.Add(raw);
  EXPECT_EQ(t.total[0], 290u);
  EXPECT_EQ(t.total[3], 0xffffu + 5);
  EXPECT_EQ(t.total[1], 0u);
}

}  // namespace
}  // namespace ibfabric::collectors
