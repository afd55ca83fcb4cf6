#include "collectors/capabilities_collector.h"

#include <cstdio>

#include "collectors/framework/render.h"
#include "collectors/framework/table_retry.h"

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
    if (cycle.engine && cycle.parts->local.has_agent("vendor")) AskVendor(cycle);
    return out;
  }

  void Publish(Snapshot* parts) const override {
    parts->pma = std::make_shared<const std::map<std::uint64_t, PmaCapabilities>>(caps_);
    parts->vendor = std::make_shared<const std::map<std::uint64_t, transport::GeneralInfo>>(vendor_);
  }

 private:
  // NVIDIA's GeneralInfo of the NVIDIA nodes this exporter reads ports of
  // or states a switch's facts of, each asked once: a node that did not
  // answer is asked again at the next full walk (a re-walk asks only the
  // nodes it found), never one whose class or attribute is not supported.
  void AskVendor(const Cycle& cycle) {
    DropGone(cycle, &vendor_, [](std::uint64_t g) { return g; });
    std::erase_if(vendor_asked_, [&](std::uint64_t g) { return Gone(cycle, g); });
    const bool full = cycle.trigger == Trigger::kFullWalk;
    std::vector<transport::MadRequest> asks;
    std::vector<std::uint64_t> guids;
    for (const topology::Node& n : cycle.fabric->nodes()) {
      const std::uint16_t lid = topology::NvidiaAgentLid(n);
      if (lid == 0 || vendor_.count(n.guid) || (!full && vendor_asked_.count(n.guid))) continue;
      const bool facts = n.kind == topology::NodeKind::kSwitch && topology::OwnsSwitchFacts(cycle.scope, n.guid);
      if (!cycle.in_scope(n) && !facts) continue;
      asks.push_back(transport::GeneralInfoQuery(lid));
      guids.push_back(n.guid);
      vendor_asked_.insert(n.guid);
    }
    if (asks.empty()) return;
    const auto results = cycle.engine->Run(asks);
    for (std::size_t i = 0; i < results.size() && i < guids.size(); ++i) {
      if (results[i].outcome == transport::MadOutcome::kOk) {
        vendor_[guids[i]] = transport::DecodeGeneralInfo(results[i].response);
      } else if (transport::VendorUnsupported(results[i])) {
        vendor_[guids[i]] = transport::GeneralInfo{};
      }
    }
  }

  CapabilityMap caps_;
  TableRetry retry_;
  std::map<std::uint64_t, transport::GeneralInfo> vendor_;
  std::set<std::uint64_t> vendor_asked_;
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
  for (const auto& [guid, caps] : *s.pma) {
    if (!OwnsNode(s, guid)) continue;
    char mask[8], mask2[12];
    std::snprintf(mask, sizeof mask, "0x%04x", caps.mask);
    std::snprintf(mask2, sizeof mask2, "0x%08x", caps.mask2);
    Add(pma, {{"guid", topology::FormatGuid(guid)}, {"capability_mask", mask}, {"capability_mask2", mask2}}, 1);
  }
  out(std::move(pma));
  auto access = Family("infiniband_node_access_register_supported",
                       "1 where the NVIDIA node's vendor GeneralInfo says it answers AccessRegister in band (its "
                       "ports' physical-layer counters and modules are read, and a switch's environment), 0 where "
                       "it does not",
                       prometheus::MetricType::Gauge);
  for (const auto& [guid, info] : *s.vendor) {
    if (OwnsNode(s, guid)) Add(access, {{"guid", topology::FormatGuid(guid)}}, info.access_register ? 1 : 0);
  }
  out(std::move(access));
}

CollectorInfo CapabilitiesCollectorInfo() {
  return {
      .name = "capabilities",
      .help = "PMA ClassPortInfo of every node: which counters each port supports.",
      .make = MakeCapabilitiesCollector,
      .render = RenderCapabilities,
  };
}

}  // namespace ibfabric::collectors
