// Several fabrics in one exporter: which local ports are read
// (transport::ChooseFabrics) and how their expositions become one
// (exporter/fabric_set.h MergeExpositions).

#include "exporter/fabric_set.h"

#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "exporter/gzip.h"
#include "transport/umad_port.h"

namespace ibfabric::exporter {
namespace {

using transport::UmadDevicePort;

constexpr std::uint64_t kA = 0xfe80000000000001, kB = 0xfe80000000000002;

TEST(ChooseFabricsTest, OneActivePortPerFabric) {
  // mlx5_0 and mlx5_2 on fabric A (one SM), mlx5_1 on B, mlx5_3 down.
  const std::vector<UmadDevicePort> all{{"mlx5_0", 1, 4, 0x10, false, kA, 1},
                                        {"mlx5_1", 1, 4, 0x20, false, kB, 1},
                                        {"mlx5_2", 1, 4, 0x30, false, kA, 1},
                                        {"mlx5_3", 1, 1, 0x40, false, kB, 1}};
  std::vector<std::string> notes;
  const auto chosen = transport::ChooseFabrics(all, &notes);
  ASSERT_EQ(chosen.size(), 2u);
  EXPECT_EQ(chosen[0].gsi.ca, "mlx5_0");
  EXPECT_EQ(chosen[1].gsi.ca, "mlx5_1");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0],
            "mlx5_2 port 1 is taken for the fabric of mlx5_0 port 1 (the same subnet prefix 0xfe80000000000001 and "
            "SM LID 1), read once, from there; if it is another fabric, give its SM another subnet_prefix or read it "
            "with --ib.ca=mlx5_2 --ib.port=1");
}

TEST(ChooseFabricsTest, TheOtherPortsOfAFabricAreTheOnesNotRead) {
  // mlx5_0..2 on fabric A, mlx5_1's SMI sub-device beside it (its port GUID),
  // mlx5_3 down, mlx5_4 RoCE, mlx5_5 on B.
  std::vector<UmadDevicePort> all{{"mlx5_0", 1, 4, 0x10, false, kA, 1}, {"mlx5_1", 1, 4, 0x20, true, kA, 1},
                                  {"smi_1", 1, 4, 0x20, false, kA, 1},  {"mlx5_2", 1, 4, 0x30, false, kA, 1},
                                  {"mlx5_3", 1, 1, 0x40, false, kA, 1}, {"mlx5_4", 1, 4, 0x50, false, kA, 0},
                                  {"mlx5_5", 1, 4, 0x60, false, kB, 1}};
  all[5].infiniband = false;
  // mlx5_6 on A's prefix behind another SM; mlx5_7 and smi_7 planes of a
  // multi-plane HCA (its SMI sub-device has a port per plane).
  all.push_back({"mlx5_6", 1, 4, 0x70, false, kA, 9});
  all.push_back({"mlx5_7", 1, 4, 0x80, true, kA, 1});
  all.push_back({"smi_7", 1, 4, 0x80, false, kA, 1});
  all.push_back({"smi_7", 2, 4, 0x80, false, kA, 1});
  const auto names = [&](const std::vector<std::string>& read, std::uint64_t prefix) {
    std::vector<std::string> out;
    for (const auto& p : transport::OtherPortsOnFabric(all, read, prefix, 1))
      out.push_back(p.ca + "/" + std::to_string(p.port));
    return out;
  };
  EXPECT_EQ(names({"mlx5_0/1", "mlx5_0/1"}, kA), (std::vector<std::string>{"mlx5_1/1", "mlx5_2/1", "mlx5_3/1"}))
      << "each port once, the parent named; a port down too";
  EXPECT_EQ(names({"mlx5_1/1", "smi_1/1"}, kA), (std::vector<std::string>{"mlx5_0/1", "mlx5_2/1", "mlx5_3/1"}));
  EXPECT_EQ(names({"mlx5_0/1", "smi_1/1", "mlx5_2/1", "mlx5_3/1"}, kA), std::vector<std::string>{})
      << "a sub-device read reads its parent's port";
  EXPECT_EQ(names({"mlx5_5/1"}, kB), std::vector<std::string>{});
}

TEST(ChooseFabricsTest, AnotherSmWithTheSamePrefixIsLeftOutAndSaysWhy) {
  const std::vector<UmadDevicePort> all{{"mlx5_0", 1, 4, 0x10, false, kA, 1}, {"mlx5_1", 1, 4, 0x20, false, kA, 9}};
  std::vector<std::string> notes;
  const auto chosen = transport::ChooseFabrics(all, &notes);
  ASSERT_EQ(chosen.size(), 1u);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("mlx5_1 port 1 is on another fabric (SM LID 9) than mlx5_0 port 1 (SM LID 1)"),
            std::string::npos)
      << notes[0];
  EXPECT_NE(notes[0].find("--ib.ca=mlx5_1 --ib.port=1"), std::string::npos) << notes[0];
}

