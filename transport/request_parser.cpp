#include "transport/request_parser.hpp"

namespace troupe::transport {

namespace {

std::string_view view(beast::string_view s) noexcept {
  return {s.data(), s.size()};
}

} // namespace

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
  msg_.insert(name, view(name_string), view(value));
}

void request_parser::on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                                       beast::error_code& ec) {
  // As Beast's `string_body::reader`: room for the whole body at once when its length is known.
  if (content_length) {
    if (*content_length > msg_.body().max_size()) {
      ec = http::error::buffer_overflow;
      return;
    }
    msg_.body().reserve(static_cast<std::size_t>(*content_length));
  }
}

std::size_t request_parser::on_body_impl(beast::string_view body, beast::error_code& ec) {
  auto& b = msg_.body();
  if (body.size() > b.max_size() - b.size()) {
    ec = http::error::buffer_overflow;
    return 0;
  }
  b.append(body.data(), body.size());
  return body.size();
}

std::size_t request_parser::on_chunk_body_impl(std::uint64_t, beast::string_view body,
                                               beast::error_code& ec) {
  return on_body_impl(body, ec);
}

} // namespace troupe::transport
