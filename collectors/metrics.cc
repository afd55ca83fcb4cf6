#include "collectors/metrics.h"

#include <prometheus/text_serializer.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>

namespace ibfabric::collectors {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using topology::FormatGuid;
using topology::NodeKind;

MetricFamily Family(std::string name, std::string help, MetricType type) {
  MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

void Add(MetricFamily& f, std::vector<ClientMetric::Label> labels, double value) {
  ClientMetric m;
  m.label = std::move(labels);
  if (f.type == MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  f.metric.push_back(std::move(m));
}

double Seconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// "switch" or "hca": the metric prefix and the name label of a node kind.
// Routers are reported with CAs: both are end points of the fabric.
const char* Role(NodeKind k) { return k == NodeKind::kSwitch ? "switch" : "hca"; }

// Called with each family as soon as it is complete.
using Emit = const std::function<void(MetricFamily&&)>&;

const NodeLabel& LabelOf(const Snapshot& s, std::uint64_t guid) {
  static const NodeLabel kUnknown{};
  auto it = s.nodes.find(guid);
  return it == s.nodes.end() ? kUnknown : it->second;
}

std::vector<ClientMetric::Label> PortLabels(const topology::PortRef& ref, const NodeLabel& label) {
  return {{"guid", FormatGuid(ref.node_guid)}, {"port", std::to_string(ref.port)}, {Role(label.kind), label.name}};
}

// One family per (role, counter), built and emitted one at a time, so that
// memory holds a single family and not the whole exposition's worth.
void RenderPortCounters(const Snapshot& s, Emit out) {
  const auto& specs = CounterSpecs();
  for (const bool sw : {false, true}) {
    const std::string role = sw ? "switch" : "hca";
    auto mine = [&](std::uint64_t guid) { return (LabelOf(s, guid).kind == NodeKind::kSwitch) == sw; };
    for (std::size_t i = 0; i < kCounterCount; ++i) {
      auto f = Family("infiniband_" + role + "_port_" + specs[i].metric + "_total",
                      "InfiniBand " + role + " port " + specs[i].ibta_name, MetricType::Counter);
      for (const auto& [ref, totals] : s.ports) {
        if (!mine(ref.node_guid) || !totals.present.test(i)) continue;  // never read: absent, not 0
        Add(f, PortLabels(ref, LabelOf(s, ref.node_guid)),
            static_cast<double>(totals.total[i]) * static_cast<double>(specs[i].scale));
      }
      if (!f.metric.empty()) out(std::move(f));
    }
    // Sticky counters stopped at their maximum: the total is a lower bound.
    auto pinned = Family("infiniband_" + role + "_port_pinned_counters",
                         "Raw counters of the port stopped at their maximum (totals are lower bounds)",
                         MetricType::Gauge);
    auto which = Family("infiniband_" + role + "_port_counter_pinned",
                        "1 for each raw counter of the port stopped at its maximum", MetricType::Gauge);
    for (const auto& [ref, totals] : s.ports) {
      if (!mine(ref.node_guid)) continue;
      const auto labels = PortLabels(ref, LabelOf(s, ref.node_guid));
      int count = 0;
      for (std::size_t i = 0; i < kCounterCount; ++i) {
        if (!totals.Pinned(i)) continue;
        ++count;
        auto with = labels;
        with.push_back({"counter", specs[i].metric});
        Add(which, std::move(with), 1);
      }
      Add(pinned, labels, count);
    }
    if (!pinned.metric.empty()) out(std::move(pinned));
    if (!which.metric.empty()) out(std::move(which));
  }
}

void RenderFabric(const Snapshot& s, Emit out) {
  auto sw_info = Family("infiniband_switch_info", "InfiniBand switch information", MetricType::Gauge);
  auto hca_info = Family("infiniband_hca_info", "InfiniBand HCA information", MetricType::Gauge);
  auto sw_up = Family("infiniband_switch_uplink_info",
                      "The far end of the cable on each switch port", MetricType::Gauge);
  auto hca_up = Family("infiniband_hca_uplink_info",
                       "The far end of the cable on each HCA port", MetricType::Gauge);
  const topology::Fabric& fabric = *s.fabric;
  for (const auto& node : fabric.nodes()) {
    const bool sw = node.kind == NodeKind::kSwitch;
    const std::string guid = FormatGuid(node.guid);
    if (sw) {
      Add(sw_info, {{"guid", guid}, {"lid", std::to_string(node.lid)}, {"switch", node.description}}, 1);
    } else {
      Add(hca_info, {{"guid", guid}, {"hca", node.description}, {"lid", std::to_string(node.lid)}}, 1);
    }
    for (const auto& port : node.ports) {
      if (!port.remote) continue;
      const topology::Node* far = fabric.FindNode(port.remote->node_guid);
      const topology::Port* far_port = fabric.FindPort(*port.remote);
      Add(sw ? sw_up : hca_up,
          {{"guid", guid},
           {"port", std::to_string(port.number)},
           {Role(node.kind), node.description},
           {"uplink", far ? far->description : ""},
           {"uplink_guid", FormatGuid(port.remote->node_guid)},
           {"uplink_lid", std::to_string(far_port ? far_port->lid : 0)},
           {"uplink_port", std::to_string(port.remote->port)},
           {"uplink_type", far ? topology::ToString(far->kind) : "unknown"}},
          1);
    }
  }
  for (auto* f : {&hca_info, &hca_up, &sw_info, &sw_up}) out(std::move(*f));

  // What each node's PMA advertises (ClassPortInfo, IBTA 16.1.2): why a
  // counter is absent on a port, e.g. transmit_wait without bit 12.
  auto pma = Family("infiniband_node_pma_capabilities_info",
                    "PMA ClassPortInfo CapabilityMask and CapabilityMask2 of the node (hex)",
                    MetricType::Gauge);
  for (const auto& [guid, caps] : s.pma) {
    char mask[8], mask2[12];
    std::snprintf(mask, sizeof mask, "0x%04x", caps.mask);
    std::snprintf(mask2, sizeof mask2, "0x%08x", caps.mask2);
    Add(pma, {{"guid", FormatGuid(guid)}, {"capability_mask", mask}, {"capability_mask2", mask2}}, 1);
  }
  out(std::move(pma));
}

void RenderSelf(const Snapshot& s, std::string_view version, Emit out) {
  auto build = Family("infiniband_exporter_build_info", "Exporter version", MetricType::Gauge);
  Add(build, {{"version", std::string(version)}}, 1);
  out(std::move(build));

  auto success = Family("infiniband_exporter_collector_success",
                        "1 if the collector's last run succeeded", MetricType::Gauge);
  auto duration = Family("infiniband_exporter_collector_duration_seconds",
                         "Duration of the collector's last run", MetricType::Gauge);
  auto total = Family("infiniband_exporter_collector_seconds_total",
                      "Time spent in the collector's runs since start", MetricType::Counter);
  for (const auto& [name, phase] :
       {std::pair{"discovery", &s.discovery}, std::pair{"port_counters", &s.port_counters}}) {
    if (!phase->ran) continue;
    Add(success, {{"collector", name}}, phase->success ? 1 : 0);
    Add(duration, {{"collector", name}}, phase->duration_seconds);
    Add(total, {{"collector", name}}, phase->total_seconds);
  }
  out(std::move(success));
  out(std::move(duration));
  out(std::move(total));

  auto sweep_dur = Family("infiniband_exporter_sweep_duration_seconds",
                          "Wall time of the last counter sweep", MetricType::Gauge);
  Add(sweep_dur, {}, s.port_counters.duration_seconds);
  out(std::move(sweep_dur));

  auto last_ok = Family("infiniband_exporter_last_successful_sweep_timestamp_seconds",
                        "Unix time at which the last successful sweep ended", MetricType::Gauge);
  Add(last_ok, {}, s.last_success == std::chrono::system_clock::time_point{} ? 0 : Seconds(s.last_success));
  out(std::move(last_ok));

  auto sweeps = Family("infiniband_exporter_sweeps_total", "Counter sweeps run", MetricType::Counter);
  Add(sweeps, {}, static_cast<double>(s.sweeps));
  out(std::move(sweeps));
  auto discoveries = Family("infiniband_exporter_discoveries_total", "Fabric discoveries run",
                            MetricType::Counter);
  Add(discoveries, {}, static_cast<double>(s.discoveries));
  out(std::move(discoveries));

  auto ports = Family("infiniband_exporter_sweep_ports", "Ports read in the last sweep, by result",
                      MetricType::Gauge);
  Add(ports, {{"result", "ok"}}, static_cast<double>(s.targets - s.failed_ports));
  Add(ports, {{"result", "failed"}}, static_cast<double>(s.failed_ports));
  out(std::move(ports));

  auto nodes = Family("infiniband_exporter_fabric_nodes", "Nodes found by the last discovery",
                      MetricType::Gauge);
  Add(nodes, {{"type", "switch"}}, static_cast<double>(s.fabric->switch_count()));
  Add(nodes, {{"type", "hca"}}, static_cast<double>(s.fabric->ca_count()));
  out(std::move(nodes));

  auto sent = Family("infiniband_exporter_mads_sent_total", "MADs sent, retries included",
                     MetricType::Counter);
  Add(sent, {}, static_cast<double>(s.mad.sent));
  out(std::move(sent));
  auto failed = Family("infiniband_exporter_mad_failures_total",
                       "MAD requests that failed, by reason", MetricType::Counter);
  Add(failed, {{"reason", "timeout"}}, static_cast<double>(s.mad.timeouts));
  Add(failed, {{"reason", "remote_error"}}, static_cast<double>(s.mad.remote_errors));
  Add(failed, {{"reason", "send_error"}}, static_cast<double>(s.mad.send_errors));
  out(std::move(failed));
  auto retries = Family("infiniband_exporter_mad_retries_total",
                        "MADs sent again after a timed-out attempt", MetricType::Counter);
  Add(retries, {}, static_cast<double>(s.mad.retries));
  out(std::move(retries));
  auto ignored = Family("infiniband_exporter_mads_ignored_total",
                        "Received MADs matching no outstanding request (late, duplicate, garbled)",
                        MetricType::Counter);
  Add(ignored, {}, static_cast<double>(s.mad.ignored));
  out(std::move(ignored));

  auto node_stale = Family("infiniband_exporter_node_stale",
                           "1 when no port of the node answered the last sweep (its totals are kept)",
                           MetricType::Gauge);
  auto node_failures = Family("infiniband_exporter_node_failures_total",
                              "Sweeps in which no port of the node answered", MetricType::Counter);
  auto node_last = Family("infiniband_exporter_node_last_success_timestamp_seconds",
                          "Unix time of the last sweep that read the node", MetricType::Gauge);
  for (const auto& [guid, h] : s.node_health) {
    const std::vector<ClientMetric::Label> labels{{"guid", FormatGuid(guid)}};
    Add(node_stale, labels, h.stale ? 1 : 0);
    Add(node_failures, labels, static_cast<double>(h.failures));
    Add(node_last, labels, h.last_success == std::chrono::system_clock::time_point{} ? 0 : Seconds(h.last_success));
  }
  out(std::move(node_stale));
  out(std::move(node_failures));
  out(std::move(node_last));

  auto clears = Family("infiniband_exporter_port_resets_total",
                       "Ports whose counters the exporter cleared (--counters.clear-threshold)",
                       MetricType::Counter);
  Add(clears, {}, static_cast<double>(s.counter_clears));
  out(std::move(clears));
  auto moves = Family("infiniband_exporter_lid_moves_total",
                      "Nodes found answering under another LID than discovered (then rediscovered)",
                      MetricType::Counter);
  Add(moves, {}, static_cast<double>(s.lid_moves));
  out(std::move(moves));

  std::size_t stale = 0;
  for (const auto& [ref, t] : s.ports) stale += t.stale ? 1 : 0;
  auto stale_f = Family("infiniband_exporter_stale_ports",
                        "Ports whose totals are from an earlier sweep (no answer in the last one)",
                        MetricType::Gauge);
  Add(stale_f, {}, static_cast<double>(stale));
  out(std::move(stale_f));
}

}  // namespace

std::string RenderExposition(const Snapshot& snapshot, std::string_view version) {
  std::ostringstream text;
  const prometheus::TextSerializer serializer;
  std::vector<MetricFamily> one(1);
  auto emit = [&](MetricFamily&& f) {
    one[0] = std::move(f);
    serializer.Serialize(text, one);
  };
  RenderPortCounters(snapshot, emit);
  if (snapshot.fabric) {
    RenderFabric(snapshot, emit);
    RenderSelf(snapshot, version, emit);
  }
  return std::move(text).str();
}

}  // namespace ibfabric::collectors
