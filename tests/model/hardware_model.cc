#include "tests/model/hardware_model.h"

#include <algorithm>
#include <stdexcept>

#include "transport/attributes.h"
#include "transport/codec.h"
#include "transport/testing/encoders.h"

namespace ibfabric::model {

using transport::MadBytes;
using transport::MgmtClass;

namespace {

constexpr std::uint64_t kGuidBase = 0x0002c90300000000ULL;
constexpr std::uint16_t kStatusUnsupported = 0x000c;  // IBTA 13.4.7: method/attribute not supported
constexpr std::uint16_t kStatusBadModifier = 0x001c;  // invalid value in the attribute modifier
constexpr std::uint8_t kSubnSet = 0x02;

std::uint16_t AttrOf(const MadBytes& m) { return static_cast<std::uint16_t>(m[16] << 8 | m[17]); }
std::uint32_t ModOf(const MadBytes& m) {
  return static_cast<std::uint32_t>(m[20]) << 24 | static_cast<std::uint32_t>(m[21]) << 16 |
         static_cast<std::uint32_t>(m[22]) << 8 | m[23];
}

}  // namespace

double ExporterLoad::busiest_agent_seconds() const {
  double m = 0;
  for (const auto& [node, s] : agent_work) m = std::max(m, s);
  return m;
}

HardwareModel::HardwareModel(const testbed::FatTree& tree, const std::string& local, const std::string& sm_host,
                             ModelParams params)
    : params_(params), rng_(params.seed) {
  now_ = TimePoint{} + std::chrono::seconds(1);
  wire_free_ = now_;
  const int radix = tree.spec().radix;
  auto add = [&](const std::string& name, bool sw, int ports) {
    Node n;
    n.name = name;
    n.is_switch = sw;
    n.num_ports = ports;
    n.ports.resize(static_cast<std::size_t>(ports) + 1);
    by_name_[name] = static_cast<int>(nodes_.size());
    nodes_.push_back(std::move(n));
  };
  for (const auto* list : {&tree.leaves(), &tree.spines(), &tree.cores()}) {
    for (const auto& name : *list) add(name, true, radix);
  }
  switches_ = nodes_.size();
  for (const auto& name : tree.hosts()) add(name, false, 1);
  for (const auto& c : tree.cables()) {
    const int a = by_name_.at(c.a.node);
    const int b = by_name_.at(c.b.node);
    nodes_[a].ports.at(c.a.port) = Peer{b, c.b.port};
    nodes_[b].ports.at(c.b.port) = Peer{a, c.a.port};
    ports_ += 2;
  }
  // LIDs as an SM hands them out: switches first, then the CA ports.
  lid_owner_.push_back(-1);
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    nodes_[i].lid = static_cast<std::uint16_t>(lid_owner_.size());
    lid_owner_.push_back(static_cast<int>(i));
  }
  auto it = by_name_.find(local);
  if (it == by_name_.end()) throw std::invalid_argument("model: no host " + local);
  local_ = it->second;

  // Hops from the local node (latency of LID-routed MADs), and directed
  // routes from the SM's host (breadth first, like the SM's discovery).
  auto bfs = [&](int from, std::vector<int>* dist, std::vector<std::vector<std::uint8_t>>* routes) {
    dist->assign(nodes_.size(), -1);
    if (routes) routes->assign(nodes_.size(), {});
    std::deque<int> q{from};
    (*dist)[from] = 0;
    while (!q.empty()) {
      const int u = q.front();
      q.pop_front();
      if (u != from && !nodes_[u].is_switch) continue;  // CAs do not forward
      for (int p = 1; p <= nodes_[u].num_ports; ++p) {
        const Peer& peer = nodes_[u].ports[p];
        if (peer.node < 0 || (*dist)[peer.node] >= 0) continue;
        (*dist)[peer.node] = (*dist)[u] + 1;
        if (routes) {
          (*routes)[peer.node] = (*routes)[u];
          (*routes)[peer.node].push_back(static_cast<std::uint8_t>(p));
        }
        q.push_back(peer.node);
      }
    }
  };
  bfs(local_, &hops_, nullptr);
  if (!sm_host.empty()) {
    auto sit = by_name_.find(sm_host);
    if (sit == by_name_.end()) throw std::invalid_argument("model: no host " + sm_host);
    sm_node_ = sit->second;
    std::vector<int> dist;
    bfs(sm_node_, &dist, &sm_routes_);
    SmQueueSweep(true);  // the SM comes up: a heavy sweep
    Schedule(now_ + params_.sm_light_sweep_interval, EventType::kSmLightSweep, 0);
  }
}

