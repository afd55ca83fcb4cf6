#include "collectors/metrics.h"

#include "topology/partitions.h"
#include "topology/routing.h"

#include <algorithm>

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

using Emit = const std::function<void(MetricFamily&&)>&;

// A family of one series without labels, emitted at once.
void EmitOne(Emit out, std::string name, std::string help, MetricType type, double value) {
  auto f = Family(std::move(name), std::move(help), type);
  Add(f, {}, value);
  out(std::move(f));
}

double Seconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// "switch" or "hca": the metric prefix and the name label of a node kind.
// Routers are reported with CAs: both are end points of the fabric.
const char* Role(NodeKind k) { return k == NodeKind::kSwitch ? "switch" : "hca"; }

// Called with each family as soon as it is complete.

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
  auto scope = Family("infiniband_exporter_scope_info", "Which ports this exporter reads: its scope and shard",
                      MetricType::Gauge);
  Add(scope,
      {{"scope", topology::ToString(s.scope.kind)},
       {"shard", std::to_string(s.scope.shard)},
       {"shards", std::to_string(s.scope.shards)}},
      1);
  out(std::move(scope));

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

  EmitOne(out, "infiniband_exporter_sweep_duration_seconds",
          "Wall time of the last counter sweep",
          MetricType::Gauge, s.port_counters.duration_seconds);

  EmitOne(out, "infiniband_exporter_last_successful_sweep_timestamp_seconds",
          "Unix time at which the last successful sweep ended",
          MetricType::Gauge, s.last_success == std::chrono::system_clock::time_point{} ? 0 : Seconds(s.last_success));

  EmitOne(out, "infiniband_exporter_sweeps_total",
          "Counter sweeps run",
          MetricType::Counter, static_cast<double>(s.sweeps));
  auto discoveries = Family("infiniband_exporter_discoveries_total",
                            "Fabric discoveries run: full walks, and incremental re-walks of what changed",
                            MetricType::Counter);
  Add(discoveries, {{"mode", "full"}}, static_cast<double>(s.discoveries));
  Add(discoveries, {{"mode", "incremental"}}, static_cast<double>(s.rewalks));
  out(std::move(discoveries));
  // The budget: what each phase costs the fabric, cumulatively (README
  // "Fewer MADs").
  auto phases = Family("infiniband_exporter_phase_mads_total",
                       "MADs sent by phase (discovery: full walks, rewalk: incremental, sweep, trap: re-reads "
                       "of the ports a trap named), by kind",
                       MetricType::Counter);
  for (const char* phase : {"discovery", "rewalk", "sweep", "trap"}) {
    auto it = s.phase_mads.find(phase);
    for (std::size_t k = 0; k < transport::kMadKinds; ++k) {
      const double sent = it == s.phase_mads.end() ? 0 : static_cast<double>(it->second[k].sent);
      Add(phases, {{"phase", phase}, {"class", transport::ToString(static_cast<transport::MadKind>(k))}}, sent);
    }
  }
  out(std::move(phases));
  auto traps = Family("infiniband_exporter_traps_total",
                      "Traps the subnet manager reported to this exporter (SA Reports), by trap number",
                      MetricType::Counter);
  auto subscribed = Family("infiniband_exporter_trap_subscribed",
                           "1 when the SA accepted this exporter's subscription to the trap", MetricType::Gauge);
  for (std::uint16_t t : {64, 65, 128, 144}) {
    auto it = s.traps.find(t);
    Add(traps, {{"trap", std::to_string(t)}}, it == s.traps.end() ? 0 : static_cast<double>(it->second));
    auto sub = s.trap_subscriptions.find(t);
    Add(subscribed, {{"trap", std::to_string(t)}}, sub != s.trap_subscriptions.end() && sub->second ? 1 : 0);
  }
  out(std::move(traps));
  out(std::move(subscribed));

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

  // The exporter's own load on the fabric, by kind of MAD (transport/mad.h
  // MadKind): what it sends, what it retries, what fails and why.
  auto sent = Family("infiniband_exporter_mads_sent_total", "MADs sent, retries included, by kind",
                     MetricType::Counter);
  auto failed = Family("infiniband_exporter_mad_failures_total",
                       "MAD requests that failed, by kind and reason", MetricType::Counter);
  auto retried = Family("infiniband_exporter_mad_retries_total",
                        "MADs sent again after a timed-out attempt or a Busy reply, by kind", MetricType::Counter);
  auto busy = Family("infiniband_exporter_mad_busy_total", "Replies with the Busy status (IBTA 13.4.7), by kind",
                     MetricType::Counter);
  auto rtt = Family("infiniband_exporter_mad_round_trip_seconds",
                    "Smoothed round trip of first attempts, by kind (0 before the first answer)", MetricType::Gauge);
  auto timeout = Family("infiniband_exporter_mad_timeout_seconds",
                        "Timeout of a first attempt now (adapted to the round trip, within the floor and ceiling)",
                        MetricType::Gauge);
  auto last = Family("infiniband_exporter_last_run_mads",
                     "MADs of the last discovery and of the last sweep, by kind and outcome", MetricType::Gauge);
  for (std::size_t k = 0; k < transport::kMadKinds; ++k) {
    const std::string kind = transport::ToString(static_cast<transport::MadKind>(k));
    const transport::KindStats& m = s.mad.kinds[k];
    Add(sent, {{"class", kind}}, static_cast<double>(m.sent));
    Add(failed, {{"class", kind}, {"reason", "timeout"}}, static_cast<double>(m.timeouts));
    Add(failed, {{"class", kind}, {"reason", "remote_error"}}, static_cast<double>(m.remote_errors - m.redirects));
    Add(failed, {{"class", kind}, {"reason", "redirect"}}, static_cast<double>(m.redirects));
    Add(failed, {{"class", kind}, {"reason", "send_error"}}, static_cast<double>(m.send_errors));
    Add(retried, {{"class", kind}}, static_cast<double>(m.retries));
    Add(busy, {{"class", kind}}, static_cast<double>(m.busy));
    Add(rtt, {{"class", kind}}, s.mad.srtt_seconds[k]);
    Add(timeout, {{"class", kind}}, s.mad.timeout_seconds[k]);
    for (const auto& [phase, counts] : {std::pair{"discovery", &s.discovery_mads}, std::pair{"sweep", &s.sweep_mads}}) {
      const transport::KindStats& c = (*counts)[k];
      Add(last, {{"phase", phase}, {"class", kind}, {"outcome", "sent"}}, static_cast<double>(c.sent));
      Add(last, {{"phase", phase}, {"class", kind}, {"outcome", "retried"}}, static_cast<double>(c.retries));
      Add(last, {{"phase", phase}, {"class", kind}, {"outcome", "timed_out"}}, static_cast<double>(c.timeouts));
    }
  }
  out(std::move(sent));
  out(std::move(failed));
  out(std::move(retried));
  out(std::move(busy));
  out(std::move(rtt));
  out(std::move(timeout));
  out(std::move(last));
  EmitOne(out, "infiniband_exporter_mads_ignored_total",
          "Received MADs matching no outstanding request (late, duplicate, garbled)",
          MetricType::Counter, static_cast<double>(s.mad.ignored));

  auto node_stale = Family("infiniband_exporter_node_stale",
                           "1 when no port of the node answered the last sweep (its totals are kept)",
                           MetricType::Gauge);
  auto node_failures = Family("infiniband_exporter_node_failures_total",
                              "Sweeps in which no port of the node answered", MetricType::Counter);
  auto node_last = Family("infiniband_exporter_node_last_success_timestamp_seconds",
                          "Unix time of the last sweep that read the node", MetricType::Gauge);
  auto node_trouble = Family("infiniband_exporter_node_mad_trouble_ratio",
                             "Fraction of the sweeps' MADs to the node over the alert window that needed a retry "
                             "or got no answer: how far its readings can be trusted",
                             MetricType::Gauge);
  for (const auto& [guid, h] : s.node_health) {
    const std::vector<ClientMetric::Label> labels{{"guid", FormatGuid(guid)}};
    Add(node_stale, labels, h.stale ? 1 : 0);
    Add(node_failures, labels, static_cast<double>(h.failures));
    Add(node_last, labels, h.last_success == std::chrono::system_clock::time_point{} ? 0 : Seconds(h.last_success));
    Add(node_trouble, labels, h.MadTroubleRatio());
  }
  out(std::move(node_stale));
  out(std::move(node_failures));
  out(std::move(node_last));
  out(std::move(node_trouble));
  EmitOne(out, "infiniband_exporter_discovery_unanswered",
          "Facts the last full walk asked for and got no answer to (kept from the walk before)", MetricType::Gauge,
          static_cast<double>(s.discovery_unanswered));
  EmitOne(out, "infiniband_exporter_discoveries_incomplete_total",
          "Full walks that missed answers and were merged into the last fabric", MetricType::Counter,
          static_cast<double>(s.incomplete_discoveries));

  EmitOne(out, "infiniband_exporter_port_resets_total",
          "Ports whose counters the exporter cleared (--counters.clear-threshold)",
          MetricType::Counter, static_cast<double>(s.counter_clears));
  EmitOne(out, "infiniband_exporter_lid_moves_total",
          "Nodes found answering under another LID than discovered (then rediscovered)",
          MetricType::Counter, static_cast<double>(s.lid_moves));

  std::size_t stale = 0;
  for (const auto& [ref, t] : s.ports) stale += t.stale ? 1 : 0;
  EmitOne(out, "infiniband_exporter_stale_ports",
          "Ports whose totals are from an earlier sweep (no answer in the last one)",
          MetricType::Gauge, static_cast<double>(stale));
}

