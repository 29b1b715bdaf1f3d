// The reading half of server_session: request heads and bodies, the limits on them (the head's
// time, size and field count), the read deadline, and how a request reaches the handler
// (server_session.cpp has the rest).

#include "transport/drained_read.hpp"
#include "transport/handler_tail.hpp"
#include "transport/read_buffer.hpp"
#include "transport/server_session.hpp"
#include "transport/transfer_at_once.hpp"

#ifdef TROUPE_MEMORY_STREAM_SESSIONS
#include "transport/memory_stream.hpp"
#endif

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <iterator>

namespace troupe::transport {

namespace {

/// What can be told of a head that never completed: its method and target once the parser
/// read its request line (they name the route, hence its error format), else an empty GET.
request partial_request(const request& parsed) {
  request req{http::verb::get, "", 11};
  if (parsed.method() != http::verb::unknown && !parsed.target().empty()) {
    req.method(parsed.method());
    req.target(parsed.target());
  }
  req.keep_alive(false);
  return req;
}

/// A body with at least this many bytes still to come is read straight into the request.
constexpr std::size_t direct_body_read_min = 16 * 1024;

/// Grows `s` by `n` bytes for the caller to write next and returns where they begin. They are
/// not zero-filled first (C++23's resize_and_overwrite; at 100 KB prompts `resize`'s fill was 4%
/// of the gateway's time): until written they hold whatever the allocator left there, so a read
/// that ends short must cut the string back to what it wrote (read_body's handler does).
char* grow_for_overwrite(std::string& s, std::size_t n) {
  auto have = s.size();
  s.resize_and_overwrite(have + n, [](char*, std::size_t size) { return size; });
  return s.data() + have;
}

} // namespace

template <class Stream> void server_session<Stream>::do_read() {
  if (reading_ || closed_ || queued_.size() >= opts_->max_pipelined || stop_reading_) {
    return;
  }
  parser_.emplace();
  parser_->body_limit(opts_->body_limit);
  parser_->header_limit(static_cast<std::uint32_t>(opts_->header_limit));
  reading_ = true;
  head_started_ = buffer_.size() > 0; // a pipelined head (response_done set its deadline)
  if (head_started_) {
    error_code ec;
    if (parse_head(ec)) {
      return on_header({});
    }
    if (ec) {
      return on_read_error(ec);
    }
  }
  read_head();
}

// Reads more of a head. Beast's `async_read_header` does the same (read, then parse), but
// cannot tell when the first byte of a head arrived: that is when the header timeout of a
// kept-alive connection starts.
template <class Stream> void server_session<Stream>::read_head() {
  // Room for a whole head (and a small body) in one read: an empty buffer would read 512 bytes.
  if (buffer_.capacity() < head_read_size) {
    buffer_.reserve(head_read_size);
  }
  // The next request comes after this one's answer: a read tried at once would find nothing
  // (an EAGAIN `recv` per request), so it waits for readiness (drained_read.hpp).
  async_read_drained(stream_, buffer_.prepare(beast::read_size(buffer_, 64 * 1024)),
                     [self = this->shared_from_this()](error_code ec, std::size_t n) {
                       self->run_read_handler([&] { self->on_read_some(ec, n); });
                     });
}

// A read handler's work `f`, in a handler tail: the request it completes reaches its actor
// (and through it, its worker) when `f` is done, and only then does the session start reading
// the next request (`on_read` leaves that to here). That read usually finds nothing yet (an
// EAGAIN `recv`); done first, it would delay the worker's send by a system call per request.
template <class Stream> template <class F> void server_session<Stream>::run_read_handler(F&& f) {
  {
    handler_tail tail;
    in_read_handler_ = true;
    f();
    in_read_handler_ = false;
  } // the request's actor ran here, unless an enclosing tail runs it
  if (std::exchange(read_after_handler_, false)) {
    handler_tail tail; // for the actor of a pipelined request found in the buffer
    do_read();
  }
}

template <class Stream> void server_session<Stream>::on_read_some(error_code ec, std::size_t n) {
  if (closed_ || stop_reading_) {
    reading_ = false; // a refused head's connection closes once its answer is written
    return;
  }
  if (ec) {
    return on_read_error(ec);
  }
  buffer_.commit(n);
  error_code perr;
  if (parse_head(perr)) {
    return on_header({});
  }
  if (perr) {
    return on_read_error(perr);
  }
  if (!head_started_) {
    // The first bytes of a head on a kept-alive connection, and not the whole head: from now
    // on it has the header timeout to arrive.
    head_started_ = true;
    if (waiting_ == waiting::idle) {
      expect(waiting::head, head_timeout());
    }
  }
  read_head();
}

// True once the head is parsed; `ec` says why not when the head is refused (too large, bad).
template <class Stream> bool server_session<Stream>::parse_head(error_code& ec) {
  // The parser takes the request line and whole fields as they come (also with `need_more`).
  auto n = parser_->put(buffer_.data(), ec);
  buffer_.consume(n);
  if (ec == http::error::need_more) {
    ec = {};
    return false;
  }
  return !ec && parser_->is_header_done();
}

template <class Stream> void server_session<Stream>::on_header(error_code ec) {
  if (ec) {
    return on_read_error(ec);
  }
  head_started_ = false;
  auto& req = parser_->get();
  if (auto max = opts_->max_header_fields; max > 0 && req.size() > max) {
    return refuse(inbound_status::too_many_headers, parser_->release());
  }
  // Answer the interim response so clients (curl) send the body at once — but only when this
  // request is the next to be answered and nothing is being written: an interim response for a
  // pipelined request would land inside the response before it (found by http_server_fuzz: a
  // 100 Continue in the body of a streamed answer). A request behind others gets no interim
  // response; its client sends the body when its own wait for one ends (RFC 9110 10.1.1).
  // An HTTP/1.0 request's expectation is ignored (RFC 9110 10.1.1: no 1xx to a 1.0 client).
  if (req.version() >= 11 && req[http::field::expect] == "100-continue" && !current_ &&
      queued_.empty() && writes_.empty() && !writing_) {
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
  if (!current_ && queued_.empty()) {
    expect(waiting::body, opts_->idle_timeout); // the body of a request nobody answers yet
  }
  auto rest = parser_->content_length_remaining();
  if (rest && *rest >= direct_body_read_min && buffer_.size() == 0) {
    // The rest of a large body of known length, read from the socket straight into the
    // request's body: through the parser it would be read into the buffer and copied from
    // there (a 100 KB prompt: 7% of the gateway's time in that copy). The parser has taken the
    // head and what came with it (within the body limit: it refused a larger Content-Length
    // with the head); the bytes read here are the body's last, so it is not asked for them and
    // only gives up the message.
    auto& body = parser_->get().body();
    auto have = body.size();
    auto n = static_cast<std::size_t>(*rest);
    auto* into = grow_for_overwrite(body, n);
    return net::async_read(stream_, net::buffer(into, n), transfer_at_once{},
                           [self = this->shared_from_this(), have](error_code ec, std::size_t got) {
                             if (ec && self->parser_) {
                               // What never arrived is not the body's (nor is what the allocator
                               // left in its place).
                               self->parser_->get().body().resize(have + got);
                             }
                             self->run_read_handler([&] { self->on_read(ec); });
                           });
  }
  make_room_for_body(buffer_, rest);
  http::async_read(stream_, buffer_, *parser_,
                   [self = this->shared_from_this()](error_code ec, std::size_t) {
                     self->run_read_handler([&] { self->on_read(ec); });
                   });
}

template <class Stream> void server_session<Stream>::on_read(error_code ec) {
  if (ec) {
    return on_read_error(ec);
  }
  reading_ = false;
  waiting_ = waiting::none; // a request to answer: nothing waited for until its response ends
  deadline_.clear();
  trim_after_body(buffer_);
  accept_request(parser_->release(), inbound_status::complete);
  if (in_read_handler_) {
    read_after_handler_ = true; // once the request's actor ran (run_read_handler)
    return;
  }
  do_read();
}

template <class Stream> void server_session<Stream>::on_read_error(error_code ec) {
  reading_ = false;
  if (closed_) {
    return;
  }
  // Beast reports an oversized Content-Length right after parsing the header fields.
  if (ec == http::error::body_limit && parser_) {
    // Answer 413 through the handler (it knows the route's error format), then close: the
    // unread body makes the connection unusable.
    return refuse(inbound_status::payload_too_large, parser_->release());
  }
  if (ec == http::error::header_limit) {
    return refuse(inbound_status::header_too_large, partial_request(parser_->get()));
  }
  if (ec == http::error::end_of_stream || ec == net::error::eof ||
      ec == net::error::connection_reset || ec == net::error::operation_aborted ||
      ec == beast::error::timeout) {
    return client_gone(); // a head cut short by the client's leaving ends as its leaving
  }
  // A malformed request: answer 400 unless a response is under way, then close.
  stop_reading_ = true;
  if (current_) {
    return;
  }
  auto res = std::make_shared<response>(http::status::bad_request, 11);
  res->set(http::field::content_type, "text/plain");
  res->body() = "malformed HTTP request: " + ec.message() + "\n";
  // Framed afresh (not as the request before it was): the connection closes after it, and the
  // answer to a HEAD whose head went wrong after its request line is its head alone.
  framer_.begin(11, false, parser_ && parser_->get().method() == http::verb::head);
  current_ = std::make_shared<session_reply>(this->weak_from_this(), ++seq_);
  deliver(seq_, write_item{std::move(res)}, true);
}

// A request cut short by a limit: the handler answers it in its route's format, then the
// connection closes (what is left of the request is never read).
template <class Stream> void server_session<Stream>::refuse(inbound_status status, request&& req) {
  stop_reading_ = true;
  reading_ = false;
  head_started_ = false;
  auto& stats = *opts_->conn_stats;
  auto* counter = status == inbound_status::header_too_large   ? &stats.header_too_large
                  : status == inbound_status::too_many_headers ? &stats.too_many_headers
                  : status == inbound_status::header_timeout   ? &stats.header_timeouts
                                                               : nullptr;
  if (counter) {
    counter->fetch_add(1, std::memory_order_relaxed);
  }
  // Its response closes the connection (start_request: only complete requests keep it).
  accept_request(std::move(req), status); // after the response in flight, if there is one
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
  framer_.begin(req.version(), req.keep_alive() && status == inbound_status::complete,
                req.method() == http::verb::head);
  current_ = std::make_shared<session_reply>(this->weak_from_this(), ++seq_);
  response_ending_ = false;
  (*handler_)(std::move(req), status, current_);
}

// -- the read deadline --

// One timer bounds what the connection waits for: the first head (from the accept, TLS
// handshake included), an idle keep-alive connection's next request, a head whose first bytes
// arrived, the body of a request. It is a `lazy_deadline`: moving the deadline later costs a
// store, and the timer is re-armed at once only to ring sooner (when a kept-alive connection's
// next head starts and does not arrive whole).
template <class Stream>
void server_session<Stream>::expect(waiting what, std::chrono::steady_clock::duration within) {
  waiting_ = what;
  deadline_.watch(std::chrono::steady_clock::now() + within, this->weak_from_this());
}

template <class Stream> void server_session<Stream>::on_deadline() {
  if (closed_ || waiting_ == waiting::none) {
    return;
  }
  auto what = std::exchange(waiting_, waiting::none);
  if (what == waiting::body || current_ || !(head_started_ || buffer_.size() > 0)) {
    return close(); // an idle connection, or one that never sent a byte, or a stalled body
  }
  // Part of a head arrived, not all of it, in time: 408, then close.
  refuse(inbound_status::header_timeout, partial_request(parser_->get()));
}

template <class Stream>
std::chrono::steady_clock::duration server_session<Stream>::head_timeout() const {
  if (opts_->header_timeout.count() > 0) {
    return opts_->header_timeout;
  }
  return opts_->idle_timeout;
}

// The class is instantiated in server_session.cpp, with the members defined there; these are
// the members defined here.
#define TROUPE_SESSION_READING(S)                                                                  \
  template void server_session<S>::do_read();                                                      \
  template void server_session<S>::read_head();                                                    \
  template void server_session<S>::on_read_some(boost::system::error_code, std::size_t);           \
  template bool server_session<S>::parse_head(boost::system::error_code&);                         \
  template void server_session<S>::on_header(boost::system::error_code);                           \
  template bool server_session<S>::parse_buffered();                                               \
  template void server_session<S>::read_body();                                                    \
  template void server_session<S>::on_read(boost::system::error_code);                             \
  template void server_session<S>::on_read_error(boost::system::error_code);                       \
  template void server_session<S>::refuse(inbound_status, request&&);                              \
  template void server_session<S>::accept_request(request&&, inbound_status);                      \
  template void server_session<S>::start_request(request&&, inbound_status);                       \
  template void server_session<S>::expect(waiting, std::chrono::steady_clock::duration);           \
  template void server_session<S>::on_deadline();                                                  \
  template std::chrono::steady_clock::duration server_session<S>::head_timeout() const;

TROUPE_SESSION_READING(tcp::socket)
TROUPE_SESSION_READING(tls_stream)
#ifdef TROUPE_MEMORY_STREAM_SESSIONS
TROUPE_SESSION_READING(memory_stream)
#endif

} // namespace troupe::transport
