// The publisher (exporter/publisher.h): a Snapshot's exposition rendered
// once into gzip, its size kept, and the Snapshot handed to the holder.
// The heap trimmer (exporter/heap_trim.h): once an interval, only with
// enough free, one thread at a time.

#include "exporter/publisher.h"

#include <gtest/gtest.h>

#include "collectors/metrics.h"
#include "exporter/gzip.h"
#include "exporter/heap_trim.h"
#include "tests/testbed/prom_text.h"

namespace ibfabric::exporter {
namespace {

std::shared_ptr<collectors::Snapshot> Swept(std::uint64_t sweeps) {
  auto s = std::make_shared<collectors::Snapshot>();
  topology::Node sw;
  sw.guid = 0xa1;
  sw.kind = topology::NodeKind::kSwitch;
  sw.description = "ib-leaf01";
  s->fabric = std::make_shared<topology::Fabric>(std::vector<topology::Node>{sw});
  s->sweeps = sweeps;
  return s;
}

TEST(PublisherTest, TheExpositionIsRenderedOnceIntoGzipAndTheSnapshotHandedOver) {
  SnapshotHolder holder;
  collectors::Logger log(collectors::LogLevel::kDebug);
  Publisher publisher(holder, log, "9.8.7");
  const auto first = Swept(3);
  const std::string text = collectors::RenderExposition(*first, "9.8.7");
  ::testing::internal::CaptureStderr();
  publisher.Publish(first);
  const std::string logged = ::testing::internal::GetCapturedStderr();
  const auto got = holder.Get();
  ASSERT_EQ(got, first) << "the very Snapshot, shared";
  EXPECT_EQ(Gunzip(got->exposition_gz), text);
  EXPECT_EQ(got->exposition_bytes, text.size());
  EXPECT_LT(got->exposition_gz.size(), text.size());
  const auto scrape = testbed::Scrape::Parse(Gunzip(got->exposition_gz));
  EXPECT_EQ(scrape.Value("infiniband_exporter_sweeps_total"), 3.0);
  EXPECT_EQ(scrape.Value("infiniband_exporter_build_info", {{"version", "9.8.7"}}), 1.0);
  EXPECT_NE(logged.find("published"), std::string::npos) << logged;
  EXPECT_NE(logged.find("exposition_bytes=" + std::to_string(text.size())), std::string::npos) << logged;

  publisher.Publish(Swept(4));
  EXPECT_EQ(testbed::Scrape::Parse(Gunzip(holder.Get()->exposition_gz)).Value("infiniband_exporter_sweeps_total"), 4.0);
  EXPECT_EQ(first->sweeps, 3u) << "what was published before is left as it was";
}

TEST(HeapTrimmerTest, TrimsOnceAnIntervalAndOnlyWithEnoughFree) {
  HeapTrimmer never(std::chrono::hours(1), std::size_t{1} << 40);
  EXPECT_LT(never.MaybeTrim(), 0) << "less free than asked for (a TiB)";

  HeapTrimmer trimmer(std::chrono::hours(1), 0);
  EXPECT_GE(trimmer.MaybeTrim(), 0) << "the first: due";
  EXPECT_LT(trimmer.MaybeTrim(), 0) << "again within the interval: a burst is one trim";

  HeapTrimmer often(std::chrono::milliseconds(0), 0);
  EXPECT_GE(often.MaybeTrim(), 0);
  EXPECT_GE(often.MaybeTrim(), 0) << "the interval over";
}

}  // namespace
}  // namespace ibfabric::exporter