TEST(ChooseFabricsTest, ARoCEPortIsNoFabric) {
  std::vector<UmadDevicePort> all{{"mlx5_0", 1, 4, 0x10, false, kA, 0}, {"mlx5_1", 1, 4, 0x20, false, kB, 1}};
  all[0].infiniband = false;  // Ethernet link layer: active, SM LID 0, prefix fe80::
  std::vector<std::string> notes;
  const auto chosen = transport::ChooseFabrics(all, &notes);
  ASSERT_EQ(chosen.size(), 1u);
  EXPECT_EQ(chosen[0].gsi.ca, "mlx5_1");
  EXPECT_TRUE(notes.empty());
}

TEST(ChooseFabricsTest, AnSmiSubDeviceIsReadWithItsParent) {
  const std::vector<UmadDevicePort> all{{"mlx5_0", 1, 4, 0x10, true, kA, 1}, {"smi0", 1, 4, 0x10, false, kA, 1}};
  std::vector<std::string> notes;
  const auto chosen = transport::ChooseFabrics(all, &notes);
  ASSERT_EQ(chosen.size(), 1u);
  EXPECT_EQ(chosen[0].gsi.ca, "mlx5_0");
  EXPECT_EQ(chosen[0].smi.ca, "smi0");
  EXPECT_TRUE(notes.empty());
  EXPECT_TRUE(transport::ChooseFabrics({{"mlx5_0", 1, 2, 0x10, false, kA, 0}}, &notes).empty());
}

// A multi-plane HCA: each plane a fabric of its own, though the planes
// share the parent's subnet prefix and SM LID; another fabric beside it.
TEST(ChooseFabricsTest, EachPlaneOfAMultiPlaneHcaIsAFabric) {
  const std::vector<UmadDevicePort> all{{"mlx5_0", 1, 4, 0x10, true, kA, 1},
                                        {"smi0", 1, 4, 0x10, false, kA, 1},
                                        {"smi0", 2, 4, 0x10, false, kA, 1},
                                        {"mlx5_1", 1, 4, 0x20, false, kB, 1}};
  std::vector<std::string> notes;
  const auto chosen = transport::ChooseFabrics(all, &notes);
  ASSERT_EQ(chosen.size(), 3u);
  EXPECT_EQ(chosen[0].plane, 1);
  EXPECT_EQ(chosen[0].smi.port, 1);
  EXPECT_EQ(chosen[1].plane, 2);
  EXPECT_EQ(chosen[1].smi.port, 2);
  EXPECT_EQ(chosen[1].gsi.ca, "mlx5_0");
  EXPECT_EQ(chosen[2].gsi.ca, "mlx5_1");
  EXPECT_EQ(chosen[2].plane, 0);
  EXPECT_TRUE(notes.empty());
}

// Two multi-plane HCAs of one host on the same planes: each plane read
// once, from the first HCA, the second's said.
TEST(ChooseFabricsTest, TwoMultiPlaneHcasOnTheSamePlanesReadEachPlaneOnce) {
  const std::vector<UmadDevicePort> all{{"mlx5_0", 1, 4, 0x10, true, kA, 1}, {"smi0", 1, 4, 0x10, false, kA, 1},
                                        {"smi0", 2, 4, 0x10, false, kA, 1},  {"mlx5_1", 1, 4, 0x20, true, kA, 1},
                                        {"smi1", 1, 4, 0x20, false, kA, 1},  {"smi1", 2, 4, 0x20, false, kA, 1}};
  std::vector<std::string> notes;
  const auto chosen = transport::ChooseFabrics(all, &notes);
  ASSERT_EQ(chosen.size(), 2u);
  EXPECT_EQ(chosen[0].smi.ca, "smi0");
  EXPECT_EQ(chosen[1].smi.ca, "smi0");
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0],
            "plane 1 of mlx5_1 (smi1 port 1) is taken for plane 1 of mlx5_0 (the same subnet prefix), read once, "
            "from there");
}

