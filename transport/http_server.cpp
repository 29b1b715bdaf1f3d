#include "transport/http_server.hpp"

#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <deque>
#include <optional>
#include <variant>

#ifdef __linux__
#include <linux/sockios.h>
#include <sys/ioctl.h>
#endif

namespace troupe::transport {

namespace {

using error_code = boost::system::error_code;
using stream_head = http::response<http::empty_body>;

class session;

/// The reply channel of one request on one connection.
class session_reply final : public reply_channel,
                            public std::enable_shared_from_this<session_reply> {
public:
  session_reply(std::weak_ptr<session> s, std::uint64_t seq) : session_(std::move(s)), seq_(seq) {}

  void respond(response res) override;
  void begin_stream(unsigned status, header_list headers) override;
  void write_chunk(std::string data) override;
  void end_stream() override;
  void set_flow_source(std::weak_ptr<flow_source> source) override;
  void on_disconnect(std::function<void()> f) override;
  bool stopped_reading() const override { return stopped_reading_.load(std::memory_order_acquire); }
  void abort() override;

  /// Runs on the strand: the client left.
  void client_gone() {
    gone_ = true;
    client_left_ = true;
    source_.reset();
    if (auto f = std::exchange(on_disconnect_, nullptr)) {
      f();
    }
  }

  /// Runs on the strand: the client is dropped for reading nothing (`client_gone` follows).
  void client_stalled() { stopped_reading_.store(true, std::memory_order_release); }

  /// Runs on the strand: the response was written completely.
  void finished() {
    gone_ = true;
    on_disconnect_ = nullptr;
    source_.reset();
  }

  bool gone() const noexcept { return gone_; }
  std::uint64_t seq() const noexcept { return seq_; }

  /// Runs on the strand: the producer of the stream, if it is still there.
  std::shared_ptr<flow_source> source() const { return source_.lock(); }
  void source(std::weak_ptr<flow_source> s) { source_ = std::move(s); }

private:
  template <class F> void on_strand(F&& f);

  std::weak_ptr<session> session_;
  std::uint64_t seq_;
  // Touched on the strand only.
  bool gone_ = false;        // no further call takes effect
  bool client_left_ = false; // ... because the client disconnected
  std::function<void()> on_disconnect_;
  std::weak_ptr<flow_source> source_;
  std::atomic<bool> stopped_reading_{false}; // read from any thread
};

/// One item of a connection's write queue.
struct write_item {
  struct head {
    std::shared_ptr<stream_head> msg;
  };
  struct chunk {
    std::string data;
  };
  struct last_chunk {};
  std::variant<std::shared_ptr<response>, head, chunk, last_chunk> what;
};

/// Bytes ready for the socket: `prefix`, then `payload` (kept as given, not copied), then
/// `suffix`. The head of a response and the framing of a chunk are written by hand: the same
/// bytes as Beast's serializer at a fraction of its cost, and queued pieces go out in one write.
struct wire_item {
  std::string prefix;
  std::string payload;
  std::string_view suffix;
  bool ends_response = false;
};

/// Appends the status line and header fields of `head` (minus framing fields: the caller adds
/// its own), without the blank line.
void serialize_head(std::string& out, const http::response_header<>& head) {
  out.append("HTTP/1.1 ").append(std::to_string(head.result_int())).push_back(' ');
  out.append(http::obsolete_reason(head.result())).append("\r\n");
  for (auto& f : head) {
    auto name = f.name_string();
    if (f.name() == http::field::content_length || f.name() == http::field::connection ||
        f.name() == http::field::transfer_encoding) {
      continue;
    }
    out.append(name).append(": ");
    for (char c : f.value()) {
      if (c != '\r' && c != '\n') {
        out.push_back(c);
      }
    }
    out.append("\r\n");
  }
}

/// Looks at a connection's writes per write timeout (see `session::watch_writes`).
constexpr unsigned write_watch_looks = 4;

/// Bytes in the socket's send queue that the peer has not acknowledged yet, sent or not. Once
/// the peer's receive window is closed, they shrink only as the peer's application reads.
/// 0 where the system cannot tell.
std::size_t unacknowledged_bytes(tcp::socket& socket) {
#ifdef SIOCOUTQ
  int n = 0;
  if (::ioctl(socket.native_handle(), SIOCOUTQ, &n) == 0 && n > 0) {
    return static_cast<std::size_t>(n);
  }
#endif
  (void)socket;
  return 0;
}

/// One client connection: reads requests (and keeps reading to notice a disconnect or a
/// pipelined request), hands each to the handler, writes responses in order.
class session : public std::enable_shared_from_this<session> {
public:
  session(tcp::socket&& socket, std::shared_ptr<const server_options> opts,
          std::shared_ptr<const request_handler> handler)
      : stream_(std::move(socket)), opts_(std::move(opts)), handler_(std::move(handler)),
        write_watch_(stream_.get_executor()) {}