int HardwareModel::NodeOfLid(std::uint16_t lid) const { return lid < lid_owner_.size() ? lid_owner_[lid] : -1; }

bool HardwareModel::Walk(int from, const std::vector<std::uint8_t>& path, std::vector<int>* out, int* entered) const {
  out->clear();
  int node = from;
  *entered = from == local_ ? local_port_ : 1;
  for (std::uint8_t port : path) {
    const Node& n = nodes_[node];
    if (node != from && !n.is_switch) return false;
    if (port < 1 || port > n.num_ports || n.ports[port].node < 0) return false;
    *entered = n.ports[port].port;
    node = n.ports[port].node;
    out->push_back(node);
  }
  if (path.empty()) out->push_back(from);
  return true;
}

void HardwareModel::StopsOfRoute(const std::vector<int>& route, Packet* p) {
  // Out through every switch, answered at the end, back through them.
  for (std::size_t i = 0; i < route.size(); ++i) {
    p->stops.push_back(route[i]);
    p->answers.push_back(i + 1 == route.size());
  }
  for (std::size_t i = route.size() - 1; i-- > 0;) {
    p->stops.push_back(route[i]);
    p->answers.push_back(false);
  }
}

std::size_t HardwareModel::NewPacket(Packet p) {
  if (!free_packets_.empty()) {
    const std::size_t i = free_packets_.back();
    free_packets_.pop_back();
    packets_[i] = std::move(p);
    return i;
  }
  packets_.push_back(std::move(p));
  return packets_.size() - 1;
}

void HardwareModel::Schedule(TimePoint at, EventType type, std::size_t what) {
  events_.push(Event{at, seq_++, type, what});
}

microseconds HardwareModel::MeanServiceOf(int node) const {
  return nodes_[node].is_switch ? params_.switch_service : params_.hca_service;
}

microseconds HardwareModel::ServiceOf(int node) {
  const microseconds mean = MeanServiceOf(node);
  std::uniform_real_distribution<double> u(1 - params_.jitter, 1 + params_.jitter);
  return microseconds(std::max<std::int64_t>(1, static_cast<std::int64_t>(mean.count() * u(rng_))));
}

bool HardwareModel::Send(const transport::MadAddress& to, const MadBytes& mad) {
  const auto cls = static_cast<MgmtClass>(mad[1]);
  const int kind = static_cast<int>(transport::KindOf(cls));
  ++load_.mads;
  // The local HCA sends one MAD after the other at its rate.
  const TimePoint send_at = std::max(now_, wire_free_);
  wire_free_ =
      send_at + std::chrono::duration_cast<TimePoint::duration>(std::chrono::duration<double>(1.0 / params_.send_rate));
  Packet p;
  p.ours = true;
  p.mad = mad;
  microseconds leg = params_.hop_latency;
  if (cls == MgmtClass::kSubnDirectRoute) {
    std::vector<int> route;
    if (!Walk(local_, to.dr_path, &route, &p.entered_port)) {
      ++load_.dropped;  // leads nowhere: nothing answers
      return true;
    }
    StopsOfRoute(route, &p);
  } else {
    const int target = NodeOfLid(to.lid);
    if (target < 0 || hops_[target] < 0) {
      ++load_.dropped;
      return true;
    }
    p.stops.push_back(target);
    p.answers.push_back(true);
    p.entered_port = nodes_[target].is_switch ? 0 : 1;
    leg = params_.hop_latency * std::max(hops_[target], 0);
  }
  // What it would take on an idle fabric: the lower bound's per-kind part.
  double unloaded = std::chrono::duration<double>(leg).count() * static_cast<double>(p.stops.size() + 1);
  for (int s : p.stops) {
    unloaded += std::chrono::duration<double>(MeanServiceOf(s)).count();
  }
  load_.unloaded_rtt_sum[kind] += unloaded;
  p.leg = leg;
  const std::size_t id = NewPacket(std::move(p));
  Schedule(send_at + leg, EventType::kArrive, id);
  return true;
}

