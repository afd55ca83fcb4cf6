#include "tests/testbed/fake_kubelet.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include "host/podresources.grpc.pb.h"

namespace ibfabric::testbed {

struct FakeKubelet::Service final : v1::PodResourcesLister::Service {
  explicit Service(FakeKubelet* k) : kubelet(k) {}
  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* reply) override {
    std::lock_guard<std::mutex> lock(kubelet->mu_);
    for (const FakePod& p : kubelet->pods_) {
      v1::PodResources* pod = reply->add_pod_resources();
      pod->set_namespace_(p.pod_namespace);
      pod->set_name(p.name);
      for (const FakePod::Container& c : p.containers) {
        v1::ContainerResources* container = pod->add_containers();
        container->set_name(c.name);
        for (const auto& [resource, ids] : c.devices) {
          v1::ContainerDevices* d = container->add_devices();
          d->set_resource_name(resource);
          for (const std::string& id : ids) d->add_device_ids(id);
        }
      }
    }
    ++kubelet->lists_;
    return grpc::Status::OK;
  }
  FakeKubelet* kubelet;
};

struct FakeKubelet::ServerHolder {
  std::unique_ptr<grpc::Server> server;
};

std::unique_ptr<FakeKubelet> FakeKubelet::Start(const std::string& socket_path, std::string* error) {
  std::unique_ptr<FakeKubelet> k(new FakeKubelet());
  ::unlink(socket_path.c_str());
  k->service_ = std::make_unique<Service>(k.get());
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path, grpc::InsecureServerCredentials());
  builder.RegisterService(k->service_.get());
  k->server_ = std::make_unique<ServerHolder>();
  k->server_->server = builder.BuildAndStart();
  if (!k->server_->server) {
    *error = "the fake kubelet could not serve on " + socket_path;
    return nullptr;
  }
  return k;
}

FakeKubelet::~FakeKubelet() {
  if (server_ && server_->server) server_->server->Shutdown();
}

void FakeKubelet::SetPods(std::vector<FakePod> pods) {
  std::lock_guard<std::mutex> lock(mu_);
  pods_ = std::move(pods);
}

}  // namespace ibfabric::testbed
