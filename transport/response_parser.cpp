#include "transport/response_parser.hpp"

#include "transport/upstream_exchange.hpp"

#include <boost/system/error_code.hpp>

namespace troupe::transport {

std::size_t response_parser::parse_head(net::const_buffer buffer, beast::error_code& ec) {
  input_begin_ = static_cast<const char*>(buffer.data());
  input_end_ = input_begin_ + buffer.size();
  auto used = put(buffer, ec);
  if (ec == http::error::need_more && !is_header_done()) {
    // Beast parsed the start line and whole fields it had and left the rest for the next
    // call; the bytes it parsed leave the buffer (which may move as it grows): keep copies.
    keep_fields();
  }
  return used;
}

bool response_parser::in_input(std::string_view v) const noexcept {
  return v.data() >= input_begin_ && v.data() + v.size() <= input_end_;
}

std::string_view response_parser::keep(std::string_view v) {
  return kept_.emplace_front(v);
}

void response_parser::keep_fields() {
  for (auto& f : fields_) {
    if (in_input(f.name_text)) {
      f.name_text = keep(f.name_text);
    }
    if (in_input(f.value_text)) {
      f.value_text = keep(f.value_text);
    }
  }
}

void response_parser::on_request_impl(http::verb, beast::string_view, beast::string_view, int,
                                      beast::error_code& ec) {
  ec = http::error::bad_version; // never called: this parser reads responses
}

void response_parser::on_response_impl(int code, beast::string_view, int, beast::error_code&) {
  status_ = static_cast<unsigned>(code);
}

void response_parser::on_field_impl(http::field name, beast::string_view name_string,
                                    beast::string_view value, beast::error_code&) {
  if (is_header_done()) {
    return; // a trailer of a chunked body: nothing reads it
  }
  head_field f{name, name_string, value};
  if (!in_input(value)) {
    f.value_text = keep(value); // unfolded by Beast into a buffer that dies with the parse
  }
  fields_.push_back(f);
}

std::size_t response_parser::on_body_impl(beast::string_view body, beast::error_code& ec) {
  return deliver(body, ec);
}

std::size_t response_parser::on_chunk_body_impl(std::uint64_t, beast::string_view body,
                                                beast::error_code& ec) {
  return deliver(body, ec);
}

std::size_t response_parser::deliver(std::string_view piece, beast::error_code& ec) {
  if (piece.empty()) {
    return 0;
  }
  body_bytes_ += piece.size();
  if (!sink_->on_body(piece)) {
    refused_ = true;
    ec = boost::system::errc::make_error_code(boost::system::errc::operation_canceled);
  }
  return piece.size();
}

} // namespace troupe::transport
