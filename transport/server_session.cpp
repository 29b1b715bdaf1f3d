#include "transport/server_session.hpp"

#include "transport/send_phase.hpp"
#include "transport/transfer_at_once.hpp"

#ifdef TROUPE_MEMORY_STREAM_SESSIONS
#include "transport/memory_stream.hpp"
#endif

#include <boost/asio/dispatch.hpp>
#include <boost/asio/write.hpp>
#include <span>
#include <type_traits>

namespace troupe::transport {

template <class Stream>
server_session<Stream>::server_session(Stream&& stream, std::shared_ptr<const server_options> opts,
                                       std::shared_ptr<const request_handler> handler)
    : stream_(std::move(stream)), opts_(std::move(opts)), handler_(std::move(handler)),
      backlog_(opts_->stream_buffer_bytes, opts_->flow_stats.get()),
      watch_(stream_.get_executor(), opts_->write_timeout), deadline_(stream_.get_executor()) {}

template <class Stream> server_session<Stream>::~server_session() {
  opts_->conn_stats->open.fetch_sub(1, std::memory_order_relaxed);
}

template <class Stream> void server_session<Stream>::start() {
  net::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
    // The first head (and the TLS handshake before it) must arrive within the header timeout
    // of the accept.
    self->expect(waiting::head, self->head_timeout());
    if constexpr (std::is_same_v<Stream, tls_stream>) {
      self->stream_.async_handshake(net::ssl::stream_base::server, [self](error_code ec) {
        if (ec) {
          self->opts_->conn_stats->tls_handshake_failures.fetch_add(1, std::memory_order_relaxed);
          return self->close();
        }
        self->do_read();
      });
    } else {
      self->do_read();
    }
  });
}

// -- reply_target --

template <class Stream>
void server_session<Stream>::deliver(std::uint64_t seq, write_item item, bool ends_response) {
  if (!is_current(seq)) {
    return;
  }
  writes_.push_back(framer_.frame(std::move(item)));
  auto& w = writes_.back();
  w.ends_response = ends_response;
  backlog_.set(backlog_.bytes() + w.prefix.size() + w.payload.size() + w.suffix.size());
  if (ends_response) {
    // No further calls of this reply take effect; the write queue finishes the response.
    // Its producer is done: no stream of this connection is paused any more.
    current_->finished();
    response_ending_ = true;
    backlog_.forget_pause();
  } else if (backlog_.above_high_water() && !backlog_.paused()) {
    pause_source();
  }
  if (!writing_) {
    do_write();
  }
}

template <class Stream>
void server_session<Stream>::set_source(std::uint64_t seq, std::weak_ptr<flow_source> source) {
  if (!is_current(seq)) {
    return;
  }
  current_->source(std::move(source));
  if (backlog_.above_high_water()) {
    pause_source(); // the client is behind already
  }
}

template <class Stream> void server_session<Stream>::abort_response(std::uint64_t seq) {
  if (!is_current(seq)) {
    return;
  }
  current_->finished();
  backlog_.forget_pause();
  aborting_ = true;
  stop_reading_ = true;
  if (!writing_) {
    close();
  }
}

// -- writing --

// Writes everything queued in one gather write: at the end of the io loop's pass on plain TCP
// (`send_phase.hpp`; what is queued meanwhile goes in the same write), else at once.
template <class Stream> void server_session<Stream>::do_write() {
  writing_ = true;
  if constexpr (std::is_same_v<Stream, tcp::socket>) {
    if (send_phase::deferring()) {
      return send_phase::defer<&server_session::write_queued>(this->shared_from_this());
    }
  }
  write_queued();
}

template <class Stream> void server_session<Stream>::write_queued() {
  in_flight_ = writes_.size();
  in_flight_bytes_ = 0;
  buffers_.clear();
  for (std::size_t i = 0; i < in_flight_; ++i) {
    auto& w = writes_[i];
    for (std::string_view piece :
         {std::string_view{w.prefix}, std::string_view{w.payload}, w.suffix}) {
      if (!piece.empty()) {
        buffers_.emplace_back(piece.data(), piece.size());
        in_flight_bytes_ += piece.size();
      }
    }
  }
  if constexpr (std::is_same_v<Stream, tcp::socket>) {
    // Plain TCP: write at once, without blocking. A response the socket takes whole (nearly
    // every one) is done here, not in a write handler of its own: one reactor pass less per
    // request. What the socket does not take now is written asynchronously, watched as before.
    auto& sock = stream_;
    error_code ec;
    if (!sock.non_blocking()) {
      sock.non_blocking(true, ec);
    }
    auto n = ec ? 0 : net::write(sock, gather(), transfer_at_once{}, ec);
    if (!ec) {
      watch_.step();
      return on_write(ec);
    }
    if (ec != net::error::would_block && ec != net::error::try_again) {
      return on_write(ec);
    }
    consume_written(n);
  }
  net::async_write(
      stream_, gather(),
      [this](const error_code& ec, std::size_t n) {
        watch_.step(); // at the start and after each part written: progress
        return transfer_at_once{}(ec, n);
      },
      [self = this->shared_from_this()](error_code ec, std::size_t) { self->on_write(ec); });
  if (!watch_.armed() && watch_.enabled() && socket()) {
    watch_.begin(*socket());
    watch_writes();
  }
}

