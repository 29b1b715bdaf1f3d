#include "cluster/tls_files.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <sstream>
#include <sys/stat.h>
#include <vector>

namespace troupe::cluster {

namespace {

using bio_ptr = std::unique_ptr<BIO, decltype(&BIO_free)>;
using x509_ptr = std::unique_ptr<X509, decltype(&X509_free)>;
using pkey_ptr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using store_ptr = std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)>;
using store_ctx_ptr = std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)>;

/// PEM files of a node identity are a few kilobytes; anything far larger is not one.
constexpr std::size_t max_pem_bytes = 1u << 20;

/// The reason of OpenSSL's last error (and the error queue emptied).
std::string openssl_reason() {
  auto e = ERR_peek_last_error();
  const char* reason = e ? ERR_reason_error_string(e) : nullptr;
  std::string out = reason ? reason : "no reason given";
  ERR_clear_error();
  return out;
}

/// Reads the PEM file `path` given with `flag` into `out`; the problem otherwise.
std::optional<std::string> read_pem(const std::string& flag, const std::string& path,
                                    std::string& out) {
  auto where = flag + " " + path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return where + ": " + std::strerror(errno);
  }
  if (!S_ISREG(st.st_mode)) {
    return where + ": not a regular file";
  }
  if (static_cast<std::size_t>(st.st_size) > max_pem_bytes) {
    return where + ": larger than 1 MiB, not a PEM file";
  }
  std::ifstream in{path, std::ios::binary};
  if (!in) {
    return where + ": cannot be read: " + std::strerror(errno);
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) {
    return where + ": cannot be read: " + std::strerror(errno);
  }
  out = bytes.str();
  if (out.find("-----BEGIN ") == std::string::npos) {
    return where + ": not a PEM file (no -----BEGIN line)";
  }
  return std::nullopt;
}

bio_ptr memory_bio(const std::string& text) {
  return bio_ptr{BIO_new_mem_buf(text.data(), static_cast<int>(text.size())), &BIO_free};
}

/// Every certificate in a PEM text, in order.
std::vector<x509_ptr> certificates(const std::string& text) {
  std::vector<x509_ptr> out;
  auto bio = memory_bio(text);
  while (bio) {
    X509* c = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
    if (!c) {
      break;
    }
    out.emplace_back(c, &X509_free);
  }
  ERR_clear_error(); // the end of the text reads as an error
  return out;
}

/// Verifies `leaf` (with the `chain` after it) against `store` for one TLS role; the
/// verification error otherwise.
std::optional<std::string> verify(X509_STORE* store, X509* leaf, STACK_OF(X509) * chain,
                                  int purpose, int& error) {
  store_ctx_ptr ctx{X509_STORE_CTX_new(), &X509_STORE_CTX_free};
  if (!ctx || X509_STORE_CTX_init(ctx.get(), store, leaf, chain) != 1) {
    return "cannot verify: " + openssl_reason();
  }
  X509_STORE_CTX_set_purpose(ctx.get(), purpose);
  if (X509_verify_cert(ctx.get()) == 1) {
    return std::nullopt;
  }
  error = X509_STORE_CTX_get_error(ctx.get());
  ERR_clear_error();
  return std::string{X509_verify_cert_error_string(error)};
}

} // namespace

int passphrase_callback(char* buf, int size, int, void* user) {
  auto* phrase = static_cast<const std::string*>(user);
  if (!phrase || phrase->empty() || size <= 0) {
    return 0;
  }
  auto n = std::min<std::size_t>(phrase->size(), static_cast<std::size_t>(size));
  std::memcpy(buf, phrase->data(), n);
  return static_cast<int>(n);
}

