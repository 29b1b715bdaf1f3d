// Fuzzes the HTTP server's reading of requests over a real loopback connection: the input is
// what a client writes on one connection (after a first byte that picks the server's threading
// mode). A reference parse of the same bytes (Beast's parser with the server's limits) says
// which requests are complete; the server must answer each of them, in order and to the same
// request, then answer 413 for a body over the limit, 431 for a head over the limits (size,
// field count), 4xx for a malformed request (or close, when a response was under way), and close
// where the request asked it to. It must never crash, hang, or answer what was not asked.
//
// Everything runs on the fuzzer's thread: the servers and the client share one io_context that
// the harness drives, so an input costs no thread hand-off (and runs the same way each time).

#include "tests/fuzz/fuzz_check.hpp"
#include "transport/http_server.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <iterator>
#include <memory>
#include <string>

using namespace troupe::transport;

namespace {

// Limits small enough for the fuzzer's inputs to cross them.
constexpr std::size_t body_limit = 1024;
constexpr std::size_t header_limit = 1024;
constexpr std::size_t max_header_fields = 16;
constexpr std::size_t min_field_bytes = 4; // server_session_read.cpp: shorter heads are not counted

/// Answers every request with its method, target and body size; `/stream` streams three
/// chunks; HEAD gets an empty body.
void handle(request&& req, inbound_status status, std::shared_ptr<reply_channel> reply) {
  if (status != inbound_status::complete) {
    response res{status_of(status), 11};
    res.body() = "refused";
    return reply->respond(std::move(res));
  }
  if (req.target() == "/stream") {
    reply->begin_stream(200, {{"content-type", "text/event-stream"}});
    reply->write_chunk("data: 1\n\n");
    reply->write_chunk("data: 2\n\n");
    return reply->end_stream();
  }
  response res{http::status::ok, 11};
  if (req.method() != http::verb::head) {
    res.body() = std::string(req.method_string()) + " " + std::string(req.target()) + " " +
                 std::to_string(req.body().size());
  }
  reply->respond(std::move(res));
}

/// The io_context every server and client of the run lives on, driven by the harness.
net::io_context& io() {
  static net::io_context ioc{1};
  // Never out of work: a stopped io_context would run nothing more.
  static auto guard = net::make_work_guard(ioc);
  return ioc;
}

/// A server for the whole run.
struct server_under_test {
  explicit server_under_test(bool strands)
      : server(
            io(),
            [&] {
              server_options o;
              o.host = "127.0.0.1";
              o.body_limit = body_limit;
              o.idle_timeout = std::chrono::seconds{10};
              o.use_strands = strands;
              return o;
            }(),
            handle) {
    FUZZ_CHECK(!server.start());
  }

  http_server server;
};

/// Runs the io_context until `done` (a hang is a finding: the server never answered).
void drive(const bool& done) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{5};
  while (!done) {
    FUZZ_CHECK(!io().stopped());
    io().run_one_until(deadline);
    FUZZ_CHECK(std::chrono::steady_clock::now() < deadline);
  }
}

/// One request the reference parse completed.
struct expected_request {
  std::string method;
  std::string target;
  std::size_t body_size = 0;
  bool head = false;
  unsigned version = 11;
};

/// How the bytes after the last complete request end.
enum class tail { more, malformed, too_large, head_too_large, closes };

struct reference {
  std::vector<expected_request> requests;
  tail end = tail::more;
};

