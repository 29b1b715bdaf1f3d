#pragma once

#include "transport/http_server.hpp"
#include "transport/response_wire.hpp"
#include "transport/session_reply.hpp"
#include "transport/write_backlog.hpp"
#include "transport/write_watch.hpp"

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

namespace troupe::transport {

/// One client connection over `Stream` (a `beast::tcp_stream`): reads requests (and keeps
/// reading to notice a disconnect or a pipelined request), hands each to the handler, writes
/// the responses in order. Follows Beast's `example/http/server/async`; runs on one strand.
template <class Stream>
class server_session final : public reply_target,
                             public std::enable_shared_from_this<server_session<Stream>> {
public:
  server_session(Stream&& stream, std::shared_ptr<const server_options> opts,
                 std::shared_ptr<const request_handler> handler);

  /// Starts reading the first request.
  void start();

  // -- reply_target: called on the strand by session_reply --

  net::any_io_executor executor() override { return stream_.get_executor(); }
  void deliver(std::uint64_t seq, write_item item, bool ends_response) override;
  void set_source(std::uint64_t seq, std::weak_ptr<flow_source> source) override;
  void abort_response(std::uint64_t seq) override;

private:
  using error_code = boost::system::error_code;

  /// The TCP socket under the stream.
  tcp::socket& socket() { return beast::get_lowest_layer(stream_).socket(); }

  /// The current response is this one and still accepts calls.
  bool is_current(std::uint64_t seq) const {
    return current_ && current_->seq() == seq && !current_->gone() && !closed_;
  }

  // -- reading --
  void do_read();
  void on_header(error_code ec);
  bool parse_buffered();
  void read_body();
  void on_read(error_code ec);
  void on_read_error(error_code ec);
  void accept_request(request&& req, inbound_status status);
  void start_request(request&& req, inbound_status status);

  // -- writing --
  void do_write();
  void on_write(error_code ec);
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
  std::optional<http::request_parser<http::string_body>> parser_;
  std::deque<queued_request> queued_;      ///< Requests read ahead (pipelined).
  std::shared_ptr<session_reply> current_; ///< The request being answered.
  response_framer framer_;                 ///< Frames the current response.
  std::deque<wire_item> writes_;           ///< The write queue.
  std::size_t in_flight_ = 0;              ///< Items of `writes_` in the current write.
  std::size_t in_flight_bytes_ = 0;        ///< Their bytes.
  std::vector<net::const_buffer> buffers_; ///< The current gather write.
  write_backlog backlog_;                  ///< Unwritten bytes; pauses the stream's producer.
  write_watch watch_;                      ///< The write timeout.
  std::uint64_t seq_ = 0;                  ///< Sequence number of the latest response.
  bool aborting_ = false;                  ///< Close once the queue is written.
  bool reading_ = false;
  bool writing_ = false;
  bool closed_ = false;
  bool stop_reading_ = false;
  bool response_ending_ = false; ///< The current response is queued completely.
};

} // namespace troupe::transport