// Labels of a cable: both ends by GUID (unique) and name (readable).
std::vector<ClientMetric::Label> CableLabels(const Snapshot& s, const topology::Link& l) {
  return {{"guid", FormatGuid(l.a.node_guid)},        {"node", LabelOf(s, l.a.node_guid).name},
          {"port", std::to_string(l.a.port)},          {"remote_guid", FormatGuid(l.b.node_guid)},
          {"remote_node", LabelOf(s, l.b.node_guid).name}, {"remote_port", std::to_string(l.b.port)}};
}

}  // namespace

void RenderTopology(const Snapshot& s, Emit out) {
  // A local exporter, or a shard other than the first, reports no fabric-wide
  // topology (see topology/scope.h): its analysis would be partial or a copy.
  if (!s.topology || !s.scope.reports_topology()) return;
  const topology::Analysis& a = *s.topology;
  const topology::Fabric& f = *s.fabric;
  auto name = [&f](std::uint64_t guid) { return topology::NodeName(f, guid); };

  EmitOne(out, "infiniband_topology_is_tree",
          "1 when the fabric ranks as a fat tree (else see infiniband_topology_finding)",
          MetricType::Gauge, a.is_tree ? 1 : 0);
  EmitOne(out, "infiniband_topology_tiers", "Switch tiers found", MetricType::Gauge, a.tiers);

  auto by_kind = Family("infiniband_topology_findings", "Topology findings of the last discovery, by kind",
                        MetricType::Gauge);
  std::map<topology::FindingKind, int> count;
  for (const auto& x : a.findings) ++count[x.kind];
  for (topology::FindingKind k : topology::kAllFindingKinds) Add(by_kind, {{"kind", topology::ToString(k)}}, count[k]);
  out(std::move(by_kind));
  // One series per finding, named by node and port, for alerts that say where.
  auto each = Family("infiniband_topology_finding", "1 for each topology finding, where it is",
                     MetricType::Gauge);
  for (const auto& x : a.findings) {
    Add(each,
        {{"kind", topology::ToString(x.kind)},
         {"node", x.a ? name(x.a->node_guid) : x.node ? name(x.node) : ""},
         {"port", x.a ? std::to_string(x.a->port) : ""},
         {"remote_node", x.b ? name(x.b->node_guid) : ""},
         {"remote_port", x.b ? std::to_string(x.b->port) : ""}},
        1);
  }
  if (!each.metric.empty()) out(std::move(each));

  auto degraded = Family("infiniband_link_degraded", "1 for each link running below its ends or its peers",
                         MetricType::Gauge);
  for (const auto& [l, why] : a.degraded) {
    auto labels = CableLabels(s, l);
    labels.push_back({"reason", topology::ToString(why)});
    Add(degraded, std::move(labels), 1);
  }
  if (!degraded.metric.empty()) out(std::move(degraded));

  auto tier = Family("infiniband_switch_tier", "Tier of the switch, from 0 at the leaves (-1: not ranked)",
                     MetricType::Gauge);
  auto up = Family("infiniband_switch_uplinks", "Links from the switch to the tier above", MetricType::Gauge);
  auto down = Family("infiniband_switch_downlinks",
                     "Links from the switch to the tier below (CA links not counted)", MetricType::Gauge);
  auto blocking = Family("infiniband_leaf_blocking_factor",
                         "Down bandwidth over up bandwidth of a leaf (1: non-blocking, 2: 2:1)", MetricType::Gauge);
  for (const auto& [guid, sw] : a.switches) {
    const std::vector<ClientMetric::Label> labels{{"guid", FormatGuid(guid)}, {"switch", name(guid)}};
    auto with_tier = labels;
    with_tier.push_back({"tier", topology::TierName(sw.tier)});
    Add(tier, with_tier, sw.tier);
    Add(up, labels, sw.up_links);
    Add(down, labels, sw.down_links);
    if (auto bf = topology::BlockingFactor(sw)) Add(blocking, labels, *bf);
  }
  for (auto* fam : {&tier, &up, &down, &blocking}) out(std::move(*fam));

  if (a.routing_read) {
    auto dests = Family("infiniband_routing_port_destinations",
                        "CA LIDs the switch's forwarding table sends out of each uplink (leaves) or downlink (above)",
                        MetricType::Gauge);
    auto spread = Family("infiniband_routing_spread",
                         "Most minus fewest destinations over the switch's uplinks (leaves) or downlinks (above)",
                         MetricType::Gauge);
    auto ratio = Family("infiniband_routing_max_min_ratio",
                        "Most over fewest destinations over those ports (absent when a port carries none)",
                        MetricType::Gauge);
    auto unrouted = Family("infiniband_routing_unrouted_destinations",
                           "CA LIDs the switch cannot forward (LFT holes, 0xFF, down ports)", MetricType::Gauge);
    for (const auto& [guid, r] : a.routing) {
      const std::vector<ClientMetric::Label> labels{{"guid", FormatGuid(guid)}, {"switch", name(guid)}};
      for (const auto& [port, n] : r.destinations) {
        auto l = labels;
        l.push_back({"port", std::to_string(port)});
        l.push_back({"direction", r.direction});
        Add(dests, l, n);
      }
      if (!r.destinations.empty()) Add(spread, labels, r.spread);
      if (r.max_min_ratio) Add(ratio, labels, *r.max_min_ratio);
      Add(unrouted, labels, r.unrouted);
    }
    for (auto* family : {&dests, &spread, &ratio, &unrouted}) {
      if (!family->metric.empty()) out(std::move(*family));
    }
    const topology::RoutingTotals totals = topology::SummarizeRouting(a);
    EmitOne(out, "infiniband_routing_fabric_max_spread",
            "Fabric-wide: the largest spread of destinations over any switch's uplinks or downlinks",
            MetricType::Gauge, totals.max_spread);
    if (totals.worst_max_min_ratio) {
      EmitOne(out, "infiniband_routing_fabric_max_min_ratio",
              "Fabric-wide: the largest most-over-fewest destinations ratio of any switch", MetricType::Gauge,
              *totals.worst_max_min_ratio);
    }
    EmitOne(out, "infiniband_routing_down_up_routes",
            "Leaf-to-CA routes that go down a tier and up again, or never arrive", MetricType::Gauge,
            a.down_up_routes);
  }

  if (a.partitions_read) {
    auto member = Family("infiniband_port_partition_info",
                         "1 for each partition a CA port belongs to (its P_Key table), full or limited member",
                         MetricType::Gauge);
    auto filter = Family("infiniband_switch_port_partition_info",
                         "1 for each P_Key in the table of a switch port facing a CA port: what partition "
                         "enforcement lets through",
                         MetricType::Gauge);
    auto enforcement = Family("infiniband_switch_port_partition_enforcement",
                              "1 when a switch port facing a CA port drops packets whose P_Key its table lacks "
                              "(PortInfo.PartitionEnforcementInbound/Outbound), by direction",
                              MetricType::Gauge);
    for (const auto& [ref, keys] : a.partitions) {
      const topology::Node* n = f.FindNode(ref.node_guid);
      const topology::Port* p = f.FindPort(ref);
      const bool on_switch = n && n->kind == topology::NodeKind::kSwitch;
      if (on_switch && p) {
        for (const auto& [direction, on] : {std::pair{"inbound", p->partition_enforcement_inbound},
                                            std::pair{"outbound", p->partition_enforcement_outbound}}) {
          Add(enforcement,
              {{"guid", FormatGuid(ref.node_guid)}, {"node", name(ref.node_guid)}, {"port", std::to_string(ref.port)},
               {"direction", direction}},
              on ? 1 : 0);
        }
      }
      for (std::uint16_t k : keys) {
        Add(on_switch ? filter : member,
            {{"guid", FormatGuid(ref.node_guid)},
             {"node", name(ref.node_guid)},
             {"port", std::to_string(ref.port)},
             {"pkey", topology::PartitionOf(k)},
             {"membership", topology::MembershipOf(k)}},
            1);
      }
    }
    if (!member.metric.empty()) out(std::move(member));
    if (!filter.metric.empty()) out(std::move(filter));
    if (!enforcement.metric.empty()) out(std::move(enforcement));
  }

  // Gb/s of data to bytes/s: 1e9 / 8.
  EmitOne(out, "infiniband_topology_bisection_bandwidth_bytes_per_second",
          "Estimated bisection bandwidth: sum over leaves of min(up, down) bandwidth",
          MetricType::Gauge, a.bisection_gbps * 1e9 / 8);
  EmitOne(out, "infiniband_topology_bisection_ratio",
          "Estimated bisection bandwidth over a non-blocking build of the same tiers",
          MetricType::Gauge, a.nonblocking_gbps > 0 ? a.bisection_gbps / a.nonblocking_gbps : 0);
}

