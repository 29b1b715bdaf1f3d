// Fuzzes the upstream client's reading of a worker's response over a real loopback connection:
// a fake worker reads the gateway's request and answers with the input's bytes (after a first
// byte that picks the threading mode), then closes. A reference parse of the same bytes
// (Beast's parser, end of stream at the end) says whether they hold a complete response and
// which; the exchange must end exactly once, `ok` with the same status and body when they do,
// and `broken` (or `rejected`, for a body over the sink's limit) when they do not. It must
// never crash, hang, or deliver a byte the response does not hold.
//
// Everything runs on the fuzzer's thread: the pools and the fake worker share one io_context
// that the harness drives, so an input costs no thread hand-off.

#include "tests/fuzz/fuzz_check.hpp"
#include "transport/collect_sink.hpp"
#include "transport/upstream_exchange.hpp"
#include "transport/upstream_pool.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <memory>
#include <string>

using namespace troupe::transport;

namespace {

constexpr std::size_t sink_limit = 64 * 1024;

/// The io_context of the run, driven by the harness.
net::io_context& io() {
  static net::io_context ioc{1};
  // Never out of work: a stopped io_context would run nothing more.
  static auto guard = net::make_work_guard(ioc);
  return ioc;
}

/// The fake worker's listening socket.
tcp::acceptor& worker() {
  static tcp::acceptor a{io(), {net::ip::make_address("127.0.0.1"), 0}};
  return a;
}

/// Runs the io_context until `done` (a hang is a finding).
void drive(const bool& done) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  while (!done) {
    FUZZ_CHECK(!io().stopped());
    io().run_one_until(deadline);
    FUZZ_CHECK(std::chrono::steady_clock::now() < deadline);
  }
}

/// The worker's side of one exchange: reads the request (head and body), answers `answer`,
/// closes. Sets `done` when the answer is out.
struct fake_worker : std::enable_shared_from_this<fake_worker> {
  fake_worker(std::string_view answer, std::size_t body_size, bool& done)
      : conn(io()), answer(answer), body_size(body_size), done(done) {}

  void start() {
    worker().async_accept(conn, [self = shared_from_this()](beast::error_code ec) {
      FUZZ_CHECK(!ec);
      self->read_request();
    });
  }

  void read_request() {
    net::async_read_until(conn, net::dynamic_buffer(request), "\r\n\r\n",
                          [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                            FUZZ_CHECK(!ec);
                            self->head_end = n;
                            self->read_body();
                          });
  }

  void read_body() {
    if (request.size() >= head_end + body_size) {
      return answer_it();
    }
    conn.async_read_some(net::buffer(tmp),
                         [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                           FUZZ_CHECK(!ec);
                           self->request.append(self->tmp, n);
                           self->read_body();
                         });
  }

  void answer_it() {
    net::async_write(conn, net::buffer(answer.data(), answer.size()),
                     [self = shared_from_this()](beast::error_code, std::size_t) {
                       beast::error_code ignored;
                       self->conn.shutdown(tcp::socket::shutdown_send, ignored);
                       self->done = true;
                     });
  }

  tcp::socket conn;
  std::string_view answer;
  std::size_t body_size;
  bool& done;
  std::string request;
  std::size_t head_end = 0;
  char tmp[512];
};

struct reference {
  bool complete = false;
  unsigned status = 0;
  std::string body;
};

reference parse_reference(std::string_view bytes) {
  reference ref;
  if (bytes.empty()) {
    return ref; // (Beast takes end of stream before any byte for an empty response)
  }
  http::response_parser<http::string_body> p;
  p.body_limit(std::numeric_limits<std::uint64_t>::max());
  p.eager(true);
  beast::error_code ec;
  while (!bytes.empty() && !p.is_done()) {
    auto n = p.put(net::buffer(bytes.data(), bytes.size()), ec);
    bytes.remove_prefix(n);
    if (ec == http::error::need_more) {
      if (n == 0) {
        break;
      }
      continue;
    }
    if (ec) {
      return ref;
    }
  }
  if (!p.is_done()) {
    p.put_eof(ec);
    if (ec || !p.is_done()) {
      return ref;
    }
  }
  ref.complete = true;
  ref.status = p.get().result_int();
  ref.body = p.get().body();
  return ref;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static auto inline_pool = std::make_shared<upstream_pool>(
      io(), "127.0.0.1", worker().local_endpoint().port(), 0, nullptr, false);
  static auto strand_pool = std::make_shared<upstream_pool>(
      io(), "127.0.0.1", worker().local_endpoint().port(), 0, nullptr, true);
  if (size == 0) {
    return 0;
  }
  auto& pool = data[0] & 1 ? strand_pool : inline_pool;
  std::string_view answer{reinterpret_cast<const char*>(data) + 1, size - 1};
  auto ref = parse_reference(answer);

  upstream_call call;
  call.method = http::verb::post;
  call.target = "/generate";
  call.body = R"({"text":"fuzz"})";
  call.deadline = std::chrono::steady_clock::now() + std::chrono::seconds{5};
  auto body_size = call.body.size();
  bool answered = false;
  auto fake = std::make_shared<fake_worker>(answer, body_size, answered);
  fake->start();
  auto sink = std::make_shared<collect_sink>(sink_limit);
  bool finished = false;
  exchange_result r;
  int calls = 0;
  upstream_exchange::start(pool, call, sink, [&](exchange_result res) {
    ++calls;
    r = std::move(res);
    finished = true;
  });
  drive(finished);
  // The exchange may end before the worker wrote all (a response complete early, a refusal).
  beast::error_code ignored;
  drive(answered);
  fake->conn.close(ignored);
  while (io().poll() > 0) {
  }

  if (ref.complete && ref.body.size() <= sink_limit) {
    FUZZ_CHECK(r.status == exchange_status::ok);
    FUZZ_CHECK(r.http_status == ref.status);
    FUZZ_CHECK(sink->complete());
    FUZZ_CHECK(sink->body() == ref.body);
    FUZZ_CHECK(r.body_bytes == ref.body.size());
  } else if (ref.complete) {
    FUZZ_CHECK(r.status == exchange_status::rejected);
  } else {
    FUZZ_CHECK(r.status == exchange_status::broken || r.status == exchange_status::rejected);
    FUZZ_CHECK(!sink->complete());
  }
  FUZZ_CHECK(sink->body().size() <= sink_limit);
  FUZZ_CHECK(calls == 1); // exactly once, and not again while the io_context ran on
  return 0;
}
