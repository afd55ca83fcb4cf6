#include "collectors/counter_store.h"

#include <gtest/gtest.h>

namespace ibfabric::collectors {
namespace {

PortSample One(Counter c, std::uint64_t v, std::uint8_t bits = 16) {
  PortSample s;
  s.value[Index(c)] = v;
  s.bits[Index(c)] = bits;
  s.present.set(Index(c));
  return s;
}

const topology::PortRef kPort{0x42, 7};

std::uint64_t Total(const CounterStore& st, Counter c) { return st.ports().at(kPort).total[Index(c)]; }

TEST(CounterStoreTest, FirstReadingIsTheTotalThenDeltasAdd) {
  CounterStore st;
  st.Update(kPort, One(Counter::kRcvErrors, 100), {});
  EXPECT_EQ(Total(st, Counter::kRcvErrors), 100u);
  st.Update(kPort, One(Counter::kRcvErrors, 130), {});
  EXPECT_EQ(Total(st, Counter::kRcvErrors), 130u);
}

TEST(CounterStoreTest, AClearNeverMakesTheTotalGoBack) {
  CounterStore st;
  st.Update(kPort, One(Counter::kRcvErrors, 65535), {});
  st.Update(kPort, One(Counter::kRcvErrors, 5), {});  // cleared out of band, 5 new
  EXPECT_EQ(Total(st, Counter::kRcvErrors), 65540u);
  st.Update(kPort, One(Counter::kRcvErrors, 12), {});
  EXPECT_EQ(Total(st, Counter::kRcvErrors), 65547u);
}

TEST(CounterStoreTest, DataCountersGoingBackwardsAreAResetOursAreNot) {
  CounterStore st;
  st.Update(kPort, One(Counter::kRcvData, 1'000'000, 64), {});
  st.Update(kPort, One(Counter::kRcvErrors, 9), {});  // an error counter cleared: not a restart
  st.Update(kPort, One(Counter::kRcvErrors, 3), {});
  EXPECT_EQ(st.ports().at(kPort).resets, 0u);
  st.Update(kPort, One(Counter::kRcvData, 500, 64), {});  // the port's counters restarted (a reboot)
  EXPECT_EQ(st.ports().at(kPort).resets, 1u);
  EXPECT_EQ(Total(st, Counter::kRcvData), 1'000'500u) << "the total still never goes back";
  st.NoteCleared(kPort, std::bitset<kCounterCount>().set(Index(Counter::kRcvData)));
  st.Update(kPort, One(Counter::kRcvData, 20, 64), {});  // our own clear
  EXPECT_EQ(st.ports().at(kPort).resets, 1u);
}

TEST(CounterStoreTest, AChangeOfSourceWidthRebases) {
  CounterStore st;
  st.Update(kPort, One(Counter::kXmitData, 1000, 64), {});
  st.Update(kPort, One(Counter::kXmitData, 50, 32), {});  // other field: add nothing
  st.Update(kPort, One(Counter::kXmitData, 80, 32), {});
  EXPECT_EQ(Total(st, Counter::kXmitData), 1030u);
}

TEST(CounterStoreTest, AbsentCountersStayAbsentAndStaleIsKept) {
  CounterStore st;
  st.Update(kPort, One(Counter::kRcvErrors, 3), {});
  EXPECT_FALSE(st.ports().at(kPort).present.test(Index(Counter::kSymbolError)));
  st.MarkStale(kPort);
  EXPECT_TRUE(st.ports().at(kPort).stale);
  EXPECT_EQ(Total(st, Counter::kRcvErrors), 3u);
  st.Update(kPort, One(Counter::kRcvErrors, 4), {});
  EXPECT_FALSE(st.ports().at(kPort).stale);
  st.MarkStale({0x99, 1});  // unknown port: nothing happens
  EXPECT_EQ(st.ports().size(), 1u);
}

TEST(CounterStoreTest, WhatWasSharedNeverChangesAndIsCopiedOnlyOnce) {
  CounterStore st;
  st.Update(kPort, One(Counter::kRcvErrors, 3), {});
  const auto published = st.Share();
  EXPECT_EQ(published.get(), st.Share().get());  // shared, not copied
  st.Update(kPort, One(Counter::kRcvErrors, 10), {});
  st.MarkStale(kPort);
  st.NoteCleared(kPort, std::bitset<kCounterCount>().set(Index(Counter::kRcvErrors)));
  // The published table is as it was; the store moved on.
  EXPECT_EQ(published->at(kPort).total[Index(Counter::kRcvErrors)], 3u);
  EXPECT_FALSE(published->at(kPort).stale);
  EXPECT_EQ(published->at(kPort).last_raw[Index(Counter::kRcvErrors)], 3u);
  EXPECT_EQ(Total(st, Counter::kRcvErrors), 10u);
  EXPECT_TRUE(st.ports().at(kPort).stale);
  EXPECT_EQ(st.ports().at(kPort).last_raw[Index(Counter::kRcvErrors)], 0u);
  // One copy at the first change, then changed in place.
  const PortTable* after = &st.ports();
  st.Update(kPort, One(Counter::kRcvErrors, 11), {});
  EXPECT_EQ(&st.ports(), after);
  EXPECT_NE(&st.ports(), published.get());
}

}  // namespace
}  // namespace ibfabric::collectors
