#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <memory>
#include <string>
#include <vector>

namespace troupe::transport {

/// A connection over TLS, client or upstream: OpenSSL's stream over a plain TCP socket.
using tls_stream = boost::beast::ssl_stream<boost::asio::ip::tcp::socket>;

/// Why a TLS context could not be made: which of its files is bad, and how.
struct tls_setup_error {
  /// The part at fault.
  enum class part {
    certificate,  ///< The certificate (chain) file.
    key,          ///< The private key file.
    key_mismatch, ///< The key does not belong to the certificate.
    ca,           ///< A CA file (`file` names it).
    system,       ///< The system's trust store or OpenSSL itself.
  };
  part what = part::system;
  std::string file;   ///< The file at fault, when there is one.
  std::string reason; ///< What is wrong with it, in words (OpenSSL's reason where it has one).
};

/// A TLS server context for HTTPS listeners: TLS 1.2 or newer, the certificate chain in
/// `cert_file` and its private key in `key_file` (both PEM, the key unencrypted), ALPN
/// `http/1.1` (a client offering only other protocols gets no ALPN answer). On failure returns
/// null and says why in `err`.
std::shared_ptr<boost::asio::ssl::context> make_server_tls_context(const std::string& cert_file,
                                                                   const std::string& key_file,
                                                                   tls_setup_error& err);

/// What a TLS client context for upstreams trusts and presents.
struct client_tls_files {
  std::vector<std::string> ca_files; ///< PEM bundles trusted besides the system's store.
  std::string cert_file; ///< Client certificate (chain) presented to servers; empty: none.
  std::string key_file;  ///< Its private key (PEM, unencrypted).
};

/// A TLS client context for HTTPS upstreams: TLS 1.2 or newer, the server's certificate
/// verified against the system's trust store plus `files.ca_files`; with a certificate and key,
/// it is presented to servers that ask for one (mutual TLS). Host names are checked per
/// connection (`upstream_exchange`). On failure returns null and says why in `err`.
std::shared_ptr<boost::asio::ssl::context> make_client_tls_context(const client_tls_files& files,
                                                                   tls_setup_error& err);

/// The same, trusting `ca_file` (when given) besides the system's store, presenting nothing.
/// On failure returns null and sets `why`.
std::shared_ptr<boost::asio::ssl::context> make_client_tls_context(const std::string& ca_file,
                                                                   std::string& why);

} // namespace troupe::transport
