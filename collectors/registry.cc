#include "collectors/registry.h"

#include <algorithm>

#include "collectors/adaptive_routing_collector.h"
#include "collectors/blast_radius_collector.h"
#include "collectors/capabilities_collector.h"
#include "collectors/fabric_collector.h"
#include "collectors/fat_tree_collector.h"
#include "collectors/fec_collector.h"
#include "collectors/host_collector.h"
#include "collectors/jobs_collector.h"
#include "collectors/link_health_collector.h"
#include "collectors/module_collector.h"
#include "collectors/partitions_collector.h"
#include "collectors/port_counters_collector.h"
#include "collectors/routing_collector.h"
#include "collectors/subnet_managers_collector.h"
#include "collectors/switch_environment_collector.h"
#include "collectors/xmit_wait_tick_collector.h"

namespace ibfabric::collectors {

const std::vector<CollectorInfo>& Registry() {
  // Run order: a collector may read the parts of those before it, and
  // says which (CheckRunOrder).
  static const std::vector<CollectorInfo> kRegistry{
      {"fabric", "Nodes and cables discovery found (infiniband_{switch,hca}_info, *_uplink_info).", true,
       MakeFabricCollector, RenderFabric},
      {"capabilities", "PMA ClassPortInfo of every node: which counters each port supports.", true,
       MakeCapabilitiesCollector, RenderCapabilities},
      {"fat_tree", "Tiers, wiring faults, asymmetry, degraded links and bisection; the cabling plan diff.", true,
       MakeFatTreeCollector, RenderFatTree},
      {"adaptive_routing",
       "NVIDIA switches' AdaptiveRoutingInfo: where the forwarding tables are only a fallback.",
       true,
       MakeAdaptiveRoutingCollector,
       RenderAdaptiveRouting,
       {},
       /*reads_samples=*/false,
       /*after_publication=*/true},
      {"routing",
       "The switches' forwarding tables: balance, unrouted destinations, down-up routes.",
       true,
       MakeRoutingCollector,
       RenderRouting,
       {"fat_tree", "adaptive_routing"},
       /*reads_samples=*/false,
       /*after_publication=*/true},
      {"partitions",
       "P_Key tables of the CA ports and the switch ports facing them.",
       true,
       MakePartitionsCollector,
       RenderPartitions,
       {},
       /*reads_samples=*/false,
       /*after_publication=*/true},
      {"port_counters",
       "PortCounters and PortCountersExtended of every port, each sweep.",
       true,
       MakePortCountersCollector,
       RenderPortCounters,
       {"capabilities"},
       /*reads_samples=*/true},
      {"xmit_wait_tick",
       "PMA PortSamplesControl.Tick of each node once a port of it counted PortXmitWait, and each port's "
       "PortXmitWait in seconds by its device's Tick and generation.",
       true,
       MakeXmitWaitTickCollector,
       RenderXmitWaitTick,
       {"port_counters"}},
      {"fec",
       "Forward error correction and bit error ratios per port where the device has them, every --phy.interval: "
       "PPCNT's physical layer counters through AccessRegister (bits received and corrected, effective and symbol "
       "errors, raw errors per lane), else PortExtendedSpeedsCounters of RS-FEC ports (corrected and uncorrectable "
       "blocks, corrected symbols per lane); raw, effective and symbol bit error ratios.",
       true,
       MakeFecCollector,
       RenderFec,
       {"capabilities"}},
      {"modules",
       "The module at each end of a cable (PDDR Module Info through AccessRegister), every --phy.interval: "
       "vendor, part and serial number, length, temperature and its alarm threshold, rx/tx power per lane, and "
       "modules whose part differs from their level of cables'.",
       true,
       MakeModuleCollector,
       RenderModules,
       {"capabilities"}},
      {"link_health",
       "Link state, flaps and error rates per cable, and the alerts they raise.",
       true,
       MakeLinkHealthCollector,
       RenderLinkHealth,
       {"port_counters", "fat_tree", "adaptive_routing", "routing", "xmit_wait_tick", "fec"}},
      {"blast_radius",
       "For each bad or flapping cable and congestion root alerted on, the routes between host ports that cross it "
       "(from the forwarding tables) and the host ports they join.",
       true,
       MakeBlastRadiusCollector,
       RenderBlastRadius,
       {"adaptive_routing", "routing", "link_health"}},
      {"subnet_managers", "SMInfo of every subnet manager: masters, standbys, sweeping, failovers.", true,
       MakeSubnetManagersCollector, RenderSubnetManagers},
      {"switch_environment",
       "NVIDIA switches' temperature, fans, power supplies, firmware and uptime, from their registers in band "
       "(AccessRegister), every --phy.interval, under SckyzO's ibswinfo metric names.",
       true,
       MakeSwitchEnvironmentCollector,
       RenderSwitchEnvironment,
       {"capabilities"}},
      {"host",
       "In local scope, this host's RDMA devices as its kernel shows them (sysfs under --host.sysfs): counters and "
       "the driver's hw_counters, firmware, link layer, the PCIe link against its maximum, NUMA node.",
       true, MakeHostCollector, RenderHost},
      {"jobs",
       "In local scope, which jobs hold this host's HCAs: Slurm's mapping directory (--host.job-mapping-dir) and "
       "the kubelet's pod-resources API (--host.kubelet-socket), one _info series per HCA port and job.",
       true,
       MakeJobsCollector,
       RenderJobs,
       {"host"}},
  };
  return kRegistry;
}

const CollectorInfo* FindCollector(std::string_view name) {
  for (const auto& c : Registry()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

bool CheckRunOrder(const std::vector<CollectorInfo>& registry, std::string* error) {
  for (std::size_t i = 0; i < registry.size(); ++i) {
    for (const std::string_view read : registry[i].reads) {
      const auto at = std::find_if(registry.begin(), registry.end(), [&](const auto& c) { return c.name == read; });
      if (at == registry.end() || at - registry.begin() >= static_cast<std::ptrdiff_t>(i)) {
        *error = "collector " + std::string(registry[i].name) + " reads " + std::string(read) +
                 (at == registry.end() ? ", which is no collector" : ", which runs after it");
        return false;
      }
    }
  }
  return true;
}

bool EnabledCollectors(const std::map<std::string, bool>& overrides, std::vector<std::string>* enabled,
                       std::string* error) {
  if (!CheckRunOrder(Registry(), error)) return false;
  for (const auto& [name, on] : overrides) {
    if (!FindCollector(name)) {
      *error = "unknown collector: " + name;
      return false;
    }
  }
  enabled->clear();
  for (const auto& c : Registry()) {
    auto it = overrides.find(std::string(c.name));
    if (it == overrides.end() ? c.default_on : it->second) enabled->emplace_back(c.name);
  }
  return true;
}

}  // namespace ibfabric::collectors
