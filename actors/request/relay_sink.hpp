#pragma once

#include "protocol/error.hpp"
#include "protocol/sse.hpp"
#include "services/request_tracker.hpp"
#include "transport/reply_channel.hpp"
#include "transport/upstream_exchange.hpp"

#include <functional>
#include <memory>
#include <string>

namespace troupe::actors {

/// Looks at a response as it passes, never changing it: the whole body of a non-streamed
/// success, or each event of a stream. Runs on the exchange's strand.
using response_observer = std::function<void(std::string_view piece)>;

/// Relays a worker's response to the client as it arrives: an SSE response event by event
/// (whole events only, so an error event can always follow), any other response whole, with
/// Content-Length, up to a size limit. A worker's error (status >= 400) is read up to its own
/// limit and reaches the client in the route's error format (`protocol::client_error_body`).
/// Limits are enforced while reading: the sink stops the exchange at the limit. Runs on the
/// exchange's strand; once the exchange is over its owner may call `fail` from anywhere.
class relay_sink final : public transport::response_sink {
public:
  /// A sink answering through `reply`, tagging responses with `request_id`, refusing
  /// non-streamed bodies over `body_limit` bytes and cutting error bodies at
  /// `error_body_limit` bytes; `observer`, when set, sees the response as it passes.
  relay_sink(std::shared_ptr<transport::reply_channel> reply,
             std::shared_ptr<const std::string> request_id, protocol::api_format format,
             std::size_t body_limit, std::size_t error_body_limit = 64 * 1024,
             response_observer observer = {});

  /// The same with an id of its own (a copy).
  relay_sink(std::shared_ptr<transport::reply_channel> reply, std::string request_id,
             protocol::api_format format, std::size_t body_limit,
             std::size_t error_body_limit = 64 * 1024, response_observer observer = {})
      : relay_sink(std::move(reply), std::make_shared<const std::string>(std::move(request_id)),
                   format, body_limit, error_body_limit, std::move(observer)) {}

  void on_source(std::weak_ptr<transport::flow_source> source) override;
  bool on_head(const transport::response_head& head) override;
  bool on_body(std::string_view piece) override;
  void on_complete() override;

  /// True once anything reached the client: a failure can no longer change the status.
  bool started() const noexcept { return streaming_ || responded_; }

  /// True when the response is an event stream.
  bool streaming() const noexcept { return streaming_; }

  /// True once the client's response is complete (relayed whole, or a worker's error answered
  /// at its size limit): nothing can be added to it.
  bool answered() const noexcept { return ended_ && !failed_; }

  /// Ends the response with `err`: an error response if nothing was sent yet, else an error
  /// event and the end of the stream.
  void fail(const protocol::api_error& err);

  /// Marks the request of `ticket` `streaming` in its tracker when an event stream's head is
  /// relayed, before any event. Set before dispatch.
  void track(services::request_tracker::ticket ticket) { track_ = std::move(ticket); }

  /// Keeps a worker's retryable error answer (`retryable_status`) from the client: it is read
  /// (up to the error size limit), not relayed, and `held()` says so once the exchange is
  /// over. The owner then tries another worker, or answers it with `release_held()`. Set
  /// before dispatch, when another attempt is possible.
  void hold_retryable_errors() noexcept { hold_ = true; }

  /// True while a retryable error answer is kept from the client.
  bool held() const noexcept { return held_; }

  /// The worker's status of the response (0 before its head).
  unsigned status() const noexcept { return status_; }

  /// Answers the kept error as it would have been relayed. Once the exchange is over.
  void release_held();

private:
  void answer_error(bool truncated);

  std::shared_ptr<transport::reply_channel> reply_;
  std::shared_ptr<const std::string> request_id_; ///< Shared with the request; never null.
  protocol::api_format format_;
  std::size_t body_limit_;
  std::size_t error_body_limit_;
  response_observer observer_;
  services::request_tracker::ticket track_;
  std::weak_ptr<transport::flow_source> source_; ///< Handed to the client with a stream's head.
  unsigned status_ = 0;
  transport::header_list headers_;  ///< An error's head (it may be rewritten).
  transport::serialized_head head_; ///< A success's head, as relayed.
  std::string body_;
  protocol::sse_framer framer_;
  bool streaming_ = false;
  bool responded_ = false;
  bool ended_ = false;
  bool failed_ = false;    ///< Ended by `fail`.
  bool error_ = false;     ///< The worker answered an error status.
  bool hold_ = false;      ///< Keep a retryable error from the client.
  bool held_ = false;      ///< A retryable error is kept.
  bool truncated_ = false; ///< The kept error was cut at the error size limit.
};

/// Response headers of a worker that the client may see: hop-by-hop ones (RFC 9110 7.6.1,
/// including those the Connection header names) and framing removed.
transport::header_list relayable_headers(const transport::response_head& head);

} // namespace troupe::actors
