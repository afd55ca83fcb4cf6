#include "collectors/module_collector.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "collectors/framework/render.h"
#include "collectors/reads/batch.h"
#include "transport/attributes.h"

namespace ibfabric::collectors {
namespace {

using prometheus::MetricType;

// Reads asked at once outside the share (never read yet) at least: a
// small fabric is read whole at once, a large one over the interval.
constexpr std::size_t kFirstReadsPerSweep = 512;

// One sweep's PDDR reads.
struct ModuleRead {
  enum class Got : std::uint8_t { kNothing, kAnswer, kUnsupported, kFailed };
  topology::PortRef port;
  std::uint16_t lid = 0;
  Got got = Got::kNothing;
  transport::ModuleInfo info;
  std::chrono::steady_clock::time_point at{};
};
class ModuleReads final : public ReadList<ModuleRead> {
 public:
  using Read = ModuleRead;
  using Got = ModuleRead::Got;

  void AddRequests(std::vector<transport::MadRequest>* out) override {
    for (const Read& r : reads_) {
      out->push_back(
          transport::AccessRegisterQuery(r.lid, transport::reg::kPddr, transport::PddrModuleInfoRequest(r.port.port)));
    }
  }
  std::uint64_t NodeOf(std::size_t i) const override { return reads_[i].port.node_guid; }
  void Take(std::size_t i, transport::MadResult&& m) override {
    Read& r = reads_[i];
    if (m.outcome == transport::MadOutcome::kOk) {
      r.got = Got::kAnswer;
      r.at = m.done;
      const auto data = transport::AccessRegisterData(m.response);
      r.info = transport::DecodeModuleInfo(data);
      if (data.size() < 2 || data[1] != r.port.port) r.got = Got::kFailed;  // another port's page is no answer
    } else {
      // For good where the device has no such register; anything else (an
      // invalid field while a module is being seated, no answer) waits
      // for the next interval.
      r.got = transport::VendorUnsupported(m) ? Got::kUnsupported : Got::kFailed;
    }
  }
};

struct PortState {
  bool unsupported = false;
  std::chrono::steady_clock::time_point asked_at{};
  std::chrono::steady_clock::time_point not_before{};  // no answer: not again before
  std::optional<ModulePort> out;
};

class ModuleCollector final : public Collector {
 public:
  explicit ModuleCollector(std::chrono::milliseconds interval) : interval_(interval), share_(interval) {}

  Schedule schedule() const override { return Schedule::kSweep; }

  void Plan(const Cycle& cycle, SweepPlan* plan) override {
    const double share = share_.Next(cycle.now);
    if (!cycle.parts->local.has_agent("vendor")) return;
    IntervalPicks<ModuleReads::Read> picks;
    std::size_t eligible = 0;
    for (const topology::Node& n : cycle.fabric->nodes()) {
      const auto info = cycle.parts->vendor->find(n.guid);
      if (info == cycle.parts->vendor->end() || !info->second.access_register || !cycle.in_scope(n) ||
          topology::IsAggregationNode(n))
        continue;
      for (const topology::Port& p : n.ports) {
        const topology::PortRef ref{n.guid, p.number};
        if (p.number == 0 || !p.link_up() || !cycle.read_port(ref)) continue;
        if (topology::FacesAggregationNode(*cycle.fabric, p)) continue;  // inside the switch: no module
        const std::uint16_t lid = n.kind == topology::NodeKind::kSwitch ? n.lid : p.lid;
        if (lid == 0) continue;
        PortState& st = ports_[ref];
        if (st.unsupported) continue;
        ++eligible;
        if (cycle.now < st.not_before) continue;
        ModuleReads::Read r;
        r.port = ref;
        r.lid = lid;
        if (!st.out && st.asked_at == std::chrono::steady_clock::time_point{}) {
          picks.Never(r);
        } else if (cycle.now - st.asked_at >= interval_) {
          picks.Due(st.asked_at, r);
        }
      }
    }
    std::vector<ModuleReads::Read> reads = picks.Take(share, eligible, eligible, kFirstReadsPerSweep);
    for (const ModuleReads::Read& r : reads) ports_[r.port].asked_at = cycle.now;
    if (reads.empty()) return;
    part_.Ask(std::move(reads));
    plan->parts.push_back(&part_);
  }

