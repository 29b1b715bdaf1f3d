// The reading half of server_session: request heads and bodies, the limits on them, and how a
// request reaches the handler (server_session.cpp has the rest).

#include "transport/server_session.hpp"

#include <boost/asio/write.hpp>

namespace troupe::transport {

// -- reading --

template <class Stream> void server_session<Stream>::do_read() {
  if (reading_ || closed_ || queued_.size() >= opts_->max_pipelined || stop_reading_) {
    return;
  }
  parser_.emplace();
  parser_->body_limit(opts_->body_limit);
  parser_->header_limit(64 * 1024);
  auto& lowest = beast::get_lowest_layer(stream_);
  if (!current_ && queued_.empty()) {
    lowest.expires_after(opts_->idle_timeout);
  } else {
    lowest.expires_never();
  }
  reading_ = true;
  http::async_read_header(
      stream_, buffer_, *parser_,
      [self = this->shared_from_this()](error_code ec, std::size_t) { self->on_header(ec); });
}

template <class Stream> void server_session<Stream>::on_header(error_code ec) {
  if (ec) {
    return on_read_error(ec);
  }
  auto& req = parser_->get();
  if (req[http::field::expect] == "100-continue") {
    // Answer the interim response so clients (curl) send the body at once.
    auto interim =
        std::make_shared<http::response<http::empty_body>>(http::status::continue_, req.version());
    http::async_write(stream_, *interim,
                      [self = this->shared_from_this(), interim](error_code ec, std::size_t) {
                        if (ec) {
                          return self->on_read_error(ec);
                        }
                        self->read_body();
                      });
    return;
  }
  // Most requests arrive whole: parse the bytes already read without another async read
  // (which would cost a posted completion and a reactor round per request).
  if (parse_buffered()) {
    return on_read({});
  }
  read_body();
}

// Feeds the bytes already in the buffer to the parser; true when the request is complete.
template <class Stream> bool server_session<Stream>::parse_buffered() {
  while (!parser_->is_done() && buffer_.size() > 0) {
    error_code ec;
    auto n = parser_->put(buffer_.data(), ec);
    if (ec == http::error::need_more) {
      break;
    }
    if (ec) {
      return false; // let the async read report it
    }
    buffer_.consume(n);
    if (n == 0) {
      break;
    }
  }
  return parser_->is_done();
}

template <class Stream> void server_session<Stream>::read_body() {
  http::async_read(
      stream_, buffer_, *parser_,
      [self = this->shared_from_this()](error_code ec, std::size_t) { self->on_read(ec); });
}

template <class Stream> void server_session<Stream>::on_read(error_code ec) {
  if (ec) {
    return on_read_error(ec);
  }
  reading_ = false;
  accept_request(parser_->release(), inbound_status::complete);
  do_read();
}

template <class Stream> void server_session<Stream>::on_read_error(error_code ec) {
  reading_ = false;
  // Beast reports an oversized Content-Length right after parsing the header fields.
  if (ec == http::error::body_limit && parser_) {
    // Answer 413 through the handler (it knows the route's error format), then close: the
    // unread body makes the connection unusable.
    stop_reading_ = true;
    auto req = parser_->release();
    req.keep_alive(false);
    accept_request(std::move(req), inbound_status::payload_too_large);
    return;
  }
  if (ec == beast::error::timeout && !current_) {
    return close();
  }
  if (ec == http::error::end_of_stream || ec == net::error::eof ||
      ec == net::error::connection_reset || ec == net::error::operation_aborted ||
      ec == beast::error::timeout) {
    return client_gone();
  }
  // A malformed request: answer 400 unless a response is under way, then close.
  stop_reading_ = true;
  if (current_) {
    return;
  }
  auto res = std::make_shared<response>(http::status::bad_request, 11);
  res->set(http::field::content_type, "text/plain");
  res->body() = "malformed HTTP request: " + ec.message() + "\n";
  framer_.close_after();
  current_ = std::make_shared<session_reply>(this->weak_from_this(), ++seq_);
  deliver(seq_, write_item{std::move(res)}, true);
}

template <class Stream>
void server_session<Stream>::accept_request(request&& req, inbound_status status) {
  if (current_) {
    queued_.push_back({std::move(req), status});
    return;
  }
  start_request(std::move(req), status);
}

template <class Stream>
void server_session<Stream>::start_request(request&& req, inbound_status status) {
  framer_.begin(req.version(), req.keep_alive() && status == inbound_status::complete);
  current_ = std::make_shared<session_reply>(this->weak_from_this(), ++seq_);
  response_ending_ = false;
  (*handler_)(std::move(req), status, current_);
}

// The class is instantiated in server_session.cpp, with the members defined there; these are
// the members defined here.
template void server_session<beast::tcp_stream>::do_read();
template void server_session<beast::tcp_stream>::on_header(boost::system::error_code);
template bool server_session<beast::tcp_stream>::parse_buffered();
template void server_session<beast::tcp_stream>::read_body();
template void server_session<beast::tcp_stream>::on_read(boost::system::error_code);
template void server_session<beast::tcp_stream>::on_read_error(boost::system::error_code);
template void server_session<beast::tcp_stream>::accept_request(request&&, inbound_status);
template void server_session<beast::tcp_stream>::start_request(request&&, inbound_status);

} // namespace troupe::transport