// The gather write's buffers as a view: asio's writes keep a copy of the sequence they are given,
// and a copy of `buffers_` (a vector) was an allocation per response.
template <class Stream>
std::span<const net::const_buffer> server_session<Stream>::gather() const noexcept {
  return buffers_;
}

template <class Stream> void server_session<Stream>::consume_written(std::size_t n) {
  auto it = buffers_.begin();
  while (it != buffers_.end() && n >= it->size()) {
    n -= it->size();
    ++it;
  }
  buffers_.erase(buffers_.begin(), it);
  if (n > 0 && !buffers_.empty()) {
    buffers_.front() += n;
  }
}

template <class Stream> void server_session<Stream>::on_write(error_code ec) {
  writing_ = false;
  if (ec) {
    writes_.clear();
    backlog_.set(0);
    return client_gone();
  }
  backlog_.set(backlog_.bytes() - in_flight_bytes_);
  if (backlog_.drained()) {
    resume_source();
  }
  if (aborting_ && writes_.size() == in_flight_) {
    return close();
  }
  bool ended = false;
  for (std::size_t i = 0; i < in_flight_; ++i) {
    ended = writes_.front().ends_response;
    writes_.pop_front();
  }
  if (!writes_.empty()) {
    return do_write();
  }
  if (ended && response_ending_) {
    response_done();
  }
}

template <class Stream> void server_session<Stream>::response_done() {
  current_.reset();
  response_ending_ = false;
  if (!framer_.keep_alive()) {
    return close();
  }
  if (!queued_.empty()) {
    auto next = std::move(queued_.front());
    queued_.pop_front();
    start_request(std::move(next.req), next.status);
  }
  if (!current_ && queued_.empty() && waiting_ == waiting::none) {
    // Nothing to answer: the connection waits for its next request, or for the rest of a head
    // whose first bytes came while this response was written.
    if (head_started_ || buffer_.size() > 0) {
      expect(waiting::head, head_timeout());
    } else {
      expect(waiting::idle, opts_->idle_timeout);
    }
  }
  if (!reading_) {
    do_read();
  }
}

// -- write timeout (write_watch.hpp) --

template <class Stream> void server_session<Stream>::watch_writes() {
  watch_.wait([weak = this->weak_from_this()](error_code ec) {
    if (auto self = weak.lock()) {
      self->on_write_watch(ec);
    }
  });
}

template <class Stream> void server_session<Stream>::on_write_watch(error_code ec) {
  if (ec || closed_ || !writing_) {
    return watch_.disarmed();
  }
  if (watch_.look(*socket())) {
    return write_timed_out();
  }
  watch_writes();
}

// The client reads nothing: it is dropped as if it had left (the request is cancelled), and
// what it did not read is discarded with a reset instead of left to the kernel to deliver.
template <class Stream> void server_session<Stream>::write_timed_out() {
  if (auto* stats = opts_->flow_stats.get()) {
    stats->write_timeouts.fetch_add(1, std::memory_order_relaxed);
  }
  if (current_) {
    current_->client_stalled();
  }
  error_code ignored;
  if (auto* s = socket()) {
    s->set_option(net::socket_base::linger(true, 0), ignored);
  }
  client_gone();
}

// -- flow control (write_backlog.hpp) --

template <class Stream> void server_session<Stream>::pause_source() {
  auto source = current_ ? current_->source() : nullptr;
  backlog_.pause(source.get());
}

template <class Stream> void server_session<Stream>::resume_source() {
  auto source = current_ ? current_->source() : nullptr;
  backlog_.resume(source.get());
}

// -- ending --

template <class Stream> void server_session<Stream>::client_gone() {
  // A paused producer is not resumed: the disconnect callback cancels it.
  backlog_.forget_pause();
  if (current_) {
    auto cur = std::move(current_);
    cur->client_gone();
  }
  queued_.clear();
  close();
}

template <class Stream> void server_session<Stream>::close() {
  if (closed_) {
    return;
  }
  closed_ = true;
  watch_.cancel();
  deadline_.cancel();
  if constexpr (over_tcp) {
    error_code ignored;
    socket()->shutdown(tcp::socket::shutdown_both, ignored);
    socket()->close(ignored);
  } else {
    stream_.close(); // the fuzz harness's in-memory stream
  }
}

template class server_session<tcp::socket>;
template class server_session<tls_stream>;
#ifdef TROUPE_MEMORY_STREAM_SESSIONS
template class server_session<memory_stream>;
#endif

} // namespace troupe::transport
