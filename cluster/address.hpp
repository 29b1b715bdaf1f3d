#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace troupe::cluster {

/// A cluster port's address: `host:port` (`[v6]:port` for IPv6 literals).
struct endpoint {
  std::string host;
  std::uint16_t port = 0;
};

/// Reads `host:port`; sets `why` and returns nothing when it is not one.
std::optional<endpoint> parse_endpoint(std::string_view text, std::string& why);

/// `host:port`, brackets around IPv6 literals.
std::string to_string(const endpoint& e);

} // namespace troupe::cluster
