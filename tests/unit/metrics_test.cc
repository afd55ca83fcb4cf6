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
  s.nodes[0xa1] = {NodeKind::kSwitch, "ib-leaf01", {}};
  s.nodes[0xc1] = {NodeKind::kCa, "cn0001", {}};
  s.nodes[0xd1] = {NodeKind::kCa, "cn0099", {}};  // vanished from the fabric
  collectors::PortTotals t;
  t.total[Index(Counter::kRcvErrors)] = 17;
  t.present.set(Index(Counter::kRcvErrors));
  t.total[Index(Counter::kXmitData)] = 1000;  // 4-octet words
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

}  // namespace
}  // namespace ibfabric
