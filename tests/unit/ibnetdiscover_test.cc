// ibnetdiscover output read as operators save it (topology/ibnetdiscover.h),
// and the real captures in tests/real-fabrics read whole.

#include "topology/ibnetdiscover.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "topology/findings.h"
#include "topology/link_rate.h"
#include "topology/plan.h"

namespace ibfabric::topology {
namespace {

// From ibnetdiscover(8)'s example (tests/real-fabrics/jabl-ibtopotool-1-*),
// cut to one switch, one CA and their cables.
constexpr char kSample[] = R"(#
# Topology file: generated on Tue Jun  5 14:15:10 2007
#
vendid=0x8f1
devid=0x5a06
sysimgguid=0x5442ba00003000
switchguid=0x5442ba00003080(5442ba00003080)
Switch  24 "S-005442ba00003080"         # "ISR9024 Voltaire" base port 0 lid 6 lmc 0
[8]     "H-0008f10403960558"[2](8f1040396055a)         # "MT23108 InfiniHost Mellanox Technologies" lid 14 4xSDR
[12]    "H-0008f10403960558"[1](8f10403960559)         # "MT23108 InfiniHost Mellanox Technologies" lid 10 1xSDR

vendid=0x2c9
devid=0x5a44
caguid=0x8f10403960558
Ca      2 "H-0008f10403960558"          # "MT23108 InfiniHost Mellanox Technologies"
[2](8f1040396055a)     "S-005442ba00003080"[8]         # lid 14 lmc 1 "ISR9024 Voltaire" lid 6 4xSDR
[1](8f10403960559)     "S-005442ba00003080"[12]                # lid 10 lmc 1 "ISR9024 Voltaire" lid 6 1xSDR
)";

TEST(IbnetdiscoverTest, EveryFieldOfTheSample) {
  NetFile file;
  std::string error;
  ASSERT_TRUE(ParseNetFile(kSample, &file, &error)) << error;
  EXPECT_TRUE(file.skipped.empty());
  ASSERT_EQ(file.nodes.size(), 2u);
  const NetNode& sw = file.nodes[0];
  EXPECT_EQ(sw.kind, NodeKind::kSwitch);
  EXPECT_EQ(sw.ports, 24);
  EXPECT_EQ(sw.guid, 0x005442ba00003080u);
  EXPECT_EQ(sw.description, "ISR9024 Voltaire");
  EXPECT_EQ(sw.lid, 6);
  EXPECT_EQ(sw.vendor_id, 0x8f1u);
  EXPECT_EQ(sw.device_id, 0x5a06);
  EXPECT_EQ(sw.system_image_guid, 0x5442ba00003000u);
  EXPECT_EQ(sw.line, 8);
  ASSERT_EQ(sw.links.size(), 2u);
  EXPECT_EQ(sw.links[1].port, 12);
  EXPECT_EQ(sw.links[1].peer_id, "H-0008f10403960558");
  EXPECT_EQ(sw.links[1].peer_port, 1);
  EXPECT_EQ(sw.links[1].peer_guid, 0x8f10403960559u);
  EXPECT_EQ(sw.links[1].peer_lid, 10);
  EXPECT_EQ(sw.links[1].rate, "1xSDR");
  const NetNode& ca = file.nodes[1];
  EXPECT_EQ(ca.kind, NodeKind::kCa);
  EXPECT_EQ(ca.system_image_guid, 0u) << "not carried over from the switch's lines";
  ASSERT_EQ(ca.links.size(), 2u);
  EXPECT_EQ(ca.links[0].guid, 0x8f1040396055au);
  EXPECT_EQ(ca.links[0].lid, 14);
  EXPECT_EQ(ca.links[0].peer_lid, 6);
  EXPECT_EQ(ca.links[0].peer_description, "ISR9024 Voltaire");

  Fabric f;
  std::vector<std::string> notes;
  ASSERT_TRUE(FabricFromNetFile(file, &f, &notes, &error)) << error;
  EXPECT_TRUE(notes.empty());
  ASSERT_EQ(f.switch_count(), 1u);
  const Node* hca = f.FindNode(0x0008f10403960558u);
  ASSERT_NE(hca, nullptr);
  EXPECT_EQ(hca->lid, 10) << "its first port's";
  const Port* p1 = hca->FindPort(1);
  ASSERT_NE(p1, nullptr);
  EXPECT_EQ(p1->guid, 0x8f10403960559u);
  EXPECT_EQ(p1->remote, (PortRef{0x005442ba00003080u, 12}));
  EXPECT_EQ(RateString(*p1), "1xSDR");
  const Port* s8 = f.FindPort({0x005442ba00003080u, 8});
  ASSERT_NE(s8, nullptr);
  EXPECT_EQ(s8->lid, 6);
  EXPECT_EQ(RateString(*s8), "4xSDR");
  EXPECT_EQ(s8->remote, (PortRef{0x0008f10403960558u, 2}));
}

// What published captures hold besides the topology: a terminal log's
// banner and prompt, carriage returns, tabs lost, ibnetdiscover's own error
// line, unassigned LIDs, ibdiagnet's port labels.
TEST(IbnetdiscoverTest, CapturesAsSavedAreReadAndWhatIsSkippedIsSaid) {
  const std::string text =
      "=~=~=~=~= PuTTY log 2021.06.15 12:06:05 =~=~=~=~=\r\n"
      "src/query_smp.c:195; umad (DR path slid 0; dlid 0; 0,1,1,31 Attr 0x11:0) bad status 110\r\n"
      "switchguid=0xc42a10300a9b026(c42a10300a9b026)\r\n"
      "Switch41 \"S-0c42a10300a9b026\"# \"MF0;sat11-ib0:MQM8700/U1\" enhanced port 0 lid 3894 lmc 0\r\n"
      "[1]\"H-1c34da03005503dc\"[1](1c34da03005503dc) # \"SAT111 ibp11s0f0\" lid 65535 4xHDR\r\n"
      "[21](1/11/1)\"S-0c42a103008b5558\"[20]# \"MF0;sat11-A:MCS8500/L16/U2\" lid 175 4xHDR\r\n"
      "\r\n"
      "Switch 41 \"S-0c42a103008b5558\" # \"MF0;sat11-A:MCS8500/L16/U2\" base port 0 lid 175 lmc 0\r\n"
      "[20] \"S-0c42a10300a9b026\"[21] # \"MF0;sat11-ib0:MQM8700/U1\" lid 3894 4xHDR\r\n"
      "Ca 1 \"H-1c34da03005503dc\" # \"SAT111 ibp11s0f0\"\r\n"
      "[1](1)(1c34da03005503dc) \"S-0c42a10300a9b026\"[1] # lid 65535 lmc 0 \"MF0;sat11-ib0:MQM8700/U1\" lid 3894 "
      "4xHDR\r\n"
      "sat11-0101-0902-02ufm [ mgmt-ha-active ] (config) # ";
  NetFile file;
  std::string error;
  ASSERT_TRUE(ParseNetFile(text, &file, &error)) << error;
  ASSERT_EQ(file.skipped.size(), 3u);
  EXPECT_EQ(file.skipped[0],
            "line 1: neither a node nor a port line: '=~=~=~=~= PuTTY log 2021.06.15 12:06:05 =~=~=~=~='");
  EXPECT_EQ(file.skipped[1].rfind("line 2: neither a node nor a port line: 'src/query_smp.c:195; umad", 0), 0u)
      << file.skipped[1];
  EXPECT_EQ(file.skipped[2],
            "line 12: neither a node nor a port line: 'sat11-0101-0902-02ufm [ mgmt-ha-active ] (config) #'");
  ASSERT_EQ(file.nodes.size(), 3u);
  EXPECT_EQ(file.nodes[0].ports, 41) << "Switch41: the tab lost";
  EXPECT_EQ(file.nodes[0].lid, 3894);
  EXPECT_EQ(file.nodes[0].links[0].peer_lid, 0) << "65535 is no LID";
  EXPECT_EQ(file.nodes[0].links[1].label, "1/11/1");
  EXPECT_FALSE(file.nodes[0].links[1].guid) << "a switch port's parentheses are a label";
  EXPECT_EQ(file.nodes[2].links[0].label, "1");
  EXPECT_EQ(file.nodes[2].links[0].guid, 0x1c34da03005503dcu);
  EXPECT_EQ(file.nodes[2].links[0].lid, 0);
  EXPECT_EQ(file.nodes[2].links[0].rate, "4xHDR");
  Fabric f;
  std::vector<std::string> notes;
  ASSERT_TRUE(FabricFromNetFile(file, &f, &notes, &error)) << error;
  EXPECT_TRUE(notes.empty()) << notes.front();
  const Port* up = f.FindPort({0x0c42a10300a9b026u, 21});
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->remote, (PortRef{0x0c42a103008b5558u, 20}));
  EXPECT_EQ(RateString(*up), "4xHDR");
}

