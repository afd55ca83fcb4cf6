#pragma once
// What the HTTP endpoint tells about itself: the replies it sent with an
// error status, by status code. The server counts, the poller copies the
// counts into each Snapshot it publishes, so they are exported as
// infiniband_exporter_http_errors_total{code} (as of that publication).

#include <cstdint>
#include <map>
#include <mutex>

namespace ibfabric::exporter {

// Thread-safety: all members may be called from any thread.
class HttpStats {
 public:
  // Counts a reply when its status is 400 or more.
  void CountReply(int status) {
    if (status < 400) return;
    std::lock_guard lock(mu_);
    ++errors_[status];
  }
  std::map<int, std::uint64_t> Errors() const {
    std::lock_guard lock(mu_);
    return errors_;
  }

 private:
  mutable std::mutex mu_;
  std::map<int, std::uint64_t> errors_;
};

}  // namespace ibfabric::exporter
