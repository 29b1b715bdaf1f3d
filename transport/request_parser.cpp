#include "transport/request_parser.hpp"

namespace troupe::transport {

void request_parser::on_request_impl(http::verb method, beast::string_view method_str,
                                     beast::string_view target, int version, beast::error_code&) {
  msg_.target(target);
  if (method != http::verb::unknown) {
    msg_.method(method);
  } else {
    msg_.method_string(method_str);
  }
  msg_.version(static_cast<unsigned>(version));
}

void request_parser::on_response_impl(int, beast::string_view, int, beast::error_code& ec) {
  ec = http::error::bad_version; // never called: this parses requests
}

void request_parser::on_field_impl(http::field name, beast::string_view name_string,
                                   beast::string_view value, beast::error_code&) {
  msg_.insert(name, name_string, value);
}

void request_parser::on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                                       beast::error_code& ec) {
  body_.emplace(msg_, msg_.body());
  body_->init(content_length, ec);
}

std::size_t request_parser::on_body_impl(beast::string_view body, beast::error_code& ec) {
  return body_->put(net::buffer(body.data(), body.size()), ec);
}

std::size_t request_parser::on_chunk_body_impl(std::uint64_t, beast::string_view body,
                                               beast::error_code& ec) {
  return on_body_impl(body, ec);
}

} // namespace troupe::transport
