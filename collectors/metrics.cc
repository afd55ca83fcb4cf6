#include "collectors/metrics.h"

#include <algorithm>
#include <chrono>
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

void RenderPortCounters(const Snapshot& s, std::vector<MetricFamily>& out) {
  const auto& specs = CounterSpecs();
  // Index: [role][counter]
  std::vector<MetricFamily> fams;
  for (const char* role : {"switch", "hca"}) {
    for (const auto& spec : specs) {
      fams.push_back(Family(std::string("infiniband_") + role + "_port_" + spec.metric + "_total",
                            std::string("InfiniBand ") + role + " port " + spec.ibta_name,
                            MetricType::Counter));
    }
  }
  // Sticky counters stopped at their maximum: the total is a lower bound.
  MetricFamily pinned[2] = {
      Family("infiniband_switch_port_pinned_counters",
             "Raw counters of the port stopped at their maximum (totals are lower bounds)",
             MetricType::Gauge),
      Family("infiniband_hca_port_pinned_counters",
             "Raw counters of the port stopped at their maximum (totals are lower bounds)",
             MetricType::Gauge)};
  MetricFamily pinned_which[2] = {
      Family("infiniband_switch_port_counter_pinned",
             "1 for each raw counter of the port stopped at its maximum", MetricType::Gauge),
      Family("infiniband_hca_port_counter_pinned",
             "1 for each raw counter of the port stopped at its maximum", MetricType::Gauge)};
  for (const auto& [ref, totals] : s.ports) {
    auto nit = s.nodes.find(ref.node_guid);
    const NodeLabel label = nit == s.nodes.end() ? NodeLabel{} : nit->second;
    const bool sw = label.kind == NodeKind::kSwitch;
    const std::size_t base = sw ? 0 : kCounterCount;
    const std::vector<ClientMetric::Label> labels{
        {"guid", FormatGuid(ref.node_guid)}, {"port", std::to_string(ref.port)}, {Role(label.kind), label.name}};
    int pinned_count = 0;
    for (std::size_t i = 0; i < kCounterCount; ++i) {
      if (!totals.present.test(i)) continue;  // never read: absent, not 0
      Add(fams[base + i], labels, static_cast<double>(totals.total[i]) * static_cast<double>(specs[i].scale));
      if (totals.Pinned(i)) {
        ++pinned_count;
        auto with = labels;
        with.push_back({"counter", specs[i].metric});
        Add(pinned_which[sw ? 0 : 1], std::move(with), 1);
      }
    }
    Add(pinned[sw ? 0 : 1], labels, pinned_count);
  }
  for (auto& f : pinned) out.push_back(std::move(f));
  for (auto& f : pinned_which) {
    if (!f.metric.empty()) out.push_back(std::move(f));
  }
  for (auto& f : fams) {
    if (!f.metric.empty()) out.push_back(std::move(f));
  }
}

void RenderFabric(const Snapshot& s, std::vector<MetricFamily>& out) {
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
  for (auto* f : {&hca_info, &hca_up, &sw_info, &sw_up}) out.push_back(std::move(*f));
}

