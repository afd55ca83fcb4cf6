#pragma once
// Holds the latest published Snapshot. The sweeping thread publishes; HTTP
// handlers take a reference-counted pointer and never wait for the fabric.

#include <memory>
#include <mutex>

#include "collectors/snapshot.h"

namespace ibfabric::exporter {

// Thread-safety: all members may be called from any thread.
class SnapshotHolder {
 public:
  std::shared_ptr<const collectors::Snapshot> Get() const {
    std::lock_guard lock(mu_);
    return current_;
  }
  void Publish(std::shared_ptr<const collectors::Snapshot> s) {
    std::lock_guard lock(mu_);
    current_ = std::move(s);
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const collectors::Snapshot> current_;
};

}  // namespace ibfabric::exporter
