// set_lft: changes one entry of a switch's LinearForwardingTable with a
// SubnGet/SubnSet pair through the real transport, as a misbehaving SM
// would: used by the routing tests to plant a route that goes down and up
// again. Test tool only: the exporter never sets anything on the fabric.
//   set_lft SWITCH_LID DLID PORT

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "transport/attributes.h"
#include "transport/mad_engine.h"
#include "transport/umad_port.h"

int main(int argc, char** argv) {
  using namespace ibfabric::transport;
  if (argc != 4) {
    std::fprintf(stderr, "usage: set_lft SWITCH_LID DLID PORT\n");
    return 2;
  }
  const auto lid = static_cast<std::uint16_t>(std::atoi(argv[1]));
  const auto dlid = static_cast<std::uint32_t>(std::atoi(argv[2]));
  const auto port = static_cast<std::uint8_t>(std::atoi(argv[3]));
  std::string error;
  auto p = UmadPort::Open({}, &error);
  if (!p) {
    std::fprintf(stderr, "set_lft: %s\n", error.c_str());
    return 1;
  }
  MadEngine engine(*p, {});
  const std::uint32_t block = dlid / kLftBlockSize;
  const std::vector<MadRequest> get{LftBlockQuery(MadAddress::Lid(lid), block)};
  const auto got = engine.Run(get);
  if (got[0].outcome != MadOutcome::kOk) {
    std::fprintf(stderr, "set_lft: get block %u: %s\n", block, ToString(got[0].outcome));
    return 1;
  }
  LftBlock entries = DecodeLftBlock(got[0].response);
  entries[dlid % kLftBlockSize] = port;
  MadRequest set = LftBlockQuery(MadAddress::Lid(lid), block);
  set.method = MadMethod::kSet;  // SubnSet(LinearForwardingTable), IBTA 14.2.5.10
  set.payload.assign(entries.begin(), entries.end());
  const auto done = engine.Run(std::vector<MadRequest>{set});
  if (done[0].outcome != MadOutcome::kOk || DecodeLftBlock(done[0].response)[dlid % kLftBlockSize] != port) {
    std::fprintf(stderr, "set_lft: set block %u: %s\n", block, ToString(done[0].outcome));
    return 1;
  }
  return 0;
}