TEST(IbnetdiscoverTest, HalfACableIsKeptAndSaid) {
  const std::string text =
      "Switch 8 \"S-0000000000000001\" # \"a\"\n"
      "[1] \"S-0000000000000002\"[3] # \"b\" lid 2 4xQDR\n"
      "[2] \"S-0000000000000009\"[1] # \"gone\" lid 9 4xQDR\n"
      "Switch 8 \"S-0000000000000002\" # \"b\"\n";
  NetFile file;
  Fabric f;
  std::vector<std::string> notes;
  std::string error;
  ASSERT_TRUE(ParseNetFile(text, &file, &error)) << error;
  ASSERT_TRUE(FabricFromNetFile(file, &f, &notes, &error)) << error;
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0],
            "line 3: a[2] names a node the file does not list (\"S-0000000000000009\"): its cable is left out");
  EXPECT_EQ(notes[1], "line 2: b[3] is not listed under its own node: taken from a[1]'s line");
  const Port* b3 = f.FindPort({2, 3});
  ASSERT_NE(b3, nullptr);
  EXPECT_EQ(b3->remote, (PortRef{1, 1}));
  EXPECT_EQ(RateString(*b3), "4xQDR");
  const Port* a2 = f.FindPort({1, 2});
  ASSERT_NE(a2, nullptr);
  EXPECT_FALSE(a2->remote);
}