void HardwareModel::Arrive(std::size_t id) {
  Packet& p = packets_[id];
  const int node = p.stops[p.next];
  Node& n = nodes_[node];
  const int capacity = 1 + (n.is_switch ? params_.switch_queue : params_.hca_queue);
  if (n.queued >= capacity) {
    // A full agent drops it: nothing comes back.
    if (p.ours) {
      ++load_.dropped;
    } else {
      ++sm_stats_.dropped;
    }
    free_packets_.push_back(id);
    return;
  }
  ++n.queued;
  if (p.ours) {
    ++n.ours_queued;
    load_.peak_queued = std::max(load_.peak_queued, n.ours_queued);
  }
  const TimePoint start = std::max(now_, n.busy_until);
  const microseconds s = ServiceOf(node);
  n.busy_until = start + s;
  if (p.ours) load_.agent_work[node] += std::chrono::duration<double>(s).count();
  Schedule(n.busy_until, EventType::kServed, id);
}

void HardwareModel::Served(std::size_t id) {
  Packet& p = packets_[id];
  Node& n = nodes_[p.stops[p.next]];
  --n.queued;
  if (p.ours) --n.ours_queued;
  if (p.answers[p.next]) {
    auto response = Answer(p);
    if (!response) {
      free_packets_.push_back(id);
      return;
    }
    p.mad = *response;
  }
  ++p.next;
  Schedule(now_ + p.leg, p.next < p.stops.size() ? EventType::kArrive : EventType::kDeliver, id);
}

std::optional<MadBytes> HardwareModel::Answer(const Packet& p) {
  const int target = [&] {
    for (std::size_t i = 0; i < p.stops.size(); ++i) {
      if (p.answers[i]) return p.stops[i];
    }
    return -1;
  }();
  const Node& n = nodes_[target];
  const MadBytes& req = p.mad;
  const auto cls = static_cast<MgmtClass>(req[1]);
  const std::uint16_t attr = AttrOf(req);
  const std::uint32_t mod = ModOf(req);
  const std::uint64_t guid = kGuidBase + static_cast<std::uint64_t>(target) + 1;
  using namespace transport;
  // The SM's SMInfo, at sm_node_ (built only for the MADs that ask for it).
  const auto sm_info = [&] {
    SmInfo s;
    s.guid = guid + 0x100;
    s.priority = 10;
    s.state = SmState::kMaster;
    s.act_count = static_cast<std::uint32_t>(sm_stats_.sent);
    return s;
  };
  if (cls == MgmtClass::kSubnAdm) {
    // The SA (at the SM's node) lists the one SM.
    if (target != sm_node_ || attr != sa_attr::kSmInfoRecord) return EncodeResponse(req, {}, kStatusUnsupported);
    return testing::EncodeSmInfoRecordsResponse(req, {{nodes_[target].lid, sm_info()}});
  }
  if (cls == MgmtClass::kPerformance) {
    if (attr == pma_attr::kClassPortInfo) {
      PerfClassPortInfo c;
      c.capability_mask = n.is_switch ? (pma_cap::kAllPortSelect | pma_cap::kExtWidth | pma_cap::kXmitWait)
                                      : (pma_cap::kExtWidth | pma_cap::kXmitWait);
      c.resp_time_value = params_.resp_time_value;
      return EncodeResponse(req, testing::EncodePerfClassPortInfo(c));
    }
    const int select = req[kMadDataOffset + 1];  // PortSelect, IBTA 16.1.3.5
    if (select < 1 || select > n.num_ports) return EncodeResponse(req, {}, kStatusBadModifier);
    if (attr == pma_attr::kPortCounters) {
      PortCounters c;
      c.port_select = static_cast<std::uint8_t>(select);
      return EncodeResponse(req, testing::EncodePortCounters(c));
    }
    if (attr == pma_attr::kPortCountersExtended) {
      PortCountersExtended c;
      c.port_select = static_cast<std::uint8_t>(select);
      return EncodeResponse(req, testing::EncodePortCountersExtended(c));
    }
    return EncodeResponse(req, {}, kStatusUnsupported);
  }
  switch (attr) {
    case smp_attr::kNodeInfo: {
      NodeInfo ni;
      ni.node_type = n.is_switch ? NodeType::kSwitch : NodeType::kCa;
      ni.num_ports = static_cast<std::uint8_t>(n.num_ports);
      ni.node_guid = guid;
      ni.system_image_guid = guid;
      ni.port_guid = n.is_switch ? guid : guid + 0x100;
      ni.local_port = static_cast<std::uint8_t>(p.entered_port);
      ni.partition_cap = 32;
      return EncodeResponse(req, testing::EncodeNodeInfo(ni));
    }
    case smp_attr::kNodeDescription: return EncodeResponse(req, testing::EncodeNodeDescription(n.name));
    case smp_attr::kPortInfo: {
      const int port = static_cast<int>(mod & 0xff);
      if (port > n.num_ports || (!n.is_switch && port == 0)) return EncodeResponse(req, {}, kStatusBadModifier);
      PortInfo pi;
      pi.lid = n.lid;
      pi.sm_lid = sm_node_ >= 0 ? nodes_[sm_node_].lid : 0;
      pi.local_port = static_cast<std::uint8_t>(p.entered_port);
      const bool up = port == 0 || n.ports[port].node >= 0;
      pi.port_state = up ? kPortStateActive : kPortStateDown;
      pi.port_phys_state = up ? kPhysStateLinkUp : 2;
      pi.link_width_enabled = pi.link_width_supported = 2;
      pi.link_width_active = 2;  // 4x
      pi.link_speed_enabled = pi.link_speed_supported = 4;
      pi.link_speed_active = 4;  // QDR
      pi.subnet_timeout = params_.subnet_timeout;
      pi.resp_time_value = params_.resp_time_value;
      if (target == sm_node_) pi.capability_mask = kPortCapIsSm;
      return EncodeResponse(req, testing::EncodePortInfo(pi));
    }
    case smp_attr::kSwitchInfo: {
      if (!n.is_switch) return EncodeResponse(req, {}, kStatusUnsupported);
      SwitchInfo si;
      si.linear_fdb_cap = 49152;
      si.linear_fdb_top = static_cast<std::uint16_t>(lid_owner_.size() - 1);
      si.partition_enforcement_cap = 32;
      return EncodeResponse(req, testing::EncodeSwitchInfo(si));
    }
    case smp_attr::kLinearForwardingTable: {
      if (!n.is_switch) return EncodeResponse(req, {}, kStatusUnsupported);
      if (req[3] == kSubnSet) return EncodeResponse(req, MadData(req).first(kLftBlockSize));
      std::vector<std::uint8_t> block(kLftBlockSize, 1);
      return EncodeResponse(req, block);
    }
    case smp_attr::kPKeyTable: {
      std::vector<std::uint8_t> block(64, 0);
      block[0] = 0xff;  // the default partition, full member
      block[1] = 0xff;
      return EncodeResponse(req, block);
    }
    case smp_attr::kSmInfo: {
      if (target != sm_node_) return EncodeResponse(req, {}, kStatusUnsupported);
      return EncodeResponse(req, testing::EncodeSmInfo(sm_info()));
    }
    default: return EncodeResponse(req, {}, kStatusUnsupported);
  }
}

