#pragma once

// The parser of a worker's response in an `upstream_exchange`. A Beast `basic_parser` (its
// grammar, limits and chunked decoding) whose callbacks keep nothing Beast's message types keep:
// the head's fields stay views into the read buffer until the sink has seen them, and each
// piece of the body goes to the sink straight from the read buffer, where a `buffer_body`
// parser first copied it into a body buffer of its own.

#include "transport/response_head.hpp"

#include <boost/container/small_vector.hpp>
#include <cstddef>
#include <forward_list>
#include <string>

namespace troupe::transport {

class response_sink;

/// Parses one response for `sink`: `parse_head` until the head is done, then `head()` for the
/// sink while the bytes parsed are still in the buffer; then `put` (or Beast's `async_read_some`)
/// hands every body piece to `sink.on_body` as it is parsed.
class response_parser final : public http::basic_parser<false> {
public:
  /// A parser delivering the body to `sink`, which must outlive the parsing.
  explicit response_parser(response_sink& sink) noexcept : sink_(&sink) {}

  /// `put` for bytes of the head: fields are kept as views into `buffer`, so `head()` is valid
  /// until those bytes leave the buffer. Fields parsed by a call that still needs more are
  /// copied: the caller consumes the bytes it used, always.
  std::size_t parse_head(net::const_buffer buffer, beast::error_code& ec);

  /// The status and fields parsed (once `is_header_done()`; see `parse_head`).
  response_head head() const noexcept {
    return response_head{status_, {fields_.data(), fields_.size()}};
  }

  /// The status code (once `is_header_done()`).
  unsigned status() const noexcept { return status_; }

  /// True when the sink refused a piece of the body (the parse then failed).
  bool refused() const noexcept { return refused_; }

  /// Body bytes handed to the sink.
  std::size_t body_bytes() const noexcept { return body_bytes_; }

private:
  void on_request_impl(http::verb, beast::string_view, beast::string_view, int,
                       beast::error_code& ec) override;
  void on_response_impl(int code, beast::string_view reason, int version,
                        beast::error_code& ec) override;
  void on_field_impl(http::field name, beast::string_view name_string, beast::string_view value,
                     beast::error_code& ec) override;
  void on_header_impl(beast::error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&, beast::error_code&) override {}
  std::size_t on_body_impl(beast::string_view body, beast::error_code& ec) override;
  void on_chunk_header_impl(std::uint64_t, beast::string_view, beast::error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t remain, beast::string_view body,
                                 beast::error_code& ec) override;
  void on_finish_impl(beast::error_code&) override {}

  /// Hands `piece` to the sink; a refusal fails the parse.
  std::size_t deliver(std::string_view piece, beast::error_code& ec);
  /// True when `v` lies in the buffer given to the current `parse_head`.
  bool in_input(std::string_view v) const noexcept;
  /// A copy of `v` that lives as long as the parser.
  std::string_view keep(std::string_view v);
  /// Copies the fields still viewing the current input (a head split over reads).
  void keep_fields();

  response_sink* sink_;
  unsigned status_ = 0;
  /// The fields, views into the buffer `parse_head` was given (a response rarely has more).
  boost::container::small_vector<head_field, 16> fields_;
  /// Copies of what must outlive the bytes parsed (never touched by a head that arrives in one
  /// read without obsolete line folding): values Beast unfolded into a buffer of its own that
  /// dies with the parse call, and the fields of a head split over reads, parsed in part by a
  /// call whose bytes then leave the buffer.
  std::forward_list<std::string> kept_;
  const char* input_begin_ = nullptr;
  const char* input_end_ = nullptr;
  std::size_t body_bytes_ = 0;
  bool refused_ = false;
};

} // namespace troupe::transport
