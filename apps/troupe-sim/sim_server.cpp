#include "apps/troupe-sim/sim_server.hpp"

#include <boost/asio/write.hpp>
#include <cstdio>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace troupe::sim {

namespace {

namespace beast = transport::beast;
namespace http = transport::http;
using tcp = transport::tcp;
using error_code = boost::system::error_code;

class session;

/// The reply channel of one request.
class reply final : public sim_reply {
public:
  explicit reply(std::weak_ptr<session> s) : session_(std::move(s)) {}

  void respond(transport::response res) override;
  void begin_stream(unsigned status, transport::header_list headers) override;
  void write_chunk(std::string data) override;
  void end_stream() override;
  void abort() override;
  void on_disconnect(std::function<void()> f) override;

  /// The client left before the response ended.
  void client_gone() {
    done_ = true;
    client_left_ = true;
    if (auto f = std::exchange(on_disconnect_, nullptr)) {
      f();
    }
  }

private:
  std::shared_ptr<session> live() const { return done_ ? nullptr : session_.lock(); }

  std::weak_ptr<session> session_;
  bool done_ = false;        // further calls do nothing
  bool client_left_ = false; // ... because the client left
  bool streaming_ = false;
  std::function<void()> on_disconnect_;
};

void append_head(std::string& out, unsigned status, const http::fields& fields, bool keep_alive) {
  out.append("HTTP/1.1 ").append(std::to_string(status)).push_back(' ');
  out.append(http::obsolete_reason(static_cast<http::status>(status))).append("\r\n");
  for (const auto& f : fields) {
    auto name = f.name();
    if (name == http::field::content_length || name == http::field::transfer_encoding ||
        name == http::field::connection) {
      continue;
    }
    out.append(f.name_string()).append(": ").append(f.value()).append("\r\n");
  }
  if (!keep_alive) {
    out.append("Connection: close\r\n");
  }
}

/// One client connection: reads requests (and keeps reading, to notice a disconnect or to queue
/// a pipelined request), hands each to the handler, writes responses in order.
class session : public std::enable_shared_from_this<session> {
public:
  session(tcp::socket&& socket, std::shared_ptr<const transport::server_options> opts,
          std::shared_ptr<const sim_handler> handler)
      : stream_(std::move(socket)), opts_(std::move(opts)), handler_(std::move(handler)) {}

  void start() { do_read(); }

  // -- called by the current reply --

  bool is_current(const reply* r) const noexcept { return current_.get() == r && !closed_; }

  void send_response(transport::response& res) {
    std::string out;
    out.reserve(256 + res.body().size());
    append_head(out, res.result_int(), res.base(), keep_alive_);
    out.append("Content-Length: ").append(std::to_string(res.body().size())).append("\r\n\r\n");
    out.append(res.body());
    ending_ = true;
    enqueue(std::move(out));
  }

  void send_head(unsigned status, const transport::header_list& headers) {
    http::fields fields;
    for (const auto& [name, value] : headers) {
      fields.set(name, value);
    }
    std::string out;
    append_head(out, status, fields, keep_alive_);
    out.append("Transfer-Encoding: chunked\r\n\r\n");
    enqueue(std::move(out));
  }

  void send_chunk(std::string_view data) {
    char size[20];
    int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    std::string out;
    out.reserve(static_cast<std::size_t>(n) + data.size() + 2);
    out.append(size, static_cast<std::size_t>(n)).append(data).append("\r\n");
    enqueue(std::move(out));
  }

  void send_last_chunk() {
    ending_ = true;
    enqueue("0\r\n\r\n");
  }

  void abort_response() {
    aborting_ = true;
    queued_.clear();
    stop_reading_ = true;
    if (!writing_) {
      close();
    }
  }

private:
  // -- reading --

