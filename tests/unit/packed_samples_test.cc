// A sweep's samples packed (collectors/reads/detail/packed_samples.h): what goes
// in comes out, counter by counter, across chunks, and nothing once let go.

#include "collectors/reads/detail/packed_samples.h"

#include <gtest/gtest.h>

namespace ibfabric::collectors {
namespace {

void ExpectSame(const PortSample& want, const PortSample& got) {
  EXPECT_EQ(got.present, want.present);
  EXPECT_EQ(got.wide, want.wide & want.present);
  for (std::size_t i = 0; i < kCounterCount; ++i) {
    if (want.present.test(i)) {
      EXPECT_EQ(got.value[i], want.value[i]) << CounterSpecs()[i].metric;
    }
  }
}

TEST(PackedSamplesTest, ValuesOfEveryWidthComeBack) {
  PortSample a;
  a.Set(Counter::kSymbolError, 0, false);
  a.Set(Counter::kLinkDowned, 127, false);  // the most one byte holds
  a.Set(Counter::kRcvErrors, 128, false);   // the least that takes two
  a.Set(Counter::kXmitData, ~0ULL, true);   // ten bytes
  a.Set(Counter::kRcvData, 1ULL << 63, true);
  a.Set(Counter::kSwitchHoqLifetimeLimitDiscards, 65535, false);  // the last counter
  PortSample b;                                                   // nothing present: only its masks
  PortSample c;
  c.Set(Counter::kXmitWait, 0xF0000000u, false);
  c.value[Index(Counter::kVl15Dropped)] = 99;  // not present: not kept
  c.wide.set(Index(Counter::kVl15Dropped));

  PackedSamples pack;
  const auto ha = pack.Add(a), hb = pack.Add(b), hc = pack.Add(c);
  EXPECT_EQ(hb - ha, 8u + 1 + 1 + 2 + 10 + 10 + 3) << "masks, then each present value's varint";
  ExpectSame(a, *pack.Get(ha));
  ExpectSame(b, *pack.Get(hb));
  ExpectSame(c, *pack.Get(hc));
  EXPECT_EQ(pack.Get(hc)->value[Index(Counter::kVl15Dropped)], 0u);
  EXPECT_FALSE(pack.Get(hc)->wide.test(Index(Counter::kVl15Dropped)));
  EXPECT_EQ(pack.Get(ha)->Bits(Index(Counter::kXmitData)), 64);
  EXPECT_EQ(pack.Get(ha)->Bits(Index(Counter::kLinkDowned)), 8);
  EXPECT_FALSE(pack.Get(PackedSamples::kNone));
}

TEST(PackedSamplesTest, ManySamplesAcrossChunksAndNoneOnceCleared) {
  // Samples of every counter at its widest (328 bytes): a chunk of 256 KiB
  // holds 799, so 5,000 take seven, none split between two.
  PackedSamples pack;
  std::vector<PackedSamples::Handle> handles;
  for (std::uint64_t n = 0; n < 5000; ++n) {
    PortSample s;
    for (std::size_t i = 0; i < kCounterCount; ++i) s.Set(static_cast<Counter>(i), ~0ULL - n - i, i % 2 == 0);
    handles.push_back(pack.Add(s));
  }
  EXPECT_EQ(pack.bytes(), 7u * 256 * 1024);
  for (std::uint64_t n = 0; n < handles.size(); n += 7) {
    const auto s = pack.Get(handles[n]);
    ASSERT_TRUE(s);
    for (std::size_t i = 0; i < kCounterCount; ++i) {
      ASSERT_EQ(s->value[i], ~0ULL - n - i) << n << " " << i;
      ASSERT_EQ(s->wide.test(i), i % 2 == 0);
    }
  }
  pack.Clear();
  EXPECT_EQ(pack.bytes(), 0u);
  EXPECT_FALSE(pack.Get(handles.front()));
  EXPECT_FALSE(pack.Get(handles.back()));
}

}  // namespace
}  // namespace ibfabric::collectors
