#include "topology/discovery.h"

#include <map>
#include <optional>
#include <set>

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
  bool lid_active = false;  // node.lid is on an Active port
  bool reached = true;      // an incremental walk reaches it from the local node
  bool lid_only = false;    // read by LID only (a host port of DiscoverOptions::host_ports, its switch): no route
};

constexpr std::uint8_t kPhysStatePolling = 2;  // IBTA PortPhysicalState: no link, trying

// Devices that answer Mellanox ExtendedPortInfo, as libibnetdisc's
// is_mlnx_ext_port_info_supported lists them by NodeInfo.DeviceID:
// SwitchX 0xc738-0xc73b, Switch-IB 0xcb20, Switch-IB 2 0xcf08,
// ConnectX-3 to ConnectX-5 0x1003-0x1017, and Bull's (VendorID 0x119f)
// SwitchX, Switch-IB, ConnectX-3, Connect-IB and ConnectX-4. Later devices
// have no FDR10.
bool HasMlnxExtPortInfo(const Node& n) {
  const std::uint16_t d = n.device_id;
  if ((d >= 0xc738 && d <= 0xc73b) || d == 0xcb20 || d == 0xcf08 || (d >= 0x1003 && d <= 0x1017)) return true;
  if (n.vendor_id != 0x119f) return false;
  static constexpr std::uint16_t kBull[] = {0x1b02, 0x1b50, 0x1ba0, 0x1bd0, 0x1bd1, 0x1bd2, 0x1bd3,
                                            0x1bd4, 0x1bd5, 0x1b33, 0x1b73, 0x1b40, 0x1b41, 0x1b60,
                                            0x1b61, 0x1b83, 0x1b93, 0x1b94, 0x1bb4, 0x1bb5, 0x1bc4};
  for (std::uint16_t b : kBull) {
    if (d == b) return true;
  }
  return false;
}

// What a node's NodeInfo says of it: what a walk knows of a node before
// asking more.
void FromNodeInfo(const transport::NodeInfo& ni, Node* n) {
  n->guid = ni.node_guid;
  n->kind = KindOf(ni.node_type);
  n->num_ports = ni.num_ports;
  n->partition_cap = ni.partition_cap;
  n->vendor_id = ni.vendor_id;
  n->device_id = ni.device_id;
  n->system_image_guid = ni.system_image_guid;
}

// A port whose PortInfo shows QDR, which may be FDR10 (or, at QDR, could be).
bool RunsQdr(const Port& p) {
  return p.link_up() && p.speed_active == 4 && p.speed_ext_active == 0 && p.speed_ext2_active == 0;
}

class Discoverer {
 public:
  Discoverer(transport::MadEngine& engine, DiscoverOptions options) : engine_(engine), options_(options) {}

  DiscoveryResult Run() {
    DiscoveryResult out;
    const std::vector<MadRequest> first{transport::NodeInfoQuery(MadAddress::Directed({}))};
    const auto r = RunBatch(first);
    if (r[0].outcome != MadOutcome::kOk) {
      out.problems.push_back(std::string("local node did not answer NodeInfo: ") + transport::ToString(r[0].outcome));
      out.smps = smps_;
      return out;
    }
    const Visit local{{}, transport::DecodeNodeInfo(r[0].response)};
    out.local_node_guid = local.info.node_guid;
    out.local_port = local.info.local_port;
    local_port_ = local.info.local_port;

    std::vector<Visit> fresh = Admit({local});
    for (int hops = 0; !fresh.empty() && (options_.max_hops < 0 || hops < options_.max_hops); ++hops) {
      std::vector<Visit> reached = Probe(fresh);
      fresh = Admit(reached);
      LinkBack();
    }
    ReadHostPorts(&out);
    ReadMlnxSpeeds();
    Finish(&out);
    return out;
  }

  IncrementalResult RunIncremental(const Fabric& base, std::uint64_t local_guid, std::uint8_t local_port,
                                   const std::vector<PortChange>& changes) {
    IncrementalResult out;
    out.discovery.local_node_guid = local_guid;
    out.discovery.local_port = local_port;
    local_port_ = local_port;
    Seed(base, local_guid);
    if (!building_.count(local_guid)) {
      out.trusted = false;
      out.reread.push_back("the local node is not in the fabric");
      Finish(&out.discovery);
      return out;
    }
    std::set<std::uint64_t> known_before;
    for (const auto& [guid, b] : building_) known_before.insert(guid);
    std::vector<PortChange> relid;
    const std::vector<Behind> behind = ApplyChanges(changes, &out, &relid);
    std::vector<Ask> far_ports;
    std::vector<Visit> fresh = Admit(ProbeBehind(behind, &out, &far_ports));
    LinkBack();
    RereadPorts(far_ports);
    Relid(relid, &out);
    while (!fresh.empty()) {
      std::vector<Visit> next = Probe(fresh);
      fresh = Admit(next);
      LinkBack();
    }
    for (const auto& [guid, b] : building_) {
      if (!known_before.count(guid)) out.new_nodes.push_back(guid);
    }
    Prune(local_guid, &out.gone_nodes);
    for (std::uint64_t g : out.gone_nodes) {
      out.reread.push_back("dropped " + FormatGuid(g) + ": no longer reachable");
    }
    ReadMlnxSpeeds();
    Finish(&out.discovery);
    return out;
  }

 private:
  // What one query of Admit() asks.
  static constexpr std::uint8_t kDescription = 0xff;  // not a port: the NodeDescription query
  struct Ask {
    std::uint64_t guid;
    std::uint8_t port;  // PortInfo of this port, or kDescription
  };