  Outcome Update(const Cycle& cycle) override {
    bool changed = !published_;
    for (auto it = ports_.begin(); it != ports_.end();) {
      const bool gone = cycle.fabric->FindPort(it->first) == nullptr;
      changed |= gone && it->second.out;
      it = gone ? ports_.erase(it) : std::next(it);
    }
    if (part_.finished()) {
      for (const ModuleReads::Read& r : part_.reads()) changed |= Note(r, cycle.now);
      part_.Ask({});
    }
    // A reading not renewed in time is gone: absent rather than stale.
    const auto stale_after = IntervalShare::StaleAfter(interval_);
    for (auto& [ref, st] : ports_) {
      if (st.out && cycle.now - st.out->read_at > stale_after) {
        st.out.reset();
        changed = true;
      }
    }
    if (changed) Rebuild();
    return {};
  }

  void Publish(Snapshot* parts) const override { parts->by_collector.Set(kModulesCollector, published_); }

 private:
  bool Note(const ModuleReads::Read& r, std::chrono::steady_clock::time_point now) {
    using Got = ModuleReads::Got;
    const auto it = ports_.find(r.port);
    if (it == ports_.end() || r.got == Got::kNothing) return false;
    PortState& st = it->second;
    switch (r.got) {
      case Got::kFailed: st.not_before = now + interval_; return false;
      case Got::kUnsupported: {
        st.unsupported = true;
        const bool had = st.out.has_value();
        st.out.reset();
        return had;
      }
      default: break;
    }
    // The reading's time on the scheduler's clock (staleness is judged on it).
    const ModulePort next{r.port, r.info, now};
    const bool same = st.out && st.out->info == next.info;
    st.out = next;
    return !same;
  }

  void Rebuild() {
    auto list = std::make_shared<std::vector<ModulePort>>();
    for (const auto& [ref, st] : ports_) {
      if (st.out && st.out->info.plugged()) list->push_back(*st.out);
    }
    auto next = std::make_shared<ModuleReadings>();
    next->ports = std::move(list);
    published_ = std::move(next);
  }

