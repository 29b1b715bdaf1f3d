#include "transport/upstream_exchange.hpp"

#include "transport/dispatch_inline.hpp"
#include "transport/drained_read.hpp"
#include "transport/handler_tail.hpp"
#include "transport/header_fields.hpp"
#include "transport/read_buffer.hpp"
#include "transport/send_phase.hpp"
#include "transport/transfer_at_once.hpp"

#include <algorithm>
#include <array>
#include <boost/asio/post.hpp>
#include <boost/beast/core/read_size.hpp>
#include <charconv>
#include <limits>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace troupe::transport {

const char* to_string(exchange_status s) noexcept {
  switch (s) {
  case exchange_status::ok:
    return "ok";
  case exchange_status::connect_failed:
    return "connect_failed";
  case exchange_status::broken:
    return "broken";
  case exchange_status::timeout:
    return "timeout";
  case exchange_status::cancelled:
    return "cancelled";
  case exchange_status::rejected:
    return "rejected";
  case exchange_status::no_resources:
    return "no_resources";
  }
  return "unknown";
}

bool out_of_local_resources(const beast::error_code& ec) noexcept {
  return ec == net::error::no_descriptors || ec == std::errc::too_many_files_open_in_system ||
         ec == net::error::no_buffer_space || ec == net::error::no_memory ||
         ec == std::errc::address_not_available;
}

std::shared_ptr<upstream_exchange> upstream_exchange::start(std::shared_ptr<upstream_pool> pool,
                                                            upstream_call call,
                                                            std::shared_ptr<response_sink> sink,
                                                            done_handler done) {
  auto ex = std::make_shared<upstream_exchange>(std::move(pool), std::move(call), std::move(sink),
                                                std::move(done));
  dispatch_inline(ex->conn_executor_, [ex] { ex->run(); });
  return ex;
}

upstream_exchange::upstream_exchange(std::shared_ptr<upstream_pool> pool, upstream_call call,
                                     std::shared_ptr<response_sink> sink, done_handler done)
    : pool_(std::move(pool)), conn_(pool_->acquire()), conn_executor_(conn_->strand),
      deadline_(call.deadline), sink_(std::move(sink)), done_(std::move(done)) {
  bool has_body = call.method != http::verb::get && call.method != http::verb::head;
  head_ = serialize_request_head(call.method, call.target, pool_->authority(), call.headers,
                                 has_body ? std::optional<std::size_t>{call.body.size()}
                                          : std::nullopt);
  body_ = std::move(call.body);
}

std::string serialize_request_head(http::verb method, std::string_view target,
                                   std::string_view authority, const header_block& headers,
                                   std::optional<std::size_t> body_size) {
  // Written by hand rather than by Beast's serializer: the same bytes for a fraction of the
  // work on the hot path. The fields come serialized and scrubbed of CR and LF (header_block);
  // the target and authority are scrubbed here, so no header can be injected.
  using namespace std::string_view_literals; // no strlen per piece
  std::string out;
  out.reserve(128 + target.size() + headers.bytes().size());
  out.append(http::to_string(method)).push_back(' ');
  append_without_crlf(out, target);
  out.append(" HTTP/1.1\r\nHost: "sv);
  append_without_crlf(out, authority);
  out.append("\r\n"sv).append(headers.bytes());
  if (body_size) {
    if (!headers.has_content_type()) {
      out.append("Content-Type: application/json\r\n"sv);
    }
    char digits[24];
    auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), *body_size);
    out.append("Content-Length: "sv).append(digits, end).append("\r\n"sv);
  }
  out.append("\r\n"sv); // HTTP/1.1: keep-alive unless a side says close
  return out;
}

void upstream_exchange::cancel() {
  if (cancelled_.exchange(true)) {
    return;
  }
  net::post(conn_executor_, [self = shared_from_this()] {
    if (self->parked_) {
      // No operation is pending to be cancelled: end here.
      self->parked_ = false;
      return self->finish(exchange_status::cancelled);
    }
    if (self->conn_) {
      self->conn_->cancel();
    }
  });
}

void upstream_exchange::pause() {
  dispatch_inline(conn_executor_, [self = shared_from_this()] { self->paused_ = true; });
}

void upstream_exchange::resume() {
  net::post(conn_executor_, [self = shared_from_this()] { self->on_resume(); });
}