  // An up port a re-walk looks behind.
  struct Behind {
    PortChange change;
    Path path;
    std::optional<PortRef> was;  // its far end before
    std::string why;             // where and why, for the log
  };

  // Applies what each change read to its port: a port that went down loses
  // its link at both ends; the up ones are returned, to look behind. A
  // switch's port 0 goes to `relid`.
  std::vector<Behind> ApplyChanges(const std::vector<PortChange>& changes, IncrementalResult* out,
                                   std::vector<PortChange>* relid) {
    std::vector<Behind> behind;
    for (const PortChange& c : changes) {
      auto it = building_.find(c.port.node_guid);
      if (it == building_.end() || !it->second.reached) {
        out->trusted = false;
        out->reread.push_back(FormatGuid(c.port.node_guid) + "[" + std::to_string(c.port.port) + "] (" + c.why +
                              "): not a node of the fabric");
        continue;
      }
      Building& b = it->second;
      if (c.port.port == 0 && b.node.kind == NodeKind::kSwitch) {
        relid->push_back(c);
        continue;
      }
      Port& p = b.ports[c.port.port];
      p.number = c.port.port;
      const std::optional<PortRef> was = p.remote;
      CopyLink(c.now, &p);
      p.mlnx = {};  // read again after the re-walk
      const std::string where = Named(b) + "[" + std::to_string(c.port.port) + "] (" + c.why + ")";
      if (!p.link_up()) {
        p.remote.reset();
        if (was) Unlink(*was);
        out->reread.push_back(where + ": down" + (was ? ", was " + Named(*was) : std::string()));
        continue;
      }
      Path path = b.path;
      path.push_back(c.port.port);
      if (path.size() > transport::kMaxDirectedHops) {
        problems_.push_back(BeyondDirectedRoute(where));
        continue;
      }
      behind.push_back({c, std::move(path), was, where});
    }
    return behind;
  }

  // NodeInfo through each port (directed): links both ends to what answers
  // and returns the visits for Admit(); the far ports of nodes already
  // known go to `far_ports`, to be read again.
  std::vector<Visit> ProbeBehind(const std::vector<Behind>& behind, IncrementalResult* out,
                                 std::vector<Ask>* far_ports) {
    std::vector<MadRequest> reqs;
    for (const Behind& x : behind) reqs.push_back(transport::NodeInfoQuery(MadAddress::Directed(x.path)));
    const auto results = RunBatch(reqs);
    std::vector<Visit> reached;
    for (std::size_t i = 0; i < behind.size(); ++i) {
      const Behind& x = behind[i];
      if (results[i].outcome != MadOutcome::kOk) {
        // Unknown, not gone: the link it had stays, and it is asked again.
        out->reread.push_back(x.why + ": no NodeInfo answer behind it (" + transport::ToString(results[i].outcome) +
                              "); " + (x.was ? "keeping " + Named(*x.was) : std::string("nothing known there")) +
                              ", asking again later");
        problems_.push_back("no NodeInfo answer behind " + x.why + ": " + transport::ToString(results[i].outcome));
        unanswered_.behind.insert(x.change.port);
        out->retry.push_back(x.change);
        continue;
      }
      const transport::NodeInfo ni = transport::DecodeNodeInfo(results[i].response);
      const PortRef far{ni.node_guid, ni.local_port};
      const PortRef near = x.change.port;
      if (x.was && *x.was != far) Unlink(*x.was);
      building_[near.node_guid].ports[near.port].remote = far;
      links_.emplace_back(far, near);
      auto known = building_.find(ni.node_guid);
      const bool is_known = known != building_.end() && known->second.reached;
      out->reread.push_back(x.why + ": " + (is_known ? Named(far) : "new node " + FormatGuid(ni.node_guid)) +
                            (x.was && *x.was == far ? " (same cable)" : ""));
      if (is_known) {
        Building& f = known->second;
        if (f.node.kind != NodeKind::kSwitch) f.path = x.path;  // a CA's one route is through this cable
        if (f.ports.count(ni.local_port)) far_ports->push_back({ni.node_guid, ni.local_port});
      } else if (known != building_.end()) {
        building_.erase(known);  // dropped earlier, back now: admitted afresh
      }
      reached.push_back(Visit{x.path, ni});
    }
    return reached;
  }

  // PortInfo of known ports again: LID-routed where the LID allows (a
  // switch port), directed for a CA port (its LID may be what changed).
  void RereadPorts(const std::vector<Ask>& ports) {
    std::vector<Ask> by_lid;
    std::vector<Ask> directed;
    for (const Ask& a : ports) {
      const Building& f = building_[a.guid];
      (f.node.kind == NodeKind::kSwitch && LidUsable(f) ? by_lid : directed).push_back(a);
    }
    std::vector<Ask> unanswered = AskByLid(by_lid);
    directed.insert(directed.end(), unanswered.begin(), unanswered.end());
    AskAll(directed, /*lid_routed=*/false);
  }

