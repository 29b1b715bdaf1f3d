// Fuzzes the HTTP server's reading of requests: the input is what a client writes on one
// connection (after a first byte that picks the server's threading mode: a strand per
// connection, or the io_context's executor). A reference parse of the same bytes (Beast's parser
// with the server's limits) says which requests are complete; the server must answer each of them,
// in order and to the same request (a HEAD with its head alone), then answer 413 for a body over
// the limit, 431 for a head over the limits (size, field count), 4xx for a malformed request (or
// close, when a response was under way), and close where the request asked it to. It must never
// crash, hang, or answer what was not asked.
//
// The connection is a `memory_stream` (no socket, no kernel, no accept) into the server's own
// session code, `server_session`, on one io_context the harness drives on the fuzzer's thread:
// an input costs no thread hand-off, runs the same way each time, and leaves nothing behind —
// the session is gone once the client leaves (checked), so an allocation that outlives the
// input is a leak LeakSanitizer reports, not the pool's or the listener's.

#include "tests/fuzz/fuzz_check.hpp"
#include "transport/memory_stream.hpp"
#include "transport/server_session.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
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

/// Answers every request with its method, target and body size; `/stream` streams two chunks.
/// A HEAD gets the same answer: the server must send its head alone.
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
  res.body() = std::string(req.method_string()) + " " + std::string(req.target()) + " " +
               std::to_string(req.body().size());
  reply->respond(std::move(res));
}

/// The io_context of the run, driven by the harness.
net::io_context& io() {
  static net::io_context ioc{1};
  return ioc;
}

/// The server's settings (those `http_server` hands each of its sessions).
std::shared_ptr<const server_options> options(bool strands) {
  server_options o;
  o.body_limit = body_limit;
  o.header_limit = header_limit;
  o.max_header_fields = max_header_fields;
  o.idle_timeout = std::chrono::seconds{10};
  o.use_strands = strands;
  o.conn_stats = std::make_shared<connection_stats>();
  return std::make_shared<const server_options>(std::move(o));
}

/// Runs every handler that is ready. Nothing waits on a socket or a timer that could ring
/// within the input (the timeouts are 10 s): once this returns, what the server owes the
/// client is written, or never will be.
void settle() {
  while (io().poll() > 0) {
  }
  io().restart();
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
  bool end_head = false; ///< The request the tail refuses was a HEAD (its answer has no body).
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
        ref.end_head = p.get().method() == http::verb::head;
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
      ref.end_head = req.method() == http::verb::head;
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

/// The client's side of the connection: reads the responses the server wrote.
struct client {
  memory_stream& s;
  std::string_view rx; ///< What the server wrote, not yet read.
  bool at_eof = false; ///< A body delimited by the close was read: nothing follows.

  /// Reads one final response (interim 1xx skipped); false when the server closed before
  /// writing one. A response begun and not finished is a finding: nothing more will come.
  bool read_response(bool head, unsigned& status, std::string& body) {
    for (;;) {
      if (at_eof || rx.empty()) {
        FUZZ_CHECK(s.peer_closed()); // else the server owes an answer it will never write
        return false;
      }
      http::response_parser<http::string_body> p;
      p.body_limit(1 << 20);
      p.skip(head);
      p.eager(true);
      beast::error_code ec;
      while (!p.is_done() && !rx.empty()) {
        auto n = p.put(net::buffer(rx.data(), rx.size()), ec);
        rx.remove_prefix(n);
        if (ec == http::error::need_more && n > 0) {
          ec = {};
          continue;
        }
        FUZZ_CHECK(!ec || ec == http::error::need_more);
        ec = {};
        if (n == 0) {
          break;
        }
      }
      if (!p.is_done()) {
        FUZZ_CHECK(s.peer_closed() && p.need_eof()); // a body that ends with the connection
        p.put_eof(ec);
        FUZZ_CHECK(!ec && p.is_done());
        at_eof = true;
      }
      status = p.get().result_int();
      if (status >= 100 && status < 200) {
        continue;
      }
      body = p.get().body();
      return true;
    }
  }

  /// What is left of what the server wrote while it waits for the rest of a request: interim
  /// responses (100 Continue) only, each whole. Anything else answers what was not asked (a
  /// HEAD's body, a chunk after its end).
  void only_interim_left() {
    while (!rx.empty()) {
      http::response_parser<http::empty_body> p;
      p.eager(true);
      beast::error_code ec;
      auto n = p.put(net::buffer(rx.data(), rx.size()), ec);
      FUZZ_CHECK(!ec && p.is_done());
      FUZZ_CHECK(p.get().result_int() >= 100 && p.get().result_int() < 200);
      rx.remove_prefix(n);
    }
  }
};

} // namespace

// Before the first input: asio creates the mutexes its strands share (193) as strands come to
// need them, and keeps them. Made here, they are not allocations that outlive an input (each
// of which would cost a leak check); the strands themselves come and go with each input.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  for (int i = 0; i < 4096; ++i) {
    auto s = net::make_strand(io());
    net::post(s, [] {});
  }
  settle();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static auto inline_opts = options(false);
  static auto strand_opts = options(true);
  static auto handler = std::make_shared<const request_handler>(handle);
  if (size == 0) {
    return 0;
  }
  // What http_server does for an accepted connection: a session on a strand of its own, or on
  // the io_context's executor (one io thread), counted while it lives.
  bool strands = data[0] & 1;
  auto& opts = strands ? strand_opts : inline_opts;
  auto ex = strands ? net::any_io_executor{net::make_strand(io())}
                    : net::any_io_executor{io().get_executor()};
  auto [client_end, server_end] = memory_stream::pair(io().get_executor(), ex);
  opts->conn_stats->open.fetch_add(1, std::memory_order_relaxed);
  std::weak_ptr<server_session<memory_stream>> session;
  {
    auto s = std::make_shared<server_session<memory_stream>>(std::move(server_end), opts, handler);
    session = s;
    s->start();
  }
  std::string_view bytes{reinterpret_cast<const char*>(data) + 1, size - 1};
  auto ref = parse_reference(bytes);
  client_end.write(bytes);
  settle();

  client c{client_end, client_end.received()};
  for (auto& want : ref.requests) {
    unsigned status = 0;
    std::string body;
    FUZZ_CHECK(c.read_response(want.head, status, body));
    FUZZ_CHECK(status == 200);
    FUZZ_CHECK(body == expected_body(want));
  }
  if (ref.end != tail::more) {
    unsigned status = 0;
    std::string body;
    bool answered = c.read_response(ref.end_head, status, body);
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
  } else {
    c.only_interim_left();
  }
  // The client leaves (the server waited for the rest of a request, or closed already): the
  // session goes with everything it held, and the connection is no longer counted.
  client_end.close();
  settle();
  FUZZ_CHECK(session.expired());
  FUZZ_CHECK(opts->conn_stats->open.load() == 0);
  return 0;
}
