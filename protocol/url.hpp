#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace troupe::protocol {

/// `host:port` as sent in the Host header: an IPv6 address in brackets, the port left out when
/// it is the scheme's default (`secure`: https's 443, else http's 80).
inline std::string host_header(const std::string& host, std::uint16_t port, bool secure) {
  auto h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return port == (secure ? 443 : 80) ? h : h + ":" + std::to_string(port);
}

/// An `http://` or `https://` base URL of a worker, split into what a client needs.
struct base_url {
  std::string scheme;     ///< `http` or `https`.
  std::string host;       ///< Host name or address, without brackets.
  std::uint16_t port = 0; ///< Explicit port, or the scheme's default.
  std::string path;       ///< Base path without a trailing slash (often empty).

  /// `host:port` as sent in the Host header (default ports omitted).
  std::string authority() const;

  /// The URL in canonical form: `scheme://host:port[path]`.
  std::string canonical() const;
};

/// Parses a worker base URL; on failure returns nothing and sets `why` to a readable reason.
std::optional<base_url> parse_base_url(std::string_view url, std::string& why);

} // namespace troupe::protocol
