#include "exporter/publisher.h"

#include <malloc.h>

#include <ostream>

#include "collectors/metrics.h"
#include "exporter/gzip.h"

namespace ibfabric::exporter {

void Publisher::Publish(std::shared_ptr<collectors::Snapshot> s) {
  {
    // Straight into gzip at a fast level: once per sweep, whatever the
    // number of scrapes (zlib level 1 is about 3x faster than its default
    // for a few percent more bytes).
    GzipWriter gz(Z_BEST_SPEED, last_gz_bytes_ + last_gz_bytes_ / 16);
    std::ostream out(&gz);
    collectors::RenderExposition(*s, version_, out, fabric_labels_);
    s->exposition_bytes = gz.plain_bytes();
    s->exposition_gz = gz.Finish();
    last_gz_bytes_ = s->exposition_gz.size();
  }
  const std::size_t text_bytes = s->exposition_bytes;
  holder_.Publish(std::move(s));
  // What the sweep and the rendering freed, back to the kernel, once the
  // snapshot before is let go (exporter/heap_trim.h).
  const double trim_seconds = trimmer_ != nullptr ? trimmer_->MaybeTrim() : -1;
  // What the heap holds once the snapshot before is let go (unless a
  // scrape still reads it), next to what the process has from malloc.
  if (!log_.Enabled(collectors::LogLevel::kDebug)) return;
  const struct mallinfo2 heap = mallinfo2();
  log_.Debug("published", "exposition_bytes=" + std::to_string(text_bytes) +
                              " gzip_bytes=" + std::to_string(last_gz_bytes_) +
                              " heap_in_use_bytes=" + std::to_string(heap.uordblks + heap.hblkhd) +
                              " heap_free_bytes=" + std::to_string(heap.fordblks) +
                              (trim_seconds >= 0 ? " trim_seconds=" + std::to_string(trim_seconds) : std::string()));
}

}  // namespace ibfabric::exporter
