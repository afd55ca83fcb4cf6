#include "tests/testbed/browser.h"

#include <httplib.h>
#include <openssl/evp.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/testbed/exporter_process.h"

namespace ibfabric::testbed {
namespace {

// The screenshot WebDriver returns is base64 without line breaks.
std::string DecodeBase64(const std::string& in) {
  std::string out(in.size() / 4 * 3 + 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  if (n < 0) return "";
  std::size_t pad = 0;
  for (auto it = in.rbegin(); it != in.rend() && *it == '=' && pad < 2; ++it) ++pad;
  out.resize(static_cast<std::size_t>(n) - pad);
  return out;
}

}  // namespace

std::unique_ptr<Browser> Browser::Start(std::string* error) {
  std::unique_ptr<Browser> b(new Browser());
  b->dir_ = MakeTempDir("browser");
  b->port_ = FreeLocalPort();
  SpawnOptions o;
  o.argv = {"chromedriver", "--port=" + std::to_string(b->port_)};
  o.stdout_path = b->dir_ + "/chromedriver.log";
  b->driver_ = Process::Spawn(o, error);
  if (!b->driver_) return nullptr;
  httplib::Client c("127.0.0.1", b->port_);
  const auto up = [&c] {
    auto r = c.Get("/status");
    return r && r->status == 200;
  };
  if (!WaitUntilServing(up, *b->driver_, std::chrono::seconds(30), std::chrono::milliseconds(100))) {
    *error = "chromedriver did not start: " + ReadFile(b->dir_ + "/chromedriver.log");
    return nullptr;
  }
  // The flags keep Chromium off the network it is not asked to reach (this
  // machine's network is closed) and let it run as root in a container.
  const nlohmann::json caps = {
      {"capabilities",
       {{"alwaysMatch",
         {{"browserName", "chrome"},
          {"acceptInsecureCerts", true},
          {"goog:chromeOptions",
           {{"binary", "/usr/bin/chromium"},
            {"args",
             {"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic",
              "--window-size=1400,1000", "--user-data-dir=" + b->dir_ + "/profile"}}}}}}}}};
  auto session = b->Call("POST", "/session", caps, error);
  if (!session || !session->contains("sessionId")) {
    if (session) *error = "no session: " + session->dump();
    return nullptr;
  }
  b->session_ = (*session)["sessionId"].get<std::string>();
  return b;
}

Browser::~Browser() {
  std::string ignored;
  if (!session_.empty()) Call("DELETE", "/session/" + session_, nullptr, &ignored);
  if (driver_) driver_->Stop();
  RemoveTree(dir_);
}

std::optional<nlohmann::json> Browser::Call(const std::string& method, const std::string& path,
                                            const nlohmann::json& body, std::string* error) {
  httplib::Client c("127.0.0.1", port_);
  c.set_read_timeout(60, 0);
  httplib::Result r = method == "GET"      ? c.Get(path)
                      : method == "DELETE" ? c.Delete(path)
                                           : c.Post(path, body.dump(), "application/json");
  if (!r) {
    *error = "chromedriver " + method + " " + path + ": " + httplib::to_string(r.error());
    return std::nullopt;
  }
  const auto j = nlohmann::json::parse(r->body, nullptr, false);
  if (j.is_discarded() || r->status != 200) {
    *error =
        "chromedriver " + method + " " + path + ": HTTP " + std::to_string(r->status) + " " + r->body.substr(0, 500);
    return std::nullopt;
  }
  return j.contains("value") ? j["value"] : j;
}

bool Browser::SetExtraHeaders(const std::map<std::string, std::string>& headers, std::string* error) {
  const std::string path = "/session/" + session_ + "/goog/cdp/execute";
  return Call("POST", path, {{"cmd", "Network.enable"}, {"params", nlohmann::json::object()}}, error) &&
         Call("POST", path, {{"cmd", "Network.setExtraHTTPHeaders"}, {"params", {{"headers", headers}}}}, error);
}

bool Browser::Navigate(const std::string& url, std::string* error) {
  return Call("POST", "/session/" + session_ + "/url", {{"url", url}}, error).has_value();
}

std::optional<nlohmann::json> Browser::Execute(const std::string& script, std::string* error,
                                               const nlohmann::json& args) {
  return Call("POST", "/session/" + session_ + "/execute/sync", {{"script", script}, {"args", args}}, error);
}

bool Browser::WaitFor(const std::string& script, std::chrono::milliseconds timeout, std::string* error) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = Execute(script, error);
    if (r && r->is_boolean() && r->get<bool>()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (error->empty()) *error = "timed out waiting for: " + script;
  return false;
}

bool Browser::Click(const std::string& css, std::string* error) {
  auto found = Call("POST", "/session/" + session_ + "/element", {{"using", "css selector"}, {"value", css}}, error);
  if (!found || found->empty()) {
    if (found) *error = "no element " + css;
    return false;
  }
  const std::string id = found->begin().value().get<std::string>();  // the W3C element reference
  return Call("POST", "/session/" + session_ + "/element/" + id + "/click", nlohmann::json::object(), error)
      .has_value();
}

bool Browser::Screenshot(const std::string& path, std::string* error) {
  auto shot = Call("GET", "/session/" + session_ + "/screenshot", nullptr, error);
  if (!shot || !shot->is_string()) return false;
  std::error_code ec;  // a test run alone finds no folder another made
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::ofstream out(path, std::ios::binary);
  out << DecodeBase64(shot->get<std::string>());
  if (!out) *error = "cannot write " + path;
  return static_cast<bool>(out);
}

}  // namespace ibfabric::testbed