TEST(IbnetdiscoverTest, ErrorsNameTheLine) {
  const std::vector<std::pair<std::string, std::string>> parse{
      {"[1] \"a\"[2]\n", "line 1: a port line before any node line"},
      {"Switch 8 \"a\"\n[300] \"b\"[2]\n", "line 2: port numbers must be 0..254"},
      {"Switch 300 \"a\"\n", "line 1: a node of 300 ports (at most 254)"},
      {"hello\n", "no node line (Switch, Ca or Rt): not ibnetdiscover output"},
      {"", "no node line (Switch, Ca or Rt): not ibnetdiscover output"},
  };
  for (const auto& [text, want] : parse) {
    NetFile file;
    std::string error;
    EXPECT_FALSE(ParseNetFile(text, &file, &error)) << text;
    EXPECT_EQ(error, want);
  }
  const std::vector<std::pair<std::string, std::string>> build{
      {"Switch 8 \"a\"\n[1] \"b\"[2]\nSwitch 8 \"b\"\n[2] \"c\"[1]\nSwitch 8 \"c\"\n",
       "line 4: b[2] is cabled to a[1] on line 2 but to c[1] here"},
      {"Switch 8 \"S-0000000000000001\"\nSwitch 8 \"S-0000000000000001\"\n",
       "line 2: a second node line for 0x0000000000000001 (the first on line 1)"},
  };
  for (const auto& [text, want] : build) {
    NetFile file;
    Fabric f;
    std::vector<std::string> notes;
    std::string error;
    ASSERT_TRUE(ParseNetFile(text, &file, &error)) << error;
    EXPECT_FALSE(FabricFromNetFile(file, &f, &notes, &error)) << text;
    EXPECT_EQ(error, want);
  }
}

TEST(IbnetdiscoverTest, EveryRateReadsBackAsPrinted) {
  for (const char* lanes : {"1x", "2x", "4x", "8x", "12x"}) {
    for (const char* speed : {"SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR"}) {
      Port p;
      p.phys_state = 5;
      const std::string rate = std::string(lanes) + speed;
      ASSERT_TRUE(SetRate(rate, &p)) << rate;
      EXPECT_EQ(RateString(p), rate);
      EXPECT_EQ(MaxEnabledSpeed(p), ActiveSpeed(p)) << rate;
      EXPECT_EQ(MaxSupportedSpeed(p), ActiveSpeed(p)) << rate;
    }
  }
  Port p;
  for (const char* bad : {"", "4x", "xQDR", "3xQDR", "4xQDR ", "4xqdr", "100xQDR"})
    EXPECT_FALSE(SetRate(bad, &p)) << bad;
  EXPECT_EQ(p.width_active, 0) << "untouched";
}