  // The LID of each switch whose agent stopped answering by LID, read from
  // its port 0 over its directed route; what does not answer is retried.
  void Relid(const std::vector<PortChange>& relid, IncrementalResult* out) {
    std::vector<Ask> asks;
    std::map<std::uint64_t, std::uint16_t> before;
    for (const PortChange& c : relid) {
      asks.push_back({c.port.node_guid, 0});
      before[c.port.node_guid] = building_[c.port.node_guid].node.lid;
    }
    AskAll(asks, /*lid_routed=*/false);
    for (const PortChange& c : relid) {
      const Building& b = building_[c.port.node_guid];
      if (unanswered_.ports.count({c.port.node_guid, 0})) {
        out->reread.push_back(Named(b) + " (" + c.why + "): its LID did not answer, asking again later");
        out->retry.push_back(c);
        continue;
      }
      const std::uint16_t was = before[c.port.node_guid];
      out->reread.push_back(Named(b) + " (" + c.why + "): LID " + std::to_string(b.node.lid) +
                            (b.node.lid == was ? " (same)" : ", was " + std::to_string(was)));
    }
  }

  // A switch port to read at the far end of a host port's cable.
  struct FarEnd {
    const HostPort* hp = nullptr;
    std::uint64_t host_node = 0;  // the host port's node; 0: the host port is down (not read)
    std::uint16_t lid = 0;        // the switch's LID and port
    std::uint8_t port = 0;
    std::uint64_t expected = 0;  // the switch's GUID where known (a down port's last far end)
  };

  // The node of `ni`, admitted as read by LID only (no directed route to
  // it) when the walk did not know it; whether it was new.
  std::pair<Building&, bool> LidOnly(const transport::NodeInfo& ni) {
    auto [it, inserted] = building_.try_emplace(ni.node_guid);
    if (inserted) {
      FromNodeInfo(ni, &it->second.node);
      it->second.lid_only = true;
    }
    return {it->second, inserted};
  }

  // A host port not read, and why; `lost`: for want of an answer (or for
  // an answer from another node), not for how things are set up.
  void Unread(DiscoveryResult* out, const HostPort& hp, const std::string& why, bool lost) {
    out->host_ports_unread.push_back(hp.name);
    if (lost) unanswered_.host_ports.insert(hp.port_guid);
    problems_.push_back("this host's port " + hp.name + " (LID " + std::to_string(hp.lid) + ") not read: " + why);
  }

  // The host's other ports on the fabric (DiscoverOptions::host_ports) and
  // the switch ports their cables lead to, by LID: an Active port's far end
  // as the SA names it, a port no longer Active's where it led when last
  // read (read down there). What cannot be read is named in `out`; what
  // did not answer (or answered as another node) is in unanswered_ too,
  // so that the merge keeps what the last walk read there.
  void ReadHostPorts(DiscoveryResult* out) {
    const auto unread = [&](const HostPort& hp, const std::string& why, bool lost) { Unread(out, hp, why, lost); };
    std::vector<FarEnd> fars;
    std::vector<const HostPort*> asked;
    for (const HostPort& hp : options_.host_ports) {
      out->host_port_guids.insert(hp.port_guid);
      if (!local_active_) {
        unread(hp, "the local port is not Active, no LID route leaves it", false);
      } else if (!hp.active) {
        if (hp.last_far && hp.last_far_lid != 0) {
          fars.push_back({&hp, 0, hp.last_far_lid, hp.last_far->port, hp.last_far->node_guid});
        } else {
          unread(hp, "not Active, and where its cable leads is not known", false);
        }
      } else if (hp.lid == 0 || hp.lid > 0xBFFF) {
        unread(hp, "it has no unicast LID", false);
      } else if (options_.sa_lid == 0) {
        unread(hp, "no SA known to name the far end of its cable", false);
      } else {
        asked.push_back(&hp);
      }
    }
    // Each Active port: NodeInfo (its identity), NodeDescription, PortInfo,
    // in that order to its LID, and its LinkRecord from the SA.
    std::vector<MadRequest> reqs;
    for (const HostPort* hp : asked) {
      const MadAddress at = MadAddress::Lid(hp->lid);
      reqs.push_back(transport::NodeInfoQuery(at));
      reqs.push_back(transport::NodeDescriptionQuery(at));
      reqs.push_back(transport::PortInfoQuery(at, hp->port));
      reqs.push_back(transport::LinkRecordQuery(options_.sa_lid, hp->lid));
    }
    const std::vector<MadResult> r = reqs.empty() ? std::vector<MadResult>{} : RunBatch(reqs);
    for (std::size_t i = 0; i < asked.size(); ++i) {
      const HostPort& hp = *asked[i];
      const MadResult* a = &r[4 * i];
      if (a[0].outcome != MadOutcome::kOk) {
        unread(hp, std::string("no NodeInfo answer by LID: ") + transport::ToString(a[0].outcome), true);
        continue;
      }
      const transport::NodeInfo ni = transport::DecodeNodeInfo(a[0].response);
      if (ni.port_guid != hp.port_guid) {
        unread(hp, "its LID answered as port " + FormatGuid(ni.port_guid) + ", not its own " + FormatGuid(hp.port_guid),
               true);
        continue;
      }
      if (a[2].outcome != MadOutcome::kOk) {
        unread(hp, std::string("no PortInfo answer by LID: ") + transport::ToString(a[2].outcome), true);
        continue;
      }
      const std::optional<transport::LinkRecord> link =
          a[3].outcome == MadOutcome::kOk ? transport::DecodeLinkRecord(a[3].response) : std::nullopt;
      if (!link || link->from_lid != hp.lid || link->from_port != hp.port || link->to_lid == 0) {
        // Not evidence either: the SA may not have swept the port yet.
        unread(hp,
               "the SA at LID " + std::to_string(options_.sa_lid) + " gave no LinkRecord for it (" +
                   (a[3].outcome == MadOutcome::kOk ? std::string("none") : transport::ToString(a[3].outcome)) + ")",
               true);
        continue;
      }
      Building& b = LidOnly(ni).first;
      Port& p = b.ports[hp.port];
      p.number = hp.port;
      p.guid = ni.port_guid;
      Record({ni.node_guid, hp.port}, a[2], b);
      if (a[1].outcome == MadOutcome::kOk) {
        Record({ni.node_guid, kDescription}, a[1], b);
      } else if (b.lid_only) {
        unanswered_.descriptions.insert(ni.node_guid);
      }
      fars.push_back({&hp, ni.node_guid, link->to_lid, link->to_port, 0});
    }
    ReadFarEnds(fars, out);
  }

