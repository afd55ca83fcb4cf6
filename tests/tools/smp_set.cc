// smp_set: changes a switch's LinearForwardingTable entry or a port's
// P_KeyTable with SubnGet/SubnSet through the real transport, as a
// misbehaving SM would: used by the routing and partition tests to plant
// faults. Test tool only: the exporter never sets anything on the fabric.
//   smp_set lft SWITCH_LID DLID PORT       one LFT entry (IBTA 14.2.5.10)
//   smp_set pkeys LID PORT [PKEY ...]      block 0 of a P_KeyTable (14.2.5.7),
//                                          the rest of the block emptied

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "transport/attributes.h"
#include "transport/mad_engine.h"
#include "transport/umad_port.h"

namespace {

using namespace ibfabric::transport;

// The block a Get of `query` returns, changed by `edit`, Set back; the
// answer to the Set must satisfy `took`.
template <typename Edit, typename Took>
int GetEditSet(MadEngine& engine, MadRequest query, Edit edit, Took took) {
  const auto got = engine.Run(std::vector<MadRequest>{query});
  if (got[0].outcome != MadOutcome::kOk) {
    std::fprintf(stderr, "smp_set: get: %s\n", ToString(got[0].outcome));
    return 1;
  }
  query.method = MadMethod::kSet;
  query.payload = edit(got[0].response);
  const auto done = engine.Run(std::vector<MadRequest>{query});
  if (done[0].outcome != MadOutcome::kOk || !took(done[0].response)) {
    std::fprintf(stderr, "smp_set: set: %s\n", ToString(done[0].outcome));
    return 1;
  }
  return 0;
}

int Usage() {
  std::fprintf(stderr, "usage: smp_set lft SWITCH_LID DLID PORT | smp_set pkeys LID PORT [PKEY ...]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return Usage();
  const std::string what = argv[1];
  const auto lid = static_cast<std::uint16_t>(std::strtoul(argv[2], nullptr, 0));
  std::string error;
  auto p = UmadPort::Open({}, &error);
  if (!p) {
    std::fprintf(stderr, "smp_set: %s\n", error.c_str());
    return 1;
  }
  MadEngine engine(*p, {});
  if (what == "lft" && argc == 5) {
    const auto dlid = static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 0));
    const auto port = static_cast<std::uint8_t>(std::strtoul(argv[4], nullptr, 0));
    const auto entry = dlid % kLftBlockSize;
    return GetEditSet(
        engine, LftBlockQuery(MadAddress::Lid(lid), dlid / kLftBlockSize),
        [&](const MadBytes& got) {
          LftBlock entries = DecodeLftBlock(got);
          entries[entry] = port;
          return std::vector<std::uint8_t>(entries.begin(), entries.end());
        },
        [&](const MadBytes& done) { return DecodeLftBlock(done)[entry] == port; });
  }
  if (what == "pkeys") {
    const auto port = static_cast<std::uint8_t>(std::strtoul(argv[3], nullptr, 0));
    PKeyBlock keys{};
    if (argc - 4 > static_cast<int>(keys.size())) return Usage();
    for (int i = 4; i < argc; ++i) keys[i - 4] = static_cast<std::uint16_t>(std::strtoul(argv[i], nullptr, 0));
    return GetEditSet(
        engine, PKeyBlockQuery(MadAddress::Lid(lid), port, 0),
        [&](const MadBytes&) {
          std::vector<std::uint8_t> bytes;
          for (std::uint16_t k : keys) {  // big-endian on the wire
            bytes.push_back(static_cast<std::uint8_t>(k >> 8));
            bytes.push_back(static_cast<std::uint8_t>(k & 0xff));
          }
          return bytes;
        },
        [&](const MadBytes& done) { return DecodePKeyBlock(done) == keys; });
  }
  return Usage();
}
