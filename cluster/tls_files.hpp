#pragma once

#include <optional>
#include <string>

namespace troupe::cluster {

/// The files of a node's cluster identity: its certificate (chain), its private key and the
/// cluster's CA. With all three, links are mutually authenticated TLS (CAF's OpenSSL module):
/// a peer is accepted when its certificate chains to the CA, whatever name it carries.
struct tls_files {
  std::string cert;       ///< `--cluster-tls-cert`: PEM, this node's certificate first.
  std::string key;        ///< `--cluster-tls-key`: PEM private key (may be encrypted).
  std::string ca;         ///< `--cluster-tls-ca`: PEM, the cluster CA's certificate(s).
  std::string passphrase; ///< `--cluster-tls-key-passphrase`: for an encrypted key.

  /// Any of the three files is given.
  bool any() const { return !cert.empty() || !key.empty() || !ca.empty(); }

  /// All three are given.
  bool all() const { return !cert.empty() && !key.empty() && !ca.empty(); }
};

/// What OpenSSL says about a node's TLS files, read as CAF will read them, before the actor
/// system exists (CAF's own checks throw from inside it, or hang it). Checks that each file is
/// a readable PEM file of the right kind, that the key opens (with the passphrase when it is
/// encrypted) and matches the certificate, and that the certificate is valid now, chains to
/// the CA and may serve as both TLS client and server (every node is both). Returns the first
/// problem as a sentence naming its flag, or nothing.
std::optional<std::string> check_tls_files(const tls_files& files);

/// What the certificate says of itself, for the start-up log: subject and expiry.
std::string describe_certificate(const std::string& cert_path);

/// OpenSSL's `pem_password_cb` handing over the passphrase `user` points to (a
/// `const std::string*`); never prompts on a terminal (OpenSSL's default callback would, and a
/// node would wait for it forever).
int passphrase_callback(char* buf, int size, int rwflag, void* user);

} // namespace troupe::cluster