std::optional<std::string> check_tls_files(const tls_files& f) {
  std::string cert_text, key_text, ca_text;
  if (auto e = read_pem("--cluster-tls-cert", f.cert, cert_text)) {
    return e;
  }
  if (auto e = read_pem("--cluster-tls-key", f.key, key_text)) {
    return e;
  }
  if (auto e = read_pem("--cluster-tls-ca", f.ca, ca_text)) {
    return e;
  }

  auto chain = certificates(cert_text);
  if (chain.empty()) {
    return "--cluster-tls-cert " + f.cert + ": holds no PEM certificate";
  }
  auto cas = certificates(ca_text);
  if (cas.empty()) {
    return "--cluster-tls-ca " + f.ca + ": holds no PEM certificate";
  }

  auto bio = memory_bio(key_text);
  auto phrase = f.passphrase;
  pkey_ptr key{PEM_read_bio_PrivateKey(bio.get(), nullptr, passphrase_callback, &phrase),
               &EVP_PKEY_free};
  if (!key) {
    auto reason = openssl_reason();
    auto encrypted = key_text.find("ENCRYPTED") != std::string::npos;
    if (encrypted && f.passphrase.empty()) {
      return "--cluster-tls-key " + f.key +
             ": the key is encrypted: give its passphrase with --cluster-tls-key-passphrase "
             "(or TROUPE_CLUSTER_TLS_KEY_PASSPHRASE)";
    }
    if (encrypted) {
      return "--cluster-tls-key " + f.key +
             ": the key cannot be decrypted with --cluster-tls-key-passphrase (OpenSSL: " + reason +
             ")";
    }
    return "--cluster-tls-key " + f.key + ": holds no PEM private key (OpenSSL: " + reason + ")";
  }
  if (X509_check_private_key(chain.front().get(), key.get()) != 1) {
    ERR_clear_error();
    return "--cluster-tls-key " + f.key +
           ": does not match the certificate in --cluster-tls-cert " + f.cert;
  }

  store_ptr store{X509_STORE_new(), &X509_STORE_free};
  for (auto& ca : cas) {
    X509_STORE_add_cert(store.get(), ca.get());
  }
  ERR_clear_error(); // a CA listed twice is not a problem
  std::unique_ptr<STACK_OF(X509), void (*)(STACK_OF(X509)*)> rest{
      sk_X509_new_null(), [](STACK_OF(X509) * s) { sk_X509_free(s); }};
  for (std::size_t i = 1; i < chain.size(); ++i) {
    sk_X509_push(rest.get(), chain[i].get());
  }
  struct role {
    int purpose;
    const char* name;
  };
  for (auto r :
       {role{X509_PURPOSE_SSL_SERVER, "server"}, role{X509_PURPOSE_SSL_CLIENT, "client"}}) {
    int error = 0;
    if (auto why = verify(store.get(), chain.front().get(), rest.get(), r.purpose, error)) {
      if (error == X509_V_ERR_INVALID_PURPOSE) {
        return "--cluster-tls-cert " + f.cert + ": may not serve as a TLS " + r.name +
               " (every node is both: its extendedKeyUsage must allow serverAuth and "
               "clientAuth)";
      }
      return "--cluster-tls-cert " + f.cert + ": not accepted by --cluster-tls-ca " + f.ca + " (" +
             *why + ")";
    }
  }
  return std::nullopt;
}

std::string describe_certificate(const std::string& cert_path) {
  std::ifstream in{cert_path, std::ios::binary};
  std::ostringstream text;
  text << in.rdbuf();
  auto chain = certificates(text.str());
  if (chain.empty()) {
    return "unreadable certificate";
  }
  auto* leaf = chain.front().get();
  char subject[256] = {};
  X509_NAME_oneline(X509_get_subject_name(leaf), subject, sizeof(subject) - 1);
  std::string expiry;
  bio_ptr out{BIO_new(BIO_s_mem()), &BIO_free};
  if (out && ASN1_TIME_print(out.get(), X509_get0_notAfter(leaf)) == 1) {
    char* data = nullptr;
    auto n = BIO_get_mem_data(out.get(), &data);
    expiry.assign(data, static_cast<std::size_t>(n));
  }
  ERR_clear_error();
  return std::string{subject} + ", valid until " + expiry;
}

} // namespace troupe::cluster