  ~session() {
    set_queued(0);
    forget_pause();
  }

  void start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->do_read(); });
  }

  auto executor() { return stream_.get_executor(); }

  // -- called on the strand by session_reply --

  void deliver(std::uint64_t seq, write_item item, bool ends_response) {
    if (!current_ || current_->seq() != seq || current_->gone() || closed_) {
      return;
    }
    writes_.push_back(to_wire(std::move(item)));
    auto& w = writes_.back();
    w.ends_response = ends_response;
    set_queued(queued_bytes_ + w.prefix.size() + w.payload.size() + w.suffix.size());
    if (ends_response) {
      // No further calls of this reply take effect; the write queue finishes the response.
      // Its producer is done: no stream of this connection is paused any more.
      current_->finished();
      response_ending_ = true;
      forget_pause();
    } else if (queued_bytes_ > opts_->stream_buffer_bytes && !source_paused_) {
      pause_source();
    }
    if (!writing_) {
      do_write();
    }
  }

  /// The producer of the current stream; paused at once if the client is behind already.
  void set_source(std::uint64_t seq, std::weak_ptr<flow_source> source) {
    if (!current_ || current_->seq() != seq || current_->gone() || closed_) {
      return;
    }
    current_->source(std::move(source));
    if (queued_bytes_ > opts_->stream_buffer_bytes) {
      pause_source();
    }
  }

  /// Ends the connection after what is queued is written, leaving the response unfinished.
  void abort_response(std::uint64_t seq) {
    if (!current_ || current_->seq() != seq || current_->gone() || closed_) {
      return;
    }
    current_->finished();
    forget_pause();
    aborting_ = true;
    stop_reading_ = true;
    if (!writing_) {
      close();
    }
  }

  /// Frames one item for the socket: heads with our framing fields, chunks in chunked encoding
  /// (HTTP/1.0 clients get the raw stream, delimited by closing the connection).
  wire_item to_wire(write_item item) {
    wire_item w;
    if (auto* full = std::get_if<std::shared_ptr<response>>(&item.what)) {
      auto& res = **full;
      // A handler may ask to close the connection (Connection: close); it cannot reopen it.
      keep_alive_ = keep_alive_ && res.keep_alive();
      w.prefix.reserve(256);
      serialize_head(w.prefix, res.base());
      w.prefix.append("Content-Length: ").append(std::to_string(res.body().size()));
      w.prefix.append(connection_field()).append("\r\n\r\n");
      w.payload = std::move(res.body());
    } else if (auto* h = std::get_if<write_item::head>(&item.what)) {
      if (req_version_ < 11) {
        keep_alive_ = false; // no chunked encoding in HTTP/1.0: the close ends the body
      }
      w.prefix.reserve(256);
      serialize_head(w.prefix, h->msg->base());
      if (req_version_ >= 11) {
        w.prefix.append("Transfer-Encoding: chunked");
      } else {
        w.prefix.append("Connection: close");
      }
      w.prefix.append(req_version_ >= 11 ? connection_field() : "").append("\r\n\r\n");
      chunked_ = req_version_ >= 11;
    } else if (auto* c = std::get_if<write_item::chunk>(&item.what)) {
      if (chunked_) {
        char size[24];
        std::snprintf(size, sizeof(size), "%zx\r\n", c->data.size());
        w.prefix = size;
        w.suffix = "\r\n";
      }
      w.payload = std::move(c->data);
    } else if (chunked_) {
      w.suffix = "0\r\n\r\n";
    }
    return w;
  }

  /// The Connection field a response needs beyond HTTP's default, with its leading CRLF.
  std::string_view connection_field() const {
    if (!keep_alive_) {
      return "\r\nConnection: close";
    }
    return req_version_ < 11 ? "\r\nConnection: keep-alive" : "";
  }

