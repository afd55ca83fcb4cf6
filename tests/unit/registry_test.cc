// The collector framework's checks (collectors/registry.h, snapshot.h):
// the registry's run order against what each collector reads, and the
// parts a collector publishes under its name.

#include "collectors/registry.h"

#include <gtest/gtest.h>

#include "collectors/framework/snapshot.h"

namespace ibfabric::collectors {
namespace {

TEST(RegistryTest, EveryCollectorRunsAfterThoseWhosePartsItReads) {
  std::string error;
  EXPECT_TRUE(CheckRunOrder(Registry(), &error)) << error;
  // What the shipped collectors read of this cycle, as their Updates do.
  EXPECT_EQ(FindCollector("link_health")->reads,
            (std::vector<std::string_view>{"port_counters", "fat_tree", "adaptive_routing", "routing", "xmit_wait_tick",
                                           "fec"}));
  EXPECT_EQ(FindCollector("port_counters")->reads, (std::vector<std::string_view>{"capabilities"}));
  EXPECT_EQ(FindCollector("fec")->reads, (std::vector<std::string_view>{"capabilities"}));
  EXPECT_EQ(FindCollector("routing")->reads, (std::vector<std::string_view>{"fat_tree", "adaptive_routing"}));
}

TEST(RegistryTest, AWrongOrderOrAnUnknownReadIsNamed) {
  const auto info = [](std::string_view name, std::vector<std::string_view> reads) {
    CollectorInfo c;
    c.name = name;
    c.reads = std::move(reads);
    return c;
  };
  std::string error;
  EXPECT_FALSE(CheckRunOrder({info("a", {"b"}), info("b", {})}, &error));
  EXPECT_EQ(error, "collector a reads b, which runs after it");
  EXPECT_FALSE(CheckRunOrder({info("a", {}), info("b", {"b"})}, &error));
  EXPECT_EQ(error, "collector b reads b, which runs after it");
  EXPECT_FALSE(CheckRunOrder({info("a", {}), info("b", {"c"})}, &error));
  EXPECT_EQ(error, "collector b reads c, which is no collector");
  EXPECT_TRUE(CheckRunOrder({info("a", {}), info("b", {"a"}), info("c", {"a", "b"})}, &error)) << error;
}

TEST(CollectorPartsTest, APartIsFoundByItsCollectorAndItsTypeOnly) {
  struct Mine {
    int value = 0;
  };
  struct Other {};
  CollectorParts parts;
  EXPECT_EQ(parts.Get<Mine>("mine"), nullptr) << "nothing published yet";
  parts.Set("mine", std::make_shared<const Mine>(Mine{7}));
  ASSERT_NE(parts.Get<Mine>("mine"), nullptr);
  EXPECT_EQ(parts.Get<Mine>("mine")->value, 7);
  EXPECT_EQ(parts.Get<Other>("mine"), nullptr) << "another type than published";
  EXPECT_EQ(parts.Get<Mine>("yours"), nullptr);
  // A copy (the Snapshot published) shares the part; a later Set replaces
  // it in the publisher's copy only.
  const CollectorParts published = parts;
  parts.Set("mine", std::make_shared<const Mine>(Mine{8}));
  EXPECT_EQ(published.Get<Mine>("mine")->value, 7);
  EXPECT_EQ(parts.Get<Mine>("mine")->value, 8);
  parts.Set("mine", std::shared_ptr<const Mine>());
  EXPECT_EQ(parts.Get<Mine>("mine"), nullptr) << "a null part is none";
}

}  // namespace
}  // namespace ibfabric::collectors