bool HardwareModel::Step(TimePoint limit) {
  if (events_.empty() || events_.top().at > limit) return false;
  const Event e = events_.top();
  events_.pop();
  now_ = std::max(now_, e.at);
  switch (e.type) {
    case EventType::kArrive: Arrive(e.packet); break;
    case EventType::kServed: Served(e.packet); break;
    case EventType::kDeliver: {
      Packet& p = packets_[e.packet];
      if (p.ours) {
        inbox_.push_back(p.mad);
      } else {
        SmDone(p.sm_id, true);
      }
      free_packets_.push_back(e.packet);
      break;
    }
    case EventType::kSmTimeout: SmDone(e.packet, false); break;
    case EventType::kSmLightSweep:
      SmQueueSweep(false);
      Schedule(now_ + params_.sm_light_sweep_interval, EventType::kSmLightSweep, 0);
      break;
  }
  return true;
}

std::optional<transport::InboundMad> HardwareModel::Receive(std::chrono::microseconds timeout) {
  const TimePoint deadline = now_ + timeout;
  while (inbox_.empty()) {
    if (!Step(deadline)) {
      now_ = std::max(now_, deadline);
      return std::nullopt;
    }
  }
  transport::InboundMad in{inbox_.front(), 0};
  inbox_.pop_front();
  return in;
}

void HardwareModel::AdvanceTo(TimePoint t) {
  while (Step(t)) {
  }
  now_ = std::max(now_, t);
  inbox_.clear();  // answers nobody waits for any more
}

void HardwareModel::StartHeavySweep() { SmQueueSweep(true); }

// --- the subnet manager --------------------------------------------------

