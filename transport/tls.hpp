#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

namespace troupe::transport {

/// A TLS client context for HTTPS upstreams: TLS 1.2 or newer, the server's certificate
/// verified against the system's trust store plus `ca_file` when given (a PEM bundle, e.g. a
/// private CA). Host names are checked per connection (`upstream_exchange`). On failure (an
/// unreadable `ca_file`) returns null and sets `why`.
std::shared_ptr<boost::asio::ssl::context> make_client_tls_context(const std::string& ca_file,
                                                                   std::string& why);

} // namespace troupe::transport
