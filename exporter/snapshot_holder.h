#pragma once
// Holds the latest published Snapshot. The sweeping thread publishes; HTTP
// handlers take a reference-counted pointer and never wait for the fabric.

#include <functional>
#include <memory>
#include <mutex>

#include "collectors/framework/snapshot.h"

namespace ibfabric::exporter {

// Thread-safety: all members may be called from any thread.
class SnapshotHolder {
 public:
  // `on_publish`: called after each Publish, on the publishing thread
  // (exporter/fabric_set.h merges the fabrics' expositions then).
  explicit SnapshotHolder(std::function<void()> on_publish = {}) : on_publish_(std::move(on_publish)) {}

  std::shared_ptr<const collectors::Snapshot> Get() const {
    std::lock_guard lock(mu_);
    return current_;
  }
  void Publish(std::shared_ptr<const collectors::Snapshot> s) {
    {
      std::lock_guard lock(mu_);
      current_ = std::move(s);
    }
    if (on_publish_) on_publish_();
  }

 private:
  const std::function<void()> on_publish_;
  mutable std::mutex mu_;
  std::shared_ptr<const collectors::Snapshot> current_;
};

}  // namespace ibfabric::exporter
