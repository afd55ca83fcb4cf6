#include "exporter/heap_trim.h"

#include <malloc.h>

namespace ibfabric::exporter {

double HeapTrimmer::MaybeTrim() {
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return -1;
  const auto now = std::chrono::steady_clock::now();
  if (last_ != std::chrono::steady_clock::time_point{} && now - last_ < min_interval_) return -1;
  if (mallinfo2().fordblks < min_free_bytes_) return -1;
  malloc_trim(0);
  last_ = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(last_ - now).count();
}

}  // namespace ibfabric::exporter
