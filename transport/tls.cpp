#include "transport/tls.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <openssl/err.h>
#include <openssl/ssl.h>

namespace troupe::transport {

namespace {

namespace ssl = boost::asio::ssl;

/// OpenSSL's reason for the last failure (its error queue emptied), or asio's message.
std::string openssl_reason(const boost::system::error_code& ec) {
  std::string out;
  while (auto e = ERR_get_error()) {
    const char* r = ERR_reason_error_string(e);
    if (r && out.empty()) {
      out = r; // the earliest entry is the root cause
    }
  }
  if (out.empty()) {
    out = ec.message();
  }
  return out;
}

/// Empty when `path` can be opened for reading, else the system's reason.
std::string unreadable(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    return std::strerror(errno);
  }
  std::fclose(f);
  return {};
}

bool fail(tls_setup_error& err, tls_setup_error::part what, const std::string& file,
          std::string reason) {
  err = {what, file, std::move(reason)};
  return false;
}

/// Loads `files` into `ctx`: a certificate chain and its key; false with `err` set on failure.
bool load_identity(ssl::context& ctx, const std::string& cert_file, const std::string& key_file,
                   tls_setup_error& err) {
  using part = tls_setup_error::part;
  if (auto why = unreadable(cert_file); !why.empty()) {
    return fail(err, part::certificate, cert_file, "cannot be read: " + why);
  }
  if (auto why = unreadable(key_file); !why.empty()) {
    return fail(err, part::key, key_file, "cannot be read: " + why);
  }
  boost::system::error_code ec;
  ERR_clear_error();
  ctx.use_certificate_chain_file(cert_file, ec);
  if (ec) {
    return fail(err, part::certificate, cert_file,
                "is not a PEM certificate (" + openssl_reason(ec) + ")");
  }
  ctx.use_private_key_file(key_file, ssl::context::pem, ec);
  if (ec) {
    return fail(err, part::key, key_file,
                "is not an unencrypted PEM private key (" + openssl_reason(ec) + ")");
  }
  if (SSL_CTX_check_private_key(ctx.native_handle()) != 1) {
    return fail(err, part::key_mismatch, key_file,
                "does not belong to the certificate in " + cert_file + " (" + openssl_reason({}) +
                    ")");
  }
  return true;
}

/// TLS 1.2 or newer, no compression, no renegotiation.
void harden(ssl::context& ctx) {
  boost::system::error_code ec;
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                      ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                      ssl::context::no_compression,
                  ec);
  SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.native_handle(), SSL_OP_NO_RENEGOTIATION);
}

/// The ALPN protocols the server speaks, in wire format.
constexpr unsigned char server_alpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

int select_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                unsigned int inlen, void*) {
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, outlen, server_alpn, sizeof(server_alpn), in, inlen) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK; // no common protocol: answer without ALPN, speak HTTP/1.1
  }
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

} // namespace

std::shared_ptr<ssl::context> make_server_tls_context(const std::string& cert_file,
                                                      const std::string& key_file,
                                                      tls_setup_error& err) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  harden(*ctx);
  if (!load_identity(*ctx, cert_file, key_file, err)) {
    return nullptr;
  }
  SSL_CTX_set_alpn_select_cb(ctx->native_handle(), select_alpn, nullptr);
  return ctx;
}

std::shared_ptr<ssl::context> make_client_tls_context(const client_tls_files& files,
                                                      tls_setup_error& err) {
  using part = tls_setup_error::part;
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  harden(*ctx);
  boost::system::error_code ec;
  ctx->set_verify_mode(ssl::verify_peer, ec);
  ctx->set_default_verify_paths(ec);
  if (ec) {
    fail(err, part::system, {}, "cannot load the system's trusted certificates: " + ec.message());
    return nullptr;
  }
  for (auto& ca : files.ca_files) {
    if (auto why = unreadable(ca); !why.empty()) {
      fail(err, part::ca, ca, "cannot be read: " + why);
      return nullptr;
    }
    ERR_clear_error();
    ctx->load_verify_file(ca, ec);
    if (ec) {
      fail(err, part::ca, ca, "is not a PEM CA bundle (" + openssl_reason(ec) + ")");
      return nullptr;
    }
  }
  if (!files.cert_file.empty() && !load_identity(*ctx, files.cert_file, files.key_file, err)) {
    return nullptr;
  }
  return ctx;
}

std::shared_ptr<ssl::context> make_client_tls_context(const std::string& ca_file,
                                                      std::string& why) {
  client_tls_files files;
  if (!ca_file.empty()) {
    files.ca_files.push_back(ca_file);
  }
  tls_setup_error err;
  auto ctx = make_client_tls_context(files, err);
  if (!ctx) {
    why = err.file.empty() ? err.reason : "CA file '" + err.file + "' " + err.reason;
  }
  return ctx;
}

} // namespace troupe::transport
