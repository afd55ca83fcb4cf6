#include "topology/discovery.h"

#include <map>

#include "transport/attributes.h"

namespace ibfabric::topology {
namespace {

using transport::MadAddress;
using transport::MadOutcome;
using transport::MadRequest;
using transport::MadResult;
using Path = std::vector<std::uint8_t>;

NodeKind KindOf(transport::NodeType t) {
  switch (t) {
    case transport::NodeType::kCa: return NodeKind::kCa;
    case transport::NodeType::kSwitch: return NodeKind::kSwitch;
    case transport::NodeType::kRouter: return NodeKind::kRouter;
    case transport::NodeType::kUnknown: break;
  }
  return NodeKind::kUnknown;
}

std::string PathString(const Path& p) {
  std::string s = "[";
  for (std::size_t i = 0; i < p.size(); ++i) s += (i ? "," : "") + std::to_string(p[i]);
  return s + "]";
}

// Something answered NodeInfo at the end of `path`.
struct Visit {
  Path path;
  transport::NodeInfo info;
};

struct Building {
  Node node;
  Path path;  // a directed route that reaches this node
  std::map<std::uint8_t, Port> ports;
};

class Discoverer {
 public:
  Discoverer(transport::MadEngine& engine, DiscoverOptions options) : engine_(engine), options_(options) {}

  DiscoveryResult Run() {
    DiscoveryResult out;
    const std::vector<MadRequest> first{transport::NodeInfoQuery(MadAddress::Directed({}))};
    const auto r = RunBatch(first);
    if (r[0].outcome != MadOutcome::kOk) {
      out.problems.push_back(std::string("local node did not answer NodeInfo: ") +
                             transport::ToString(r[0].outcome));
      out.smps = smps_;
      return out;
    }
    const Visit local{{}, transport::DecodeNodeInfo(r[0].response)};
    out.local_node_guid = local.info.node_guid;
    out.local_port = local.info.local_port;

    std::vector<Visit> fresh = Admit({local});
    for (int hops = 0; !fresh.empty() && (options_.max_hops < 0 || hops < options_.max_hops); ++hops) {
      std::vector<Visit> reached = Probe(fresh, local);
      fresh = Admit(reached);
      LinkBack();
    }
    std::vector<Node> nodes;
    nodes.reserve(building_.size());
    for (auto& [guid, b] : building_) {
      for (auto& [num, port] : b.ports) b.node.ports.push_back(port);
      nodes.push_back(std::move(b.node));
    }
    out.fabric = Fabric(std::move(nodes));
    out.subnet_timeout = subnet_timeout_;
    out.problems = std::move(problems_);
    out.smps = smps_;
    out.ok = true;
    return out;
  }

 private:
  std::vector<MadResult> RunBatch(const std::vector<MadRequest>& reqs) {
    smps_ += reqs.size();
    return engine_.Run(reqs);
  }

  // Records the nodes and CA ports seen for the first time and reads their
  // descriptions and PortInfo. Returns the visits that were new.
  std::vector<Visit> Admit(const std::vector<Visit>& visits) {
    std::vector<Visit> fresh;
    std::vector<MadRequest> reqs;
    constexpr std::uint8_t kDescription = 0xff;  // not a port: the NodeDescription query
    struct Pending {
      std::uint64_t guid;
      std::uint8_t port;  // PortInfo of this port, or kDescription
    };
    std::vector<Pending> what;
    for (const Visit& v : visits) {
      const auto& ni = v.info;
      const MadAddress route = MadAddress::Directed(v.path);
      auto [it, inserted] = building_.try_emplace(ni.node_guid);
      Building& b = it->second;
      if (inserted) {
        b.node.guid = ni.node_guid;
        b.node.kind = KindOf(ni.node_type);
        b.node.num_ports = ni.num_ports;
        b.node.partition_cap = ni.partition_cap;
        b.path = v.path;
        reqs.push_back(transport::NodeDescriptionQuery(route));
        what.push_back({ni.node_guid, kDescription});
        if (b.node.kind == NodeKind::kSwitch) {
          // Port 0 holds the switch's LID (IBTA 14.2.5.6); 1..N the external ports.
          for (std::uint8_t p = 0; p <= ni.num_ports; ++p) {
            reqs.push_back(transport::PortInfoQuery(route, p));
            what.push_back({ni.node_guid, p});
            b.ports[p].number = p;
            b.ports[p].guid = ni.port_guid;
          }
          b.ports.erase(0);  // port 0 is internal; only its LID is kept
        }
      }
      bool is_new = inserted;
      if (b.node.kind != NodeKind::kSwitch && !b.ports.count(ni.local_port)) {
        // A CA (or router) port reached for the first time.
        Port& p = b.ports[ni.local_port];
        p.number = ni.local_port;
        p.guid = ni.port_guid;
        reqs.push_back(transport::PortInfoQuery(route, ni.local_port));
        what.push_back({ni.node_guid, ni.local_port});
        is_new = true;
      }
      if (is_new) fresh.push_back(v);
    }
    const auto results = RunBatch(reqs);
    for (std::size_t i = 0; i < results.size(); ++i) {
      Building& b = building_[what[i].guid];
      if (results[i].outcome != MadOutcome::kOk) {
        const std::string asked = what[i].port == kDescription
                                      ? "NodeDescription"
                                      : "PortInfo port " + std::to_string(what[i].port);
        problems_.push_back("no answer to " + asked + " from " + FormatGuid(what[i].guid) + " via " +
                            PathString(b.path) + ": " + transport::ToString(results[i].outcome));
        continue;
      }
      if (what[i].port == kDescription) {
        b.node.description = transport::DecodeNodeDescription(results[i].response);
        continue;
      }
      const transport::PortInfo pi = transport::DecodePortInfo(results[i].response);
      if (b.path.empty() && b.node.kind != NodeKind::kSwitch) subnet_timeout_ = pi.subnet_timeout;
      if (what[i].port == 0 && b.node.kind == NodeKind::kSwitch) {
        b.node.lid = pi.lid;
        b.node.ext_speeds2 = transport::HasExtendedSpeeds2(pi);
        for (auto& [num, port] : b.ports) port.lid = pi.lid;
        continue;
      }
      Port& p = b.ports[what[i].port];
      // A switch's capability masks live on port 0, answered before its
      // other ports (requested first, results in request order).
      if (b.node.kind != NodeKind::kSwitch) b.node.ext_speeds2 = transport::HasExtendedSpeeds2(pi);
      ApplyPortInfo(pi, b.node.ext_speeds2, &p);
      if (b.node.kind == NodeKind::kSwitch) {
        p.lid = b.node.lid;
      } else {
        p.lid = pi.lid;
        if (b.node.lid == 0) b.node.lid = pi.lid;
      }
    }
    return fresh;
  }

