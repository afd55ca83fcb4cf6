#include "collectors/reads/batch.h"

#include <algorithm>

namespace ibfabric::collectors {

BatchTally RunBatch(const std::vector<BatchPart*>& parts, transport::MadEngine& engine) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<transport::MadRequest> requests;
  std::vector<std::size_t> first;  // where each part's requests begin
  first.reserve(parts.size());
  for (BatchPart* p : parts) {
    first.push_back(requests.size());
    p->AddRequests(&requests);
  }
  BatchTally out;
  engine.Run(requests, [&](std::size_t q, transport::MadResult&& m) {
    // The last part that begins at or before q (parts that added nothing
    // begin where the next one does).
    const auto at = std::upper_bound(first.begin(), first.end(), q) - first.begin() - 1;
    BatchPart& part = *parts[static_cast<std::size_t>(at)];
    const std::size_t i = q - first[static_cast<std::size_t>(at)];
    MadTally& t = out.mads[part.NodeOf(i)];
    ++t.asked;
    using transport::MadOutcome;
    if (m.retries > 0 || m.outcome == MadOutcome::kTimeout || m.outcome == MadOutcome::kSendError) ++t.troubled;
    part.Take(i, std::move(m));
  });
  std::set<std::uint16_t> moved;
  for (const BatchPart* p : parts) p->MovedLids(&moved);
  for (BatchPart* p : parts) p->Finish(moved);
  out.duration = std::chrono::steady_clock::now() - start;
  return out;
}

}  // namespace ibfabric::collectors
