#pragma once
// A stand-in for the Kubernetes API server where no real one can run: an
// HTTPS server (the test certificates' server.crt) that records every
// request and answers the two node calls a DaemonSet's exporter makes as
// the API server does:
//   PATCH /api/v1/nodes/NAME         application/merge-patch+json (RFC 7386:
//                                    a null removes), of metadata.labels
//   PATCH /api/v1/nodes/NAME/status  application/strategic-merge-patch+json,
//                                    status.conditions merged by `type`
// with the node as JSON (200); a node is made on its first PATCH. Without
// "Authorization: Bearer TOKEN" 401; another content type 415; any other
// method or path 404. A service account's credentials folder (token,
// ca.crt) to hand the exporter comes with it.

#include <httplib.h>

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/testbed/certificates.h"

namespace ibfabric::testbed {

class KubeApiServer {
 public:
  struct Request {
    std::string method, path, content_type, authorization, body;
    int status = 0;  // what it answered
  };

  explicit KubeApiServer(std::string token = "ibfabric-test-token");
  ~KubeApiServer();
  KubeApiServer(const KubeApiServer&) = delete;
  KubeApiServer& operator=(const KubeApiServer&) = delete;

  bool ok() const { return port_ > 0; }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  // A folder holding `token` and `ca.crt` (the server's certificate), as
  // /var/run/secrets/kubernetes.io/serviceaccount.
  const std::string& credentials() const { return credentials_; }
  std::vector<Request> Requests() const;
  // The node as last patched; null when never.
  nlohmann::json Node(const std::string& name) const;
  // Its condition of `type`; null when none.
  nlohmann::json Condition(const std::string& name, const std::string& type) const;

 private:
  void Handle(const httplib::Request& req, httplib::Response& res);

  Certificates certs_;
  std::string token_, credentials_;
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mu_;
  std::vector<Request> requests_;
  std::map<std::string, nlohmann::json> nodes_;
};

}  // namespace ibfabric::testbed