  // Asks NodeInfo through every up port of the switches just admitted (and
  // out of the local CA's port), records the near end of each link, and
  // returns the visits whose far port is not known yet.
  std::vector<Visit> Probe(const std::vector<Visit>& fresh, const Visit& local) {
    std::vector<MadRequest> reqs;
    struct From {
      std::uint64_t guid;
      std::uint8_t port;
      Path path;
    };
    std::vector<From> from;
    for (const Visit& v : fresh) {
      const Building& b = building_[v.info.node_guid];
      const bool is_local = v.path.empty();
      if (b.node.kind != NodeKind::kSwitch && !is_local) continue;  // CAs do not forward SMPs
      for (const auto& [num, port] : b.ports) {
        if (!port.link_up()) continue;
        if (b.node.kind != NodeKind::kSwitch && num != local.info.local_port) continue;
        Path next = v.path;
        next.push_back(num);
        reqs.push_back(transport::NodeInfoQuery(MadAddress::Directed(next)));
        from.push_back({v.info.node_guid, num, std::move(next)});
      }
    }
    const auto results = RunBatch(reqs);
    std::vector<Visit> visits;
    for (std::size_t i = 0; i < results.size(); ++i) {
      Building& b = building_[from[i].guid];
      if (results[i].outcome != MadOutcome::kOk) {
        problems_.push_back("no NodeInfo answer behind " + FormatGuid(from[i].guid) + " (" +
                            b.node.description + ") port " + std::to_string(from[i].port) + ": " +
                            transport::ToString(results[i].outcome));
        continue;
      }
      const transport::NodeInfo ni = transport::DecodeNodeInfo(results[i].response);
      const PortRef near{from[i].guid, from[i].port};
      const PortRef far{ni.node_guid, ni.local_port};
      b.ports[from[i].port].remote = far;
      // The far end is linked back once Admit() has created its port.
      links_.emplace_back(far, near);
      visits.push_back(Visit{from[i].path, ni});
    }
    return visits;
  }

  void LinkBack() {
    for (const auto& [port, remote] : links_) {
      auto it = building_.find(port.node_guid);
      if (it == building_.end()) continue;
      auto pit = it->second.ports.find(port.port);
      if (pit != it->second.ports.end()) pit->second.remote = remote;
    }
    links_.clear();
  }

  transport::MadEngine& engine_;
  const DiscoverOptions options_;
  std::map<std::uint64_t, Building> building_;
  std::vector<std::pair<PortRef, PortRef>> links_;  // (port, its remote) to record
  std::vector<std::string> problems_;
  std::size_t smps_ = 0;
  std::uint8_t subnet_timeout_ = 0;
};

}  // namespace

void ApplyPortInfo(const transport::PortInfo& pi, bool ext_speeds2, Port* p) {
  p->is_sm = (pi.capability_mask & transport::kPortCapIsSm) != 0;
  p->sm_lid = pi.sm_lid;
  p->partition_enforcement_inbound = pi.partition_enforcement_inbound;
  p->partition_enforcement_outbound = pi.partition_enforcement_outbound;
  p->state = pi.port_state;
  p->phys_state = pi.port_phys_state;
  p->width_active = pi.link_width_active;
  p->width_enabled = pi.link_width_enabled;
  p->width_supported = pi.link_width_supported;
  p->speed_active = pi.link_speed_active;
  p->speed_enabled = pi.link_speed_enabled;
  p->speed_supported = pi.link_speed_supported;
  p->speed_ext_active = pi.link_speed_ext_active;
  p->speed_ext_enabled = pi.link_speed_ext_enabled;
  p->speed_ext_supported = pi.link_speed_ext_supported;
  p->speed_ext2_active = ext_speeds2 ? pi.link_speed_ext2_active : 0;
  p->speed_ext2_enabled = ext_speeds2 ? pi.link_speed_ext2_enabled : 0;
  p->speed_ext2_supported = ext_speeds2 ? pi.link_speed_ext2_supported : 0;
}

DiscoveryResult Discover(transport::MadEngine& engine, DiscoverOptions options) {
  return Discoverer(engine, options).Run();
}

}  // namespace ibfabric::topology