void upstream_exchange::park() {
  // Nothing is read until `resume`: the worker's writes fill the socket buffers and then
  // block. The connection's deadline still runs (on_deadline ends a parked exchange).
  parked_ = true;
}

void upstream_exchange::on_resume() {
  paused_ = false;
  if (!parked_ || finished_) {
    return;
  }
  parked_ = false;
  if (cancelled_) {
    return finish(exchange_status::cancelled);
  }
  read_body();
}

void upstream_exchange::on_deadline() {
  if (finished_) {
    return;
  }
  timed_out_ = true;
  if (parked_) {
    // No operation is pending to be cancelled: end here.
    parked_ = false;
    return finish(exchange_status::timeout, "deadline passed while the client was not reading");
  }
  // The pending operation ends with operation_aborted, which `classify` makes a timeout. (A
  // resolution is not an operation of the connection: its handler looks at `timed_out_`.)
  conn_->cancel();
}

void upstream_exchange::watch_deadline() {
  conn_->deadline.watch(deadline_, weak_from_this());
}

void upstream_exchange::run() {
  started_ = std::chrono::steady_clock::now();
  if (cancelled_) {
    return finish(exchange_status::cancelled);
  }
  if (started_ >= deadline_) {
    return finish(exchange_status::timeout, "deadline passed before the exchange started");
  }
  watch_deadline();
  if (conn_->connected) {
    return do_write();
  }
  if (pool_->endpoints().empty()) {
    return do_resolve();
  }
  do_connect();
}

void upstream_exchange::do_resolve() {
  auto resolver = std::make_shared<tcp::resolver>(conn_->strand);
  resolver->async_resolve(
      pool_->host(), std::to_string(pool_->port()),
      [self = shared_from_this(), resolver](beast::error_code ec,
                                            tcp::resolver::results_type results) {
        if (self->cancelled_ || self->timed_out_) {
          return self->finish(self->classify({}), "resolving " + self->pool_->host());
        }
        if (ec) {
          return self->finish(out_of_local_resources(ec) ? exchange_status::no_resources
                                                         : exchange_status::connect_failed,
                              "cannot resolve " + self->pool_->host() + ": " + ec.message());
        }
        std::vector<tcp::endpoint> eps;
        for (auto& r : results) {
          eps.push_back(r.endpoint());
        }
        self->pool_->set_endpoints(std::move(eps));
        self->do_connect();
      });
}

void upstream_exchange::do_connect() {
  connect_to(std::make_shared<const std::vector<tcp::endpoint>>(pool_->endpoints()), 0, {});
}

void upstream_exchange::connect_to(std::shared_ptr<const std::vector<tcp::endpoint>> eps,
                                   std::size_t i, beast::error_code last) {
  auto& socket = conn_->tcp();
  if (i == eps->size()) {
    if (out_of_local_resources(last)) {
      return finish(exchange_status::no_resources, "connect: " + last.message());
    }
    pool_->forget_endpoints(); // resolved again by the next connection
    return finish(exchange_status::connect_failed,
                  "connect: " + (last ? last.message() : std::string{"no address"}));
  }
  beast::error_code ec;
  socket.close(ec);
  socket.open((*eps)[i].protocol(), ec);
  if (ec) {
    if (out_of_local_resources(ec)) {
      // Another address would need a socket as much: the gateway is out of them.
      return finish(exchange_status::no_resources, "cannot open a socket: " + ec.message());
    }
    return connect_to(std::move(eps), i + 1, ec);
  }
  auto ep = (*eps)[i];
  socket.async_connect(
      ep, [self = shared_from_this(), eps = std::move(eps), i](beast::error_code ec) mutable {
        if (ec && (self->cancelled_ || self->timed_out_)) {
          return self->finish(self->classify(ec), "connect: " + ec.message());
        }
        if (ec) {
          return self->connect_to(std::move(eps), i + 1, ec);
        }
        beast::error_code ignored;
        self->conn_->tcp().set_option(tcp::no_delay(true), ignored);
        if (self->conn_->secure()) {
          return self->do_handshake();
        }
        self->pool_->note_connected(*self->conn_);
        self->do_write();
      });
}

