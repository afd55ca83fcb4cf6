// libFuzzer target: the ibnetdiscover/net-file plan parser, and the diff of
// whatever it accepts against a small fabric; the same text read as a
// saved fabric (--analyze) and whatever it builds judged.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "topology/findings.h"
#include "topology/ibnetdiscover.h"
#include "topology/plan.h"

namespace {
const ibfabric::topology::Fabric& SmallFabric() {
  using namespace ibfabric::topology;
  static const Fabric f = [] {
    Node sw;
    sw.guid = 0x200000;
    sw.kind = NodeKind::kSwitch;
    sw.description = "ib-leaf01";
    Node ca;
    ca.guid = 0x100000;
    ca.kind = NodeKind::kCa;
    ca.description = "cn0001";
    Port a;
    a.number = 1;
    a.phys_state = 5;
    a.width_active = 2;
    a.speed_active = 4;
    a.remote = PortRef{0x100000, 1};
    Port b = a;
    b.remote = PortRef{0x200000, 1};
    sw.ports = {a};
    ca.ports = {b};
    return Fabric({sw, ca});
  }();
  return f;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ibfabric::topology;
  CablingPlan plan;
  std::string error;
  if (ParseIbnetdiscoverPlan(std::string_view(reinterpret_cast<const char*>(data), size), &plan, &error)) {
    const Fabric& f = SmallFabric();
    DiffAgainstPlan(f, plan, Analyze(f));
  }
  NetFile file;
  Fabric saved;
  std::vector<std::string> notes;
  if (ParseNetFile(std::string_view(reinterpret_cast<const char*>(data), size), &file, &error) &&
      FabricFromNetFile(file, &saved, &notes, &error)) {
    HostAnalysis hosts;
    AnalyzeWiring(saved, HostPattern{}, &plan, &hosts);
  }
  return 0;
}
