#include "collectors/registry.h"

#include <algorithm>

#include "collectors/adaptive_routing_collector.h"
#include "collectors/blast_radius_collector.h"
#include "collectors/capabilities_collector.h"
#include "collectors/drain_collector.h"
#include "collectors/fabric_collector.h"
#include "collectors/fabric_jobs_collector.h"
#include "collectors/fat_tree_collector.h"
#include "collectors/fec_collector.h"
#include "collectors/host_collector.h"
#include "collectors/jobs_collector.h"
#include "collectors/kubernetes_node_collector.h"
#include "collectors/link_health_collector.h"
#include "collectors/module_collector.h"
#include "collectors/partitions_collector.h"
#include "collectors/port_counters_collector.h"
#include "collectors/routing_collector.h"
#include "collectors/slurm_topology_collector.h"
#include "collectors/subnet_managers_collector.h"
#include "collectors/switch_environment_collector.h"
#include "collectors/xmit_wait_tick_collector.h"

namespace ibfabric::collectors {

const std::vector<CollectorInfo>& Registry() {
  // Run order: a collector may read the parts of those before it, and
  // says which (CheckRunOrder).
  static const std::vector<CollectorInfo> kRegistry{
      FabricCollectorInfo(),
      CapabilitiesCollectorInfo(),
      FatTreeCollectorInfo(),
      SlurmTopologyCollectorInfo(),
      AdaptiveRoutingCollectorInfo(),
      RoutingCollectorInfo(),
      PartitionsCollectorInfo(),
      PortCountersCollectorInfo(),
      XmitWaitTickCollectorInfo(),
      FecCollectorInfo(),
      ModuleCollectorInfo(),
      LinkHealthCollectorInfo(),
      FabricJobsCollectorInfo(),
      BlastRadiusCollectorInfo(),
      DrainCollectorInfo(),
      SubnetManagersCollectorInfo(),
      SwitchEnvironmentCollectorInfo(),
      HostCollectorInfo(),
      JobsCollectorInfo(),
      KubernetesNodeCollectorInfo(),
  };
  return kRegistry;
}

std::vector<const CollectorFlag*> AllFlags() {
  std::vector<const CollectorFlag*> flags;
  for (const CollectorFlag& f : SharedFlags()) flags.push_back(&f);
  for (const CollectorInfo& c : Registry()) {
    for (const CollectorFlag& f : c.flags) flags.push_back(&f);
  }
  return flags;
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
