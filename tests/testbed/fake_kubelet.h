#pragma once
// A fake kubelet: the real pod-resources gRPC API (host/podresources.proto,
// service v1.PodResourcesLister, List) served on a unix socket, as the
// kubelet serves /var/lib/kubelet/pod-resources/kubelet.sock, answering
// with the pods a test sets; it counts the Lists it answered.

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace ibfabric::testbed {

struct FakePod {
  std::string pod_namespace, name;
  struct Container {
    std::string name;
    std::vector<std::pair<std::string, std::vector<std::string>>> devices;  // resource name -> device ids
  };
  std::vector<Container> containers;
};

class FakeKubelet {
 public:
  // Serves on `socket_path` (replaced if there); null with a reason.
  static std::unique_ptr<FakeKubelet> Start(const std::string& socket_path, std::string* error);
  ~FakeKubelet();

  void SetPods(std::vector<FakePod> pods);
  int lists() const { return lists_; }

  struct Service;  // the gRPC service (fake_kubelet.cc)

 private:
  FakeKubelet() = default;
  std::mutex mu_;
  std::vector<FakePod> pods_;
  std::atomic<int> lists_{0};
  std::unique_ptr<Service> service_;
  struct ServerHolder;
  std::unique_ptr<ServerHolder> server_;
};

}  // namespace ibfabric::testbed