  void do_read() {
    if (reading_ || closed_ || stop_reading_ || queued_.size() >= opts_->max_pipelined) {
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
    if (parser_->get()[http::field::expect] == "100-continue" && !current_ && !writing_) {
      // Ask for the body at once (curl waits a second otherwise); nothing else is being written.
      enqueue("HTTP/1.1 100 Continue\r\n\r\n");
    }
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(error_code ec) {
    if (ec) {
      return on_read_error(ec);
    }
    reading_ = false;
    accept_request(parser_->release(), transport::inbound_status::complete);
    do_read();
  }

  void on_read_error(error_code ec) {
    reading_ = false;
    if (closed_) {
      return;
    }
    if (ec == http::error::body_limit && parser_ && parser_->is_header_done()) {
      stop_reading_ = true;
      auto req = parser_->release();
      req.keep_alive(false);
      accept_request(std::move(req), transport::inbound_status::payload_too_large);
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
    keep_alive_ = false;
    current_ = std::make_shared<reply>(weak_from_this());
    transport::response res{http::status::bad_request, 11};
    res.set(http::field::content_type, "text/plain");
    res.body() = "malformed HTTP request: " + ec.message() + "\n";
    send_response(res);
  }

  void accept_request(transport::request&& req, transport::inbound_status status) {
    if (current_ || aborting_) {
      queued_.push_back({std::move(req), status});
      return;
    }
    start_request(std::move(req), status);
  }

  void start_request(transport::request&& req, transport::inbound_status status) {
    keep_alive_ = req.keep_alive() && status == transport::inbound_status::complete;
    current_ = std::make_shared<reply>(weak_from_this());
    auto r = current_;
    (*handler_)(std::move(req), status, std::move(r));
  }

  // -- writing --

  void enqueue(std::string data) {
    pending_.push_back(std::move(data));
    if (!writing_) {
      do_write();
    }
  }

  void do_write() {
    writing_ = true;
    in_flight_.swap(pending_);
    pending_.clear();
    buffers_.clear();
    for (const auto& s : in_flight_) {
      buffers_.emplace_back(s.data(), s.size());
    }
    net::async_write(
        stream_.socket(), buffers_,
        [self = shared_from_this()](error_code ec, std::size_t) { self->on_write(ec); });
  }

  void on_write(error_code ec) {
    writing_ = false;
    in_flight_.clear();
    if (ec) {
      pending_.clear();
      return client_gone();
    }
    if (!pending_.empty()) {
      return do_write();
    }
    if (aborting_) {
      return close();
    }
    if (ending_) {
      response_done();
    }
  }

  void response_done() {
    ending_ = false;
    current_.reset();
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
    queued_.clear();
    if (auto cur = std::move(current_)) {
      cur->client_gone();
    }
    close();
  }

  void close() {
    if (closed_) {
      return;
    }
    closed_ = true;
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  struct queued_request {
    transport::request req;
    transport::inbound_status status;
  };

  beast::tcp_stream stream_;
  std::shared_ptr<const transport::server_options> opts_;
  std::shared_ptr<const sim_handler> handler_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::deque<queued_request> queued_;
  std::shared_ptr<reply> current_;
  std::vector<std::string> pending_;   // queued, not yet handed to a write
  std::vector<std::string> in_flight_; // being written
  std::vector<net::const_buffer> buffers_;
  bool keep_alive_ = true;
  bool reading_ = false;
  bool writing_ = false;
  bool ending_ = false;   // the current response's last bytes are queued
  bool aborting_ = false; // close once the queue is written
  bool closed_ = false;
  bool stop_reading_ = false;
};

void reply::respond(transport::response res) {
  if (auto s = live(); s && s->is_current(this) && !streaming_) {
    done_ = true;
    on_disconnect_ = nullptr;
    s->send_response(res);
  }
}

void reply::begin_stream(unsigned status, transport::header_list headers) {
  if (auto s = live(); s && s->is_current(this) && !streaming_) {
    streaming_ = true;
    s->send_head(status, headers);
  }
}

void reply::write_chunk(std::string data) {
  if (data.empty()) {
    return; // an empty chunk would end the body
  }
  if (auto s = live(); s && s->is_current(this) && streaming_) {
    s->send_chunk(data);
  }
}

void reply::end_stream() {
  if (auto s = live(); s && s->is_current(this) && streaming_) {
    done_ = true;
    on_disconnect_ = nullptr;
    s->send_last_chunk();
  }
}

void reply::abort() {
  if (auto s = live(); s && s->is_current(this)) {
    done_ = true;
    on_disconnect_ = nullptr;
    s->abort_response();
  }
}

void reply::on_disconnect(std::function<void()> f) {
  if (!f) {
    return;
  }
  if (client_left_ || session_.expired()) {
    return f();
  }
  if (!done_) {
    on_disconnect_ = std::move(f);
  }
}

} // namespace

// -- listener --

struct sim_server::impl : std::enable_shared_from_this<impl> {
  impl(net::io_context& ioc, transport::server_options opts, sim_handler handler)
      : ioc_(ioc), opts_(std::make_shared<const transport::server_options>(std::move(opts))),
        handler_(std::make_shared<const sim_handler>(std::move(handler))), acceptor_(ioc) {}

  error_code start() {
    error_code ec;
    tcp::endpoint ep;
    if (auto addr = net::ip::make_address(opts_->host, ec); !ec) {
      ep = tcp::endpoint{addr, opts_->port};
    } else {
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
    acceptor_.async_accept([self = shared_from_this()](error_code ec, tcp::socket socket) {
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
    error_code ignored;
    acceptor_.close(ignored);
  }

  net::io_context& ioc_;
  std::shared_ptr<const transport::server_options> opts_;
  std::shared_ptr<const sim_handler> handler_;
  tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
};

sim_server::sim_server(net::io_context& ioc, transport::server_options opts, sim_handler handler)
    : impl_(std::make_shared<impl>(ioc, std::move(opts), std::move(handler))) {}

sim_server::~sim_server() {
  if (impl_) {
    impl_->stop();
  }
}

boost::system::error_code sim_server::start() {
  return impl_->start();
}

std::uint16_t sim_server::port() const noexcept {
  return impl_->port_;
}

void sim_server::stop() {
  impl_->stop();
}

} // namespace troupe::sim
