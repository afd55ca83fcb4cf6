#include "host/pod_resources.h"

#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <system_error>

#include "host/podresources.grpc.pb.h"

namespace ibfabric::host {

std::vector<DeviceClaim> ClaimsOf(const v1::ListPodResourcesResponse& reply) {
  std::vector<DeviceClaim> out;
  for (const v1::PodResources& pod : reply.pod_resources()) {
    for (const v1::ContainerResources& c : pod.containers()) {
      for (const v1::ContainerDevices& d : c.devices()) {
        for (const std::string& id : d.device_ids()) {
          DeviceClaim claim;
          claim.device_id = id;
          claim.holder.source = "kubernetes";
          claim.holder.pod_namespace = pod.namespace_();
          claim.holder.pod = pod.name();
          claim.holder.container = c.name();
          claim.holder.resource = d.resource_name();
          out.push_back(std::move(claim));
        }
      }
    }
  }
  return out;
}

struct PodResourcesClient::Impl {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::PodResourcesLister::Stub> stub;
};

PodResourcesClient::PodResourcesClient(std::string socket_path) : path_(std::move(socket_path)) {}
PodResourcesClient::~PodResourcesClient() = default;

std::optional<std::vector<DeviceClaim>> PodResourcesClient::List(std::chrono::milliseconds timeout,
                                                                 std::string* error) {
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) {
    *error = "no kubelet pod-resources socket at " + path_;
    impl_.reset();
    return std::nullopt;
  }
  if (!impl_) {
    impl_ = std::make_unique<Impl>();
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(16 << 20);  // the kubelet's own limit for this API
    impl_->channel = grpc::CreateCustomChannel("unix:" + path_, grpc::InsecureChannelCredentials(), args);
    impl_->stub = v1::PodResourcesLister::NewStub(impl_->channel);
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  v1::ListPodResourcesRequest request;
  v1::ListPodResourcesResponse reply;
  const grpc::Status status = impl_->stub->List(&context, request, &reply);
  if (!status.ok()) {
    *error = "the kubelet's pod-resources List at " + path_ + " failed: " + status.error_message();
    return std::nullopt;
  }
  return ClaimsOf(reply);
}

}  // namespace ibfabric::host