  // The switch ports at the far ends of host ports, by LID: NodeInfo,
  // NodeDescription and PortInfo port 0 (its LID, its capabilities) of each
  // switch once, then each far port's PortInfo; a switch whose GUID is not
  // known (an Active host port's: the SA's LinkRecord named only its LID)
  // is taken only if the SA's NodeRecord for that LID names the GUID that
  // answers. A failure leaves the host port's far end as the last walk had
  // it (unanswered_.behind).
  void ReadFarEnds(const std::vector<FarEnd>& fars, DiscoveryResult* out) {
    std::map<std::uint16_t, std::vector<std::size_t>> by_lid;  // switch LID -> its fars
    for (std::size_t i = 0; i < fars.size(); ++i) by_lid[fars[i].lid].push_back(i);
    // The switch's GUID where a far end of it says (a down port's last), or
    // 0: the SA's NodeRecord is asked for it.
    std::map<std::uint16_t, std::uint64_t> known;
    for (const auto& [lid, which] : by_lid) {
      for (std::size_t i : which) {
        if (fars[i].expected != 0) known[lid] = fars[i].expected;
      }
    }
    std::vector<MadRequest> reqs;
    for (const auto& [lid, which] : by_lid) {
      const MadAddress at = MadAddress::Lid(lid);
      if (!known.count(lid)) reqs.push_back(transport::NodeRecordQuery(options_.sa_lid, lid));
      reqs.push_back(transport::NodeInfoQuery(at));
      reqs.push_back(transport::NodeDescriptionQuery(at));
      reqs.push_back(transport::PortInfoQuery(at, 0));
      for (std::size_t i : which) reqs.push_back(transport::PortInfoQuery(at, fars[i].port));
    }
    if (reqs.empty()) return;
    const std::vector<MadResult> s = RunBatch(reqs);
    std::size_t k = 0;
    for (const auto& [lid, which] : by_lid) {
      // The NodeRecord (none asked where the GUID is known), then a[0]
      // NodeInfo, a[1] NodeDescription, a[2] PortInfo 0, a[3 + j] the far
      // ports.
      const bool asked_record = !known.count(lid);
      const MadResult* node_record = asked_record ? &s[k] : nullptr;
      const MadResult* a = &s[k + (asked_record ? 1 : 0)];
      k += (asked_record ? 4 : 3) + which.size();
      const auto lost = [&, lid = lid](std::size_t i, const std::string& why) {
        const auto& f = fars[i];
        if (f.host_node != 0) unanswered_.behind.insert({f.host_node, f.hp->port});
        Unread(out, *f.hp, "the switch at LID " + std::to_string(lid) + ": " + why, true);
      };
      const auto all_lost = [&](const std::string& why) {
        for (std::size_t i : which) lost(i, why);
      };
      if (a[0].outcome != MadOutcome::kOk || a[2].outcome != MadOutcome::kOk) {
        all_lost(std::string("no NodeInfo or PortInfo answer by LID: ") +
                 transport::ToString(a[0].outcome != MadOutcome::kOk ? a[0].outcome : a[2].outcome));
        continue;
      }
      const transport::NodeInfo ni = transport::DecodeNodeInfo(a[0].response);
      std::uint64_t expected = asked_record ? 0 : known[lid];
      if (asked_record) {
        const std::optional<std::uint64_t> record = node_record->outcome == MadOutcome::kOk
                                                        ? transport::DecodeNodeRecordGuid(node_record->response)
                                                        : std::nullopt;
        if (!record) {
          all_lost("the SA gave no NodeRecord for it to check what answers there");
          continue;
        }
        expected = *record;
      }
      if (ni.node_type != transport::NodeType::kSwitch || ni.node_guid != expected) {
        all_lost("it answered as " + FormatGuid(ni.node_guid) + ", not " + FormatGuid(expected));
        continue;
      }
      auto [sw, inserted] = LidOnly(ni);
      if (sw.lid_only) {
        Record({ni.node_guid, 0}, a[2], sw);
        if (a[1].outcome == MadOutcome::kOk) {
          Record({ni.node_guid, kDescription}, a[1], sw);
        } else {
          unanswered_.descriptions.insert(ni.node_guid);
        }
      }
      for (std::size_t j = 0; j < which.size(); ++j) {
        const auto& f = fars[which[j]];
        const MadResult& pr = a[3 + j];
        if (pr.outcome != MadOutcome::kOk) {
          lost(which[j], "port " + std::to_string(f.port) + ": no PortInfo answer: " + transport::ToString(pr.outcome));
          continue;
        }
        Port& sp = sw.ports[f.port];
        sp.number = f.port;
        sp.guid = ni.port_guid;
        Record({ni.node_guid, f.port}, pr, sw);
        out->host_far_ends.insert({ni.node_guid, f.port});
        if (f.host_node == 0) continue;  // the host port is down: so is its cable
        Port& host_end = building_[f.host_node].ports[f.hp->port];
        if (sp.link_up() && host_end.link_up()) {
          sp.remote = PortRef{f.host_node, f.hp->port};
          host_end.remote = PortRef{ni.node_guid, f.port};
        }
      }
      if (inserted && sw.ports.empty()) building_.erase(ni.node_guid);  // nothing of it read: the last walk's stays
    }
  }

