#include "exporter/http_client.h"

#include <httplib.h>

namespace ibfabric::exporter {

collectors::HttpAnswer HttpFetch(const collectors::HttpRequest& r) {
  const std::size_t scheme = r.url.find("://");
  if (scheme == std::string::npos ||
      (r.url.compare(0, scheme, "http") != 0 && r.url.compare(0, scheme, "https") != 0)) {
    return {0, "", "'" + r.url + "' is not an http(s):// URL"};
  }
  const std::size_t slash = r.url.find('/', scheme + 3);
  const std::string base = r.url.substr(0, slash);
  const std::string path = slash == std::string::npos ? "/" : r.url.substr(slash);
  try {
    httplib::Client client(base);
    if (!client.is_valid()) return {0, "", "'" + base + "' is not a server httplib can reach"};
    const auto timeout = std::chrono::duration_cast<std::chrono::microseconds>(r.timeout);
    client.set_connection_timeout(timeout);
    client.set_read_timeout(timeout);
    client.set_write_timeout(timeout);
    if (!r.bearer_token.empty()) client.set_bearer_token_auth(r.bearer_token);
    if (!r.ca_file.empty()) client.set_ca_cert_path(r.ca_file);
    client.enable_server_certificate_verification(true);
    if (r.method != "PATCH" && r.method != "GET") return {0, "", "method " + r.method + " is not made"};
    httplib::Result res = r.method == "PATCH" ? client.Patch(path, r.body, r.content_type) : client.Get(path);
    if (!res) {
      std::string why = httplib::to_string(res.error());
      if (res.error() == httplib::Error::SSLServerVerification)
        why += " (the server's certificate, against " +
               (r.ca_file.empty() ? std::string("the system's CAs") : r.ca_file) + ")";
      return {0, "", r.method + " " + r.url + ": " + why};
    }
    return {res->status, res->body, ""};
  } catch (const std::exception& e) {
    return {0, "", r.method + " " + r.url + ": " + e.what()};
  }
}

}  // namespace ibfabric::exporter
