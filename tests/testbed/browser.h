#pragma once
// Headless Chromium driven over WebDriver (Debian's chromium and
// chromium-driver), for tests of what a person looks at. Starts its own
// chromedriver on a free port with a fresh profile; ends both with the object.

#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tests/testbed/process.h"

namespace ibfabric::testbed {

class Browser {
 public:
  // nullptr and a reason when chromedriver or chromium is missing or fails.
  static std::unique_ptr<Browser> Start(std::string* error);
  ~Browser();

  // Headers sent with every request from now on (Chrome DevTools Network
  // domain), e.g. Authorization for a page behind basic auth.
  bool SetExtraHeaders(const std::map<std::string, std::string>& headers, std::string* error);
  bool Navigate(const std::string& url, std::string* error);
  // Runs `script` (a function body; `arguments` holds args) in the page;
  // its return value, or nullopt with *error.
  std::optional<nlohmann::json> Execute(const std::string& script, std::string* error,
                                        const nlohmann::json& args = nlohmann::json::array());
  // Polls `script` until it returns true.
  bool WaitFor(const std::string& script, std::chrono::milliseconds timeout, std::string* error);
  // Clicks the first element matching the CSS selector.
  bool Click(const std::string& css, std::string* error);
  // Saves a PNG of the viewport, making the folder it goes in.
  bool Screenshot(const std::string& path, std::string* error);

 private:
  Browser() = default;
  std::optional<nlohmann::json> Call(const std::string& method, const std::string& path, const nlohmann::json& body,
                                     std::string* error);
  std::string dir_;
  int port_ = 0;
  std::string session_;
  std::unique_ptr<Process> driver_;
};

}  // namespace ibfabric::testbed
