#include "tests/testbed/certificates.h"

#include <cstdlib>

#include "tests/testbed/process.h"

namespace ibfabric::testbed {

Certificates::Certificates() : dir_(MakeTempDir("tls")) {
  const std::string cd = "cd '" + dir_ + "' && ";
  const std::string quiet = " >/dev/null 2>&1";
  const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  ok_ = std::system((cd + "openssl req -x509 " + key + " -keyout ca.key -out ca.crt -days 2 -subj /CN=test-ca" + quiet)
                        .c_str()) == 0 &&
        std::system((cd + "openssl req -x509 " + key +
                     " -keyout server.key -out server.crt -days 2 -subj /CN=localhost"
                     " -addext subjectAltName=IP:127.0.0.1,DNS:localhost" +
                     quiet)
                        .c_str()) == 0 &&
        std::system((cd + "openssl req " + key + " -keyout client.key -out client.csr -subj /CN=prometheus" + quiet +
                     " && openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial"
                     " -out client.crt -days 2" +
                     quiet)
                        .c_str()) == 0;
}

Certificates::~Certificates() { RemoveTree(dir_); }

}  // namespace ibfabric::testbed
