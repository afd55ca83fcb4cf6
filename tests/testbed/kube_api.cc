#include "tests/testbed/kube_api.h"

#include <filesystem>

#include "tests/testbed/process.h"

namespace ibfabric::testbed {

namespace {

// RFC 7386: a JSON merge patch of `patch` onto `target`.
void MergePatch(nlohmann::json& target, const nlohmann::json& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = nlohmann::json::object();
  for (const auto& [key, value] : patch.items()) {
    if (value.is_null()) {
      target.erase(key);
    } else {
      MergePatch(target[key], value);
    }
  }
}

}  // namespace

KubeApiServer::KubeApiServer(std::string token) : token_(std::move(token)) {
  if (!certs_.ok()) return;
  credentials_ = certs_.dir() + "/serviceaccount";
  std::filesystem::create_directories(credentials_);
  WriteFile(credentials_ + "/token", token_ + "\n");
  std::filesystem::copy_file(certs_("server.crt"), credentials_ + "/ca.crt");
  server_ = std::make_unique<httplib::SSLServer>(certs_("server.crt").c_str(), certs_("server.key").c_str());
  if (!server_->is_valid()) return;
  const auto handle = [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); };
  server_->Patch(R"(/api/v1/nodes/([^/]+)(/status)?)", handle);
  server_->set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (res.status != 404) return;
    std::lock_guard lock(mu_);
    requests_.push_back({req.method, req.path, req.get_header_value("Content-Type"),
                         req.get_header_value("Authorization"), req.body, 404});
  });
  port_ = server_->bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

KubeApiServer::~KubeApiServer() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

void KubeApiServer::Handle(const httplib::Request& req, httplib::Response& res) {
  const std::string name = req.matches[1];
  const bool status = req.matches[2].length() > 0;
  const std::string type = req.get_header_value("Content-Type");
  const nlohmann::json patch = nlohmann::json::parse(req.body, nullptr, false);
  std::lock_guard lock(mu_);
  const auto answer = [&](int code, const nlohmann::json& body) {
    res.status = code;
    res.set_content(body.dump(), "application/json");
    requests_.push_back({req.method, req.path, type, req.get_header_value("Authorization"), req.body, code});
  };
  if (req.get_header_value("Authorization") != "Bearer " + token_) {
    return answer(401, {{"kind", "Status"}, {"reason", "Unauthorized"}});
  }
  if (type != (status ? "application/strategic-merge-patch+json" : "application/merge-patch+json") ||
      patch.is_discarded()) {
    return answer(415, {{"kind", "Status"}, {"reason", "UnsupportedMediaType"}});
  }
  nlohmann::json& node = nodes_[name];
  if (node.is_null()) node = {{"kind", "Node"}, {"metadata", {{"name", name}, {"labels", nlohmann::json::object()}}}};
  if (status) {
    // The strategic merge of status.conditions: by type, the rest merged.
    nlohmann::json& conditions = node["status"]["conditions"];
    if (!conditions.is_array()) conditions = nlohmann::json::array();
    for (const nlohmann::json& c :
         patch.value("status", nlohmann::json::object()).value("conditions", nlohmann::json::array())) {
      auto same = std::find_if(conditions.begin(), conditions.end(),
                               [&c](const nlohmann::json& x) { return x.value("type", "") == c.value("type", ""); });
      if (same == conditions.end()) {
        conditions.push_back(c);
      } else {
        MergePatch(*same, c);
      }
    }
  } else {
    MergePatch(node, patch);
  }
  answer(200, node);
}

std::vector<KubeApiServer::Request> KubeApiServer::Requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

nlohmann::json KubeApiServer::Node(const std::string& name) const {
  std::lock_guard lock(mu_);
  const auto it = nodes_.find(name);
  return it == nodes_.end() ? nlohmann::json(nullptr) : it->second;
}

nlohmann::json KubeApiServer::Condition(const std::string& name, const std::string& type) const {
  const nlohmann::json node = Node(name);
  if (node.is_null() || !node.contains("status")) return nullptr;
  for (const nlohmann::json& c : node["status"].value("conditions", nlohmann::json::array())) {
    if (c.value("type", "") == type) return c;
  }
  return nullptr;
}

}  // namespace ibfabric::testbed
