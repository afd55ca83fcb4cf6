#pragma once
// Test certificates made with the openssl command line: a CA, a server
// certificate for 127.0.0.1 and localhost (self-signed), and a client
// certificate signed by the CA. Removed with the object.

#include <string>

namespace ibfabric::testbed {

class Certificates {
 public:
  Certificates();
  ~Certificates();
  Certificates(const Certificates&) = delete;
  Certificates& operator=(const Certificates&) = delete;

  bool ok() const { return ok_; }
  // Path of ca.crt, ca.key, server.crt, server.key, client.crt, client.key.
  std::string operator()(const std::string& name) const { return dir_ + "/" + name; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  bool ok_ = false;
};

}  // namespace ibfabric::testbed
