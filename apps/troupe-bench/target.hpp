#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <string>

namespace troupe::bench {

/// One URL requests are sent to, resolved once at start.
struct target {
  std::string url;         ///< As given.
  std::string authority;   ///< The Host header.
  std::string path_prefix; ///< The URL's path, prepended to the API path.
  boost::asio::ip::tcp::resolver::results_type endpoints;
};

/// Parses and resolves `url`; false and `why` when it cannot be.
bool resolve_target(const std::string& url, target& out, std::string& why);

} // namespace troupe::bench