std::string Capture(const std::string& name) {
  std::ifstream in(std::string(IBFABRIC_REAL_FABRICS_DIR) + "/" + name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Each capture in tests/real-fabrics (README.md there names its source),
// read whole: its nodes and cables as the file lists them, and exactly the
// lines that are not topology skipped.
TEST(IbnetdiscoverTest, RealCapturesAreReadWhole) {
  struct Case {
    std::string file;
    std::size_t switches, cas, cables;  // cables: each listed from both ends
    std::vector<int> skipped;           // line numbers
  };
  const std::vector<Case> cases{
      {"ufm-ndt-director-putty.net", 400, 2328, 8723, {2, 33822}},
      {"ufm-small-topo.net", 2, 13, 16, {}},
      {"gary-ibdiagnet2-ndr-b.net", 9, 263, 271, {}},
      {"jabl-ibtopotool-1-man-ibnetdiscover.net", 2, 4, 7, {}},
      {"jabl-ibtopotool-2-ibm-pcm.net", 1, 2, 2, {}},
      {"jabl-ibtopotool-3-nvidia-ibdiagpath-howto.net", 2, 6, 10, {2}},
      {"jabl-ibtopotool-4-oracle-sun-dcs36.net", 1, 1, 1, {}},
      {"ufm-selene-compute.net", 666, 4341, 12852, {}},
      {"ufm-selene-storage.net", 160, 1247, 3286, {}},
      {"mlunacek-janus-is5600-director.net", 214, 1356, 4168, {}},
      {"loginoff-sx6036-stage.net", 8, 144, 192, {}},
      {"ltaulell-psmn-x5-voltaire4036.net", 11, 89, 159, {}},
      {"gary-ibdiagnet2-quantum2-20250331.net", 9, 263, 271, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string text = Capture(c.file);
    ASSERT_FALSE(text.empty());
    NetFile file;
    Fabric f;
    std::vector<std::string> notes;
    std::string error;
    ASSERT_TRUE(ParseNetFile(text, &file, &error)) << error;
    std::vector<int> skipped;
    for (const std::string& s : file.skipped) skipped.push_back(std::stoi(s.substr(5)));
    EXPECT_EQ(skipped, c.skipped) << (file.skipped.empty() ? "" : file.skipped.front());
    ASSERT_TRUE(FabricFromNetFile(file, &f, &notes, &error)) << error;
    EXPECT_TRUE(notes.empty()) << notes.front();
    EXPECT_EQ(f.switch_count(), c.switches);
    EXPECT_EQ(f.ca_count(), c.cas);
    std::size_t ends = 0;
    for (const Node& n : f.nodes()) {
      for (const Port& p : n.ports) ends += p.remote.has_value();
    }
    EXPECT_EQ(ends, 2 * c.cables);
  }
}

}  // namespace
}  // namespace ibfabric::topology

namespace ibfabric::topology {
namespace {

// What the analysis says of each real capture, finding by finding, each
// kind with the reason an expert would give, and how many cable alerts.
TEST(RealFabricsTest, EachCaptureIsJudgedAsAnExpertWould) {
  struct Case {
    std::string file;
    std::string tiers;                 // "leaf 160, spine 160, core 80"; "" when not a tree
    std::map<std::string, int> kinds;  // finding kind -> count
    std::vector<std::string> why;      // one line per kind
    int alerts = 0;                    // cable alerts among them
  };
  const std::vector<Case> cases{
      {"ufm-ndt-director-putty.net",
       "leaf 160, spine 160, core 80",
       {{"duplicate_name", 1}, {"missing_cable", 5}, {"below_tier_majority", 4}},
       {"103 HCAs keep their model's name (no rdma-ndd): told apart by GUID",
        "five leaves have 19 of the 20 uplinks the others have: five cables missing, each named once at both ends",
        "the UFM hosts' EDR HCAs in an HDR fabric run at their best"},
       5},
      {"gary-ibdiagnet2-ndr-b.net",
       "leaf 8, spine 1",
       {{"duplicate_name", 1}, {"rail_device_order", 3}},
       {"eight switches keep the default name Quantum-2 Mellanox Technologies",
        "three hosts of 32 name their HCAs otherwise than the rest, one port on each rail leaf all the same"}},
      {"ufm-small-topo.net",
       "",
       {{"not_a_tree", 1}, {"below_tier_majority", 1}},
       {"two switches with hosts joined to each other (and one cabled to itself): no tiers to judge",
        "an FDR10 loop cable where the others run FDR"}},
      {"jabl-ibtopotool-1-man-ibnetdiscover.net",
       "",
       {{"not_a_tree", 1}, {"duplicate_name", 1}, {"below_tier_majority", 2}},
       {"two switches with hosts cabled to each other", "four HCAs named by their model",
        "two 1x links where the rest run 4x"}},
      {"jabl-ibtopotool-2-ibm-pcm.net", "leaf 1", {}, {}},
      {"jabl-ibtopotool-3-nvidia-ibdiagpath-howto.net",
       "",
       {{"not_a_tree", 1}, {"below_tier_majority", 4}},
       {"two switches with hosts (and loops on one)", "QDR, SDR and FDR devices in an EDR/FDR lab"}},
      {"jabl-ibtopotool-4-oracle-sun-dcs36.net", "leaf 1", {}, {}},
      {"loginoff-sx6036-stage.net",
       "leaf 6, spine 2",
       {{"missing_cable", 1}, {"ca_on_non_leaf", 3}},
       {"leaf ib1 has 3 of the 4 cables to spine ib8 that every other leaf-spine pair has: one alert, at the ports "
        "the other leaves use",
        "two storage hosts' three ports (tank1, tank2) on spine ib7: a small cluster's design, information"},
       1},
      {"gary-ibdiagnet2-quantum2-20250331.net",
       "leaf 8, spine 1",
       {{"duplicate_name", 1}},
       {"the eight leaves still at the default name; the hosts, renamed since ndr-b, are on their rails"}},
      {"ufm-selene-storage.net",
       "leaf 64, spine 64, core 32",
       {{"missing_cable", 9}, {"below_tier_majority", 320}},
       {"six leaf-spine and three spine-core cables missing (a leaf with 15 of its 16 spines, a spine with 31 of "
        "its 32 cores), each at the ports its peers use; the AI400X appliances' two HCAs on one leaf are their "
        "design, not a rail fault",
        "the appliances' EDR ports in an HDR fabric run at their best"},
       9},
      {"ufm-selene-compute.net",
       "leaf 204, spine 322, core 140",
       {{"missing_cable", 29}, {"service_island", 4}},
       {"13 leaves with one of their two cables to a spine missing, 16 spine-core cables missing",
        "the management leaves, each on one switch with a few management hosts (MLG01-04/05 under their own "
        "spines MSPINE3/4-01, MLG01-01/02 on CSPINE1-40/80): islands, not groups of the tree"},
       29},
      {"ltaulell-psmn-x5-voltaire4036.net",
       "leaf 7, spine 4",
       {{"asymmetric_switch", 4},
        {"below_tier_majority", 23},
        {"duplicate_name", 3},
        {"fewer_uplinks", 2},
        {"uneven_parallel_links", 4}},
       {"three leaves cabled unlike the four with 3 cables to each of the 4 spines: 4036-8BBA with one to each, "
        "the 200b50 with 6 to two spines, the hostless 4036-86A2 on two spines (a leaf being built or spared, "
        "ranked a leaf, no alert)",
        "DDR hosts in a QDR fabric run at their best", "two leaf models, the spines and the HCAs at default names",
        "4036-8BBA and 4036-86A2, as above", "the spines' groups to those three leaves"}},
      {"mlunacek-janus-is5600-director.net",
       "leaf 79, spine 81, core 54",
       {{"missing_cable", 45},
        {"uneven_parallel_links", 10},
        {"asymmetric_switch", 2},
        {"fewer_uplinks", 2},
        {"duplicate_name", 1}},
       {"edge switches with 16 or 17 of the 18 uplinks (6 to each of the three IS5600 directors, each chassis "
        "one group whichever line ASIC a cable lands on): each shortfall named at the edge and the chassis",
        "edges that spread their 18 uplinks 7, 7 and 4 over the directors",
        "an edge with 5 to each director, a design as uniform, and the 2-host edge with one cable to each",
        "the same two edges, fewer uplinks", "79 edge switches at the default name"},
       45},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    Fabric f;
    std::vector<std::string> notes;
    std::string error;
    ASSERT_TRUE(LoadNetFile(std::string(IBFABRIC_REAL_FABRICS_DIR) + "/" + c.file, &f, &notes, &error)) << error;
    HostAnalysis hosts;
    const Analysis a = AnalyzeWiring(f, HostPattern{}, nullptr, &hosts);
    std::map<int, int> per_tier;
    for (const auto& [guid, s] : a.switches) ++per_tier[s.tier];
    std::string tiers;
    for (const auto& [tier, n] : per_tier)
      tiers += (tiers.empty() ? "" : ", ") + TierName(tier) + " " + std::to_string(n);
    EXPECT_EQ(a.is_tree ? tiers : "", c.tiers) << a.not_tree_reason;
    std::map<std::string, int> kinds;
    std::string all;
    int alerts = 0;
    for (const Finding& x : a.findings) {
      ++kinds[ToString(x.kind)];
      all += std::string(ToString(x.kind)) + ": " + x.detail + "\n";
      alerts += RaisesCableAlert(x);
    }
    EXPECT_EQ(kinds, c.kinds) << all;
    EXPECT_EQ(alerts, c.alerts) << all;
    EXPECT_EQ(c.why.size(), c.kinds.size()) << "a reason for each kind";
  }
}

}  // namespace
}  // namespace ibfabric::topology

namespace ibfabric::topology {
namespace {

// A capture as its own plan (an operator accepting today's fabric, as
// UFM's topology compare takes a saved one as the reference): what the
// pattern warned of is the design, accepted, and nothing rises above
// information; a switch-to-switch cable pulled since is the plan's missing
// link, one cable alert at its two ends. Every capture in the folder.
TEST(RealFabricsTest, EachCaptureAcceptedAsItsOwnPlanRaisesNothing) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(IBFABRIC_REAL_FABRICS_DIR)) {
    if (e.path().extension() == ".net") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 13u);
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    Fabric f;
    std::vector<std::string> notes;
    std::string error;
    ASSERT_TRUE(LoadNetFile(path, &f, &notes, &error)) << error;
    CablingPlan plan;
    if (!LoadPlan(path, &plan, &error)) {
      // A plan is read strictly: a terminal's stray line (which --analyze
      // passes over) is an error naming it, not a cable silently dropped.
      EXPECT_NE(error.find(path + ":"), std::string::npos) << error;
      EXPECT_EQ(error.find('\n'), std::string::npos) << error;
      continue;
    }
    HostAnalysis hosts;
    const Analysis alone = AnalyzeWiring(f, HostPattern{}, nullptr, &hosts);
    std::multiset<std::string> warned;
    for (const Finding& x : alone.findings) {
      if (LevelOf(x.kind) != FindingLevel::kInformation) warned.insert(ToString(x.kind) + (": " + x.detail));
    }
    const Analysis accepted = AnalyzeWiring(f, HostPattern{}, &plan, &hosts);
    std::string above;
    for (const Finding& x : accepted.findings) {
      if (LevelOf(x.kind) != FindingLevel::kInformation) above += ToString(x.kind) + (": " + x.detail + "\n");
    }
    EXPECT_EQ(above, "");
    std::multiset<std::string> got;
    for (const Finding& x : accepted.accepted) got.insert(ToString(x.kind) + (": " + x.detail));
    EXPECT_EQ(got, warned) << "what the pattern warned of is what the plan accepts";

    // One switch-to-switch cable pulled (both ends down, as a live sweep
    // reads them).
    std::vector<Node> nodes = f.nodes();
    std::optional<Link> pulled;
    for (const Link& l : Links(f)) {
      const Node* a = f.FindNode(l.a.node_guid);
      const Node* b = f.FindNode(l.b.node_guid);
      if (a->kind == NodeKind::kSwitch && b->kind == NodeKind::kSwitch && l.a.node_guid != l.b.node_guid) {
        pulled = l;
        break;
      }
    }
    if (!pulled) continue;  // a fabric of one switch
    for (Node& n : nodes) {
      for (Port& p : n.ports) {
        const PortRef here{n.guid, p.number};
        if (here != pulled->a && here != pulled->b) continue;
        p.remote.reset();
        p.phys_state = 2;  // Polling
        p.state = 1;       // Down
      }
    }
    const Analysis changed = AnalyzeWiring(Fabric(std::move(nodes)), HostPattern{}, &plan, &hosts);
    std::vector<const Finding*> alerts;
    for (const Finding& x : changed.findings) {
      if (RaisesCableAlert(x)) alerts.push_back(&x);
    }
    std::string said;
    for (const Finding* x : alerts) said += std::string(ToString(x->kind)) + ": " + x->detail + "\n";
    ASSERT_EQ(alerts.size(), 1u) << said;
    EXPECT_EQ(alerts[0]->kind, FindingKind::kPlanMissingLink) << alerts[0]->detail;
    EXPECT_EQ(std::minmax(*alerts[0]->a, *alerts[0]->b), std::minmax(pulled->a, pulled->b)) << alerts[0]->detail;
  }
}

}  // namespace
}  // namespace ibfabric::topology
