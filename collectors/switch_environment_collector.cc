#include "collectors/switch_environment_collector.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "collectors/framework/render.h"
#include "collectors/reads/batch.h"
#include "topology/scope.h"
#include "transport/attributes.h"

namespace ibfabric::collectors {
namespace {

using prometheus::MetricType;
namespace reg = transport::reg;

// Switches asked at once at least (a small fabric all at once).
constexpr std::size_t kFirstAsksPerSweep = 128;

// What one ask is: a register (and its index: the tachometer of an MFSM).
struct What {
  std::uint64_t guid = 0;
  std::uint16_t reg = 0;
  int index = 0;
};

struct SwitchState {
  std::chrono::steady_clock::time_point asked_at{};    // the sweep that last asked it
  std::chrono::steady_clock::time_point not_before{};  // no answer: not again before
  bool asked = false;
  bool registers_asked = false;         // its registers were asked once
  int misses = 0;                       // rounds in a row nothing answered: the wait doubles, up to 16 intervals
  std::set<std::uint16_t> unsupported;  // registers it does not have
  std::optional<std::vector<int>> tachos;
  std::map<std::uint16_t, std::chrono::steady_clock::time_point> fresh_at;  // register -> when it last answered
  SwitchEnvironment out;
};

// Forgets what register `id` said (it went stale, or is not supported).
void Forget(SwitchEnvironment* e, std::uint16_t id) {
  switch (id) {
    case reg::kMgir: e->general.reset(); break;
    case reg::kMsgi: e->system.reset(); break;
    case reg::kMtmp: e->asic.reset(); break;
    case reg::kMfsm: e->fan_rpm.clear(); break;
    case reg::kFore: e->fan_limits.reset(); break;
    case reg::kMsps: e->power_supplies.reset(); break;
    default: break;
  }
}

bool Empty(const SwitchEnvironment& e) {
  return !e.general && !e.system && !e.asic && e.fan_rpm.empty() && !e.fan_limits && !e.power_supplies;
}

class SwitchEnvironmentCollector final : public Collector {
 public:
  explicit SwitchEnvironmentCollector(std::chrono::milliseconds interval) : interval_(interval), share_(interval) {}

  Schedule schedule() const override { return Schedule::kSweep; }

  // Its reads run by themselves after the sweep's batch, not in it: a
  // switch whose registers are slow or silent (firmware busy, a VS_Key it
  // wants) then costs the sweep's reads of that LID nothing.
  Outcome Update(const Cycle& cycle) override {
    bool changed = !published_;
    for (auto it = states_.begin(); it != states_.end();) {
      const bool gone = cycle.fabric->FindNode(it->first) == nullptr;
      changed |= gone && published_ && published_->switches.count(it->first);
      it = gone ? states_.erase(it) : std::next(it);
    }
    std::vector<std::pair<What, transport::MadRequest>> asks;
    if (cycle.parts->local.has_agent("vendor") && cycle.engine) Asks(cycle, &asks);
    if (!asks.empty()) {
      std::vector<transport::MadRequest> requests;
      for (const auto& a : asks) requests.push_back(a.second);
      const auto results = cycle.engine->Run(requests);
      std::set<std::uint64_t> answered, asked;
      for (std::size_t i = 0; i < asks.size() && i < results.size(); ++i) {
        asked.insert(asks[i].first.guid);
        if (results[i].outcome == transport::MadOutcome::kOk || transport::VendorUnsupported(results[i]))
          answered.insert(asks[i].first.guid);
        changed |= Take(asks[i].first, results[i], cycle.now);
      }
      for (std::uint64_t guid : asked) {
        SwitchState& st = states_[guid];
        if (answered.count(guid)) {
          st.misses = 0;
          continue;
        }
        // Nothing answered: again after the interval, doubled each round
        // that stays silent.
        st.not_before = cycle.now + interval_ * (1 << std::min(st.misses, 4));
        ++st.misses;
      }
    }
    // A reading not renewed within two intervals (and a half minute) is
    // gone: absent rather than stale.
    const auto stale_after = IntervalShare::StaleAfter(interval_);
    for (auto& [guid, st] : states_) {
      for (auto it = st.fresh_at.begin(); it != st.fresh_at.end();) {
        if (cycle.now - it->second <= stale_after) {
          ++it;
          continue;
        }
        Forget(&st.out, it->first);
        it = st.fresh_at.erase(it);
        changed = true;
      }
    }
    if (changed) Rebuild();
    return {};
  }

  void Publish(Snapshot* parts) const override { parts->by_collector.Set(kSwitchEnvironmentCollector, published_); }

