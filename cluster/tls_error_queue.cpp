#include "cluster/tls_error_queue.hpp"

#include <dlfcn.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

namespace troupe::cluster {

namespace {

template <class Fn> Fn openssl(const char* name) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, name));
}

using read_fn = int (*)(SSL*, void*, int);
using write_fn = int (*)(SSL*, const void*, int);
using handshake_fn = int (*)(SSL*);

} // namespace

bool tls_error_queue_guard_active() noexcept {
  auto resolved = ::dlsym(RTLD_DEFAULT, "SSL_read");
  return resolved == reinterpret_cast<void*>(static_cast<read_fn>(&::SSL_read)) &&
         openssl<read_fn>("SSL_read") != nullptr;
}

} // namespace troupe::cluster

// OpenSSL's TLS I/O calls, each behind an emptied error queue (see tls_error_queue.hpp).
extern "C" {

int SSL_read(SSL* ssl, void* buf, int num) {
  static const auto real = troupe::cluster::openssl<troupe::cluster::read_fn>("SSL_read");
  ERR_clear_error();
  return real(ssl, buf, num);
}

int SSL_write(SSL* ssl, const void* buf, int num) {
  static const auto real = troupe::cluster::openssl<troupe::cluster::write_fn>("SSL_write");
  ERR_clear_error();
  return real(ssl, buf, num);
}

int SSL_accept(SSL* ssl) {
  static const auto real = troupe::cluster::openssl<troupe::cluster::handshake_fn>("SSL_accept");
  ERR_clear_error();
  return real(ssl);
}

int SSL_connect(SSL* ssl) {
  static const auto real = troupe::cluster::openssl<troupe::cluster::handshake_fn>("SSL_connect");
  ERR_clear_error();
  return real(ssl);
}

} // extern "C"
