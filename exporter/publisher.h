#pragma once
// Publishes a Snapshot: renders its metrics exposition once, straight into
// gzip (exporter/gzip.h: only the compressed form is kept), and hands it
// to the holder the HTTP handlers read. The scheduler (exporter/poller.h)
// assembles the Snapshot and calls Publish; it renders nothing itself.

#include <cstddef>
#include <memory>
#include <string>

#include "collectors/common/log.h"
#include "collectors/framework/snapshot.h"
#include "collectors/metrics.h"
#include "exporter/heap_trim.h"
#include "exporter/snapshot_holder.h"

namespace ibfabric::exporter {

// Ownership: borrows holder and log, which outlive it.
// Thread-safety: Publish from one thread at a time (the scheduler's).
class Publisher {
 public:
  // `fabric_labels`: on every series (collectors::RenderExposition).
  // `trimmer` (borrowed, may be null): exporter/heap_trim.h.
  Publisher(SnapshotHolder& holder, collectors::Logger& log, std::string version,
            collectors::FabricLabels fabric_labels = {}, HeapTrimmer* trimmer = nullptr)
      : holder_(holder),
        log_(log),
        version_(std::move(version)),
        fabric_labels_(std::move(fabric_labels)),
        trimmer_(trimmer) {}

  // Fills `s`'s exposition (exposition_gz, exposition_bytes) from the rest
  // of it and publishes it; `s` is shared read-only from then on. Then asks
  // the trimmer, if any, to give the heap's free pages back.
  void Publish(std::shared_ptr<collectors::Snapshot> s);

 private:
  SnapshotHolder& holder_;
  collectors::Logger& log_;
  std::string version_;  // for infiniband_exporter_build_info
  collectors::FabricLabels fabric_labels_;
  HeapTrimmer* trimmer_;
  std::size_t last_gz_bytes_ = 0;  // the last exposition's compressed size: room made for the next
};

}  // namespace ibfabric::exporter
