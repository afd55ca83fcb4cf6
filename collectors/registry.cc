#include "collectors/registry.h"

#include "collectors/capabilities_collector.h"
#include "collectors/fabric_collector.h"
#include "collectors/fat_tree_collector.h"
#include "collectors/link_health_collector.h"
#include "collectors/partitions_collector.h"
#include "collectors/port_counters_collector.h"
#include "collectors/routing_collector.h"
#include "collectors/subnet_managers_collector.h"

namespace ibfabric::collectors {

const std::vector<CollectorInfo>& Registry() {
  // Run order: a collector may read the parts of those before it
  // (port_counters the capabilities, routing the tiers, link_health the
  // totals and the degraded links).
  static const std::vector<CollectorInfo> kRegistry{
      {"fabric", "Nodes and cables discovery found (infiniband_{switch,hca}_info, *_uplink_info).", true,
       MakeFabricCollector, RenderFabric},
      {"capabilities", "PMA ClassPortInfo of every node: which counters each port supports.", true,
       MakeCapabilitiesCollector, RenderCapabilities},
      {"fat_tree", "Tiers, wiring faults, asymmetry, degraded links and bisection; the cabling plan diff.", true,
       MakeFatTreeCollector, RenderFatTree},
      {"routing", "The switches' forwarding tables: balance, unrouted destinations, down-up routes.", true,
       MakeRoutingCollector, RenderRouting},
      {"partitions", "P_Key tables of the CA ports and the switch ports facing them.", true, MakePartitionsCollector,
       RenderPartitions},
      {"port_counters", "PortCounters and PortCountersExtended of every port, each sweep.", true,
       MakePortCountersCollector, RenderPortCounters},
      {"link_health", "Link state, flaps and error rates per cable, and the alerts they raise.", true,
       MakeLinkHealthCollector, RenderLinkHealth},
      {"subnet_managers", "SMInfo of every subnet manager: masters, standbys, sweeping, failovers.", true,
       MakeSubnetManagersCollector, RenderSubnetManagers},
  };
  return kRegistry;
}

const CollectorInfo* FindCollector(std::string_view name) {
  for (const auto& c : Registry()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

bool EnabledCollectors(const std::map<std::string, bool>& overrides, std::vector<std::string>* enabled,
                       std::string* error) {
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