namespace {

void RenderHealth(const Snapshot& s, Emit out) {
  const HealthReport& h = *s.health;
  auto up = Family("infiniband_link_up",
                   "1 while the cable's link is up; 0 for a cable seen up before that is down now",
                   MetricType::Gauge);
  auto downs = Family("infiniband_link_down_events_total",
                      "Times the cable went down (flaps, host resets, switch reboots, ports disabled): "
                      "LinkDownedCounter increments and Down states PortInfo read, each event once",
                      MetricType::Counter);
  std::size_t unreachable = 0;
  for (const CableHealth& c : h.cables) {
    Add(up, CableLabels(s, c.cable), c.up ? 1 : 0);
    Add(downs, CableLabels(s, c.cable), static_cast<double>(c.downs_total));
    unreachable += c.reachable ? 0 : 1;
  }
  out(std::move(up));
  out(std::move(downs));
  EmitOne(out, "infiniband_exporter_unreachable_links",
          "Cables neither end of which can be read or is known to discovery (state unknown, not down)",
          MetricType::Gauge, static_cast<double>(unreachable));
  auto events = Family("infiniband_link_down_explained_total",
                       "Link-down events that were no flap, by what they were: host_reset (the host's counters "
                       "restarted), switch_reboot (nearly every cable of one switch), port_disabled (on purpose)",
                       MetricType::Counter);
  for (DownKind k : {DownKind::kHostReset, DownKind::kSwitchReboot, DownKind::kPortDisabled}) {
    auto it = h.event_counts.find(k);
    Add(events, {{"kind", ToString(k)}}, it == h.event_counts.end() ? 0 : static_cast<double>(it->second));
  }
  out(std::move(events));

  // Per end of each cable, over the link-health window: what dashboards
  // and rules need without knowing each link's symbol time.
  auto wait = Family("infiniband_port_transmit_wait_ratio",
                     "Fraction of the window the port had data to send but no credits (PortXmitWait ticks "
                     "times the tick at the link's speed)",
                     MetricType::Gauge);
  auto ber = Family("infiniband_port_bit_error_ratio",
                    "Estimated bit error ratio of what the port received over the window (symbol errors "
                    "over bits received)",
                    MetricType::Gauge);
  for (const CableHealth& c : h.cables) {
    for (const EndRates* end : {&c.a, &c.b}) {
      const std::vector<ClientMetric::Label> labels{{"guid", FormatGuid(end->port.node_guid)},
                                                    {"node", LabelOf(s, end->port.node_guid).name},
                                                    {"port", std::to_string(end->port.port)}};
      if (end->xmit_wait_fraction) Add(wait, labels, *end->xmit_wait_fraction);
      if (end->bit_error_rate) Add(ber, labels, *end->bit_error_rate);
    }
  }
  if (!wait.metric.empty()) out(std::move(wait));
  if (!ber.metric.empty()) out(std::move(ber));

  auto active = Family("infiniband_alert_active", "1 for each active alert, on its cable, with cause and severity",
                       MetricType::Gauge);
  std::map<std::pair<Cause, Severity>, int> count;
  for (const Alert& a : h.active) {
    auto labels = CableLabels(s, a.cable);
    labels.insert(labels.begin(), {{"cause", ToString(a.cause)}, {"severity", ToString(a.severity)}});
    Add(active, std::move(labels), 1);
    ++count[{a.cause, a.severity}];
  }
  if (!active.metric.empty()) out(std::move(active));
  auto counts = Family("infiniband_alerts", "Active alerts by cause and severity", MetricType::Gauge);
  auto raised = Family("infiniband_alerts_raised_total", "Alerts raised since the exporter started, by cause",
                       MetricType::Counter);
  for (Cause c : kAllCauses) {
    for (Severity sev : {Severity::kWarning, Severity::kCritical}) {
      Add(counts, {{"cause", ToString(c)}, {"severity", ToString(sev)}}, count[{c, sev}]);
    }
    auto it = h.raised.find(c);
    Add(raised, {{"cause", ToString(c)}}, it == h.raised.end() ? 0 : static_cast<double>(it->second));
  }
  out(std::move(counts));
  out(std::move(raised));
}

void RenderSubnetManagers(const SmReport& r, Emit out) {
  auto info = Family("infiniband_sm_info", "A subnet manager found behind an IsSM port", MetricType::Gauge);
  auto state = Family("infiniband_sm_state",
                      "1 for the state the SM answered in SMInfo (not_answering when it did not answer)",
                      MetricType::Gauge);
  auto priority = Family("infiniband_sm_priority", "SMInfo.Priority of the SM (0-15)", MetricType::Gauge);
  auto act = Family("infiniband_sm_activity_count",
                    "SMInfo.ActCount: moves while the SM sends SMPs; a master's that stops means it stopped sweeping",
                    MetricType::Gauge);
  for (const SmStatus& sm : r.sms) {
    const std::vector<ClientMetric::Label> labels{
        {"guid", FormatGuid(sm.guid)}, {"node", sm.node}, {"port", std::to_string(sm.port.port)}};
    auto with_lid = labels;
    with_lid.push_back({"lid", std::to_string(sm.lid)});
    with_lid.push_back({"node_guid", FormatGuid(sm.port.node_guid)});
    Add(info, with_lid, 1);
    const std::string now = sm.answering ? transport::ToString(sm.state) : "not_answering";
    for (const char* st : {"master", "standby", "discovering", "not_active", "not_answering"}) {
      auto with_state = labels;
      with_state.push_back({"state", st});
      Add(state, with_state, now == st ? 1 : 0);
    }
    Add(priority, labels, sm.priority);
    if (sm.answering) Add(act, labels, sm.act_count);
  }
  for (auto* f : {&info, &state, &priority, &act}) {
    if (!f->metric.empty()) out(std::move(*f));
  }
  EmitOne(out, "infiniband_sm_masters",
          "Subnet managers answering as master (1 is healthy)",
          MetricType::Gauge, static_cast<double>(r.masters));
  EmitOne(out, "infiniband_sm_standbys",
          "Subnet managers answering as standby",
          MetricType::Gauge, static_cast<double>(r.standbys));
  EmitOne(out, "infiniband_sm_master_sweeping",
          "1 while the single master SM's ActCount keeps moving (see --sm.stall-after)",
          MetricType::Gauge, r.master_sweeping ? 1 : 0);
  EmitOne(out, "infiniband_sm_master_changes_total",
          "Times another SM became master (failovers) since start",
          MetricType::Counter, static_cast<double>(r.master_changes));
  auto conditions = Family("infiniband_sm_condition",
                           "1 while a subnet manager condition holds: no_master, no_standby, master_not_sweeping, "
                           "multiple_masters, failover (recent)",
                           MetricType::Gauge);
  for (SmCondition c : {SmCondition::kNoMaster, SmCondition::kNoStandby, SmCondition::kMasterNotSweeping,
                        SmCondition::kMultipleMasters, SmCondition::kFailover}) {
    const bool held = std::any_of(r.conditions.begin(), r.conditions.end(),
                                  [c](const SmConditionState& x) { return x.condition == c; });
    Add(conditions, {{"condition", ToString(c)}}, held ? 1 : 0);
  }
  out(std::move(conditions));
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
    RenderTopology(snapshot, emit);
    if (snapshot.health) RenderHealth(snapshot, emit);
    if (snapshot.subnet_managers) RenderSubnetManagers(*snapshot.subnet_managers, emit);
    RenderSelf(snapshot, version, emit);
  }
  return std::move(text).str();
}

}  // namespace ibfabric::collectors