reference parse_reference(std::string_view bytes) {
  reference ref;
  // Feeds `bytes` to `p` until `done()`; false (and `ref.end` set) when the bytes end first or
  // the parser refuses them.
  auto feed = [&](http::request_parser<http::string_body>& p, auto done, std::size_t& used) {
    beast::error_code ec;
    while (!done()) {
      auto n = p.put(net::buffer(bytes.data(), bytes.size()), ec);
      bytes.remove_prefix(n);
      used += n;
      if (ec && ec != http::error::need_more) {
        ref.end = ec == http::error::body_limit     ? tail::too_large
                  : ec == http::error::header_limit ? tail::head_too_large
                                                    : tail::malformed;
        return false;
      }
      // No progress (need_more, or a parser that wants a bigger piece): the server reads on,
      // and no more bytes come.
      if ((n == 0 || bytes.empty()) && !done()) {
        ref.end = tail::more;
        return false;
      }
      ec = {};
    }
    return true;
  };
  for (;;) {
    if (bytes.empty()) {
      ref.end = tail::more;
      return ref;
    }
    http::request_parser<http::string_body> p;
    p.body_limit(body_limit);
    p.header_limit(header_limit);
    std::size_t head_bytes = 0;
    if (!feed(
            p, [&] { return p.is_header_done(); }, head_bytes)) {
      return ref;
    }
    auto& req = p.get();
    auto fields = static_cast<std::size_t>(std::distance(req.begin(), req.end()));
    if (head_bytes > max_header_fields * min_field_bytes && fields > max_header_fields) {
      ref.end = tail::head_too_large; // too many fields: 431 as well
      return ref;
    }
    p.eager(true);
    std::size_t body_bytes = 0;
    if (!feed(
            p, [&] { return p.is_done(); }, body_bytes)) {
      return ref;
    }
    ref.requests.push_back({std::string(req.method_string()), std::string(req.target()),
                            req.body().size(), req.method() == http::verb::head, req.version()});
    // A stream to an HTTP/1.0 client is delimited by closing the connection.
    bool unframed = req.version() < 11 && req.target() == "/stream";
    if (!req.keep_alive() || unframed) {
      ref.end = tail::closes;
      return ref;
    }
  }
}

std::string expected_body(const expected_request& r) {
  if (r.head) {
    return "";
  }
  if (r.target == "/stream") {
    return "data: 1\n\ndata: 2\n\n";
  }
  return r.method + " " + r.target + " " + std::to_string(r.body_size);
}

/// The client's side of the connection.
struct client {
  tcp::socket s{io()};
  beast::flat_buffer buf;
  bool at_eof = false; ///< A body delimited by the close was read: nothing follows.

  /// Reads one final response (interim 1xx skipped); false at end of stream before any byte.
  bool read_response(bool head, unsigned& status, std::string& body) {
    for (;;) {
      if (at_eof) {
        return false; // (asio would wait for a readiness the closed socket reported already)
      }
      http::response_parser<http::string_body> p;
      p.body_limit(1 << 20);
      p.skip(head);
      beast::error_code ec;
      bool done = false;
      http::async_read(s, buf, p, [&](beast::error_code e, std::size_t) {
        ec = e;
        done = true;
      });
      drive(done);
      if (ec == http::error::end_of_stream) {
        at_eof = true;
        return false;
      }
      FUZZ_CHECK(!ec);
      at_eof = p.need_eof();
      status = p.get().result_int();
      if (status >= 100 && status < 200) {
        continue;
      }
      body = p.get().body();
      return true;
    }
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static server_under_test inline_server{false};
  static server_under_test strand_server{true};
  if (size == 0) {
    return 0;
  }
  auto& srv = data[0] & 1 ? strand_server : inline_server;
  std::string_view bytes{reinterpret_cast<const char*>(data) + 1, size - 1};
  auto ref = parse_reference(bytes);

  client c;
  auto& s = c.s;
  s.connect({net::ip::make_address("127.0.0.1"), srv.server.port()});
  // The whole input goes out while the answers are read: a server that closes early may reset
  // the rest of a long write, which does not matter (only the answers do).
  net::async_write(s, net::buffer(bytes.data(), bytes.size()),
                   [](beast::error_code, std::size_t) {});

  for (auto& want : ref.requests) {
    unsigned status = 0;
    std::string body;
    FUZZ_CHECK(c.read_response(want.head, status, body));
    FUZZ_CHECK(status == 200);
    FUZZ_CHECK(body == expected_body(want));
  }
  // The connection closes at the end; the server's session sees it and goes.
  struct closer {
    tcp::socket& s;
    ~closer() {
      beast::error_code ignored;
      s.close(ignored);
      while (io().poll() > 0) {
      }
    }
  } at_end{s};
  if (ref.end == tail::more) {
    return 0; // the server waits for the rest of a request: nothing more is due
  }
  unsigned status = 0;
  std::string body;
  bool answered = c.read_response(false, status, body);
  switch (ref.end) {
  case tail::too_large:
    FUZZ_CHECK(answered && status == 413);
    break;
  case tail::head_too_large:
    FUZZ_CHECK(answered && status == 431);
    break;
  case tail::malformed:
    // 400; nothing when a response was under way.
    FUZZ_CHECK(!answered || (status >= 400 && status < 500));
    break;
  case tail::closes:
  case tail::more:
    FUZZ_CHECK(!answered);
    break;
  }
  if (answered) {
    FUZZ_CHECK(!c.read_response(false, status, body)); // then the connection closes
  }
  return 0;
}
