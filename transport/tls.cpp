#include "transport/tls.hpp"

namespace troupe::transport {

std::shared_ptr<boost::asio::ssl::context> make_client_tls_context(const std::string& ca_file,
                                                                   std::string& why) {
  namespace ssl = boost::asio::ssl;
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  boost::system::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1,
                   ec);
  ctx->set_verify_mode(ssl::verify_peer, ec);
  ctx->set_default_verify_paths(ec);
  if (ec) {
    why = "cannot load the system's trusted certificates: " + ec.message();
    return nullptr;
  }
  if (!ca_file.empty()) {
    ctx->load_verify_file(ca_file, ec);
    if (ec) {
      why = "cannot load CA file '" + ca_file + "': " + ec.message();
      return nullptr;
    }
  }
  return ctx;
}

} // namespace troupe::transport
