#include "topology/access.h"

#include <set>

#include "transport/attributes.h"

namespace ibfabric::topology {

std::vector<Access> ProbeAccess(transport::MadEngine& engine, const std::vector<std::uint16_t>& lids) {
  std::vector<Access> out;
  std::set<std::uint16_t> seen;
  std::vector<transport::MadRequest> requests;
  for (std::uint16_t lid : lids) {
    if (lid == 0 || !seen.insert(lid).second) continue;
    out.push_back(Access{lid});
    requests.push_back(transport::NodeInfoQuery(transport::MadAddress::Lid(lid)));
    requests.push_back(transport::PerfClassPortInfoQuery(lid));
  }
  if (requests.empty()) return out;
  const std::vector<transport::MadResult> results = engine.Run(requests);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const transport::MadResult& smp = results[2 * i];
    out[i].smp = smp.outcome;
    out[i].gmp = results[2 * i + 1].outcome;
    if (smp.outcome == transport::MadOutcome::kOk) out[i].node_guid = transport::DecodeNodeInfo(smp.response).node_guid;
  }
  return out;
}

}  // namespace ibfabric::topology