void upstream_exchange::do_handshake() {
  auto& tls = std::get<tls_stream>(conn_->stream);
  auto* ssl = tls.native_handle();
  const auto& host = pool_->host();
  boost::system::error_code ec;
  net::ip::make_address(host, ec);
  bool is_ip = !ec;
  // SNI names the host (never an address, RFC 6066); the certificate must match it.
  if (!is_ip) {
    SSL_set_tlsext_host_name(ssl, host.c_str());
    SSL_set1_host(ssl, host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str());
  }
  tls.async_handshake(
      net::ssl::stream_base::client, [self = shared_from_this()](beast::error_code ec) {
        if (ec) {
          auto st = self->classify(ec);
          return self->finish(st == exchange_status::broken ? exchange_status::connect_failed : st,
                              "tls handshake: " + ec.message());
        }
        self->pool_->note_connected(*self->conn_);
        self->do_write();
      });
}

// The request goes out at the end of the io loop's pass on plain TCP (`send_phase.hpp`), with
// the pass's other sends; at once over TLS.
void upstream_exchange::do_write() {
  if (send_phase::deferring() && std::holds_alternative<tcp::socket>(conn_->stream)) {
    return send_phase::defer<&upstream_exchange::write_request>(shared_from_this());
  }
  write_request();
}

void upstream_exchange::write_request() {
  if (finished_) {
    return; // ended while its write waited for the pass (the connection is gone with it)
  }
  if (cancelled_) {
    return finish(exchange_status::cancelled);
  }
  if (timed_out_) {
    // The deadline passed while the write waited for the end of the pass: there is no pending
    // operation for it to cancel, so end as that cancellation would have.
    return on_failure(net::error::operation_aborted, classify(net::error::operation_aborted));
  }
  auto on_write = [self = shared_from_this()](beast::error_code ec, std::size_t) {
    if (ec) {
      return self->on_failure(ec, self->classify(ec));
    }
    self->do_read_head();
  };
  std::array<net::const_buffer, 2> bufs{net::buffer(head_),
                                        net::buffer(body_.view().data(), body_.size())};
  if (auto* plain = std::get_if<tcp::socket>(&conn_->stream)) {
    // Plain TCP: write at once, without blocking; the request (head and body, a few KB) fits
    // the socket buffer nearly always. An asynchronous write would end in a handler of its own,
    // one more reactor pass per request; only what the socket does not take now waits for one.
    auto& socket = *plain;
    beast::error_code ec;
    if (!socket.non_blocking()) {
      socket.non_blocking(true, ec);
    }
    auto n = ec ? 0 : net::write(socket, bufs, transfer_at_once{}, ec);
    if (!ec) {
      return do_read_head();
    }
    if (ec != net::error::would_block && ec != net::error::try_again) {
      return on_failure(ec, classify(ec));
    }
    beast::buffers_suffix<std::array<net::const_buffer, 2>> rest{bufs};
    rest.consume(n);
    return net::async_write(*plain, rest, transfer_at_once{}, std::move(on_write));
  }
  conn_->visit([&](auto& stream) {
    net::async_write(stream, bufs, transfer_at_once{}, std::move(on_write));
  });
}

void upstream_exchange::do_read_head() {
  parser_.emplace(*sink_);
  // Boost 1.74 compares a content length against an empty limit as "too large": use a
  // finite one. The sink enforces the real limits.
  parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
  if (conn_->buffer.capacity() < head_read_size) {
    conn_->buffer.reserve(head_read_size); // a head in one read, not in reads of 512 bytes
  }
  read_head_some();
}

// Reads and parses by hand what `http::async_read_header` does through two composed
// operations, each moving the type-erased executor and a work guard along (~1.5k
// instructions per request). Any failure, an end of stream included, is the exchange's
// failure: `classify` tells a cancellation and a timeout from a broken connection, as before.
void upstream_exchange::read_head_some() {
  auto on_read = [self = shared_from_this()](beast::error_code ec, std::size_t n) {
    handler_tail tail; // the owner's actor hears of the end once this read is done
    self->on_head_bytes(ec, n);
  };
  auto room = beast::read_size(conn_->buffer, body_read_size);
  // The answer comes after the request: a read tried at once would find nothing (an EAGAIN
  // `recv` per request when the worker is not instant), so it waits for readiness.
  conn_->visit([&](auto& stream) {
    async_read_drained(stream, conn_->buffer.prepare(room), std::move(on_read));
  });
}

