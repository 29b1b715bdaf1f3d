#include "cluster/tls_diagnosis.hpp"

#include "cluster/tcp_probe.hpp"
#include "cluster/tls_files.hpp"

#include <caf/typed_event_based_actor.hpp>
#include <cstring>
#include <memory>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace troupe::cluster {

namespace {

using ctx_ptr = std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)>;
using ssl_ptr = std::unique_ptr<SSL, decltype(&SSL_free)>;

std::string last_openssl_error() {
  std::string out;
  while (auto e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    // "error:0A000086:SSL routines::certificate verify failed": keep what follows "::".
    std::string text = buf;
    auto at = text.rfind("::");
    out += (out.empty() ? "" : "; ") + (at == std::string::npos ? text : text.substr(at + 2));
  }
  return out;
}

} // namespace

std::string diagnose_tls_handshake(const std::string& host, std::uint16_t port,
                                   const tls_files& files, std::chrono::milliseconds timeout) {
  ERR_clear_error();
  ctx_ptr ctx{SSL_CTX_new(TLS_client_method()), &SSL_CTX_free};
  if (!ctx) {
    return "cannot create a TLS context: " + last_openssl_error();
  }
  auto phrase = files.passphrase;
  SSL_CTX_set_default_passwd_cb(ctx.get(), passphrase_callback);
  SSL_CTX_set_default_passwd_cb_userdata(ctx.get(), &phrase);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), files.cert.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx.get(), files.key.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_load_verify_locations(ctx.get(), files.ca.c_str(), nullptr) != 1) {
    return "this node's certificate files cannot be read: " + last_openssl_error();
  }
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  std::string why;
  int fd = connect_within(host, port, timeout, why);
  if (fd < 0) {
    return "no TCP connection: " + why;
  }
  // The handshake's reads and writes are bounded too.
  timeval tv{static_cast<time_t>(timeout.count() / 1000),
             static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  ssl_ptr ssl{SSL_new(ctx.get()), &SSL_free};
  SSL_set_fd(ssl.get(), fd);
  std::string out;
  if (SSL_connect(ssl.get()) != 1) {
    auto verify = SSL_get_verify_result(ssl.get());
    out = last_openssl_error();
    if (verify != X509_V_OK) {
      out += std::string{" (peer certificate: "} + X509_verify_cert_error_string(verify) + ")";
    }
    if (out.empty()) {
      out = "the peer closed the connection during the handshake (it may not speak TLS)";
    }
  } else {
    // TLS 1.3: the server judges our certificate after our side finished; a read tells.
    char byte = 0;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) > 0 &&
        SSL_read(ssl.get(), &byte, 1) <= 0) {
      out = last_openssl_error();
    }
    if (out.empty()) {
      out = std::string{"the TLS handshake succeeds ("} + SSL_get_version(ssl.get()) +
            "): the failure was elsewhere";
    } else {
      out = "the peer refused this node's certificate: " + out;
    }
  }
  SSL_shutdown(ssl.get());
  ::close(fd);
  ERR_clear_error();
  return out;
}

tls_diagnosis_actor make_tls_diagnosis(caf::actor_system& sys, tls_files files,
                                       std::chrono::milliseconds timeout) {
  return sys.spawn<caf::detached>(
      [files = std::move(files),
       timeout](tls_diagnosis_actor::pointer self) -> tls_diagnosis_actor::behavior_type {
        return {
            [self, files, timeout](caf::connect_atom, const std::string& host, std::uint16_t port) {
              auto text = diagnose_tls_handshake(host, port, files, timeout);
              self->quit();
              return text;
            },
        };
      });
}

} // namespace troupe::cluster
