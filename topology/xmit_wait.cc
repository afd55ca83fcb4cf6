#include "topology/xmit_wait.h"

#include "topology/link_rate.h"

namespace ibfabric::topology {
namespace {

bool SupportsHdrOrFaster(const Node& node) {
  for (const Port& p : node.ports) {
    if (MaxSupportedSpeed(p) >= Speed::kHdr) return true;
  }
  return false;
}

}  // namespace

XmitWaitUnit XmitWaitUnitOf(const Node& node) {
  if (node.kind != NodeKind::kSwitch || node.vendor_id != kNvidiaVendorId) return {};
  const std::uint16_t id = node.device_id;
  if ((id >= 0xc738 && id <= 0xc73b) || id == 0xcb20 || id == 0xcf08) {
    return {"switch-ib", WaitCounting::kLane, 31};
  }
  if (id == 0xd2f0 || id == 0xd2f2 || id == 0xd2f4 || SupportsHdrOrFaster(node)) {
    return {"quantum", WaitCounting::kPort, 7};
  }
  return {};
}

const char* ToString(TickSource s) {
  switch (s) {
    case TickSource::kOverride: return "override";
    case TickSource::kDevice: return "device";
    case TickSource::kDocumented: return "documented";
    case TickSource::kMinimum: return "minimum";
  }
  return "minimum";
}

TickLength TickOf(const Node& node, std::optional<std::uint8_t> tick, std::optional<double> multiplier) {
  if (multiplier) return {*multiplier, TickSource::kOverride};
  if (tick) return {*tick + 1.0, TickSource::kDevice};
  if (const auto documented = XmitWaitUnitOf(node).documented_tick) {
    return {*documented + 1.0, TickSource::kDocumented};
  }
  return {};
}

double XmitWaitCountSeconds(const Node& node, const Port& port, const TickLength& tick) {
  if (!port.link_up()) return 0;
  const double lane_gbps = LaneGbps(ActiveSpeed(port));
  const int lanes = Lanes(port.width_active);
  if (lane_gbps <= 0 || lanes <= 0) return 0;
  // (Tick + 1) bytes at the rate of one lane, or of all of them.
  const bool whole_port = XmitWaitUnitOf(node).counting == WaitCounting::kPort;
  return tick.ticks_plus_one * 8 / ((whole_port ? lane_gbps * lanes : lane_gbps) * 1e9);
}

}  // namespace ibfabric::topology
