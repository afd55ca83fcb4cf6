#include "collectors/capabilities_collector.h"

#include <cstdio>

#include "collectors/render.h"
#include "collectors/table_retry.h"

namespace ibfabric::collectors {
namespace {

class CapabilitiesCollector final : public Collector {
 public:
  Schedule schedule() const override { return Schedule::kDiscovery; }

  Outcome Update(const Cycle& cycle) override {
    Outcome out;
    DropGone(cycle, &caps_, [](std::uint64_t g) { return g; });
    std::set<std::uint64_t> read;
    for (std::uint64_t g : NodesToRead(cycle, &retry_)) {
      const topology::Node* n = cycle.fabric->FindNode(g);
      if (n && cycle.in_scope(*n)) read.insert(g);
    }
    if (!read.empty()) {
      for (auto& [g, c] : ReadCapabilities(*cycle.fabric, *cycle.engine, &read)) caps_[g] = c;
    }
    retry_.Note(*cycle.fabric, read, [&](const topology::Node& n) { return !caps_.count(n.guid); });
    out.again = retry_.pending();
    return out;
  }

  void Publish(Snapshot* parts) const override { parts->pma = caps_; }

 private:
  CapabilityMap caps_;
  TableRetry retry_;
};

}  // namespace

std::unique_ptr<Collector> MakeCapabilitiesCollector(const CollectorOptions&) {
  return std::make_unique<CapabilitiesCollector>();
}

void RenderCapabilities(const Snapshot& s, const Emit& out) {
  if (!s.fabric) return;
  // What each node's PMA advertises: why a counter is absent on a port,
  // e.g. transmit_wait without bit 12.
  auto pma =
      Family("infiniband_node_pma_capabilities_info",
             "PMA ClassPortInfo CapabilityMask and CapabilityMask2 of the node (hex)", prometheus::MetricType::Gauge);
  for (const auto& [guid, caps] : s.pma) {
    if (!OwnsNode(s, guid)) continue;
    char mask[8], mask2[12];
    std::snprintf(mask, sizeof mask, "0x%04x", caps.mask);
    std::snprintf(mask2, sizeof mask2, "0x%08x", caps.mask2);
    Add(pma, {{"guid", topology::FormatGuid(guid)}, {"capability_mask", mask}, {"capability_mask2", mask2}}, 1);
  }
  out(std::move(pma));
}

}  // namespace ibfabric::collectors