 private:
  // The exporter that reports a switch's own facts reads them (render.h
  // OwnsSwitch: never a local one, the shard its GUID hashes to, whatever
  // ports it reads), and only where its GeneralInfo (the capabilities
  // part) says AccessRegister.
  static bool Reads(const Cycle& cycle, const topology::Node& n) {
    if (!topology::IsNvidiaSwitch(n) || !topology::OwnsSwitchFacts(cycle.scope, n.guid)) return false;
    const auto info = cycle.parts->vendor->find(n.guid);
    return info != cycle.parts->vendor->end() && info->second.access_register;
  }

  // This sweep's asks (IntervalPicks): the registers of the switches never
  // read (at least kFirstAsksPerSweep), then this sweep's share of those
  // due, the longest waiting first.
  void Asks(const Cycle& cycle, std::vector<std::pair<What, transport::MadRequest>>* out) {
    const double share = share_.Next(cycle.now);
    IntervalPicks<const topology::Node*> picks;
    std::size_t eligible = 0;
    for (const topology::Node& n : cycle.fabric->nodes()) {
      if (!Reads(cycle, n)) continue;
      SwitchState& st = states_[n.guid];
      if (cycle.now < st.not_before) continue;
      const bool interval_passed = !st.asked || cycle.now - st.asked_at >= interval_;
      ++eligible;
      if (!st.registers_asked) {
        picks.Never(&n);
      } else if (interval_passed) {
        picks.Due(st.asked_at, &n);
      }
    }
    for (const topology::Node* n : picks.Take(share, eligible, eligible, kFirstAsksPerSweep)) {
      SwitchState& st = states_[n->guid];
      st.asked_at = cycle.now;
      st.asked = true;
      st.registers_asked = true;
      AskRegisters(*n, st, out);
    }
  }

  // One interval's registers of a switch that has them.
  static void AskRegisters(const topology::Node& n, const SwitchState& st,
                           std::vector<std::pair<What, transport::MadRequest>>* out) {
    const auto ask = [&](std::uint16_t id, int index, const std::vector<std::uint8_t>& request) {
      if (!st.unsupported.count(id))
        out->push_back({{n.guid, id, index}, transport::AccessRegisterQuery(n.lid, id, request)});
    };
    ask(reg::kMgir, 0, {});
    if (!st.out.system) ask(reg::kMsgi, 0, {});
    ask(reg::kMtmp, 0, transport::MtmpRequest(transport::kMtmpAsic));
    if (!st.tachos) {
      ask(reg::kMfcr, 0, {});
    } else {
      for (int t : *st.tachos) ask(reg::kMfsm, t, transport::MfsmRequest(t));
    }
    ask(reg::kFore, 0, {});
    ask(reg::kMsps, 0, {});
  }

  // Takes one answer in; true when the published part changes.
  bool Take(const What& w, const transport::MadResult& m, std::chrono::steady_clock::time_point now) {
    const auto it = states_.find(w.guid);
    if (it == states_.end()) return false;
    SwitchState& st = it->second;
    SwitchEnvironment& e = st.out;
    if (m.outcome != transport::MadOutcome::kOk) {
      if (!transport::VendorUnsupported(m)) return false;  // no answer: the next interval
      st.unsupported.insert(w.reg);
      const SwitchEnvironment was = e;
      Forget(&e, w.reg);
      st.fresh_at.erase(w.reg);
      return !(e == was);
    }
    const SwitchEnvironment was = e;
    e.guid = w.guid;
    const auto data = transport::AccessRegisterData(m.response);
    switch (w.reg) {
      case reg::kMgir: e.general = transport::DecodeGeneralRegister(data); break;
      case reg::kMsgi: e.system = transport::DecodeSystemInfo(data); break;
      case reg::kMtmp: e.asic = transport::DecodeTemperature(data); break;
      case reg::kMfcr: st.tachos = transport::ActiveTachometers(data); break;
      case reg::kMfsm: e.fan_rpm[w.index] = transport::DecodeFanRpm(data); break;
      case reg::kFore: e.fan_limits = transport::DecodeFanLimits(data); break;
      case reg::kMsps: e.power_supplies = transport::DecodePowerSupplies(data); break;
      default: break;
    }
    st.fresh_at[w.reg] = now;
    return !(e == was);
  }

  void Rebuild() {
    auto next = std::make_shared<SwitchEnvironments>();
    for (const auto& [guid, st] : states_) {
      if (!Empty(st.out)) next->switches.emplace(guid, st.out);
    }
    published_ = std::move(next);
  }

