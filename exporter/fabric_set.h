#pragma once
// Several fabrics in one exporter: one per local port on a fabric of its
// own (transport::ChooseFabrics), each read by a pipeline of its own (MAD
// engine, poller, snapshot holder) whose series all carry its subnet
// prefix, and a plane of a multi-plane HCA its plane number
// (PollerOptions::fabric_labels). The set merges their expositions
// into one, each family once (MergeExpositions), which /metrics and the
// probes read; the JSON routes answer for one fabric at a time, the one
// `?fabric=` names (FabricView::name; exporter/http_routes.h). Nothing is ever
// merged across fabrics but the text: the same GUIDs on two fabrics stay
// two nodes, told apart by the label.

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collectors/framework/snapshot.h"
#include "exporter/snapshot_holder.h"

namespace ibfabric::exporter {

// One fabric as the HTTP routes see it. The holder is borrowed.
struct FabricView {
  std::string subnet_prefix;  // "0xfe80000000000002": its label value
  std::string ca;             // the local port it is read from
  int port = 0;
  const SnapshotHolder* holder = nullptr;
  int plane = 0;  // a multi-plane HCA's plane (its label value); 0: none
  // Its ?fabric= name: the subnet prefix, "/planeN" after it for a plane.
  std::string name() const { return plane == 0 ? subnet_prefix : subnet_prefix + "/plane" + std::to_string(plane); }
};

// The families of several expositions (text format 0.0.4), each once, with
// the series of every part in part order. Each part lists its families in
// one common order (the collectors' registry) and its series carry labels
// that tell them apart from the other parts' (subnet_prefix): then the
// result is one valid exposition. Combine does the same on the gzip
// expositions in two streaming passes (the families' names, then the
// text), holding no text whole.
std::string MergeExpositions(const std::vector<std::string>& parts);

// Ownership: borrows the member holders, which outlive it.
// Thread-safety: Combine from any thread (each pipeline's, after it
// publishes: SnapshotHolder's listener); one Combine at a time.
class FabricSet {
 public:
  explicit FabricSet(std::vector<FabricView> views) : views_(std::move(views)) {}
  FabricSet(const FabricSet&) = delete;
  FabricSet& operator=(const FabricSet&) = delete;

  // Publishes into combined() a snapshot whose exposition is the members'
  // latest merged (streamed: each part inflated a slice at a time), with the fewest sweeps of any member (so /readyz
  // waits for every fabric) and the latest publication time. Members that have published nothing yet are left out.
  void Combine();
  const SnapshotHolder& combined() const { return combined_; }
  const std::vector<FabricView>& views() const { return views_; }

 private:
  std::mutex mu_;
  const std::vector<FabricView> views_;
  SnapshotHolder combined_;
};

}  // namespace ibfabric::exporter
