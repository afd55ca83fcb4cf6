#include "collectors/metrics.h"

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>
#include <string>

#include "collectors/framework/render.h"
#include "collectors/registry.h"

namespace ibfabric::collectors {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using topology::FormatGuid;

// What this exporter is: its version, scope and the port groups exported.
void RenderIdentity(const Snapshot& s, std::string_view version, const Emit& out) {
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
  if (!s.local.ca.empty()) {
    const LocalPortSummary& l = s.local;
    auto local = Family("infiniband_exporter_local_port_info",
                        "The local port MADs leave from: GMPs from ca/port, SMPs from smi_ca/smi_port (a multi-plane "
                        "HCA's SMI sub-device), on the subnet of subnet_prefix",
                        MetricType::Gauge);
    Add(local,
        {{"ca", l.ca},
         {"port", std::to_string(l.port)},
         {"smi_ca", l.smi_ca},
         {"smi_port", std::to_string(l.smi_port)},
         {"subnet_prefix", FormatGuid(l.subnet_prefix)}},
        1);
    out(std::move(local));
    if (s.scope.kind == topology::ScopeKind::kLocal) {
      auto unread = Family("infiniband_exporter_local_ports_unread",
                           "1 for each other Active port of this host on the fabric whose cable the last walk "
                           "could not read (local scope reads them by LID, their far ends named by the SA; the "
                           "log says why not)",
                           MetricType::Gauge);
      for (const std::string& p : l.unread_ports) {
        const auto slash = p.rfind('/');
        Add(unread, {{"ca", p.substr(0, slash)}, {"port", p.substr(slash + 1)}}, 1);
      }
      EmitNonEmpty(out, unread);
    }
    auto agents = Family("infiniband_exporter_mad_agent_registered",
                         "1 for each management class whose MAD agent registered on the local port, 0 for one that "
                         "could not (the exporter runs without it; its log says why)",
                         MetricType::Gauge);
    for (const char* c : {"smp_lid", "smp_directed", "perf", "sa", "vendor"}) {
      const bool missing = std::find(l.agents_missing.begin(), l.agents_missing.end(), c) != l.agents_missing.end();
      Add(agents, {{"class", c}}, missing ? 0 : 1);
    }
    out(std::move(agents));
  }
  auto groups =
      Family("infiniband_exporter_port_group_exported",
             "1 for each group of per-port series exported, 0 for one left out (--counters.groups)", MetricType::Gauge);
  for (std::size_t g = 0; g < kPortGroupCount; ++g) {
    Add(groups, {{"group", ToString(static_cast<PortGroup>(g))}}, s.port_groups.test(g) ? 1 : 0);
  }
  out(std::move(groups));
}

// Discovery and every collector: success and time; the sweeps.
void RenderRuns(const Snapshot& s, const Emit& out) {
  auto success =
      Family("infiniband_exporter_collector_success", "1 if the collector's last run succeeded", MetricType::Gauge);
  auto duration = Family("infiniband_exporter_collector_duration_seconds", "Duration of the collector's last run",
                         MetricType::Gauge);
  auto total = Family("infiniband_exporter_collector_seconds_total", "Time spent in the collector's runs since start",
                      MetricType::Counter);
  // Discovery (the scheduler's walks), then every collector on that ran.
  std::vector<std::pair<std::string, const PhaseHealth*>> runs{{"discovery", &s.discovery}};
  for (const auto& name : s.collectors) {
    if (auto it = s.runs.find(name); it != s.runs.end()) runs.emplace_back(name, &it->second);
  }
  for (const auto& [name, phase] : runs) {
    if (!phase->ran) continue;
    Add(success, {{"collector", name}}, phase->success ? 1 : 0);
    Add(duration, {{"collector", name}}, phase->duration_seconds);
    Add(total, {{"collector", name}}, phase->total_seconds);
  }
  out(std::move(success));
  out(std::move(duration));
  out(std::move(total));

  if (s.discovery_phases.ran) {
    auto phase = Family("infiniband_exporter_discovery_phase_seconds",
                        "Wall time of each phase of the last full discovery: the walk (what ibnetdiscover does), the "
                        "tables read after it, the analyses",
                        MetricType::Gauge);
    Add(phase, {{"phase", "walk"}}, s.discovery_phases.walk_seconds);
    Add(phase, {{"phase", "tables"}}, s.discovery_phases.tables_seconds);
    Add(phase, {{"phase", "analysis"}}, s.discovery_phases.analysis_seconds);
    out(std::move(phase));
  }

  EmitOne(out, "infiniband_exporter_sweep_duration_seconds", "Wall time of the last counter sweep", MetricType::Gauge,
          s.sweep_seconds);

  EmitOne(out, "infiniband_exporter_last_successful_sweep_timestamp_seconds",
          "Unix time at which the last successful sweep ended", MetricType::Gauge,
          s.last_success == std::chrono::system_clock::time_point{} ? 0 : Seconds(s.last_success));

  EmitOne(out, "infiniband_exporter_sweeps_total", "Counter sweeps run", MetricType::Counter,
          static_cast<double>(s.sweeps));
  auto discoveries =
      Family("infiniband_exporter_discoveries_total",
             "Fabric discoveries run: full walks, and incremental re-walks of what changed", MetricType::Counter);
  Add(discoveries, {{"mode", "full"}}, static_cast<double>(s.discoveries));
  Add(discoveries, {{"mode", "incremental"}}, static_cast<double>(s.rewalks));
  out(std::move(discoveries));
}

// MADs by phase, and the traps subscribed to and received.
void RenderPhasesAndTraps(const Snapshot& s, const Emit& out) {
  // The budget: what each phase costs the fabric, cumulatively
  // (docs/mad-volume.md).
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
  auto traps =
      Family("infiniband_exporter_traps_total",
             "Traps the subnet manager reported to this exporter (SA Reports), by trap number", MetricType::Counter);
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
}

// The last sweep's ports, the fabric's nodes, and the MADs by kind.
void RenderMads(const Snapshot& s, const Emit& out) {
  auto ports = Family("infiniband_exporter_sweep_ports", "Ports read in the last sweep, by result", MetricType::Gauge);
  Add(ports, {{"result", "ok"}}, static_cast<double>(s.targets - s.failed_ports));
  Add(ports, {{"result", "failed"}}, static_cast<double>(s.failed_ports));
  out(std::move(ports));

  auto nodes = Family("infiniband_exporter_fabric_nodes", "Nodes found by the last discovery", MetricType::Gauge);
  Add(nodes, {{"type", "switch"}}, static_cast<double>(s.fabric->switch_count()));
  Add(nodes, {{"type", "hca"}}, static_cast<double>(s.fabric->ca_count()));
  out(std::move(nodes));

  // The exporter's own load on the fabric, by kind of MAD (transport/mad.h
  // MadKind): what it sends, what it retries, what fails and why.
  auto sent =
      Family("infiniband_exporter_mads_sent_total", "MADs sent, retries included, by kind", MetricType::Counter);
  auto failed = Family("infiniband_exporter_mad_failures_total", "MAD requests that failed, by kind and reason",
                       MetricType::Counter);
  auto retried = Family("infiniband_exporter_mad_retries_total",
                        "MADs sent again after a timed-out attempt or a Busy reply, by kind", MetricType::Counter);
  auto busy = Family("infiniband_exporter_mad_busy_total", "Replies with the Busy status (IBTA 13.4.7), by kind",
                     MetricType::Counter);
  auto redirected = Family("infiniband_exporter_mad_redirects_total",
                           "Redirect replies followed (IBTA 13.5.3.3): the request went again to the LID, QP and "
                           "Q_Key the agent's ClassPortInfo named, as do later ones of its class to that LID, by kind",
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
    Add(failed, {{"class", kind}, {"reason", "redirect"}}, static_cast<double>(m.redirects - m.redirects_unsupported));
    Add(failed, {{"class", kind}, {"reason", "redirect_unsupported"}}, static_cast<double>(m.redirects_unsupported));
    Add(failed, {{"class", kind}, {"reason", "send_error"}}, static_cast<double>(m.send_errors));
    Add(retried, {{"class", kind}}, static_cast<double>(m.retries));
    Add(busy, {{"class", kind}}, static_cast<double>(m.busy));
    Add(redirected, {{"class", kind}}, static_cast<double>(m.redirected));
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
  out(std::move(redirected));
  out(std::move(rtt));
  out(std::move(timeout));
  out(std::move(last));
  EmitOne(out, "infiniband_exporter_mads_ignored_total",
          "Received MADs matching no outstanding request (late, duplicate, garbled)", MetricType::Counter,
          static_cast<double>(s.mad.ignored));
}

// The nodes it could not read, lost answers, LID moves, stale ports.
void RenderNodes(const Snapshot& s, const Emit& out) {
  // One family after the other (FamilyParts), over the nodes whose health
  // this exporter states.
  std::vector<std::pair<std::string, const NodeHealth*>> stated;  // GUID, health
  for (const auto& [guid, h] : *s.node_health) {
    if (h.counted && OwnsNodeHealth(s, guid)) stated.emplace_back(FormatGuid(guid), &h);  // one exporter states it
  }
  const auto per_node = [&](const char* name, const char* help, MetricType type, double (*value)(const NodeHealth&)) {
    FamilyParts f(out, name, help, type);
    for (const auto& [guid, h] : stated) f.Add({{"guid", guid}}, value(*h));
    f.Finish();
  };
  per_node("infiniband_exporter_node_stale", "1 when no port of the node answered the last sweep (its totals are kept)",
           MetricType::Gauge, [](const NodeHealth& h) { return h.stale ? 1.0 : 0.0; });
  per_node("infiniband_exporter_node_failures_total", "Sweeps in which no port of the node answered",
           MetricType::Counter, [](const NodeHealth& h) { return static_cast<double>(h.failures); });
  per_node("infiniband_exporter_node_last_success_timestamp_seconds", "Unix time of the last sweep that read the node",
           MetricType::Gauge, [](const NodeHealth& h) {
             return h.last_success == std::chrono::system_clock::time_point{} ? 0 : Seconds(h.last_success);
           });
  per_node("infiniband_exporter_node_mad_trouble_ratio",
           "Fraction of the sweeps' MADs to the node over the alert window that needed a retry or got no answer: "
           "how far its readings can be trusted",
           MetricType::Gauge, [](const NodeHealth& h) { return h.MadTroubleRatio(); });
  EmitOne(out, "infiniband_exporter_discovery_unanswered",
          "Facts the last full walk asked for and got no answer to (kept from the walk before)", MetricType::Gauge,
          static_cast<double>(s.discovery_unanswered));
  EmitOne(out, "infiniband_exporter_discoveries_incomplete_total",
          "Full walks that missed answers and were merged into the last fabric", MetricType::Counter,
          static_cast<double>(s.incomplete_discoveries));

  if (s.traps_delivering) {
    EmitOne(out, "infiniband_exporter_traps_delivering",
            "0 when the SA accepted the trap subscription but link changes the sweeps found came with no Report "
            "(no shared P_Key with the sources, or the SM does not forward them); 1 once Reports arrive",
            MetricType::Gauge, *s.traps_delivering ? 1 : 0);
  }
  EmitOne(out, "infiniband_exporter_smps_blocked",
          "1 when the fabric drops this exporter's SMPs while answering its GMPs: M_Key protection without the "
          "right key (docs/security.md#m_key); the fabric is then not walked",
          MetricType::Gauge, s.smps_blocked ? 1 : 0);
  EmitOne(out, "infiniband_exporter_smps_blocked_lids",
          "LIDs seen dropping this exporter's SMPs while answering its GMPs (0 unless smps_blocked)", MetricType::Gauge,
          static_cast<double>(s.smp_blocked_lids));
  EmitOne(out, "infiniband_exporter_mkey_given", "1 when an M_Key was given (--ib.m-key-file, --ib.m-key)",
          MetricType::Gauge, s.m_key_given ? 1 : 0);

  EmitOne(out, "infiniband_exporter_port_resets_total",
          "Ports whose counters the exporter cleared (--counters.clear-threshold)", MetricType::Counter,
          static_cast<double>(s.counter_clears));
  EmitOne(out, "infiniband_exporter_lid_moves_total",
          "Nodes found answering under another LID than discovered (then rediscovered)", MetricType::Counter,
          static_cast<double>(s.lid_moves));

  std::size_t stale = 0;
  for (const auto& [ref, t] : *s.ports) stale += t.stale ? 1 : 0;
  EmitOne(out, "infiniband_exporter_stale_ports",
          "Ports whose totals are from an earlier sweep (no answer in the last one)", MetricType::Gauge,
          static_cast<double>(stale));
}

// The exporter's own health: its discovery and collectors, its MADs, its
// sweeps, the nodes it could not read.
void RenderSelf(const Snapshot& s, std::string_view version, const Emit& out) {
  RenderIdentity(s, version, out);
  RenderRuns(s, out);
  RenderPhasesAndTraps(s, out);
  RenderMads(s, out);
  RenderNodes(s, out);
}

// The HTTP endpoint's error replies. 500 is always there (0 until one is
// sent), so that increase() sees the first one.
void RenderHttp(const Snapshot& s, const Emit& out) {
  auto errors =
      Family("infiniband_exporter_http_errors_total",
             "HTTP replies with an error status (400 or more) since start, by status code", MetricType::Counter);
  std::map<int, std::uint64_t> codes = s.http_errors;
  codes.emplace(500, 0);
  for (const auto& [code, n] : codes) Add(errors, {{"code", std::to_string(code)}}, static_cast<double>(n));
  out(std::move(errors));
}

}  // namespace

std::string RenderExposition(const Snapshot& snapshot, std::string_view version) {
  std::ostringstream text;
  RenderExposition(snapshot, version, text);
  return std::move(text).str();
}

void RenderExposition(const Snapshot& snapshot, std::string_view version, std::ostream& text,
                      const FabricLabels& fabric_labels) {
  const prometheus::TextSerializer serializer;
  std::vector<MetricFamily> one(1);
  std::string last;  // the name of the family emitted last
  std::ostringstream part;
  std::vector<ClientMetric::Label> first;
  for (const auto& [name, value] : fabric_labels) first.push_back({name, value});
  const Emit emit = [&](MetricFamily&& f) {
    one[0] = std::move(f);
    if (!first.empty()) {
      for (ClientMetric& m : one[0].metric) {
        // A series that names its subnet prefix itself (local_port_info) keeps its own.
        std::vector<ClientMetric::Label> add;
        for (const auto& l : first) {
          const bool has = std::any_of(m.label.begin(), m.label.end(), [&](const auto& x) { return x.name == l.name; });
          if (!has) add.push_back(l);
        }
        m.label.insert(m.label.begin(), add.begin(), add.end());
      }
    }
    if (one[0].name != last) {
      last = one[0].name;
      serializer.Serialize(text, one);
      return;
    }
    // A further part of the same family: its series, without its HELP
    // (left out when empty) and TYPE lines again.
    one[0].help.clear();
    part.str("");
    serializer.Serialize(part, one);
    const std::string body = std::move(part).str();
    const std::size_t type_end = body.find('\n') + 1;
    text.write(body.data() + type_end, static_cast<std::streamsize>(body.size() - type_end));
  };
  for (const auto& c : Registry()) {
    if (snapshot.Enabled(c.name)) c.render(snapshot, emit);
  }
  if (snapshot.fabric) {
    RenderSelf(snapshot, version, emit);
    if (snapshot.http_known) RenderHttp(snapshot, emit);
  }
  text.flush();
}

}  // namespace ibfabric::collectors
