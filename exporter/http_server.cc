#include "exporter/http_server.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <chrono>
#include <memory>
#include <string>

namespace ibfabric::exporter {

namespace {

std::string OpensslError() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown TLS error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

// Accepts any client certificate: the Request/RequireAny client auth types
// ask for one without verifying it (exporter-toolkit's meaning).
int AcceptAny(int, X509_STORE_CTX*) { return 1; }

// Sets up the server's TLS context from the web config; false with *error.
bool SetupTls(const TlsConfig& tls, SSL_CTX& ctx, std::string* error) {
  SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION |
                                (tls.prefer_server_cipher_suites ? SSL_OP_CIPHER_SERVER_PREFERENCE : 0));
  if (SSL_CTX_set_min_proto_version(&ctx, tls.min_version) != 1 ||
      (tls.max_version != 0 && SSL_CTX_set_max_proto_version(&ctx, tls.max_version) != 1)) {
    *error = "TLS versions not available: " + OpensslError();
    return false;
  }
  if (SSL_CTX_use_certificate_chain_file(&ctx, tls.cert_file.c_str()) != 1) {
    *error = "cannot load cert_file " + tls.cert_file + ": " + OpensslError();
    return false;
  }
  if (SSL_CTX_use_PrivateKey_file(&ctx, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    *error = "cannot load key_file " + tls.key_file + ": " + OpensslError();
    return false;
  }
  if (SSL_CTX_check_private_key(&ctx) != 1) {
    *error = "key_file " + tls.key_file + " does not match cert_file " + tls.cert_file;
    return false;
  }
  if (!tls.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(&ctx, tls.client_ca_file.c_str(), nullptr) != 1) {
      *error = "cannot load client_ca_file " + tls.client_ca_file + ": " + OpensslError();
      return false;
    }
    SSL_CTX_set_client_CA_list(&ctx, SSL_load_client_CA_file(tls.client_ca_file.c_str()));
  }
  switch (tls.client_auth) {
    case ClientAuth::kNone: SSL_CTX_set_verify(&ctx, SSL_VERIFY_NONE, nullptr); break;
    case ClientAuth::kRequest: SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER, AcceptAny); break;
    case ClientAuth::kRequireAny:
      SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, AcceptAny);
      break;
    case ClientAuth::kVerifyIfGiven: SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER, nullptr); break;
    case ClientAuth::kRequireAndVerify:
      SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      break;
  }
  return true;
}

std::unique_ptr<httplib::Server> MakeServer(const HttpOptions& options, std::string* tls_error) {
  if (!options.web.tls) return std::make_unique<httplib::Server>();
  const TlsConfig tls = *options.web.tls;
  return std::make_unique<httplib::SSLServer>([tls, tls_error](SSL_CTX& ctx) { return SetupTls(tls, ctx, tls_error); });
}

constexpr std::size_t kMaxBody = 64 * 1024;

}  // namespace

HttpServer::HttpServer(const SnapshotHolder& holder, HttpOptions options, HttpStats* stats, collectors::Logger* log)
    : options_(std::move(options)), server_(MakeServer(options_, &tls_error_)), routes_(holder, options_, stats, log) {
  const int workers = options_.workers;
  server_->new_task_queue = [workers] { return new httplib::ThreadPool(static_cast<std::size_t>(workers)); };
  server_->set_read_timeout(5, 0);
  server_->set_write_timeout(5, 0);
  server_->set_keep_alive_timeout(5);
  server_->set_payload_max_length(kMaxBody);
  routes_.Install(*server_);
}

HttpServer::~HttpServer() { Stop(); }

bool HttpServer::Start(std::string* error) {
  if (!server_->is_valid()) {
    *error = "invalid --web.config.file: " + (tls_error_.empty() ? "cannot set up TLS" : tls_error_);
    return false;
  }
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a
  // second exporter on the same port binds too and takes half the scrapes.
  server_->set_socket_options([](socket_t sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  if (options_.port == 0) {
    bound_port_ = server_->bind_to_any_port(options_.host);
  } else {
    bound_port_ = server_->bind_to_port(options_.host, options_.port) ? options_.port : -1;
  }
  if (bound_port_ <= 0) {
    *error =
        "cannot listen on " + options_.host + ":" + std::to_string(options_.port) + " (address in use or not local?)";
    return false;
  }
  thread_ = std::thread([this] {
    server_->listen_after_bind();
    listen_returned_ = true;
  });
  // Serving once Start returns, and a Stop right after it is not lost:
  // httplib's stop() does nothing until the listening loop has begun.
  while (!server_->is_running() && !listen_returned_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return true;
}

void HttpServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace ibfabric::exporter