  // Mellanox ExtendedPortInfo of every port that runs QDR on a device that
  // has it and was not asked since its PortInfo was read: FDR10 looks like
  // QDR anywhere else. LID-routed where the node's LID is usable, else
  // directed. Costs nothing on a fabric with no such port at QDR.
  void ReadMlnxSpeeds() {
    std::vector<std::pair<std::uint64_t, std::uint8_t>> asks;
    std::vector<MadRequest> reqs;
    for (auto& [guid, b] : building_) {
      if (!HasMlnxExtPortInfo(b.node) || (b.lid_only && !LidUsable(b))) continue;
      for (auto& [num, p] : b.ports) {
        if (p.mlnx.read || !RunsQdr(p)) continue;
        const MadAddress route = LidUsable(b) ? MadAddress::Lid(b.node.lid) : MadAddress::Directed(b.path);
        asks.emplace_back(guid, num);
        reqs.push_back(transport::MlnxExtPortInfoQuery(route, num));
      }
    }
    if (reqs.empty()) return;
    const auto results = RunBatch(reqs);
    for (std::size_t i = 0; i < results.size(); ++i) {
      Building& b = building_[asks[i].first];
      Port& p = b.ports[asks[i].second];
      if (transport::Unsupported(results[i])) {
        p.mlnx = {true, 0, 0, 0};  // no FDR10 there: QDR is QDR
        continue;
      }
      if (results[i].outcome != MadOutcome::kOk) {
        unanswered_.mlnx.insert({asks[i].first, asks[i].second});
        problems_.push_back("no answer to ExtendedPortInfo port " + std::to_string(asks[i].second) + " from " +
                            Named(b) + ": " + transport::ToString(results[i].outcome) +
                            " (its QDR may be FDR10; asked again at the next walk or re-walk)");
        continue;
      }
      const transport::MlnxExtPortInfo e = transport::DecodeMlnxExtPortInfo(results[i].response);
      p.mlnx = {true, e.link_speed_supported, e.link_speed_enabled, e.link_speed_active};
    }
  }

  void Finish(DiscoveryResult* out) {
    std::vector<Node> nodes;
    nodes.reserve(building_.size());
    for (auto& [guid, b] : building_) {
      b.node.ports.clear();
      for (auto& [num, port] : b.ports) b.node.ports.push_back(port);
      nodes.push_back(std::move(b.node));
    }
    out->fabric = Fabric(std::move(nodes));
    out->subnet_timeout = subnet_timeout_;
    out->problems = std::move(problems_);
    out->smps = smps_;
    out->unanswered = std::move(unanswered_);
    out->ok = true;
  }

  // The nodes of `base` as if this walk had found them, each with the route
  // a walk from the local node takes to it (breadth first over up links).
  void Seed(const Fabric& base, std::uint64_t local_guid) {
    for (const Node& n : base.nodes()) {
      Building& b = building_[n.guid];
      b.node = n;
      for (const Port& p : n.ports) b.ports[p.number] = p;
      b.node.ports.clear();
      b.lid_active = n.lid >= 1 && n.lid <= 0xBFFF;
      b.reached = false;
    }
    std::vector<std::uint64_t> order = Reach(local_guid);
    for (std::uint64_t g : order) building_[g].reached = true;
    auto it = building_.find(local_guid);
    if (it == building_.end()) return;
    const Building& local = it->second;
    if (local.node.kind == NodeKind::kSwitch) {
      local_active_ = local.lid_active;
    } else if (auto p = local.ports.find(local_port_); p != local.ports.end()) {
      local_active_ = p->second.state == transport::kPortStateActive && p->second.lid != 0;
    }
  }

  // Breadth first from the local node over up links with a known far end
  // (out of a CA only through the local port), setting each node's route.
  // Returns the nodes reached, the local one first.
  std::vector<std::uint64_t> Reach(std::uint64_t local_guid) {
    std::vector<std::uint64_t> order;
    if (!building_.count(local_guid)) return order;
    std::set<std::uint64_t> seen{local_guid};
    building_[local_guid].path.clear();
    order.push_back(local_guid);
    for (std::size_t i = 0; i < order.size(); ++i) {
      const Building& b = building_[order[i]];
      const bool local = i == 0;
      if (b.node.kind != NodeKind::kSwitch && !local) continue;
      for (const auto& [num, port] : b.ports) {
        if (!port.link_up() || !port.remote) continue;
        if (b.node.kind != NodeKind::kSwitch && num != local_port_) continue;
        const std::uint64_t far = port.remote->node_guid;
        auto fit = building_.find(far);
        if (fit == building_.end() || !seen.insert(far).second) continue;
        Path path = b.path;
        path.push_back(num);
        fit->second.path = std::move(path);
        order.push_back(far);
      }
    }
    return order;
  }

