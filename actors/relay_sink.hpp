#pragma once

#include <memory>
#include <string>

#include "protocol/error.hpp"
#include "protocol/sse.hpp"
#include "transport/reply_channel.hpp"
#include "transport/upstream_exchange.hpp"

namespace troupe::actors {

/// Relays a worker's response to the client as it arrives: an SSE response event by event
/// (whole events only, so an error event can always follow), any other response whole, with
/// Content-Length, up to a size limit. Runs on the exchange's strand; once the exchange is
/// over its owner may call `fail` from anywhere.
class relay_sink final : public transport::response_sink {
public:
  /// A sink answering through `reply`, tagging responses with `request_id`, refusing
  /// non-streamed bodies over `body_limit` bytes.
  relay_sink(std::shared_ptr<transport::reply_channel> reply, std::string request_id,
             protocol::api_format format, std::size_t body_limit);

  bool on_head(const transport::http::response_header<>& head) override;
  bool on_body(std::string_view piece) override;
  void on_complete() override;

  /// True once anything reached the client: a failure can no longer change the status.
  bool started() const noexcept { return streaming_ || responded_; }

  /// True when the response is an event stream.
  bool streaming() const noexcept { return streaming_; }

  /// Ends the response with `err`: an error response if nothing was sent yet, else an error
  /// event and the end of the stream.
  void fail(const protocol::api_error& err);

private:
  std::shared_ptr<transport::reply_channel> reply_;
  std::string request_id_;
  protocol::api_format format_;
  std::size_t body_limit_;
  unsigned status_ = 0;
  transport::header_list headers_;
  std::string body_;
  protocol::sse_framer framer_;
  bool streaming_ = false;
  bool responded_ = false;
  bool ended_ = false;
};

/// A complete error response in `format`, tagged with `request_id`.
transport::response make_error_response(const protocol::api_error& err,
                                        protocol::api_format format,
                                        const std::string& request_id, unsigned version = 11);

/// A complete JSON response.
transport::response make_json_response(unsigned status, std::string body,
                                       const std::string& request_id = {});

/// Response headers of a worker that the client may see (hop-by-hop and framing removed).
transport::header_list relayable_headers(const transport::http::response_header<>& head);

} // namespace troupe::actors