  std::chrono::milliseconds interval_;
  IntervalShare share_;
  std::map<std::uint64_t, SwitchState> states_;
  std::shared_ptr<const SwitchEnvironments> published_;
};

const char* Status(bool ok) { return ok ? "OK" : "ERROR"; }

}  // namespace

std::unique_ptr<Collector> MakeSwitchEnvironmentCollector(const CollectorOptions& options) {
  return std::make_unique<SwitchEnvironmentCollector>(options.phy_interval);
}

void RenderSwitchEnvironment(const Snapshot& s, const Emit& out) {
  const auto* envs = s.by_collector.Get<SwitchEnvironments>(kSwitchEnvironmentCollector);
  if (!envs || !s.fabric) return;
  // SckyzO's infiniband_exporter's families (collectors/ibswinfo.go), its
  // help texts; {guid, switch} as there.
  auto hardware = Family("infiniband_switch_hardware_info",
                         "Constant 1 carrying switch hardware identification labels (firmware version, PSID, "
                         "part/serial numbers).",
                         MetricType::Gauge);
  auto uptime = Family("infiniband_switch_uptime_seconds", "Switch firmware uptime in seconds since last reboot.",
                       MetricType::Gauge);
  auto temperature =
      Family("infiniband_switch_temperature_celsius", "Switch ASIC temperature in degrees Celsius.", MetricType::Gauge);
  auto threshold = Family("infiniband_switch_temperature_high_threshold_celsius",
                          "The switch ASIC's high temperature threshold (MTMP temperature_threshold_hi), in degrees "
                          "Celsius",
                          MetricType::Gauge);
  auto rpm =
      Family("infiniband_switch_fan_rpm", "Switch fan rotation speed in RPM (one series per fan).", MetricType::Gauge);
  auto fans = Family("infiniband_switch_fan_status_info",
                     "Constant 1 with the current overall fan status string label.", MetricType::Gauge);
  auto psu_status =
      Family("infiniband_switch_power_supply_status_info",
             "Constant 1 with the current PSU status string label (1 series per PSU per state).", MetricType::Gauge);
  auto psu_dc = Family("infiniband_switch_power_supply_dc_power_status_info",
                       "Constant 1 with the current DC power status string label (1 series per PSU per state).",
                       MetricType::Gauge);
  auto psu_fan = Family("infiniband_switch_power_supply_fan_status_info",
                        "Constant 1 with the current PSU fan status string label (1 series per PSU per state).",
                        MetricType::Gauge);
  auto watts = Family("infiniband_switch_power_supply_watts", "Power drawn by the PSU in watts.", MetricType::Gauge);
  for (const auto& [guid, e] : envs->switches) {
    if (!OwnsSwitch(s, guid)) continue;
    const std::string g = topology::FormatGuid(guid);
    const std::string name = topology::NodeName(*s.fabric, guid);
    const std::vector<prometheus::ClientMetric::Label> at{{"guid", g}, {"switch", name}};
    const auto with = [&](const char* key, const std::string& value) {
      auto l = at;
      l.insert(l.begin() + 1, prometheus::ClientMetric::Label{key, value});
      return l;
    };
    if (e.general || e.system) {
      Add(hardware,
          {{"guid", g},
           {"firmware_version", e.general ? e.general->FirmwareVersion() : ""},
           {"psid", e.general ? e.general->psid : ""},
           {"part_number", e.system ? e.system->part_number : ""},
           {"serial_number", e.system ? e.system->serial_number : ""},
           {"switch", name}},
          1);
    }
    if (e.general) Add(uptime, at, e.general->uptime_seconds);
    if (e.asic && e.asic->present) {
      Add(temperature, at, e.asic->celsius);
      if (e.asic->threshold_high_celsius > 0) Add(threshold, at, e.asic->threshold_high_celsius);
    }
    for (const auto& [tacho, r] : e.fan_rpm) Add(rpm, with("fan", std::to_string(tacho)), r);
    if (e.fan_limits) {
      Add(fans, with("status", Status(e.fan_limits->under == 0 && e.fan_limits->over == 0)), 1);
    }
    for (const transport::PowerSupply& p : e.power_supplies.value_or(std::vector<transport::PowerSupply>{})) {
      const auto psu = [&](const char* status) {
        return std::vector<prometheus::ClientMetric::Label>{
            {"guid", g}, {"psu", std::to_string(p.index)}, {"status", status}, {"switch", name}};
      };
      Add(psu_status, psu(Status(p.ok)), 1);
      Add(psu_dc, psu(Status(p.dc_ok)), 1);
      if (p.fan_ok) Add(psu_fan, psu(Status(*p.fan_ok)), 1);
      if (p.watts) Add(watts, {{"guid", g}, {"psu", std::to_string(p.index)}, {"switch", name}}, *p.watts);
    }
  }
  for (auto* f : {&hardware, &uptime, &temperature, &threshold, &rpm, &fans, &psu_status, &psu_dc, &psu_fan, &watts})
    EmitNonEmpty(out, *f);
}

CollectorInfo SwitchEnvironmentCollectorInfo() {
  return {
      .name = "switch_environment",
      .help =
          "NVIDIA switches' temperature, fans, power supplies, firmware and uptime, from their registers in band "
          "(AccessRegister), every --phy.interval, under SckyzO's ibswinfo metric names.",
      .make = MakeSwitchEnvironmentCollector,
      .render = RenderSwitchEnvironment,
      .reads = {"capabilities"},
  };
}

}  // namespace ibfabric::collectors