void HardwareModel::SmQueueSweep(bool heavy) {
  if (sm_node_ < 0) return;
  if (sm_sweeping_) {
    if (heavy) sm_heavy_pending_ = true;
    return;  // a light sweep due during a sweep is skipped, as opensm does
  }
  using namespace transport;
  auto add = [&](int node, std::uint16_t attr, std::uint32_t mod) {
    const std::uint64_t id = sm_next_id_++;
    sm_requests_[id] = SmRequest{sm_routes_[node], attr, mod, 0, 0};
    sm_queue_.push_back(id);
  };
  std::uint64_t count = 0;
  const auto before = sm_queue_.size();
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const int node = static_cast<int>(i);
    if (node != sm_node_ && sm_routes_[i].empty()) continue;  // unreachable
    const Node& n = nodes_[i];
    if (!heavy) {
      // opensm's light sweep: SwitchInfo of every switch (PortStateChange).
      if (n.is_switch) add(node, smp_attr::kSwitchInfo, 0);
      continue;
    }
    add(node, smp_attr::kNodeInfo, 0);
    add(node, smp_attr::kNodeDescription, 0);
    if (n.is_switch) {
      add(node, smp_attr::kSwitchInfo, 0);
      for (int p = 0; p <= n.num_ports; ++p) add(node, smp_attr::kPortInfo, static_cast<std::uint32_t>(p));
      // The forwarding table written, one 64-LID block per SMP.
      const std::size_t blocks = (lid_owner_.size() + kLftBlockSize - 1) / kLftBlockSize;
      for (std::size_t b = 0; b < blocks; ++b)
        add(node, smp_attr::kLinearForwardingTable, static_cast<std::uint32_t>(b) | 0x80000000u);
    } else {
      add(node, smp_attr::kPortInfo, 1);
    }
  }
  count = sm_queue_.size() - before;
  sm_sweeping_ = true;
  sm_sweep_heavy_ = heavy;
  sm_sweep_start_ = now_;
  sm_sweep_left_ = count;
  SmPump();
}

void HardwareModel::SmPump() {
  while (sm_in_flight_ < params_.sm_window && !sm_queue_.empty()) {
    const std::uint64_t id = sm_queue_.front();
    sm_queue_.pop_front();
    SmSend(id);
  }
}

void HardwareModel::SmSend(std::uint64_t id) {
  SmRequest& r = sm_requests_.at(id);
  ++r.generation;
  ++sm_in_flight_;
  ++sm_stats_.sent;
  const bool set = (r.mod & 0x80000000u) != 0;
  transport::MadRequest req;
  req.mgmt_class = MgmtClass::kSubnDirectRoute;
  req.method = set ? transport::MadMethod::kSet : transport::MadMethod::kGet;
  req.attr_id = r.attr;
  req.attr_mod = r.mod & 0x7fffffffu;
  req.address = transport::MadAddress::Directed(r.path);
  if (set) req.payload.assign(transport::kLftBlockSize, 1);
  const std::uint64_t key = id << 8 | (r.generation & 0xff);
  Packet p;
  p.ours = false;
  p.sm_id = key;
  p.mad = transport::EncodeRequest(req, key);
  std::vector<int> route;
  if (Walk(sm_node_, r.path, &route, &p.entered_port)) {
    StopsOfRoute(route, &p);
    p.leg = params_.hop_latency;
    const std::size_t pid = NewPacket(std::move(p));
    Schedule(now_ + params_.hop_latency, EventType::kArrive, pid);
  }
  Schedule(now_ + params_.sm_timeout, EventType::kSmTimeout, key);
}

void HardwareModel::SmDone(std::uint64_t key, bool answered) {
  const std::uint64_t id = key >> 8;
  auto it = sm_requests_.find(id);
  if (it == sm_requests_.end() || (it->second.generation & 0xff) != (key & 0xff)) return;  // late or settled
  --sm_in_flight_;
  if (!answered) {
    ++sm_stats_.timeouts;
    if (it->second.attempt < params_.sm_retries) {
      ++it->second.attempt;  // SmSend moves the generation on: a late answer no longer matches
      sm_queue_.push_front(id);
      SmPump();
      return;
    }
    ++sm_stats_.failed;
  }
  sm_requests_.erase(it);
  if (--sm_sweep_left_ == 0 && sm_sweeping_) {
    const double took = std::chrono::duration<double>(now_ - sm_sweep_start_).count();
    if (sm_sweep_heavy_) {
      ++sm_stats_.heavy_sweeps;
      sm_stats_.heavy_sweep_seconds_total += took;
    } else {
      ++sm_stats_.light_sweeps;
      sm_stats_.light_sweep_seconds_total += took;
      sm_stats_.light_sweep_seconds_max = std::max(sm_stats_.light_sweep_seconds_max, took);
    }
    sm_sweeping_ = false;
    if (sm_heavy_pending_) {
      sm_heavy_pending_ = false;
      SmQueueSweep(true);
    }
  }
  SmPump();
}

}  // namespace ibfabric::model
