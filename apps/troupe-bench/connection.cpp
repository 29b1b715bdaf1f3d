#include "apps/troupe-bench/connection.hpp"

#include "transport/transfer_at_once.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/read.hpp>
#include <limits>

namespace troupe::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;

connection::connection(asio::any_io_executor ex, const target& t) : stream_(ex), target_(t) {}

void connection::start(std::shared_ptr<const std::string> request, api_kind api,
                       bench_clock::time_point deadline, request_record record, done_fn done) {
  request_ = std::move(request);
  api_ = api;
  deadline_ = deadline;
  record_ = std::move(record);
  done_ = std::move(done);
  saw_done_ = false;
  saw_error_ = false;
  retried_ = false;
  framer_ = {};
  if (connected_) {
    reused_ = true;
    do_write();
  } else {
    reused_ = false;
    do_connect();
  }
}

void connection::do_connect() {
  stream_.expires_at(deadline_);
  stream_.async_connect(target_.endpoints, [self = shared_from_this()](error_code ec, const auto&) {
    self->on_connect(ec);
  });
}

void connection::on_connect(error_code ec) {
  if (ec) {
    return fail(ec, true);
  }
  connected_ = true;
  error_code ignored;
  stream_.socket().set_option(asio::ip::tcp::no_delay{true}, ignored);
  do_write();
}

void connection::do_write() {
  parser_.emplace();
  parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
  buffer_.clear();
  record_.sent = bench_clock::now();
  stream_.expires_at(deadline_);
  asio::async_write(
      stream_, asio::buffer(*request_), transport::transfer_at_once{}, // 100 KB: one sendmsg
      [self = shared_from_this()](error_code ec, std::size_t) { self->on_write(ec); });
}

void connection::on_write(error_code ec) {
  if (ec) {
    return retry_stale(ec) ? void() : fail(ec, false);
  }
  stream_.expires_at(deadline_);
  http::async_read_header(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](error_code ec, std::size_t) { self->on_read_header(ec); });
}

void connection::on_read_header(error_code ec) {
  if (ec) {
    return retry_stale(ec) ? void() : fail(ec, false);
  }
  const auto& head = parser_->get();
  record_.status = head.result_int();
  auto ct = head[http::field::content_type];
  record_.streamed = protocol::is_event_stream(ct);
  if (parser_->is_done()) {
    return on_complete();
  }
  do_read_body();
}

void connection::do_read_body() {
  stream_.expires_at(deadline_);
  http::async_read_some(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](error_code ec, std::size_t) { self->on_read_body(ec); });
}

void connection::on_read_body(error_code ec) {
  if (ec) {
    return fail(ec, false);
  }
  if (record_.streamed) {
    scan_body(bench_clock::now());
  }
  if (parser_->is_done()) {
    return on_complete();
  }
  do_read_body();
}

void connection::scan_body(bench_clock::time_point now) {
  auto& body = parser_->get().body();
  if (body.empty()) {
    return;
  }
  framer_.feed(body, [&](std::string_view raw) { on_event(raw, now); });
  // The events are consumed: the body never holds more than a partial event.
  body.clear();
}

void connection::on_event(std::string_view raw, bench_clock::time_point now) {
  auto ev = read_event(api_, raw);
  record_.counts.merge(ev.counts);
  switch (ev.kind) {
  case event_kind::token:
    if (record_.token_events == 0) {
      record_.first_token = now;
    } else {
      record_.gaps_ms.push_back(
          std::chrono::duration<float, std::milli>(now - last_token_).count());
    }
    last_token_ = now;
    ++record_.token_events;
    break;
  case event_kind::done:
    saw_done_ = true;
    break;
  case event_kind::error:
    if (!saw_error_) {
      record_.detail = std::string(raw.substr(0, 300));
    }
    saw_error_ = true;
    break;
  case event_kind::other:
    break;
  }
}

void connection::on_complete() {
  const bool keep = parser_->get().keep_alive();
  const auto status = record_.status;
  if (status < 200 || status > 299) {
    const auto& body = parser_->get().body();
    return finish(outcome::http_error,
                  "HTTP " + std::to_string(status) + ": " + body.substr(0, 300), keep);
  }
  if (record_.streamed) {
    scan_body(bench_clock::now());
    if (saw_error_) {
      return finish(outcome::stream_error, std::move(record_.detail), keep);
    }
    if (!saw_done_) {
      return finish(outcome::stream_error, "the stream ended without its end event", keep);
    }
    return finish(outcome::ok, {}, keep);
  }
  std::string why;
  if (!read_body(api_, parser_->get().body(), record_.counts, why)) {
    return finish(outcome::bad_response, why + ": " + parser_->get().body().substr(0, 300), keep);
  }
  finish(outcome::ok, {}, keep);
}

bool connection::retry_stale(error_code ec) {
  // A keep-alive connection the server closed while idle fails the next request at once;
  // any client sends it again on a new connection. Only when nothing came back.
  if (!reused_ || retried_ || ec == beast::error::timeout || parser_->got_some()) {
    return false;
  }
  retried_ = true;
  reused_ = false;
  connected_ = false;
  error_code ignored;
  stream_.socket().close(ignored);
  do_connect();
  return true;
}

void connection::fail(error_code ec, bool connecting) {
  outcome o = outcome::closed;
  if (ec == beast::error::timeout) {
    o = outcome::timeout;
  } else if (connecting) {
    o = outcome::connect_error;
  } else if (ec.category() == make_error_code(http::error::bad_version).category() &&
             ec != http::error::end_of_stream && ec != http::error::partial_message) {
    o = outcome::bad_response;
  }
  if (record_.streamed && o == outcome::closed) {
    o = outcome::stream_error;
  }
  finish(o, (connecting ? "connect: " : "") + ec.message(), false);
}

void connection::finish(outcome o, std::string detail, bool reusable) {
  record_.end = bench_clock::now();
  record_.result = o;
  record_.detail = std::move(detail);
  if (!reusable) {
    connected_ = false;
    error_code ignored;
    stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  } else {
    stream_.expires_never();
  }
  request_.reset();
  // Locals: `done` may start the next request on this connection, which reuses the members.
  auto done = std::move(done_);
  done_ = nullptr;
  auto record = std::move(record_);
  done(std::move(record), reusable);
}

} // namespace troupe::bench
