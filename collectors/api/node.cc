#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "collectors/api/detail/common.h"
#include "collectors/api/json.h"
#include "collectors/common/iso8601.h"
#include "collectors/framework/render.h"
#include "collectors/jobs_collector.h"
#include "collectors/parts/host.h"
#include "collectors/parts/partitions.h"
#include "config/text.h"

namespace ibfabric::collectors {
namespace {

using api::AlertToJson;
using api::End;
using api::NodeOf;
using api::ParseGuid;
using nlohmann::json;
using topology::FormatGuid;

// The counters of the driver's hw_counters/ the host rules watch
// (deploy/prometheus/infiniband-rules.yml, group infiniband-host), where
// the driver has them.
constexpr const char* kTransportCounters[] = {"req_transport_retries_exceeded", "req_rnr_retries_exceeded",
                                              "local_ack_timeout_err", "rnr_nak_retry_err", "out_of_buffer"};

// What the host's kernel says of the HCA with node GUID `guid`, or null
// where this exporter does not read the host (not local scope, another host).
json KernelJson(const Snapshot& s, std::uint64_t guid) {
  const auto* readings = s.by_collector.Get<HostReadings>(kHostCollector);
  if (!readings || !readings->reading) return nullptr;
  for (const host::HostDevice& d : readings->reading->devices) {
    if (host::ParseSysfsGuid(d.node_guid) != guid) continue;
    json pcie = nullptr;
    if (d.pcie) {
      pcie = {{"transfers_per_second", d.pcie->speed_gts * 1e9},
              {"width", d.pcie->width},
              {"max_transfers_per_second", d.pcie->max_speed_gts * 1e9},
              {"max_width", d.pcie->max_width},
              {"degraded", d.pcie->degraded()}};
    }
    json ports = json::array();
    for (const host::HostPort& p : d.ports) {
      json counters = json::object();
      for (const char* c : kTransportCounters) {
        const auto it = p.hw_counters.find(c);
        if (it != p.hw_counters.end()) counters[c] = it->second;
      }
      json jobs = json::array();
      if (const auto* held = s.by_collector.Get<JobReadings>(kJobsCollector)) {
        for (const JobPort& j : held->ports) {
          if (j.device != d.name || j.port != p.number) continue;
          jobs.push_back({{"source", j.holder.source},
                          {"hpc_job", j.holder.hpc_job},
                          {"namespace", j.holder.pod_namespace},
                          {"pod", j.holder.pod},
                          {"container", j.holder.container}});
        }
      }
      ports.push_back({{"port", p.number},
                       {"link_layer", p.link_layer},
                       {"state", p.state},
                       {"transport_errors", std::move(counters)},
                       {"jobs", std::move(jobs)}});
    }
    return {{"device", d.name},
            {"firmware_version", d.fw_ver},
            {"board_id", d.board_id},
            {"pci_address", d.pci_address},
            {"numa_node", d.numa_node < 0 ? json(nullptr) : json(d.numa_node)},
            {"pcie", std::move(pcie)},
            {"ports", std::move(ports)}};
  }
  return nullptr;
}

}  // namespace

bool ParseNodeQuery(const std::multimap<std::string, std::string>& params, std::uint64_t* guid, std::string* error) {
  std::optional<std::uint64_t> g;
  for (const auto& [k, v] : params) {
    if (k != "guid" || g) {
      *error = "unexpected parameter '" + config::Excerpt(k, 40) + "' (use guid, once)";
      return false;
    }
    g = ParseGuid(v, error);
    if (!g) return false;
  }
  if (!g) {
    *error = "guid is required";
    return false;
  }
  *guid = *g;
  return true;
}

nlohmann::json NodeDetailJson(const Snapshot& s, std::uint64_t asked) {
  const std::uint64_t guid = NodeOf(s, asked);
  const topology::Node* n = s.fabric ? s.fabric->FindNode(guid) : nullptr;
  if (!n) return nullptr;
  const topology::Analysis empty;
  const topology::Analysis& analysis = s.topology ? *s.topology : empty;
  json node = NodeJson(*s.fabric, analysis, *n);
  node.erase("ports");
  const topology::Pods pods = topology::FindPods(*s.fabric, analysis, s.hosts ? &s.hosts->leaf_unit : nullptr);
  if (auto p = pods.of.find(guid); p != pods.of.end()) node["pod"] = pods.names[static_cast<std::size_t>(p->second)];
  json ports = json::array();
  for (const topology::Port& p : n->ports) {
    json d = PortDetailJson(s, {guid, p.number});
    if (d.is_null()) continue;
    d.erase("schema_version");
    d.erase("alerts");
    if (const auto& remote = p.remote) {
      const auto l = analysis.degraded.find(topology::CableBetween({guid, p.number}, *remote));
      d["degraded"] = l == analysis.degraded.end() ? json(nullptr) : json(topology::ToString(l->second));
    }
    ports.push_back(std::move(d));
  }
  json alerts = json::array();
  if (s.health) {
    for (const Alert& a : s.health->active) {
      if (a.cable.a.node_guid == guid || a.cable.b.node_guid == guid) alerts.push_back(AlertToJson(s, a));
    }
  }
  json findings = json::array();
  if (s.topology) {
    for (const auto& f : topology::AllFindings(*s.topology, s.routing.get(),
                                               s.by_collector.Get<topology::PartitionAnalysis>(kPartitionsCollector))) {
      if (f.node != guid && !(f.a && f.a->node_guid == guid) && !(f.b && f.b->node_guid == guid)) continue;
      json j{{"kind", topology::ToString(f.kind)}, {"detail", f.detail}};
      j["a"] = f.a ? End(s, *f.a) : json(nullptr);
      j["b"] = f.b ? End(s, *f.b) : json(nullptr);
      findings.push_back(std::move(j));
    }
  }
  return {{"schema_version", kAlertsSchemaVersion},
          {"node", std::move(node)},
          {"ports", std::move(ports)},
          {"alerts", std::move(alerts)},
          {"findings", std::move(findings)}};
}

bool ParseHostQuery(const std::multimap<std::string, std::string>& params, std::string* name, std::string* error) {
  std::optional<std::string> n;
  for (const auto& [k, v] : params) {
    if (k != "name" || n) {
      *error = "unexpected parameter '" + config::Excerpt(k, 40) + "' (use name, once)";
      return false;
    }
    if (v.empty() || v.size() > 200) {
      *error = "name must be a host's name, 1 to 200 characters";
      return false;
    }
    n = v;
  }
  if (!n) {
    *error = "name is required";
    return false;
  }
  *name = *n;
  return true;
}

nlohmann::json HostDetailJson(const Snapshot& s, const std::string& name) {
  if (!s.hosts || !s.fabric) return nullptr;
  const topology::HostAnalysis& h = *s.hosts;
  const auto it = std::find_if(h.hosts.begin(), h.hosts.end(), [&](const topology::Host& x) { return x.name == name; });
  if (it == h.hosts.end()) return nullptr;
  const topology::Host& host = *it;
  const auto unit = [&h](int u) { return u < 0 ? json(nullptr) : json(h.units[static_cast<std::size_t>(u)]); };
  std::set<std::uint64_t> mine;
  for (const auto& x : host.hcas) mine.insert(x.guid);
  json hcas = json::array();
  for (const topology::Hca& x : host.hcas) {
    json ports = json::array();
    for (const topology::HcaPort& p : x.ports) {
      const topology::Port* port = s.fabric->FindPort({x.guid, p.port});
      const auto lu = h.leaf_unit.find(p.leaf.node_guid);
      ports.push_back({{"port", p.port},
                       {"state", port ? PortJson(*s.fabric, *port)["state"] : json(nullptr)},
                       {"rate", port ? PortJson(*s.fabric, *port)["rate"] : json(nullptr)},
                       {"leaf", End(s, p.leaf)},
                       {"rail", p.rail < 0 ? json(nullptr) : json(h.rails[static_cast<std::size_t>(p.rail)])},
                       {"rail_index", p.rail},
                       {"unit", lu == h.leaf_unit.end() ? json(nullptr) : unit(lu->second)}});
    }
    const topology::Node* n = s.fabric->FindNode(x.guid);
    hcas.push_back({{"device", x.device},
                    {"guid", FormatGuid(x.guid)},
                    {"name", n ? n->description : ""},
                    {"lid", n ? n->lid : 0},
                    {"ports", std::move(ports)},
                    {"kernel", KernelJson(s, x.guid)}});
  }
  json alerts = json::array();
  if (s.health) {
    for (const Alert& a : s.health->active) {
      if (mine.count(a.cable.a.node_guid) || mine.count(a.cable.b.node_guid)) alerts.push_back(AlertToJson(s, a));
    }
  }
  json findings = json::array();
  if (s.topology) {
    for (const auto& f : topology::AllFindings(*s.topology, s.routing.get(),
                                               s.by_collector.Get<topology::PartitionAnalysis>(kPartitionsCollector))) {
      if (!mine.count(f.node) && !(f.a && mine.count(f.a->node_guid)) && !(f.b && mine.count(f.b->node_guid))) continue;
      json j{{"kind", topology::ToString(f.kind)}, {"detail", f.detail}};
      j["a"] = f.a ? End(s, *f.a) : json(nullptr);
      j["b"] = f.b ? End(s, *f.b) : json(nullptr);
      findings.push_back(std::move(j));
    }
  }
  return {{"schema_version", kTopologySchemaVersion},
          {"host", host.name},
          {"layout", topology::ToString(h.layout)},
          {"unit", unit(host.unit)},
          {"hcas", std::move(hcas)},
          {"alerts", std::move(alerts)},
          {"findings", std::move(findings)}};
}

}  // namespace ibfabric::collectors
