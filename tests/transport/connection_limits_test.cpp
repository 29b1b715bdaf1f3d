#include "tests/transport/eventually.hpp"
#include "tests/transport/loopback.hpp"
#include "transport/http_server.hpp"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <string>

using namespace troupe;
using namespace troupe::transport;
using test::eventually;
using test::io_thread;
using test::test_client;
using namespace std::chrono_literals;

namespace {

/// Answers every request with its status, method and target, so a test sees what the server
/// could tell of a request it cut short.
struct limit_server {
  limit_server(io_thread& io, server_options opts)
      : stats(std::make_shared<connection_stats>()),
        server(io.ioc, with(std::move(opts), stats),
               [this](request&& req, inbound_status st, std::shared_ptr<reply_channel> r) {
                 handle(std::move(req), st, r);
               }) {
    REQUIRE_FALSE(server.start());
  }

  static server_options with(server_options opts, std::shared_ptr<connection_stats> s) {
    opts.conn_stats = std::move(s);
    return opts;
  }

  void handle(request&& req, inbound_status status, std::shared_ptr<reply_channel> reply) {
    response res{status_of(status), 11};
    res.body() = std::to_string(static_cast<int>(status)) + " " + std::string(req.method_string()) +
                 " " + std::string(req.target());
    reply->respond(std::move(res));
  }

  std::shared_ptr<connection_stats> stats;
  http_server server;
};

server_options options() {
  server_options o;
  o.idle_timeout = 10s;
  return o;
}

/// Everything the server sends until it closes the connection.
std::string read_to_close(test_client& c) {
  std::string all;
  boost::system::error_code ec;
  char buf[4096];
  for (;;) {
    auto n = c.socket.read_some(boost::asio::buffer(buf), ec);
    all.append(buf, n);
    if (ec) {
      return all;
    }
  }
}

/// How long the server took to close `c` without sending a byte (checked: nothing came).
std::chrono::steady_clock::duration silent_close(test_client& c) {
  auto started = std::chrono::steady_clock::now();
  CHECK(read_to_close(c).empty());
  return std::chrono::steady_clock::now() - started;
}

} // namespace

TEST_CASE("a head not complete within the header timeout is answered 408 with its route") {
  io_thread io;
  auto o = options();
  o.header_timeout = 300ms;
  limit_server s{io, o};
  test_client c{s.server.port()};
  auto started = std::chrono::steady_clock::now();
  c.send_raw("POST /v1/messages HTTP/1.1\r\nHost: x\r\nX-Slow: ");
  auto all = read_to_close(c);
  CHECK(std::chrono::steady_clock::now() - started >= 250ms);
  CHECK(all.rfind("HTTP/1.1 408 Request Timeout\r\n", 0) == 0);
  CHECK(all.find("Connection: close") != std::string::npos);
  CHECK(all.find("4 POST /v1/messages") != std::string::npos);
  CHECK(s.stats->header_timeouts == 1);
}

TEST_CASE("a connection that sends nothing is closed at the header timeout without an answer") {
  io_thread io;
  auto o = options();
  o.header_timeout = 200ms;
  limit_server s{io, o};
  test_client c{s.server.port()};
  CHECK(read_to_close(c).empty());
  CHECK(s.stats->header_timeouts == 0);
}

TEST_CASE("a kept-alive connection is closed after the idle timeout, its next head bounded by "
          "the header timeout from its first byte") {
  io_thread io;
  auto o = options();
  o.idle_timeout = 1s;
  o.header_timeout = 300ms;
  limit_server s{io, o};
  {
    test_client c{s.server.port()};
    c.send_raw("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(c.read().result_int() == 200);
    std::this_thread::sleep_for(500ms); // idle longer than the header timeout: still open
    c.send_raw("GET /b HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(c.read().result_int() == 200);
    auto idle = silent_close(c); // idle: closed without an answer
    CHECK(idle >= 900ms);
    CHECK(idle < 3s);
  }
  test_client c{s.server.port()};
  c.send_raw("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(c.read().result_int() == 200);
  std::this_thread::sleep_for(500ms);
  c.send_raw("GET /late HTTP/1.1\r\n");
  auto started = std::chrono::steady_clock::now();
  auto all = read_to_close(c);
  CHECK(std::chrono::steady_clock::now() - started < 900ms);
  CHECK(all.find("408") != std::string::npos);
  CHECK(all.find("GET /late") != std::string::npos);
}

TEST_CASE("an oversized head is handed over as header_too_large, then the connection closes") {
  io_thread io;
  auto o = options();
  o.header_limit = 8 * 1024;
  limit_server s{io, o};
  test_client c{s.server.port()};
  c.send_raw("GET /v1/models?x=1 HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'a') +
             "\r\n\r\n");
  auto all = read_to_close(c);
  CHECK(all.rfind("HTTP/1.1 431 ", 0) == 0);
  CHECK(all.find("2 GET /v1/models?x=1") != std::string::npos);
  CHECK(s.stats->header_too_large == 1);
}

TEST_CASE("more header fields than allowed is too_many_headers; as many as allowed pass") {
  io_thread io;
  auto o = options();
  o.max_header_fields = 10;
  limit_server s{io, o};
  auto head = [](int fields) {
    std::string h = "GET /f HTTP/1.1\r\nHost: x\r\n";
    for (int i = 1; i < fields; ++i) {
      h += "X-F" + std::to_string(i) + ": v\r\n";
    }
    return h + "\r\n";
  };
  test_client ok{s.server.port()};
  ok.send_raw(head(10));
  CHECK(ok.read().result_int() == 200);
  test_client c{s.server.port()};
  c.send_raw(head(11));
  auto all = read_to_close(c);
  CHECK(all.rfind("HTTP/1.1 431 ", 0) == 0);
  CHECK(all.find("3 GET /f") != std::string::npos);
  CHECK(s.stats->too_many_headers == 1);
}

TEST_CASE("connections over max_connections are closed at once; the others go on") {
  io_thread io;
  auto o = options();
  o.max_connections = 2;
  limit_server s{io, o};
  test_client a{s.server.port()};
  test_client b{s.server.port()};
  a.send_raw("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(a.read().result_int() == 200);
  b.send_raw("GET /b HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(b.read().result_int() == 200);
  CHECK(s.stats->open == 2);
  {
    test_client over{s.server.port()};
    CHECK(read_to_close(over).empty());
  }
  CHECK(s.stats->refused == 1);
  a.send_raw("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(a.read().result_int() == 200);
  b.socket.close();
  CHECK(eventually([&] { return s.stats->open == 1; }));
  test_client next{s.server.port()};
  next.send_raw("GET /n HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(next.read().result_int() == 200);
}

TEST_CASE("a large body that stops coming is cut at the idle timeout without an answer") {
  // The direct read of a large body (server_session::read_body) is bounded by the same
  // deadline as a body read through the parser.
  io_thread io;
  auto o = options();
  o.idle_timeout = 1s;
  o.body_limit = 1 << 20;
  limit_server s{io, o};
  test_client c{s.server.port()};
  c.send_raw("POST /stalled HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" +
             std::string(20'000, 'x'));
  auto waited = silent_close(c);
  CHECK(waited >= 900ms);
  CHECK(waited < 3s);
  test_client next{s.server.port()};
  next.send_raw("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(next.read().result_int() == 200);
}
