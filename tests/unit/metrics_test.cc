// Rendering a hand-built snapshot: names, labels, units and absences.

#include "collectors/metrics.h"

#include <gtest/gtest.h>

#include "collectors/registry.h"
#include "tests/testbed/prom_text.h"

namespace ibfabric {
namespace {

using collectors::Counter;
using collectors::Index;
using testbed::Scrape;
using topology::NodeKind;

collectors::Snapshot Build() {
  topology::Node sw;
  sw.guid = 0xa1;
  sw.kind = NodeKind::kSwitch;
  sw.description = "ib-leaf01";
  sw.lid = 5;
  topology::Port p3;
  p3.number = 3;
  p3.lid = 5;
  p3.phys_state = 5;
  p3.remote = topology::PortRef{0xc1, 1};
  sw.ports = {p3};
  topology::Node ca;
  ca.guid = 0xc1;
  ca.kind = NodeKind::kCa;
  ca.description = "cn0001";
  ca.lid = 9;
  topology::Port c1;
  c1.number = 1;
  c1.lid = 9;
  c1.phys_state = 5;
  c1.remote = topology::PortRef{0xa1, 3};
  ca.ports = {c1};

  collectors::Snapshot s;
  s.fabric = std::make_shared<topology::Fabric>(std::vector<topology::Node>{sw, ca});
  s.nodes = std::make_shared<const collectors::NodeLabels>(collectors::NodeLabels{
      {0xa1, {NodeKind::kSwitch, "ib-leaf01", {}}},
      {0xc1, {NodeKind::kCa, "cn0001", {}}},
      {0xd1, {NodeKind::kCa, "cn0099", {}}},  // vanished from the fabric
  });
  collectors::PortTotals t;
  t.SetTotal(Index(Counter::kRcvErrors), 17);
  t.present.set(Index(Counter::kRcvErrors));
  t.SetTotal(Index(Counter::kXmitData), 1000);  // 4-octet words
  t.present.set(Index(Counter::kXmitData));
  collectors::PortTable ports;
  ports[{0xa1, 3}] = t;
  ports[{0xc1, 1}] = t;
  t.stale = true;
  ports[{0xd1, 1}] = t;
  s.ports = std::make_shared<const collectors::PortTable>(std::move(ports));
  s.sweeps = 3;
  s.mad.kinds[static_cast<int>(transport::MadKind::kGmp)].sent = 70;
  s.mad.kinds[static_cast<int>(transport::MadKind::kDirectedSmp)].sent = 30;
  s.mad.kinds[static_cast<int>(transport::MadKind::kGmp)].timeouts = 2;
  s.mad.kinds[static_cast<int>(transport::MadKind::kGmp)].remote_errors = 3;
  s.mad.kinds[static_cast<int>(transport::MadKind::kGmp)].redirects = 1;
  s.mad.srtt_seconds[static_cast<int>(transport::MadKind::kGmp)] = 0.0004;
  s.sweep_mads[static_cast<int>(transport::MadKind::kLidSmp)].sent = 12;
  s.discovery_mads[static_cast<int>(transport::MadKind::kDirectedSmp)].retries = 4;
  s.targets = 2;
  s.runs["port_counters"] = {true, true, 0.25};
  s.sweep_seconds = 0.25;
  std::string error;
  collectors::EnabledCollectors({}, &s.collectors, &error);  // the defaults: every collector
  return s;
}

TEST(MetricsTest, PortCountersUseTreydockNamesAndLabels) {
  const Scrape m = Scrape::Parse(collectors::RenderExposition(Build(), "1.2.3"));
  EXPECT_EQ(m.Value("infiniband_switch_port_receive_errors_total",
                    {{"guid", "0x00000000000000a1"}, {"port", "3"}, {"switch", "ib-leaf01"}}),
            17);
  EXPECT_EQ(m.Value("infiniband_hca_port_receive_errors_total",
                    {{"guid", "0x00000000000000c1"}, {"port", "1"}, {"hca", "cn0001"}}),
            17);
  EXPECT_EQ(m.Value("infiniband_switch_port_transmit_data_bytes_total", {{"guid", "0x00000000000000a1"}}), 4000)
      << "data counters are exported in bytes";
  EXPECT_EQ(m.types().at("infiniband_switch_port_receive_errors_total"), "counter");
  // Never read: absent, not zero.
  EXPECT_TRUE(m.Find("infiniband_switch_port_symbol_error_total").empty());
  // A node that vanished keeps its series and its name.
  EXPECT_EQ(m.Value("infiniband_hca_port_receive_errors_total", {{"hca", "cn0099"}}), 17);
  EXPECT_EQ(m.Value("infiniband_exporter_stale_ports"), 1);
}

// --counters.groups leaves whole groups out, and says which.
TEST(MetricsTest, PortGroupsLeaveOutTheirSeries) {
  collectors::Snapshot s = Build();
  s.port_groups = collectors::PortGroups().set(static_cast<std::size_t>(collectors::PortGroup::kErrors));
  const Scrape m = Scrape::Parse(collectors::RenderExposition(s, "1.2.3"));
  EXPECT_EQ(m.Value("infiniband_switch_port_receive_errors_total", {{"port", "3"}}), 17);
  EXPECT_TRUE(m.Find("infiniband_switch_port_transmit_data_bytes_total").empty());
  EXPECT_TRUE(m.Find("infiniband_switch_port_state").empty());
  EXPECT_FALSE(m.Find("infiniband_switch_uplink_info").empty());  // not in any group: joins need it
  EXPECT_EQ(m.Value("infiniband_exporter_port_group_exported", {{"group", "errors"}}), 1);
  EXPECT_EQ(m.Value("infiniband_exporter_port_group_exported", {{"group", "data"}}), 0);
  EXPECT_EQ(m.Find("infiniband_exporter_port_group_exported").size(), collectors::kPortGroupCount);
  // Every group: both families are there.
  const Scrape all = Scrape::Parse(collectors::RenderExposition(Build(), "1.2.3"));
  EXPECT_EQ(all.Value("infiniband_switch_port_transmit_data_bytes_total", {{"port", "3"}}), 4000);
  EXPECT_FALSE(all.Find("infiniband_switch_port_state").empty());
}

TEST(MetricsTest, AutoPortGroupsBySize) {
  EXPECT_TRUE(collectors::AutoPortGroups(collectors::kAllGroupsPorts).all());
  const collectors::PortGroups big = collectors::AutoPortGroups(collectors::kAllGroupsPorts + 1);
  std::string names;
  for (std::size_t g = 0; g < collectors::kPortGroupCount; ++g) {
    if (big.test(g)) names += std::string(collectors::ToString(static_cast<collectors::PortGroup>(g))) + " ";
  }
  EXPECT_EQ(names, "errors congestion data ");
}

TEST(MetricsTest, InfoAndSelfMetrics) {
  const Scrape m = Scrape::Parse(collectors::RenderExposition(Build(), "1.2.3"));
  EXPECT_EQ(m.Value("infiniband_switch_info", {{"guid", "0x00000000000000a1"}, {"switch", "ib-leaf01"}, {"lid", "5"}}),
            1);
  EXPECT_EQ(m.Value("infiniband_hca_info", {{"guid", "0x00000000000000c1"}, {"hca", "cn0001"}, {"lid", "9"}}), 1);
  EXPECT_EQ(m.Value("infiniband_switch_uplink_info", {{"guid", "0x00000000000000a1"},
                                                      {"port", "3"},
                                                      {"uplink", "cn0001"},
                                                      {"uplink_guid", "0x00000000000000c1"},
                                                      {"uplink_port", "1"},
                                                      {"uplink_lid", "9"},
                                                      {"uplink_type", "CA"}}),
            1);
  EXPECT_EQ(m.Value("infiniband_hca_uplink_info", {{"hca", "cn0001"}, {"uplink", "ib-leaf01"}, {"uplink_type", "SW"}}),
            1);
  EXPECT_EQ(m.Value("infiniband_exporter_build_info", {{"version", "1.2.3"}}), 1);
  // The exporter's load by kind of MAD.
  EXPECT_EQ(m.Value("infiniband_exporter_mads_sent_total", {{"class", "gmp"}}), 70);
  EXPECT_EQ(m.Value("infiniband_exporter_mads_sent_total", {{"class", "dr_smp"}}), 30);
  EXPECT_EQ(m.Value("infiniband_exporter_mads_sent_total", {{"class", "lid_smp"}}), 0);
  EXPECT_EQ(m.Value("infiniband_exporter_mad_failures_total", {{"class", "gmp"}, {"reason", "timeout"}}), 2);
  EXPECT_EQ(m.Value("infiniband_exporter_mad_failures_total", {{"class", "gmp"}, {"reason", "remote_error"}}), 2);
  EXPECT_EQ(m.Value("infiniband_exporter_mad_failures_total", {{"class", "gmp"}, {"reason", "redirect"}}), 1);
  EXPECT_EQ(m.Value("infiniband_exporter_mad_round_trip_seconds", {{"class", "gmp"}}), 0.0004);
  EXPECT_EQ(
      m.Value("infiniband_exporter_last_run_mads", {{"phase", "sweep"}, {"class", "lid_smp"}, {"outcome", "sent"}}),
      12);
  EXPECT_EQ(m.Value("infiniband_exporter_last_run_mads",
                    {{"phase", "discovery"}, {"class", "dr_smp"}, {"outcome", "retried"}}),
            4);
  EXPECT_EQ(m.Value("infiniband_exporter_sweep_duration_seconds"), 0.25);
  EXPECT_EQ(m.Value("infiniband_exporter_collector_success", {{"collector", "port_counters"}}), 1);
  EXPECT_EQ(m.Value("infiniband_exporter_sweeps_total"), 3);
}

// A family of more series than one part holds (render.h FamilyParts) is
// still one family: one HELP and TYPE, every series once with its value.
// The HTTP endpoint's error replies by status; 500 is there at 0 before
// any, so that increase() sees the first.
TEST(MetricsTest, HttpErrorRepliesByStatusWith500AlwaysThere) {
  collectors::Snapshot s = Build();
  Scrape m = Scrape::Parse(collectors::RenderExposition(s, "1.2.3"));
  ASSERT_EQ(m.Find("infiniband_exporter_http_errors_total").size(), 1u);
  EXPECT_EQ(m.Value("infiniband_exporter_http_errors_total", {{"code", "500"}}), 0.0);
  s.http_errors = {{400, 7}, {404, 2}, {500, 1}};
  m = Scrape::Parse(collectors::RenderExposition(s, "1.2.3"));
  EXPECT_EQ(m.Find("infiniband_exporter_http_errors_total").size(), 3u);
  EXPECT_EQ(m.Value("infiniband_exporter_http_errors_total", {{"code", "400"}}), 7.0);
  EXPECT_EQ(m.Value("infiniband_exporter_http_errors_total", {{"code", "404"}}), 2.0);
  EXPECT_EQ(m.Value("infiniband_exporter_http_errors_total", {{"code", "500"}}), 1.0);
}

TEST(MetricsTest, AFamilyWrittenInPartsIsOneFamily) {
  collectors::Snapshot s;
  std::vector<topology::Node> nodes;
  collectors::PortTable ports;
  collectors::NodeLabels labels;
  constexpr int kSwitches = 100, kPorts = 36;  // 3600 series: four parts
  for (int n = 0; n < kSwitches; ++n) {
    topology::Node sw;
    sw.guid = 0x1000 + static_cast<std::uint64_t>(n);
    sw.kind = NodeKind::kSwitch;
    sw.description = "sw" + std::to_string(n);
    nodes.push_back(sw);
    labels[sw.guid] = {NodeKind::kSwitch, sw.description, {}};
    for (int p = 1; p <= kPorts; ++p) {
      collectors::PortTotals t;
      t.SetTotal(Index(Counter::kRcvErrors), static_cast<std::uint64_t>(n * 1000 + p));
      t.present.set(Index(Counter::kRcvErrors));
      ports[{sw.guid, static_cast<std::uint8_t>(p)}] = t;
    }
  }
  s.fabric = std::make_shared<topology::Fabric>(nodes);
  s.nodes = std::make_shared<const collectors::NodeLabels>(std::move(labels));
  s.ports = std::make_shared<const collectors::PortTable>(std::move(ports));
  s.collectors = {"port_counters"};
  const std::string text = collectors::RenderExposition(s, "x");
  const std::string name = "infiniband_switch_port_receive_errors_total";
  std::size_t types = 0, helps = 0;
  for (std::size_t at = 0; (at = text.find("# TYPE " + name + " ", at)) != std::string::npos; ++at) ++types;
  for (std::size_t at = 0; (at = text.find("# HELP " + name + " ", at)) != std::string::npos; ++at) ++helps;
  EXPECT_EQ(types, 1u);
  EXPECT_EQ(helps, 1u);
  const Scrape m = Scrape::Parse(text);
  ASSERT_EQ(m.Find(name).size(), static_cast<std::size_t>(kSwitches * kPorts));
  EXPECT_EQ(m.Value(name, {{"switch", "sw0"}, {"port", "1"}}), 1);
  EXPECT_EQ(m.Value(name, {{"switch", "sw57"}, {"port", "29"}}), 57029);
  EXPECT_EQ(m.Value(name, {{"switch", "sw99"}, {"port", "36"}}), 99036);
  // The family after it starts with its own header, right after the last part.
  const std::size_t last = text.rfind(name + "{");
  const std::size_t next = text.find('\n', last) + 1;
  EXPECT_EQ(text.compare(next, 7, "# HELP "), 0) << text.substr(next, 80);
}

}  // namespace
}  // namespace ibfabric
