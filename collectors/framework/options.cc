#include "collectors/framework/options.h"

#include <filesystem>

#include "collectors/health/alert_config.h"
#include "config/config_file.h"
#include "config/slurm_names.h"
#include "config/values.h"

namespace ibfabric::collectors {

std::string PathValue(const std::string& value, std::string* out) {
  if (value.empty()) return "must not be empty";
  *out = value;
  return "";
}

std::string DirectoryValue(const std::string& value, std::string* out) {
  if (value.empty()) return "must not be empty";
  std::error_code ec;
  if (!std::filesystem::is_directory(value, ec)) return "'" + value + "' is no directory";
  *out = value;
  return "";
}

std::string FromSaValue(const std::string& value, bool* from_sa) {
  if (value != "sa" && value != "switches") return "'" + value + "' is not one of sa, switches";
  *from_sa = value == "sa";
  return "";
}

// Long on purpose: one table, one entry per flag.
const std::vector<CollectorFlag>& SharedFlags() {
  static const std::vector<CollectorFlag> kFlags{
      {"topology.plan",
       "Cabling plan to compare the fabric with: ibnetdiscover output saved from the healthy fabric, or a JSON or "
       "YAML plan (see docs/api.md).",
       "FILE",
       [](CollectorOptions& o, const std::string& v) -> std::string {
         if (v.empty()) return "must not be empty";
         topology::CablingPlan plan;
         std::string why;
         if (!topology::LoadPlan(v, &plan, &why)) return why;
         o.plan = std::move(plan);
         return "";
       },
       /*one_fabric=*/true},
      {"topology.host-pattern",
       "Regular expression over a CA's node description (after the node-name map) whose two groups are its "
       "host's name and its device's, for grouping HCAs into hosts and checking rails (default: rdma-ndd's \"%h "
       "%d\", ^(\\S+)\\s+(\\S+)$).",
       "REGEX",
       [](CollectorOptions& o, const std::string& v) -> std::string {
         topology::HostPattern p;
         std::string why;
         if (!topology::ParseHostPattern(v, &p, &why)) return why;
         o.host_pattern = std::move(p);
         return "";
       }},
      {"alerts.config",
       "Alert thresholds, windows and hysteresis (YAML; see docs/alerts.md). Default: built-in thresholds.", "FILE",
       [](CollectorOptions& o, const std::string& v) -> std::string {
         if (v.empty()) return "must not be empty";
         AlertConfig alerts;
         std::string why;
         if (!LoadAlertConfig(v, &alerts, &why)) return why;
         o.alerts = std::move(alerts);
         return "";
       }},
      {"phy.interval",
       "Time between reads of a port's physical-layer counters (PPCNT, else PortExtendedSpeedsCounters) and module "
       "(PDDR), and of a switch's environment registers (temperature, fans, power supplies), where the device has "
       "them; each read once in this time, spread over the sweeps.",
       "DURATION",
       [](CollectorOptions& o, const std::string& v) {
         return config::DurationValue(v, std::chrono::milliseconds(1000), &o.phy_interval);
       }},
      {"counters.clear-threshold",
       "Clear a port's counters on the fabric when one reaches this percent of its maximum (PortCounters, and the "
       "FEC counters read at --phy.interval; e.g. 75; 0, the default, never clears: other tools may rely on the "
       "counters).",
       "PERCENT",
       [](CollectorOptions& o, const std::string& v) {
         return config::IntValue(v, 0, 100, &o.clear_threshold_percent);
       }},
      {"counters.groups",
       "Per-port series to export, by group: a comma-separated list of errors, congestion, data, packets, details "
       "(PortRcvErrorDetails), state (port state and rate), lanes (the physical layer's series per lane); all; or "
       "auto, the default: all up to 20000 ports, above that errors, congestion and data (docs/scale.md).",
       "LIST",
       [](CollectorOptions& o, const std::string& v) -> std::string {
         std::string why;
         return ParsePortGroups(v, &o.port_groups, &o.port_groups_auto, &why) ? "" : why;
       }},
      {"slurm.node-name-map",
       "Slurm's names of the fabric's hosts, for the Slurm topology files and the drain list the exporter writes: "
       "FABRIC_HOST SLURM_NODE per line, '#' comments (default: the host's name in the fabric, rdma-ndd's \"%h\").",
       "FILE",
       [](CollectorOptions& o, const std::string& v) -> std::string {
         if (v.empty()) return "must not be empty";
         std::map<std::string, std::string> names;
         std::string why;
         if (!config::ParseFile(
                 v,
                 [&](const std::string& text, std::string* e) { return config::ParseSlurmNodeNames(text, &names, e); },
                 &why))
           return why;
         o.slurm_node_names = std::move(names);
         return "";
       }},
      {"host.sysfs",
       "Where this host's sysfs is (its class/infiniband and PCI devices), for the host collector in local scope; a "
       "container mounts the host's /sys elsewhere (as node_exporter's --path.sysfs).",
       "PATH", [](CollectorOptions& o, const std::string& v) { return DirectoryValue(v, &o.host_sysfs); }},
  };
  return kFlags;
}

// cable_degrading compares a port's raw ratio with the lowest of the 24
// parts of its period that hold a FEC window, so a period of few
// --phy.interval has few such parts, and none under two.
std::vector<Doubt> Doubts(const CollectorOptions& options) {
  std::vector<Doubt> doubts;
  const auto& degrading = options.alerts.degrading;
  if (degrading.factor && degrading.period < 4 * options.phy_interval) {
    doubts.push_back(
        {"cable_degrading.period holds fewer than four --phy.interval: a port needs two FEC reads in "
         "two of its 24 parts to be judged",
         "period_ms=" + std::to_string(degrading.period.count()) +
             " phy_interval_ms=" + std::to_string(options.phy_interval.count())});
  }
  return doubts;
}

}  // namespace ibfabric::collectors