  std::chrono::milliseconds interval_;
  IntervalShare share_;
  std::map<topology::PortRef, PortState> ports_;
  ModuleReads part_;
  std::shared_ptr<const ModuleReadings> published_;
};

// The level of the cable a port is on, by the tiers of its ends (a host
// cable "host-<its switch's tier>", a switch-to-switch one "<lower
// tier>-<upper tier>"), and which end the port is ("hca", or its switch's
// tier): modules are compared with those at the same end of the same
// level of cables. Empty where a switch end is not ranked.
struct Level {
  std::string cables, end;
  bool empty() const { return cables.empty(); }
  auto operator<=>(const Level&) const = default;
};
Level LevelOf(const Snapshot& s, const topology::Node& n, const topology::Port& p) {
  if (!p.remote || !s.topology) return {};
  const topology::Node* far = s.fabric->FindNode(p.remote->node_guid);
  if (!far) return {};
  const auto tier = [&](const topology::Node& x) {
    const auto it = s.topology->switches.find(x.guid);
    return it == s.topology->switches.end() ? -1 : it->second.tier;
  };
  const bool ca = n.kind != topology::NodeKind::kSwitch, far_ca = far->kind != topology::NodeKind::kSwitch;
  if (ca && far_ca) return {};
  if (ca || far_ca) {
    const int t = tier(ca ? *far : n);
    if (t < 0) return {};
    return {"host-" + topology::TierName(t), ca ? "hca" : topology::TierName(t)};
  }
  const int a = tier(n), b = tier(*far);
  if (a < 0 || b < 0) return {};
  return {topology::TierName(std::min(a, b)) + "-" + topology::TierName(std::max(a, b)), topology::TierName(a)};
}

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::unique_ptr<Collector> MakeModuleCollector(const CollectorOptions& options) {
  return std::make_unique<ModuleCollector>(options.phy_interval);
}

namespace {

// A module this exporter reports: its reading, its port, its level of cables.
struct Mine {
  const ModulePort* m;
  const topology::Port* port;
  Level level;
};

// Each module's vendor, part, serial number, type and length.
void RenderModuleInfo(const Snapshot& s, const std::vector<Mine>& ports, const Emit& out) {
  {
    FamilyParts info(out, "infiniband_port_module_info",
                     "The module at the port's end of its cable (PDDR Module Info): vendor, part and serial number, "
                     "revision, type (optical_module, active_cable, passive_copper, ...), identifier (osfp, qsfp_dd, "
                     "...) and length in metres (0: a separable module)",
                     MetricType::Gauge);
    for (const Mine& x : ports) {
      const transport::ModuleInfo& i = x.m->info;
      auto labels = EndLabels(s, x.m->port);
      labels.push_back({"vendor", i.vendor_name});
      labels.push_back({"part_number", i.vendor_pn});
      labels.push_back({"serial_number", i.vendor_sn});
      labels.push_back({"revision", i.vendor_rev});
      labels.push_back({"type", transport::CableTypeName(i.cable_type)});
      labels.push_back({"identifier", transport::CableIdentifierName(i.cable_identifier)});
      labels.push_back({"length_meters", Number(i.LengthMeters())});
      info.Add(std::move(labels), 1);
    }
    info.Finish();
  }
}

// What the module monitors: temperature, voltage, and each lane's power.
void RenderModuleMonitors(const Snapshot& s, const std::vector<Mine>& ports, const Emit& out) {
  // monitor_cap_mask bits: 0 temperature, 1 voltage, 2 tx power, 3 rx power.
  const auto monitors = [](const transport::ModuleInfo& i, int bit) { return (i.monitors >> bit & 1) != 0; };
  struct Gauge {
    const char* name;
    const char* help;
    int monitor;
    std::optional<double> (*value)(const transport::ModuleInfo&);
  };
  static constexpr Gauge kGauges[] = {
      {"infiniband_port_module_temperature_celsius", "The module's temperature (PDDR Module Info temperature)", 0,
       [](const transport::ModuleInfo& i) { return i.temperature_celsius; }},
      {"infiniband_port_module_temperature_high_threshold_celsius",
       "The module's high temperature alarm threshold (temperature_high_th)", 0,
       [](const transport::ModuleInfo& i) { return i.temperature_high_celsius; }},
      {"infiniband_port_module_voltage_volts", "The module's supply voltage", 1,
       [](const transport::ModuleInfo& i) { return std::optional<double>(i.voltage_volts); }},
  };
  for (const Gauge& g : kGauges) {
    FamilyParts f(out, g.name, g.help, MetricType::Gauge);
    for (const Mine& x : ports) {
      if (!monitors(x.m->info, g.monitor)) continue;
      if (const auto v = g.value(x.m->info)) f.Add(EndLabels(s, x.m->port), *v);
    }
    f.Finish();
  }
  for (const bool rx : {true, false}) {
    if (!Has(s.port_groups, PortGroup::kLanes)) break;  // left out (--counters.groups)
    FamilyParts f(out, rx ? "infiniband_port_module_rx_power_watts" : "infiniband_port_module_tx_power_watts",
                  std::string("Optical power the module ") + (rx ? "receives" : "transmits") +
                      " on one of its lanes, in watts (the module's lanes, as PDDR reports them: a twin-port "
                      "module's eight on each of its ports)",
                  MetricType::Gauge);
    for (const Mine& x : ports) {
      if (!monitors(x.m->info, rx ? 3 : 2)) continue;
      const int lanes = transport::ModuleLanes(x.m->info.cable_identifier);
      for (int lane = 0; lane < lanes; ++lane) {
        auto labels = EndLabels(s, x.m->port);
        labels.push_back({"lane", std::to_string(lane)});
        const auto& power = rx ? x.m->info.rx_power_watts : x.m->info.tx_power_watts;
        f.Add(std::move(labels), power[static_cast<std::size_t>(lane)]);
      }
    }
    f.Finish();
  }
}

// The part most modules at the same end of each level of cables have,
// where one has more than half of them; the modules that differ are
// findings.
void RenderPartDiffers(const Snapshot& s, const std::vector<Mine>& ports, const Emit& out) {
  std::map<Level, std::map<std::string, int>> parts;
  for (const Mine& x : ports) {
    if (!x.level.empty() && !x.m->info.vendor_pn.empty()) ++parts[x.level][x.m->info.vendor_pn];
  }
  std::map<Level, std::string> majority;
  for (const auto& [level, count] : parts) {
    int all = 0;
    for (const auto& [pn, n] : count) all += n;
    for (const auto& [pn, n] : count) {
      if (2 * n > all) majority[level] = pn;
    }
  }
  FamilyParts differs(out, "infiniband_port_module_part_differs",
                      "1 where the module's part number differs from the one most modules at the same end of its "
                      "level of cables have (cables: host-leaf, leaf-spine, ...; end: hca, leaf, spine, ...; "
                      "cables_part_number: that part)",
                      MetricType::Gauge);
  for (const Mine& x : ports) {
    const auto it = majority.find(x.level);
    if (it == majority.end() || x.m->info.vendor_pn.empty() || x.m->info.vendor_pn == it->second) continue;
    auto labels = EndLabels(s, x.m->port);
    labels.push_back({"part_number", x.m->info.vendor_pn});
    labels.push_back({"cables", x.level.cables});
    labels.push_back({"end", x.level.end});
    labels.push_back({"cables_part_number", it->second});
    differs.Add(std::move(labels), 1);
  }
  differs.Finish();
}

}  // namespace

void RenderModules(const Snapshot& s, const Emit& out) {
  const auto* modules = s.by_collector.Get<ModuleReadings>(kModulesCollector);
  if (!modules || !s.fabric) return;
  std::vector<Mine> ports;
  for (const ModulePort& m : *modules->ports) {
    const topology::Node* n = s.fabric->FindNode(m.port.node_guid);
    const topology::Port* p = n ? n->FindPort(m.port.port) : nullptr;
    if (n && p && OwnsPort(s, *n, *p)) ports.push_back({&m, p, LevelOf(s, *n, *p)});
  }
  RenderModuleInfo(s, ports, out);
  RenderModuleMonitors(s, ports, out);
  RenderPartDiffers(s, ports, out);
}

// The module at one port as the modules collector last read it; null
// where it has none.
nlohmann::json ModuleJson(const Snapshot& s, const topology::PortRef& port) {
  const auto* modules = s.by_collector.Get<ModuleReadings>(kModulesCollector);
  if (!modules) return nullptr;
  const auto it = std::lower_bound(modules->ports->begin(), modules->ports->end(), port,
                                   [](const ModulePort& m, const topology::PortRef& p) { return m.port < p; });
  if (it == modules->ports->end() || !(it->port == port)) return nullptr;
  const transport::ModuleInfo& i = it->info;
  const auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"vendor", i.vendor_name},
          {"part_number", i.vendor_pn},
          {"serial_number", i.vendor_sn},
          {"revision", i.vendor_rev},
          {"type", transport::CableTypeName(i.cable_type)},
          {"identifier", transport::CableIdentifierName(i.cable_identifier)},
          {"length_meters", i.LengthMeters()},
          {"temperature_celsius", (i.monitors & 1) ? opt(i.temperature_celsius) : nlohmann::json(nullptr)},
          {"temperature_high_threshold_celsius",
           (i.monitors & 1) ? opt(i.temperature_high_celsius) : nlohmann::json(nullptr)}};
}

CollectorInfo ModuleCollectorInfo() {
  return {
      .name = "modules",
      .help =
          "The module at each end of a cable (PDDR Module Info through AccessRegister), every --phy.interval: "
          "vendor, part and serial number, length, temperature and its alarm threshold, rx/tx power per lane, and "
          "modules whose part differs from their level of cables'.",
      .make = MakeModuleCollector,
      .render = RenderModules,
      .reads = {"capabilities"},
  };
}

}  // namespace ibfabric::collectors