  // Drops the nodes the local node no longer reaches, and every far end
  // that pointed at them.
  void Prune(std::uint64_t local_guid, std::vector<std::uint64_t>* gone) {
    const std::vector<std::uint64_t> order = Reach(local_guid);
    const std::set<std::uint64_t> keep(order.begin(), order.end());
    for (auto it = building_.begin(); it != building_.end();) {
      if (keep.count(it->first)) {
        ++it;
        continue;
      }
      gone->push_back(it->first);
      it = building_.erase(it);
    }
    for (auto& [guid, b] : building_) {
      for (auto& [num, port] : b.ports) {
        if (port.remote && !keep.count(port.remote->node_guid)) port.remote.reset();
      }
    }
  }

  // The far end of a cable that is gone: its port is down, linked to nothing.
  void Unlink(const PortRef& ref) {
    auto it = building_.find(ref.node_guid);
    if (it == building_.end()) return;
    auto pit = it->second.ports.find(ref.port);
    if (pit == it->second.ports.end()) return;
    Port& p = pit->second;
    p.remote.reset();
    p.state = transport::kPortStateDown;
    p.phys_state = kPhysStatePolling;
    p.width_active = 0;
    p.speed_active = 0;
    p.speed_ext_active = 0;
    p.speed_ext2_active = 0;
  }

  // The link fields a re-read changed (ApplyPortInfo's), on a known port.
  static void CopyLink(const Port& now, Port* p) {
    const auto remote = p->remote;
    const auto number = p->number;
    const auto guid = p->guid;
    const auto lid = p->lid;
    *p = now;
    p->remote = remote;
    p->number = number;
    p->guid = guid;
    p->lid = lid;
  }

  std::string Named(const Building& b) const {
    return b.node.description.empty() ? FormatGuid(b.node.guid) : b.node.description;
  }
  std::string Named(const PortRef& r) const {
    auto it = building_.find(r.node_guid);
    const std::string n = it == building_.end() ? FormatGuid(r.node_guid) : Named(it->second);
    return n + "[" + std::to_string(r.port) + "]";
  }

  std::vector<MadResult> RunBatch(const std::vector<MadRequest>& reqs) {
    smps_ += reqs.size();
    return engine_.Run(reqs);
  }

