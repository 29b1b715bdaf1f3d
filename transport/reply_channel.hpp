#pragma once

#include "transport/flow_control.hpp"
#include "transport/http_types.hpp"
#include "transport/serialized_head.hpp"

#include <functional>
#include <memory>
#include <string>

namespace troupe::transport {

/// The way back to the client of one request. Any thread may call it; calls take effect in
/// order on the connection's strand. Once the client left or the response ended, calls do
/// nothing. A response is either one `respond`, or `begin_stream`, chunks, `end_stream`.
class reply_channel {
public:
  virtual ~reply_channel() = default;

  /// Sends a complete response (Content-Length is set from the body).
  virtual void respond(response res) = 0;

  /// Starts a chunked response with `status` and `headers`.
  virtual void begin_stream(unsigned status, header_list headers) = 0;

  /// `respond` with a head already serialized: what a relay of a worker's answer sends, its
  /// fields written once. A channel that inspects or holds responses gets them as `respond`.
  virtual void respond_serialized(serialized_head head, std::string body) {
    respond(to_response(head, std::move(body)));
  }

  /// `begin_stream` with a head already serialized.
  virtual void begin_stream_serialized(serialized_head head) {
    begin_stream(head.status, to_header_list(head.fields));
  }

  /// Sends one chunk of a streamed response.
  virtual void write_chunk(std::string data) = 0;

  /// Ends a streamed response.
  virtual void end_stream() = 0;

  /// Names the producer of the streamed body, paused while the client falls behind (see
  /// `flow_source`). Before `begin_stream`, or at any point of the stream; a channel that
  /// queues nothing may ignore it, a channel in front of another passes it on.
  virtual void set_flow_source(std::weak_ptr<flow_source> source) = 0;

  /// Calls `f` once if the client disconnects before the response ended (at once if it has).
  virtual void on_disconnect(std::function<void()> f) = 0;

  /// True once the connection dropped its client for reading nothing (a write made no progress
  /// for the write timeout); set before the `on_disconnect` callback runs.
  virtual bool stopped_reading() const { return false; }

  /// Closes the connection once the bytes already handed over are sent, without ending the
  /// response: a streamed body lacks its last chunk, an unanswered request gets nothing. For
  /// peers that must look broken (the worker simulator's failure injection).
  virtual void abort() = 0;
};

} // namespace troupe::transport
