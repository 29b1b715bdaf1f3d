#pragma once

#include "transport/http_server.hpp"
#include "transport/lazy_deadline.hpp"
#include "transport/request_parser.hpp"
#include "transport/response_wire.hpp"
#include "transport/session_reply.hpp"
#include "transport/tls.hpp"
#include "transport/write_backlog.hpp"
#include "transport/write_watch.hpp"

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

namespace troupe::transport {

/// One client connection over `Stream` (`tcp::socket`, or `tls_stream` for HTTPS; in a
/// fuzz build also `memory_stream`, see TROUPE_MEMORY_STREAM_SESSIONS): reads
/// requests (and keeps reading to notice a disconnect or a pipelined request), hands each to the
/// handler, writes the responses in order. Follows Beast's `example/http/server/async`; runs on
/// one strand. The listener counts it in `conn_stats->open` (it leaves the count when it dies).
template <class Stream>
class server_session final : public reply_target,
                             public lazy_deadline::target,
                             public std::enable_shared_from_this<server_session<Stream>> {
public:
  server_session(Stream&& stream, std::shared_ptr<const server_options> opts,
                 std::shared_ptr<const request_handler> handler);
  ~server_session() override;

  /// Starts the TLS handshake (HTTPS), then reads the first request.
  void start();

  // -- reply_target: called on the strand by session_reply --

  net::any_io_executor executor() override { return stream_.get_executor(); }
  void deliver(std::uint64_t seq, write_item item, bool ends_response) override;
  void set_source(std::uint64_t seq, std::weak_ptr<flow_source> source) override;
  void abort_response(std::uint64_t seq) override;

private:
  using error_code = boost::system::error_code;

  /// What the connection waits for from its client, bounded by the read deadline.
  enum class waiting {
    none, ///< Nothing: a request is being answered.
    head, ///< A head: the first of the connection, or one whose first bytes arrived.
    idle, ///< The next request of a kept-alive connection (nothing of it arrived).
    body, ///< The rest of a request's body.
  };

  /// A TCP socket is under the stream (not under the fuzz harness's `memory_stream`).
  static constexpr bool over_tcp =
      std::is_same_v<Stream, tcp::socket> || std::is_same_v<Stream, tls_stream>;

  /// The TCP socket under the stream; none under a `memory_stream`.
  tcp::socket* socket() {
    if constexpr (std::is_same_v<Stream, tcp::socket>) {
      return &stream_;
    } else if constexpr (over_tcp) {
      return &stream_.next_layer();
    } else {
      return nullptr;
    }
  }

  /// The current response is this one and still accepts calls.
  bool is_current(std::uint64_t seq) const {
    return current_ && current_->seq() == seq && !current_->gone() && !closed_;
  }

  // -- reading (server_session_read.cpp) --
  void do_read();
  void read_head();
  template <class F> void run_read_handler(F&& f);
  void on_read_some(error_code ec, std::size_t n);
  bool parse_head(error_code& ec);
  void on_header(error_code ec);
  bool parse_buffered();
  void read_body();
  void on_read(error_code ec);
  void on_read_error(error_code ec);
  void refuse(inbound_status status, request&& req);
  void accept_request(request&& req, inbound_status status);
  void start_request(request&& req, inbound_status status);
  void expect(waiting what, std::chrono::steady_clock::duration within);
  void on_deadline() override;
  std::chrono::steady_clock::duration head_timeout() const;

  // -- writing --
  void do_write();
  void write_queued();                                        // do_write's write, now
  std::span<const net::const_buffer> gather() const noexcept; // buffers_, copied cheaply
  void on_write(error_code ec);
  /// Drops the first `n` bytes of the gather write (the part a direct write took).
  void consume_written(std::size_t n);
  void response_done();
  void watch_writes();
  void on_write_watch(error_code ec);
  void write_timed_out();
  void pause_source();
  void resume_source();

  // -- ending --
  void client_gone();
  void close();

  struct queued_request {
    request req;
    inbound_status status;
  };

  Stream stream_;
  std::shared_ptr<const server_options> opts_;
  std::shared_ptr<const request_handler> handler_;
  beast::flat_buffer buffer_;
  std::optional<request_parser> parser_;
  std::deque<queued_request> queued_;      ///< Requests read ahead (pipelined).
  std::shared_ptr<session_reply> current_; ///< The request being answered.
  response_framer framer_;                 ///< Frames the current response.
  std::deque<wire_item> writes_;           ///< The write queue.
  std::size_t in_flight_ = 0;              ///< Items of `writes_` in the current write.
  std::size_t in_flight_bytes_ = 0;        ///< Their bytes.
  std::vector<net::const_buffer> buffers_; ///< The current gather write.
  write_backlog backlog_;                  ///< Unwritten bytes; pauses the stream's producer.
  write_watch watch_;                      ///< The write timeout.
  lazy_deadline deadline_;                 ///< The read deadline (see `expect`).
  waiting waiting_ = waiting::none;        ///< What the deadline bounds.
  std::uint64_t seq_ = 0;                  ///< Sequence number of the latest response.
  bool head_started_ = false;              ///< Bytes of the next head arrived.
  bool aborting_ = false;                  ///< Close once the queue is written.
  bool reading_ = false;
  bool writing_ = false;
  bool closed_ = false;
  bool stop_reading_ = false;
  bool response_ending_ = false;    ///< The current response is queued completely.
  bool in_read_handler_ = false;    ///< In a read handler's own work (`run_read_handler`).
  bool read_after_handler_ = false; ///< Start the next read once that handler's tail ran.
};

} // namespace troupe::transport
