#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace troupe::protocol {

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