  // Records the nodes and CA ports seen for the first time and reads their
  // descriptions and PortInfo. Returns the visits that were new.
  //
  // Only what needs the route goes directed: a switch's port 0 (its LID)
  // and a CA's port. Every switch on a directed route handles the SMP in
  // its management firmware (IBTA 14.2.2); a LID-routed SMP is forwarded
  // like any packet and loads only its target's agent. So once a
  // node's LID is known and usable, its description and the PortInfo of
  // its other ports are LID-routed; what does not answer that way (the SM
  // may not have programmed the routes yet) is asked again directed.
  std::vector<Visit> Admit(const std::vector<Visit>& reached) {
    const std::vector<Visit> visits = SpreadRoutes(reached);
    std::vector<Visit> fresh;
    std::vector<Ask> first;  // directed: what gives the LID
    std::vector<Ask> rest;   // LID-routed where the LID allows
    for (const Visit& v : visits) {
      const auto& ni = v.info;
      auto [it, inserted] = building_.try_emplace(ni.node_guid);
      Building& b = it->second;
      if (inserted) {
        FromNodeInfo(ni, &b.node);
        b.path = v.path;
        rest.push_back({ni.node_guid, kDescription});
        if (b.node.kind == NodeKind::kSwitch) {
          // Port 0 holds the switch's LID (IBTA 14.2.5.6); 1..N the external ports.
          first.push_back({ni.node_guid, 0});
          for (std::uint8_t p = 0; p <= ni.num_ports; ++p) {
            if (p > 0) rest.push_back({ni.node_guid, p});
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
        first.push_back({ni.node_guid, ni.local_port});
        is_new = true;
      }
      if (is_new) fresh.push_back(v);
    }
    AskAll(first, /*lid_routed=*/false);
    std::vector<Ask> by_lid;
    std::vector<Ask> directed;
    for (const Ask& a : rest) (LidUsable(building_[a.guid]) ? by_lid : directed).push_back(a);
    std::vector<Ask> unanswered = AskByLid(by_lid);
    directed.insert(directed.end(), unanswered.begin(), unanswered.end());
    AskAll(directed, /*lid_routed=*/false);
    return fresh;
  }

  // A node reached through several cables at once (a leaf seen from every
  // spine) is known by one of those routes from now on; taking them in turn
  // spreads the directed routes, and the switch firmware forwarding them,
  // over the fabric instead of sending every one through the first spine.
  // Returns the visits with each new node's chosen route first.
  std::vector<Visit> SpreadRoutes(const std::vector<Visit>& visits) {
    std::map<std::uint64_t, std::vector<std::size_t>> routes;  // new node -> its visits
    std::vector<std::uint64_t> order;
    for (std::size_t i = 0; i < visits.size(); ++i) {
      const std::uint64_t guid = visits[i].info.node_guid;
      if (building_.count(guid)) continue;
      auto& r = routes[guid];
      if (r.empty()) order.push_back(guid);
      r.push_back(i);
    }
    std::vector<Visit> out;
    out.reserve(visits.size());
    std::vector<bool> taken(visits.size(), false);
    for (std::uint64_t guid : order) {
      const auto& r = routes[guid];
      const std::size_t pick = r[r.size() > 1 ? spread_++ % r.size() : 0];
      out.push_back(visits[pick]);
      taken[pick] = true;
    }
    for (std::size_t i = 0; i < visits.size(); ++i) {
      if (!taken[i]) out.push_back(visits[i]);
    }
    return out;
  }

  // A LID that reaches the node: a unicast LID (IBTA 4.1.3: 1..0xBFFF) on a
  // port the SM made Active, seen from a local port that is Active too.
  bool LidUsable(const Building& b) const {
    return local_active_ && b.lid_active && b.node.lid >= 1 && b.node.lid <= 0xBFFF;
  }

  MadRequest Query(const Ask& a, bool lid_routed) {
    const Building& b = building_[a.guid];
    const MadAddress route = lid_routed ? MadAddress::Lid(b.node.lid) : MadAddress::Directed(b.path);
    return a.port == kDescription ? transport::NodeDescriptionQuery(route) : transport::PortInfoQuery(route, a.port);
  }

  // Runs `asks` and records the answers. LID-routed: returns the ones that
  // timed out, for the caller to ask directed; directed: records a problem
  // for each that did not answer.
  std::vector<Ask> AskAll(const std::vector<Ask>& asks, bool lid_routed) {
    std::vector<MadRequest> reqs;
    reqs.reserve(asks.size());
    for (const Ask& a : asks) reqs.push_back(Query(a, lid_routed));
    return RecordAll(asks, RunBatch(reqs), lid_routed);
  }

  // `asks` LID-routed, each node's behind a NodeInfo to the same LID (the
  // engine sends one node's requests in order): an SMP routed by LID reaches
  // whoever answers for that LID when it arrives, which need not be the
  // node the LID was read from: a LID the SM has just moved to another
  // node (a new master SM reassigning them), or, on ibsim, a packet a
  // routing loop drops at whatever switch its hop limit runs out. A node
  // whose NodeInfo does not answer with its own GUID has none of its
  // answers taken: they are returned, with those that timed out, for the
  // caller to ask directed. One SMP a node more, none a port.
  std::vector<Ask> AskByLid(const std::vector<Ask>& asks) {
    std::vector<std::uint64_t> nodes;
    std::map<std::uint64_t, std::size_t> index;  // guid -> its NodeInfo's place in the batch
    for (const Ask& a : asks) {
      if (index.emplace(a.guid, nodes.size()).second) nodes.push_back(a.guid);
    }
    std::vector<MadRequest> reqs;
    reqs.reserve(nodes.size() + asks.size());
    for (std::uint64_t g : nodes) reqs.push_back(transport::NodeInfoQuery(MadAddress::Lid(building_[g].node.lid)));
    for (const Ask& a : asks) reqs.push_back(Query(a, /*lid_routed=*/true));
    std::vector<MadResult> results = RunBatch(reqs);
    std::set<std::uint64_t> unverified;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const MadResult& r = results[i];
      if (r.outcome != MadOutcome::kOk) {
        unverified.insert(nodes[i]);
        continue;
      }
      const std::uint64_t answered = transport::DecodeNodeInfo(r.response).node_guid;
      if (answered == nodes[i]) continue;
      unverified.insert(nodes[i]);
      const Building& b = building_[nodes[i]];
      auto other = building_.find(answered);
      problems_.push_back("LID " + std::to_string(b.node.lid) + " of " + Named(b) + " answered as " +
                          (other == building_.end() ? FormatGuid(answered) : Named(other->second)) +
                          ": its answers by LID not taken, asked over its directed route");
    }
    std::vector<Ask> verified;
    std::vector<MadResult> answers;
    std::vector<Ask> redo;
    for (std::size_t i = 0; i < asks.size(); ++i) {
      if (unverified.count(asks[i].guid)) {
        redo.push_back(asks[i]);
      } else {
        verified.push_back(asks[i]);
        answers.push_back(std::move(results[nodes.size() + i]));
      }
    }
    std::vector<Ask> unanswered = RecordAll(verified, answers, /*lid_routed=*/true);
    redo.insert(redo.end(), unanswered.begin(), unanswered.end());
    return redo;
  }

  // Records the answers to `asks` (as AskAll).
  std::vector<Ask> RecordAll(const std::vector<Ask>& asks, const std::vector<MadResult>& results, bool lid_routed) {
    std::vector<Ask> unanswered;
    for (std::size_t i = 0; i < results.size(); ++i) {
      Building& b = building_[asks[i].guid];
      if (results[i].outcome != MadOutcome::kOk) {
        if (lid_routed && results[i].outcome == MadOutcome::kTimeout) {
          unanswered.push_back(asks[i]);
          continue;
        }
        if (asks[i].port == kDescription) {
          unanswered_.descriptions.insert(asks[i].guid);
        } else {
          unanswered_.ports.insert({asks[i].guid, asks[i].port});
        }
        const std::string asked =
            asks[i].port == kDescription ? "NodeDescription" : "PortInfo port " + std::to_string(asks[i].port);
        const std::string via = lid_routed ? "LID " + std::to_string(b.node.lid) : PathString(b.path);
        problems_.push_back("no answer to " + asked + " from " + FormatGuid(asks[i].guid) + " via " + via + ": " +
                            transport::ToString(results[i].outcome));
        continue;
      }
      Record(asks[i], results[i], b);
    }
    return unanswered;
  }

  void Record(const Ask& ask, const MadResult& result, Building& b) {
    if (ask.port == kDescription) {
      b.node.description = transport::DecodeNodeDescription(result.response);
      return;
    }
    const transport::PortInfo pi = transport::DecodePortInfo(result.response);
    const bool is_switch = b.node.kind == NodeKind::kSwitch;
    if (is_switch && ask.port == 0) {
      b.node.lid = pi.lid;
      b.lid_active = pi.port_state == transport::kPortStateActive;
      b.node.ext_speeds = transport::HasExtendedSpeeds(pi);
      b.node.ext_speeds2 = transport::HasExtendedSpeeds2(pi);
      b.node.port_info_extended = transport::HasPortInfoExtended(pi);
      for (auto& [num, port] : b.ports) port.lid = pi.lid;
      if (b.path.empty() && !b.lid_only) local_active_ = b.lid_active;  // the exporter runs on this switch
      return;
    }
    Port& p = b.ports[ask.port];
    // A switch's capability masks live on port 0, answered before its
    // other ports (asked in an earlier batch).
    if (!is_switch) {
      b.node.ext_speeds = transport::HasExtendedSpeeds(pi);
      b.node.ext_speeds2 = transport::HasExtendedSpeeds2(pi);
      b.node.port_info_extended = transport::HasPortInfoExtended(pi);
    }
    ApplyPortInfo(pi, ExtSpeedsOf(b.node), &p);
    p.mlnx = {};  // read again after the walk
    if (is_switch) {
      p.lid = b.node.lid;
      return;
    }
    p.lid = pi.lid;
    // A CA's LID is its first port's with one (a re-walk may re-read it).
    for (const auto& [num, port] : b.ports) {
      if (port.lid == 0) continue;
      if (num == ask.port || b.node.lid == 0) {
        b.node.lid = pi.lid;
        b.lid_active = pi.port_state == transport::kPortStateActive;
      }
      break;
    }
    if (b.path.empty() && !b.lid_only && ask.port == local_port_) {
      subnet_timeout_ = pi.subnet_timeout;
      local_active_ = pi.port_state == transport::kPortStateActive && pi.lid != 0;
    }
  }

  // Asks NodeInfo through every up port of the switches just admitted (and
  // out of the local CA's port), records the near end of each link, and
  // returns the visits whose far port is not known yet.
  std::vector<Visit> Probe(const std::vector<Visit>& fresh) {
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
        // The far end already answered through this cable from its side.
        if (port.remote) continue;
        if (b.node.kind != NodeKind::kSwitch && num != local_port_) continue;
        Path next = v.path;
        next.push_back(num);
        if (next.size() > transport::kMaxDirectedHops) {
          problems_.push_back(BeyondDirectedRoute(FormatGuid(v.info.node_guid) + " (" + b.node.description + ") port " +
                                                  std::to_string(num)));
          continue;
        }
        reqs.push_back(transport::NodeInfoQuery(MadAddress::Directed(next)));
        from.push_back({v.info.node_guid, num, std::move(next)});
      }
    }
    const auto results = RunBatch(reqs);
    std::vector<Visit> visits;
    for (std::size_t i = 0; i < results.size(); ++i) {
      Building& b = building_[from[i].guid];
      if (results[i].outcome != MadOutcome::kOk) {
        unanswered_.behind.insert({from[i].guid, from[i].port});
        problems_.push_back("no NodeInfo answer behind " + FormatGuid(from[i].guid) + " (" + b.node.description +
                            ") port " + std::to_string(from[i].port) + ": " + transport::ToString(results[i].outcome));
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

  // What lies behind `where` is more hops away than a directed route goes.
  static std::string BeyondDirectedRoute(const std::string& where) {
    return "behind " + where + ": more than " + std::to_string(transport::kMaxDirectedHops) +
           " hops from here, beyond a directed route (IBTA 14.2.2): not discovered";
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
  Unanswered unanswered_;
  std::size_t smps_ = 0;
  std::uint8_t subnet_timeout_ = 0;
  std::uint8_t local_port_ = 0;
  std::size_t spread_ = 0;     // routes handed out by SpreadRoutes()
  bool local_active_ = false;  // the local port is Active with a LID: LID routing can leave it
};

}  // namespace

void ApplyPortInfo(const transport::PortInfo& pi, ExtSpeeds speeds, Port* p) {
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
  p->speed_ext_active = speeds.ext ? pi.link_speed_ext_active : 0;
  // LinkSpeedExtEnabled 30 is "extended speeds disabled" (IBTA 14.2.5.6),
  // not a set of speeds: none enabled (libibnetdisc reads it so too).
  p->speed_ext_enabled =
      !speeds.ext || pi.link_speed_ext_enabled == transport::kLinkSpeedExtDisabled ? 0 : pi.link_speed_ext_enabled;
  p->speed_ext_supported = speeds.ext ? pi.link_speed_ext_supported : 0;
  p->speed_ext2_active = speeds.ext2 ? pi.link_speed_ext2_active : 0;
  p->speed_ext2_enabled = speeds.ext2 ? pi.link_speed_ext2_enabled : 0;
  p->speed_ext2_supported = speeds.ext2 ? pi.link_speed_ext2_supported : 0;
}

void KeepMlnxSpeeds(const MlnxSpeeds& walked, Port* now) { now->mlnx = RunsQdr(*now) ? walked : MlnxSpeeds{}; }

DiscoveryResult Discover(transport::MadEngine& engine, DiscoverOptions options) {
  return Discoverer(engine, options).Run();
}

IncrementalResult Rediscover(transport::MadEngine& engine, const Fabric& base, std::uint64_t local_node_guid,
                             std::uint8_t local_port, const std::vector<PortChange>& changes) {
  return Discoverer(engine, {}).RunIncremental(base, local_node_guid, local_port, changes);
}

}  // namespace ibfabric::topology
