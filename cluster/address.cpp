#include "cluster/address.hpp"

#include <charconv>

namespace troupe::cluster {

std::optional<endpoint> parse_endpoint(std::string_view text, std::string& why) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    why = "'" + std::string(text) + "' is not host:port";
    return std::nullopt;
  }
  auto host = text.substr(0, colon);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') {
      why = "'" + std::string(text) + "' is not [ipv6]:port";
      return std::nullopt;
    }
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    why = "'" + std::string(text) + "': write IPv6 addresses as [addr]:port";
    return std::nullopt;
  }
  auto digits = text.substr(colon + 1);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (ec != std::errc{} || end != digits.data() + digits.size() || port == 0 || port > 65535) {
    why = "'" + std::string(text) + "': the port must be 1-65535";
    return std::nullopt;
  }
  return endpoint{std::string(host), static_cast<std::uint16_t>(port)};
}

std::string to_string(const endpoint& e) {
  auto port = std::to_string(e.port);
  return e.host.find(':') != std::string::npos ? "[" + e.host + "]:" + port : e.host + ":" + port;
}

} // namespace troupe::cluster
