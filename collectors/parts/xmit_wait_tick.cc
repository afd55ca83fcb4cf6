#include "collectors/parts/xmit_wait_tick.h"

namespace ibfabric::collectors {

topology::TickLength XmitWaitTicks::TickOf(const topology::Node& node) const {
  const auto t = tick.find(node.guid);
  return topology::TickOf(node, t == tick.end() ? std::nullopt : std::optional(t->second), multiplier);
}

}  // namespace ibfabric::collectors
