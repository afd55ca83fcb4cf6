#pragma once
// Gives the heap's free pages back to the kernel (glibc's malloc_trim, which
// returns every free page inside the heap, not only its top). glibc keeps
// what a sweep and the rendering of its exposition freed for the next one
// (40-70 MiB at 16k hosts, docs/benchmarks.md), so the RSS between sweeps
// would be that much above what the exporter holds. One for the process,
// shared by every pipeline's publisher: malloc_trim works on the whole
// process.
//
// Thread-safety: MaybeTrim from any thread; while one trims, the others skip.

#include <chrono>
#include <cstddef>
#include <mutex>

namespace ibfabric::exporter {

class HeapTrimmer {
 public:
  // Trims at most once per `min_interval` (a burst of publications, as trap
  // re-reads make, is one trim), and only when malloc holds at least
  // `min_free_bytes` free.
  HeapTrimmer(std::chrono::steady_clock::duration min_interval, std::size_t min_free_bytes)
      : min_interval_(min_interval), min_free_bytes_(min_free_bytes) {}
  HeapTrimmer(const HeapTrimmer&) = delete;
  HeapTrimmer& operator=(const HeapTrimmer&) = delete;

  // Trims if due; the seconds the trim took, or a negative value when it
  // was not due (too soon, too little free, or another thread trimming).
  double MaybeTrim();

 private:
  std::mutex mu_;
  std::chrono::steady_clock::time_point last_{};
  const std::chrono::steady_clock::duration min_interval_;
  const std::size_t min_free_bytes_;
};

}  // namespace ibfabric::exporter
