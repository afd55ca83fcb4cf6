#pragma once
// The kubelet's pod-resources API (podresources.proto; Kubernetes 1.20+,
// on by default): List over gRPC on the kubelet's unix socket, the devices
// each container of each pod on this node was given by the device plugins
// (GPUs, RDMA devices, SR-IOV virtual functions), as dcgm-exporter reads it.
// host/jobs.h turns them into HCAs.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "host/jobs.h"

namespace v1 {
class ListPodResourcesResponse;
}

namespace ibfabric::host {

// Each device id of each container (holder.source "kubernetes", with its
// namespace, pod, container and resource name), in the reply's order.
std::vector<DeviceClaim> ClaimsOf(const v1::ListPodResourcesResponse& reply);

// A client of one socket; the connection is kept between calls. Not
// thread-safe: one caller (the sweep).
class PodResourcesClient {
 public:
  explicit PodResourcesClient(std::string socket_path);
  ~PodResourcesClient();
  PodResourcesClient(const PodResourcesClient&) = delete;
  PodResourcesClient& operator=(const PodResourcesClient&) = delete;

  // nullopt with a one-line reason (no socket there, the kubelet did not
  // answer within `timeout`, or answered with an error).
  std::optional<std::vector<DeviceClaim>> List(std::chrono::milliseconds timeout, std::string* error);

 private:
  struct Impl;
  std::string path_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ibfabric::host