private:
  // -- reading --

  void do_read() {
    if (reading_ || closed_ || queued_.size() >= opts_->max_pipelined || stop_reading_) {
      return;
    }
    parser_.emplace();
    parser_->body_limit(opts_->body_limit);
    parser_->header_limit(64 * 1024);
    if (!current_ && queued_.empty()) {
      stream_.expires_after(opts_->idle_timeout);
    } else {
      stream_.expires_never();
    }
    reading_ = true;
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](error_code ec, std::size_t) { self->on_header(ec); });
  }

  void on_header(error_code ec) {
    if (ec) {
      return on_read_error(ec);
    }
    auto& req = parser_->get();
    if (req[http::field::expect] == "100-continue") {
      // Answer the interim response so clients (curl) send the body at once.
      auto interim = std::make_shared<http::response<http::empty_body>>(http::status::continue_,
                                                                        req.version());
      http::async_write(stream_, *interim,
                        [self = shared_from_this(), interim](error_code ec, std::size_t) {
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
  bool parse_buffered() {
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

  void read_body() {
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(error_code ec) {
    if (ec) {
      return on_read_error(ec);
    }
    reading_ = false;
    accept_request(parser_->release(), inbound_status::complete);
    do_read();
  }

  void on_read_error(error_code ec) {
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
    keep_alive_ = false;
    current_ = std::make_shared<session_reply>(weak_from_this(), ++seq_);
    deliver(seq_, write_item{std::move(res)}, true);
  }

  void accept_request(request&& req, inbound_status status) {
    if (current_) {
      queued_.push_back({std::move(req), status});
      return;
    }
    start_request(std::move(req), status);
  }

  void start_request(request&& req, inbound_status status) {
    keep_alive_ = req.keep_alive() && status == inbound_status::complete;
    req_version_ = req.version();
    chunked_ = false;
    current_ = std::make_shared<session_reply>(weak_from_this(), ++seq_);
    response_ending_ = false;
    (*handler_)(std::move(req), status, current_);
  }

  // -- writing --

  // Writes everything queued in one gather write.
  void do_write() {
    writing_ = true;
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
    net::async_write(
        stream_, buffers_,
        [this](const error_code& ec, std::size_t n) {
          ++write_steps_; // at the start and after each part written: progress
          return net::transfer_all()(ec, n);
        },
        [self = shared_from_this()](error_code ec, std::size_t) { self->on_write(ec); });
    if (!watching_ && opts_->write_timeout.count() > 0) {
      watched_steps_ = write_steps_;
      watched_unacked_ = unacknowledged_bytes(stream_.socket());
      stalled_looks_ = 0;
      watch_writes();
    }
  }

  void on_write(error_code ec) {
    writing_ = false;
    if (ec) {
      writes_.clear();
      set_queued(0);
      return client_gone();
    }
    set_queued(queued_bytes_ - in_flight_bytes_);
    if (source_paused_ && queued_bytes_ <= opts_->stream_buffer_bytes / 2) {
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

  void response_done() {
    current_.reset();
    response_ending_ = false;
    if (!keep_alive_) {
      return close();
    }
    if (!queued_.empty()) {
      auto next = std::move(queued_.front());
      queued_.pop_front();
      start_request(std::move(next.req), next.status);
    }
    if (!reading_) {
      do_read();
    } else if (!current_ && queued_.empty()) {
      // The read in flight now waits for a new request: bound it by the idle timeout.
      stream_.expires_after(opts_->idle_timeout);
    }
  }

  void client_gone() {
    // A paused producer is not resumed: the disconnect callback cancels it.
    forget_pause();
    if (current_) {
      auto cur = std::move(current_);
      cur->client_gone();
    }
    queued_.clear();
    close();
  }

  void close() {
    if (closed_) {
      return;
    }
    closed_ = true;
    if (watching_) {
      write_watch_.cancel();
    }
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  // -- write timeout (docs/architecture.md, "Slow clients") --

  // While a write is in flight, the watch looks `write_watch_looks` times per write timeout
  // whether the client made progress since its last look: a part of a write completed, or the
  // client acknowledged bytes of the socket's send queue. The second matters for a slow reader:
  // the kernel wakes a blocked writer only once a third of the send buffer (up to megabytes)
  // drained, which a client reading a few KiB a second takes minutes to do. That many looks in
  // a row without progress mean one write was stuck for the whole timeout: the client is
  // dropped between one and 1.25 timeouts after its last progress. One timer per connection,
  // armed when a write starts unwatched and left to run out, not re-armed per write: a client
  // that keeps up costs a counter increment per write. An idle connection is not watched.
  void watch_writes() {
    watching_ = true;
    write_watch_.expires_after(opts_->write_timeout / write_watch_looks);
    write_watch_.async_wait([weak = weak_from_this()](error_code ec) {
      if (auto self = weak.lock()) {
        self->on_write_watch(ec);
      }
    });
  }

  void on_write_watch(error_code ec) {
    watching_ = false;
    if (ec || closed_ || !writing_) {
      return;
    }
    auto unacked = unacknowledged_bytes(stream_.socket());
    if (write_steps_ != watched_steps_ || unacked < watched_unacked_) {
      stalled_looks_ = 0;
    } else if (++stalled_looks_ == write_watch_looks) {
      return write_timed_out();
    }
    watched_steps_ = write_steps_;
    watched_unacked_ = unacked;
    watch_writes();
  }

  // The client reads nothing: it is dropped as if it had left (the request is cancelled), and
  // what it did not read is discarded with a reset instead of left to the kernel to deliver.
  void write_timed_out() {
    if (auto* stats = opts_->flow_stats.get()) {
      stats->write_timeouts.fetch_add(1, std::memory_order_relaxed);
    }
    if (current_) {
      current_->client_stalled();
    }
    error_code ignored;
    stream_.socket().set_option(net::socket_base::linger(true, 0), ignored);
    client_gone();
  }

  // -- flow control (docs/architecture.md, "Slow clients") --

  /// Records `n` unwritten bytes; the stats see them in whole `queued_report_step`s, so a
  /// connection that keeps up never touches the shared counter.
  void set_queued(std::size_t n) {
    queued_bytes_ = n;
    auto* stats = opts_->flow_stats.get();
    if (!stats) {
      return;
    }
    auto reported = n - n % queued_report_step;
    if (reported != reported_bytes_) {
      stats->queued_bytes.fetch_add(static_cast<std::int64_t>(reported) -
                                        static_cast<std::int64_t>(reported_bytes_),
                                    std::memory_order_relaxed);
      reported_bytes_ = reported;
    }
  }

  // The client is behind: the producer of its stream stops reading.
  void pause_source() {
    auto source = current_ ? current_->source() : nullptr;
    if (!source) {
      return;
    }
    if (!source_paused_) {
      source_paused_ = true;
      if (auto* stats = opts_->flow_stats.get()) {
        stats->pauses.fetch_add(1, std::memory_order_relaxed);
        stats->paused.fetch_add(1, std::memory_order_relaxed);
      }
    }
    source->pause();
  }

  // The client caught up: the producer reads again.
  void resume_source() {
    forget_pause();
    if (auto source = current_ ? current_->source() : nullptr) {
      source->resume();
    }
  }

  void forget_pause() {
    if (!std::exchange(source_paused_, false)) {
      return;
    }
    if (auto* stats = opts_->flow_stats.get()) {
      stats->paused.fetch_sub(1, std::memory_order_relaxed);
    }
  }

  struct queued_request {
    request req;
    inbound_status status;
  };

  beast::tcp_stream stream_;
  std::shared_ptr<const server_options> opts_;
  std::shared_ptr<const request_handler> handler_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::deque<queued_request> queued_;
  std::shared_ptr<session_reply> current_;
  std::deque<wire_item> writes_;
  std::size_t in_flight_ = 0;              ///< Items of `writes_` in the current write.
  std::size_t in_flight_bytes_ = 0;        ///< Their bytes.
  std::size_t queued_bytes_ = 0;           ///< Bytes of `writes_` not written yet.
  std::size_t reported_bytes_ = 0;         ///< The part of them counted in the stats.
  bool source_paused_ = false;             ///< The current stream's producer is paused.
  std::vector<net::const_buffer> buffers_; ///< The current gather write.
  unsigned req_version_ = 11;              ///< HTTP version of the current request.
  bool chunked_ = false;                   ///< The current stream uses chunked encoding.
  bool aborting_ = false;                  ///< Close once the queue is written.
  std::uint64_t seq_ = 0;
  bool keep_alive_ = true;
  bool reading_ = false;
  bool writing_ = false;
  bool closed_ = false;
  bool stop_reading_ = false;
  bool response_ending_ = false;
  net::steady_timer write_watch_;   ///< Looks at the writes' progress (write timeout).
  std::uint64_t write_steps_ = 0;   ///< Writes started and parts of them completed.
  std::uint64_t watched_steps_ = 0; ///< `write_steps_` at the watch's last look.
  std::size_t watched_unacked_ = 0; ///< The client's unacknowledged bytes then.
  unsigned stalled_looks_ = 0;      ///< Looks in a row that saw a write make no progress.
  bool watching_ = false;           ///< The watch's timer is armed.

  friend class session_reply;
};

template <class F> void session_reply::on_strand(F&& f) {
  auto s = session_.lock();
  if (!s) {
    return;
  }
  auto ex = s->executor();
  net::dispatch(ex, [s = std::move(s), f = std::forward<F>(f)]() mutable { f(*s); });
}

void session_reply::respond(response res) {
  auto ptr = std::make_shared<response>(std::move(res));
  on_strand([seq = seq_, ptr = std::move(ptr)](session& s) mutable {
    s.deliver(seq, write_item{std::move(ptr)}, true);
  });
}

void session_reply::begin_stream(unsigned status, header_list headers) {
  auto head = std::make_shared<stream_head>(static_cast<http::status>(status), 11);
  for (auto& [name, value] : headers) {
    head->set(name, value);
  }
  on_strand([seq = seq_, head = std::move(head)](session& s) mutable {
    s.deliver(seq, write_item{write_item::head{std::move(head)}}, false);
  });
}

void session_reply::write_chunk(std::string data) {
  if (data.empty()) {
    return; // an empty chunk would end the chunked body
  }
  on_strand([seq = seq_, data = std::move(data)](session& s) mutable {
    s.deliver(seq, write_item{write_item::chunk{std::move(data)}}, false);
  });
}

void session_reply::abort() {
  on_strand([seq = seq_](session& s) { s.abort_response(seq); });
}

void session_reply::end_stream() {
  on_strand(
      [seq = seq_](session& s) { s.deliver(seq, write_item{write_item::last_chunk{}}, true); });
}

void session_reply::set_flow_source(std::weak_ptr<flow_source> source) {
  on_strand([seq = seq_, source = std::move(source)](session& s) mutable {
    s.set_source(seq, std::move(source));
  });
}

void session_reply::on_disconnect(std::function<void()> f) {
  if (!f) {
    return;
  }
  auto s = session_.lock();
  if (!s) {
    // The connection is gone: its client left (a late callback for a finished response is
    // harmless, the request actor is done by then).
    return f();
  }
  auto ex = s->executor();
  net::dispatch(ex, [self = shared_from_this(), f = std::move(f)]() mutable {
    if (self->client_left_) {
      return f();
    }
    if (!self->gone_) {
      self->on_disconnect_ = std::move(f);
    }
  });
}

} // namespace

// -- listener --

struct http_server::impl : std::enable_shared_from_this<impl> {
  impl(net::io_context& ioc, server_options opts, request_handler handler)
      : ioc_(ioc), opts_(std::make_shared<const server_options>(std::move(opts))),
        handler_(std::make_shared<const request_handler>(std::move(handler))),
        acceptor_(net::make_strand(ioc)) {}

  error_code start() {
    error_code ec;
    tcp::endpoint ep;
    if (auto addr = net::ip::make_address(opts_->host, ec); !ec) {
      ep = tcp::endpoint{addr, opts_->port};
    } else {
      // A host name: resolve it once, at start-up.
      tcp::resolver resolver{ioc_};
      auto results = resolver.resolve(opts_->host, std::to_string(opts_->port), ec);
      if (ec) {
        return ec;
      }
      ep = results.begin()->endpoint();
    }
    acceptor_.open(ep.protocol(), ec);
    if (ec) {
      return ec;
    }
    acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    acceptor_.bind(ep, ec);
    if (ec) {
      return ec;
    }
    acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      return ec;
    }
    port_ = acceptor_.local_endpoint().port();
    do_accept();
    return {};
  }

  void do_accept() {
    auto ex = opts_->use_strands ? net::any_io_executor{net::make_strand(ioc_)}
                                 : net::any_io_executor{ioc_.get_executor()};
    acceptor_.async_accept(ex, [self = shared_from_this()](error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !self->acceptor_.is_open()) {
        return;
      }
      if (!ec) {
        error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        std::make_shared<session>(std::move(socket), self->opts_, self->handler_)->start();
      }
      self->do_accept();
    });
  }

  void stop() {
    net::post(acceptor_.get_executor(), [self = shared_from_this()] {
      error_code ignored;
      self->acceptor_.close(ignored);
    });
  }

  net::io_context& ioc_;
  std::shared_ptr<const server_options> opts_;
  std::shared_ptr<const request_handler> handler_;
  tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
};

http_server::http_server(net::io_context& ioc, server_options opts, request_handler handler)
    : impl_(std::make_shared<impl>(ioc, std::move(opts), std::move(handler))) {}

http_server::~http_server() {
  if (impl_) {
    impl_->stop();
  }
}

boost::system::error_code http_server::start() {
  return impl_->start();
}

std::uint16_t http_server::port() const noexcept {
  return impl_->port_;
}

void http_server::stop() {
  impl_->stop();
}

} // namespace troupe::transport
