// capture_mad: sends one PMA query (or the SA's SMInfoRecord table)
// through the real transport and prints the whole response MAD as hex, 32
// bytes a line. Used to capture the bytes that unit tests decode.
//   capture_mad pc|pce|xdd|vlxw LID PORT  (PortCounters, PortCountersExtended,
//                                       PortXmitDiscardDetails, PortVLXmitWaitCounters)
//   capture_mad smir SM_LID 0

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
    std::fprintf(stderr, "usage: capture_mad pc|pce|xdd|vlxw|smir LID PORT\n");
    return 2;
  }
  const std::string what = argv[1];
  const auto lid = static_cast<std::uint16_t>(std::atoi(argv[2]));
  const auto port = static_cast<std::uint8_t>(std::atoi(argv[3]));
  std::string error;
  auto p = UmadPort::Open({}, &error);
  if (!p) {
    std::fprintf(stderr, "capture_mad: %s\n", error.c_str());
    return 1;
  }
  MadEngine engine(*p, {});
  const std::vector<MadRequest> req{what == "smir"   ? SmInfoRecordTableQuery(lid)
                                    : what == "pce"  ? PortCountersExtendedQuery(lid, port)
                                    : what == "xdd"  ? PortXmitDiscardDetailsQuery(lid, port)
                                    : what == "vlxw" ? PortVlXmitWaitQuery(lid, port)
                                                     : PortCountersQuery(lid, port)};
  const auto r = engine.Run(req);
  if (r[0].outcome != MadOutcome::kOk) {
    std::fprintf(stderr, "capture_mad: %s\n", ToString(r[0].outcome));
    return 1;
  }
  for (std::size_t i = 0; i < kMadSize; ++i) {
    std::printf("%02x%s", r[0].response[i], (i % 32 == 31) ? "\n" : "");
  }
  return 0;
}