void RenderSelf(const Snapshot& s, std::string_view version, std::vector<MetricFamily>& out) {
  auto build = Family("infiniband_exporter_build_info", "Exporter version", MetricType::Gauge);
  Add(build, {{"version", std::string(version)}}, 1);
  out.push_back(std::move(build));

  auto success = Family("infiniband_exporter_collector_success",
                        "1 if the collector's last run succeeded", MetricType::Gauge);
  auto duration = Family("infiniband_exporter_collector_duration_seconds",
                         "Duration of the collector's last run", MetricType::Gauge);
  for (const auto& [name, phase] :
       {std::pair{"discovery", &s.discovery}, std::pair{"port_counters", &s.port_counters}}) {
    if (!phase->ran) continue;
    Add(success, {{"collector", name}}, phase->success ? 1 : 0);
    Add(duration, {{"collector", name}}, phase->duration_seconds);
  }
  out.push_back(std::move(success));
  out.push_back(std::move(duration));

  auto sweep_dur = Family("infiniband_exporter_sweep_duration_seconds",
                          "Wall time of the last counter sweep", MetricType::Gauge);
  Add(sweep_dur, {}, s.port_counters.duration_seconds);
  out.push_back(std::move(sweep_dur));

  auto last_ok = Family("infiniband_exporter_last_successful_sweep_timestamp_seconds",
                        "Unix time at which the last successful sweep ended", MetricType::Gauge);
  Add(last_ok, {}, s.last_success == std::chrono::system_clock::time_point{} ? 0 : Seconds(s.last_success));
  out.push_back(std::move(last_ok));

  auto sweeps = Family("infiniband_exporter_sweeps_total", "Counter sweeps run", MetricType::Counter);
  Add(sweeps, {}, static_cast<double>(s.sweeps));
  out.push_back(std::move(sweeps));
  auto discoveries = Family("infiniband_exporter_discoveries_total", "Fabric discoveries run",
                            MetricType::Counter);
  Add(discoveries, {}, static_cast<double>(s.discoveries));
  out.push_back(std::move(discoveries));

  auto ports = Family("infiniband_exporter_sweep_ports", "Ports read in the last sweep, by result",
                      MetricType::Gauge);
  Add(ports, {{"result", "ok"}}, static_cast<double>(s.targets - s.failed_ports));
  Add(ports, {{"result", "failed"}}, static_cast<double>(s.failed_ports));
  out.push_back(std::move(ports));

  auto nodes = Family("infiniband_exporter_fabric_nodes", "Nodes found by the last discovery",
                      MetricType::Gauge);
  Add(nodes, {{"type", "switch"}}, static_cast<double>(s.fabric->switch_count()));
  Add(nodes, {{"type", "hca"}}, static_cast<double>(s.fabric->ca_count()));
  out.push_back(std::move(nodes));

  auto sent = Family("infiniband_exporter_mads_sent_total", "MADs sent, retries included",
                     MetricType::Counter);
  Add(sent, {}, static_cast<double>(s.mad.sent));
  out.push_back(std::move(sent));
  auto failed = Family("infiniband_exporter_mad_failures_total",
                       "MAD requests that failed, by reason", MetricType::Counter);
  Add(failed, {{"reason", "timeout"}}, static_cast<double>(s.mad.timeouts));
  Add(failed, {{"reason", "remote_error"}}, static_cast<double>(s.mad.remote_errors));
  Add(failed, {{"reason", "send_error"}}, static_cast<double>(s.mad.send_errors));
  out.push_back(std::move(failed));
  auto retries = Family("infiniband_exporter_mad_retries_total",
                        "MADs sent again after a timed-out attempt", MetricType::Counter);
  Add(retries, {}, static_cast<double>(s.mad.retries));
  out.push_back(std::move(retries));
  auto ignored = Family("infiniband_exporter_mads_ignored_total",
                        "Received MADs matching no outstanding request (late, duplicate, garbled)",
                        MetricType::Counter);
  Add(ignored, {}, static_cast<double>(s.mad.ignored));
  out.push_back(std::move(ignored));

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
  out.push_back(std::move(node_stale));
  out.push_back(std::move(node_failures));
  out.push_back(std::move(node_last));

  auto clears = Family("infiniband_exporter_port_resets_total",
                       "Ports whose counters the exporter cleared (--counters.clear-threshold)",
                       MetricType::Counter);
  Add(clears, {}, static_cast<double>(s.counter_clears));
  out.push_back(std::move(clears));
  auto moves = Family("infiniband_exporter_lid_moves_total",
                      "Nodes found answering under another LID than discovered (then rediscovered)",
                      MetricType::Counter);
  Add(moves, {}, static_cast<double>(s.lid_moves));
  out.push_back(std::move(moves));

  std::size_t stale = 0;
  for (const auto& [ref, t] : s.ports) stale += t.stale ? 1 : 0;
  auto stale_f = Family("infiniband_exporter_stale_ports",
                        "Ports whose totals are from an earlier sweep (no answer in the last one)",
                        MetricType::Gauge);
  Add(stale_f, {}, static_cast<double>(stale));
  out.push_back(std::move(stale_f));
}

}  // namespace

std::vector<MetricFamily> RenderMetrics(const Snapshot& snapshot, std::string_view version) {
  std::vector<MetricFamily> out;
  RenderPortCounters(snapshot, out);
  if (snapshot.fabric) RenderFabric(snapshot, out);
  if (snapshot.fabric) RenderSelf(snapshot, version, out);
  std::sort(out.begin(), out.end(),
            [](const MetricFamily& a, const MetricFamily& b) { return a.name < b.name; });
  return out;
}

}  // namespace ibfabric::collectors