void upstream_exchange::on_head_bytes(beast::error_code ec, std::size_t n) {
  if (ec) {
    return on_failure(ec, classify(ec));
  }
  conn_->buffer.commit(n);
  auto used = parser_->parse_head(conn_->buffer.data(), ec);
  if (ec == http::error::need_more) {
    ec = {};
  }
  if (ec) {
    return on_failure(ec, classify(ec));
  }
  if (!parser_->is_header_done()) {
    conn_->buffer.consume(used); // the start line and whole fields, when the head is split
    return read_head_some();
  }
  auto accepted = deliver_head(); // while the head's bytes are still in the buffer
  conn_->buffer.consume(used);
  if (!accepted) {
    return finish(exchange_status::rejected, "response head refused");
  }
  if (parser_->is_done()) {
    sink_->on_complete();
    return finish(exchange_status::ok);
  }
  read_body();
}

bool upstream_exchange::deliver_head() {
  auto& r = result_;
  r.first_byte = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - started_);
  r.http_status = parser_->status();
  r.head_received = true;
  sink_->on_source(weak_from_this());
  return sink_->on_head(parser_->head());
}

void upstream_exchange::read_body() {
  // Most answers arrive whole: the body bytes read along with the head are parsed here, not by
  // an asynchronous read, which Beast completes with a posted handler when it needs no I/O (a
  // reactor pass more per request). Each piece goes to the sink as it is parsed.
  while (conn_->buffer.size() > 0 && !parser_->is_done() && !paused_) {
    beast::error_code ec;
    auto used = parser_->put(conn_->buffer.data(), ec);
    conn_->buffer.consume(used);
    if (ec == http::error::need_more) {
      break; // the rest of a chunk's framing is still to come: read it
    }
    if (!body_read_ok(ec)) {
      return;
    }
    if (used == 0) {
      break;
    }
  }
  if (parser_->is_done()) {
    sink_->on_complete();
    return finish(exchange_status::ok);
  }
  if (paused_) {
    return park();
  }
  do_read_body();
}

bool upstream_exchange::body_read_ok(beast::error_code ec) {
  if (parser_->refused()) {
    finish(exchange_status::rejected, "response body refused");
    return false;
  }
  if (ec) {
    on_failure(ec, classify(ec));
    return false;
  }
  return true;
}

void upstream_exchange::do_read_body() {
  auto on_read = [self = shared_from_this()](beast::error_code ec, std::size_t) {
    handler_tail tail; // the owner's actor hears of the end once this read is done
    if (!self->body_read_ok(ec)) {
      return;
    }
    self->read_body();
  };
  make_room_for_body(conn_->buffer, parser_->content_length_remaining());
  conn_->visit([&](auto& stream) {
    http::async_read_some(stream, conn_->buffer, *parser_, std::move(on_read));
  });
}

exchange_status upstream_exchange::classify(beast::error_code ec) const {
  if (cancelled_) {
    return exchange_status::cancelled;
  }
  if (timed_out_) {
    return exchange_status::timeout; // its operation was aborted by the connection's deadline
  }
  return exchange_status::broken;
}

void upstream_exchange::on_failure(beast::error_code ec, exchange_status status) {
  // A pooled connection the worker closed while idle fails on first use; nothing reached the
  // sink, so retrying once on a fresh connection is safe and invisible.
  if (status == exchange_status::broken && conn_->reused && !result_.head_received && !retried_) {
    retried_ = true;
    pool_->discard(std::move(conn_));
    conn_ = pool_->fresh(conn_executor_);
    watch_deadline();
    parser_.reset();
    if (conn_->connected) {
      return do_write(); // (an in-memory stream, in a fuzz build)
    }
    if (pool_->endpoints().empty()) {
      return do_resolve();
    }
    return do_connect();
  }
  finish(status, ec.message());
}

void upstream_exchange::finish(exchange_status status, std::string detail) {
  if (finished_) {
    return;
  }
  finished_ = true;
  if (conn_) {
    conn_->deadline.clear();
  }
  if (status == exchange_status::ok && parser_ && parser_->keep_alive() && !cancelled_) {
    trim_after_body(conn_->buffer);
    pool_->release(std::move(conn_));
  } else {
    pool_->discard(std::move(conn_));
  }
  result_.status = status;
  result_.body_bytes = parser_ ? parser_->body_bytes() : 0;
  result_.detail = std::move(detail);
  auto done = std::move(done_);
  sink_.reset();
  if (done) {
    done(std::move(result_));
  }
}

} // namespace troupe::transport