TEST(MergeExpositionsTest, EachFamilyOnceWithEveryPartsSeries) {
  const std::string a =
      "# HELP up Up\n# TYPE up gauge\nup{subnet_prefix=\"a\"} 1\n"
      "# HELP only_a Only in a\n# TYPE only_a counter\nonly_a_total{subnet_prefix=\"a\"} 3\n"
      "# HELP h A histogram\n# TYPE h histogram\nh_bucket{subnet_prefix=\"a\",le=\"+Inf\"} "
      "1\nh_sum{subnet_prefix=\"a\"} "
      "2\nh_count{subnet_prefix=\"a\"} 1\n";
  const std::string b =
      "# HELP up Up\n# TYPE up gauge\nup{subnet_prefix=\"b\"} 0\n"
      "# TYPE no_help gauge\nno_help{subnet_prefix=\"b\"} 5\n"
      "# HELP h A histogram\n# TYPE h histogram\nh_bucket{subnet_prefix=\"b\",le=\"+Inf\"} "
      "4\nh_sum{subnet_prefix=\"b\"} "
      "8\nh_count{subnet_prefix=\"b\"} 4\n";
  EXPECT_EQ(
      MergeExpositions({a, b}),
      "# HELP up Up\n# TYPE up gauge\nup{subnet_prefix=\"a\"} 1\nup{subnet_prefix=\"b\"} 0\n"
      "# HELP only_a Only in a\n# TYPE only_a counter\nonly_a_total{subnet_prefix=\"a\"} 3\n"
      "# TYPE no_help gauge\nno_help{subnet_prefix=\"b\"} 5\n"
      "# HELP h A histogram\n# TYPE h histogram\nh_bucket{subnet_prefix=\"a\",le=\"+Inf\"} 1\n"
      "h_sum{subnet_prefix=\"a\"} 2\nh_count{subnet_prefix=\"a\"} 1\n"
      "h_bucket{subnet_prefix=\"b\",le=\"+Inf\"} 4\nh_sum{subnet_prefix=\"b\"} 8\nh_count{subnet_prefix=\"b\"} 4\n");
  EXPECT_EQ(MergeExpositions({a}), a);
  EXPECT_EQ(MergeExpositions({a, ""}), a);
}

// Parts that disagree on the order (never the exporter's own) lose
// nothing: every series of every part, each family once.
TEST(MergeExpositionsTest, PartsInAnotherOrderLoseNothing) {
  const std::string a = "# TYPE x gauge\nx{p=\"a\"} 1\n# TYPE y gauge\ny{p=\"a\"} 2\n# TYPE z gauge\nz{p=\"a\"} 3";
  const std::string b = "# TYPE y gauge\ny{p=\"b\"} 4\n# TYPE x gauge\nx{p=\"b\"} 5\n# TYPE z gauge\nz{p=\"b\"} 6\n";
  EXPECT_EQ(MergeExpositions({a, b}),
            "# TYPE x gauge\nx{p=\"a\"} 1\nx{p=\"b\"} 5\n# TYPE y gauge\ny{p=\"a\"} 2\ny{p=\"b\"} 4\n"
            "# TYPE z gauge\nz{p=\"a\"} 3\nz{p=\"b\"} 6\n");
}

// The same through gzip, as FabricSet::Combine streams it; ready (sweeps)
// once every fabric has published.
TEST(MergeExpositionsTest, CombineStreamsTheMembersGzipExpositions) {
  std::vector<std::unique_ptr<SnapshotHolder>> holders;
  std::vector<FabricView> views;
  const std::vector<std::string> texts{
      "# HELP up Up\n# TYPE up gauge\nup{subnet_prefix=\"a\"} 1\n",
      "# HELP up Up\n# TYPE up gauge\nup{subnet_prefix=\"b\"} 0\n# TYPE x gauge\nx{subnet_prefix=\"b\"} 2\n"};
  for (std::size_t i = 0; i < texts.size(); ++i) {
    holders.push_back(std::make_unique<SnapshotHolder>());
    views.push_back({"p", "ca", 1, holders.back().get()});
  }
  FabricSet set(views);
  set.Combine();
  EXPECT_EQ(set.combined().Get(), nullptr);  // nothing published yet
  for (std::size_t i = 0; i < texts.size(); ++i) {
    auto s = std::make_shared<collectors::Snapshot>();
    s->sweeps = 3 + i;
    GzipWriter gz(Z_BEST_SPEED, 64);
    std::ostream out(&gz);
    out << texts[i];
    out.flush();
    s->exposition_gz = gz.Finish();
    holders[i]->Publish(std::move(s));
    set.Combine();
    EXPECT_EQ(set.combined().Get()->sweeps, i == 0 ? 0u : 3u);
  }
  EXPECT_EQ(Gunzip(set.combined().Get()->exposition_gz),
            "# HELP up Up\n# TYPE up gauge\nup{subnet_prefix=\"a\"} 1\nup{subnet_prefix=\"b\"} 0\n"
            "# TYPE x gauge\nx{subnet_prefix=\"b\"} 2\n");
}

}  // namespace
}  // namespace ibfabric::exporter
