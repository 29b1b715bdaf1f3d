#include "apps/troupe-bench/target.hpp"

#include "protocol/url.hpp"

#include <boost/asio/io_context.hpp>

namespace troupe::bench {

bool resolve_target(const std::string& url, target& out, std::string& why) {
  auto parsed = protocol::parse_base_url(url, why);
  if (!parsed) {
    return false;
  }
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::resolver resolver{ioc};
  boost::system::error_code ec;
  out.endpoints = resolver.resolve(parsed->host, std::to_string(parsed->port), ec);
  if (ec) {
    why = "cannot resolve " + parsed->host + ": " + ec.message();
    return false;
  }
  out.url = url;
  out.authority = parsed->authority();
  out.path_prefix = parsed->path;
  return true;
}

} // namespace troupe::bench
