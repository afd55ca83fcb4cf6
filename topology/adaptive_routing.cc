#include "topology/adaptive_routing.h"

#include "transport/attributes.h"

namespace ibfabric::topology {

const char* ToString(AdaptiveRouting a) {
  switch (a) {
    case AdaptiveRouting::kOn: return "on";
    case AdaptiveRouting::kOff: return "off";
    case AdaptiveRouting::kUnsupported: break;
  }
  return "unsupported";
}

std::set<std::uint64_t> AdaptiveOn(const AdaptiveSwitches& switches) {
  std::set<std::uint64_t> out;
  for (const auto& [guid, a] : switches) {
    if (a == AdaptiveRouting::kOn) out.insert(guid);
  }
  return out;
}

bool AsksAdaptiveRouting(const Node& node) { return IsNvidiaSwitch(node); }

ReadAdaptiveResult ReadAdaptiveRouting(const Fabric& fabric, transport::MadEngine& engine) {
  ReadAdaptiveResult out;
  std::vector<const Node*> asked;
  std::vector<transport::MadRequest> reqs;
  for (const auto& n : fabric.nodes()) {
    if (!AsksAdaptiveRouting(n)) continue;
    asked.push_back(&n);
    reqs.push_back(transport::AdaptiveRoutingInfoQuery(transport::MadAddress::Lid(n.lid)));
  }
  const auto got = engine.Run(reqs);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const Node& sw = *asked[i];
    if (transport::Unsupported(got[i])) {
      out.switches[sw.guid] = AdaptiveRouting::kUnsupported;
      continue;
    }
    if (got[i].outcome != transport::MadOutcome::kOk) {
      out.problems.push_back("no AdaptiveRoutingInfo from " + sw.description + ": " +
                             transport::ToString(got[i].outcome));
      continue;
    }
    const transport::AdaptiveRoutingInfo a = transport::DecodeAdaptiveRoutingInfo(got[i].response);
    out.switches[sw.guid] = a.group_cap == 0 ? AdaptiveRouting::kUnsupported
                            : a.enabled      ? AdaptiveRouting::kOn
                                             : AdaptiveRouting::kOff;
  }
  return out;
}

}  // namespace ibfabric::topology
