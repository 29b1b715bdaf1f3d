#pragma once

// The parser of a client's request in a `server_session`: Beast's `basic_parser` (its grammar,
// limits, chunked decoding and obsolete line folding) writing into a `transport::request`,
// whose fields are kept flat (`request_fields`) where Beast's `request_parser` builds a node per
// field. tests/fuzz/request_parser_diff_fuzz checks it against Beast's on the same bytes.

#include "transport/http_types.hpp"

#include <optional>

namespace troupe::transport {

/// Parses one request (a parser per request, as Beast's): `put`, or Beast's `async_read`,
/// until `is_done()`, then `release()`.
class request_parser final : public http::basic_parser<true> {
public:
  request_parser() = default;

  /// The request parsed so far (its head once `is_header_done()`).
  request& get() noexcept { return msg_; }
  const request& get() const noexcept { return msg_; }

  /// Gives up the request.
  request release() noexcept { return std::move(msg_); }

private:
  void on_request_impl(http::verb method, beast::string_view method_str, beast::string_view target,
                       int version, beast::error_code& ec) override;
  void on_response_impl(int, beast::string_view, int, beast::error_code& ec) override;
  void on_field_impl(http::field name, beast::string_view name_string, beast::string_view value,
                     beast::error_code& ec) override;
  void on_header_impl(beast::error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                         beast::error_code& ec) override;
  std::size_t on_body_impl(beast::string_view body, beast::error_code& ec) override;
  void on_chunk_header_impl(std::uint64_t, beast::string_view, beast::error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t remain, beast::string_view body,
                                 beast::error_code& ec) override;
  void on_finish_impl(beast::error_code&) override {}

  request msg_;
  /// Beast's writer of a `string_body` (room for a body of known length at once), from the
  /// end of the head on.
  std::optional<http::string_body::reader> body_;
};

} // namespace troupe::transport
