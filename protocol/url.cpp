#include "protocol/url.hpp"

#include <charconv>

namespace troupe::protocol {

std::string base_url::authority() const {
  return host_header(host, port, scheme == "https");
}

std::string base_url::canonical() const {
  auto h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return scheme + "://" + h + ":" + std::to_string(port) + path;
}

std::optional<base_url> parse_base_url(std::string_view url, std::string& why) {
  base_url out;
  auto sep = url.find("://");
  if (sep == std::string_view::npos) {
    why = "the url must start with http:// or https://";
    return std::nullopt;
  }
  out.scheme = std::string(url.substr(0, sep));
  for (auto& c : out.scheme) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (out.scheme != "http" && out.scheme != "https") {
    why = "unsupported scheme '" + out.scheme + "' (use http or https)";
    return std::nullopt;
  }
  auto rest = url.substr(sep + 3);
  auto slash = rest.find_first_of("/?#");
  auto authority = rest.substr(0, slash);
  auto path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
  if (auto q = path.find_first_of("?#"); q != std::string_view::npos) {
    why = "the url must not carry a query or fragment";
    return std::nullopt;
  }
  if (authority.find('@') != std::string_view::npos) {
    why = "credentials in the url are not supported (use api_key)";
    return std::nullopt;
  }
  std::string_view host = authority;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) {
      why = "unterminated IPv6 address in url";
      return std::nullopt;
    }
    host = authority.substr(1, close - 1);
    auto after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        why = "unexpected characters after the IPv6 address";
        return std::nullopt;
      }
      port = after.substr(1);
    }
  } else if (auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) {
    why = "the url has no host";
    return std::nullopt;
  }
  out.host = std::string(host);
  if (port.empty()) {
    out.port = out.scheme == "https" ? 443 : 80;
  } else {
    unsigned value = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc{} || ptr != port.data() + port.size() || value == 0 || value > 65535) {
      why = "invalid port '" + std::string(port) + "'";
      return std::nullopt;
    }
    out.port = static_cast<std::uint16_t>(value);
  }
  while (!path.empty() && path.back() == '/') {
    path.remove_suffix(1);
  }
  out.path = std::string(path);
  return out;
}

} // namespace troupe::protocol
