// Fuzzes the upstream client's reading of a worker's response: a fake worker reads the
// gateway's request and answers with the input's bytes (after a first byte that picks the
// threading mode, a strand per connection or the io_context's executor, and where the answer
// is split in two writes), then closes. A reference parse of the same bytes (Beast's parser,
// end of stream at the end) says whether they hold a complete response and which; the
// exchange must end exactly once, `ok` with the same status and body when they do, and
// `broken` (or `rejected`, for a body over the sink's limit) when they do not. It must never
// crash, hang, or deliver a byte the response does not hold.
//
// The connection is a `memory_stream` (no socket, no connect or accept: the pool dials the fake
// worker in memory, `upstream_pool::dial_memory`) under the real `upstream_exchange`, on one
// io_context the harness drives on the fuzzer's thread: no thread hand-off, the same run every
// time, and nothing left behind an input (checked: no connection stays open), so what
// outlives one is a leak LeakSanitizer reports.

#include "tests/fuzz/fuzz_check.hpp"
#include "transport/collect_sink.hpp"
#include "transport/memory_stream.hpp"
#include "transport/upstream_exchange.hpp"
#include "transport/upstream_pool.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

using namespace troupe::transport;

namespace {

constexpr std::size_t sink_limit = 64 * 1024;

/// The io_context of the run, driven by the harness.
net::io_context& io() {
  static net::io_context ioc{1};
  return ioc;
}

/// Runs every handler that is ready: nothing waits on a socket, and the deadline (5 s) cannot
/// ring within an input, so once this returns the exchange has done all it can.
void settle() {
  while (io().poll() > 0) {
  }
  io().restart();
}

/// The fake worker's end of the connection the exchange dials (one per exchange here).
std::optional<memory_stream>& worker_end() {
  static std::optional<memory_stream> end;
  return end;
}

/// A pool whose connections are in-memory streams to the fake worker.
std::shared_ptr<upstream_pool> make_pool(bool strands) {
  auto pool = std::make_shared<upstream_pool>(io(), "127.0.0.1", 8000, 0, nullptr, strands);
  pool->dial_memory([](net::any_io_executor ex) {
    FUZZ_CHECK(!worker_end()); // one connection per exchange (no retry: nothing is reused)
    auto [gateway, worker] = memory_stream::pair(std::move(ex), io().get_executor());
    worker_end().emplace(std::move(worker));
    return std::move(gateway);
  });
  return pool;
}

struct reference {
  bool complete = false;
  unsigned status = 0;
  std::string content_type;
  std::string body;
};

reference parse_reference(std::string_view bytes) {
  reference ref;
  if (bytes.empty()) {
    return ref; // (Beast takes end of stream before any byte for an empty response)
  }
  http::response_parser<http::string_body> p;
  // No body can be longer than the bytes that hold it. The limit is exact (a complete response
  // is never refused by it), and it keeps string_body from reserving a Content-Length the bytes
  // cannot hold (10^14 once: ASan's allocation-size-too-big in the reference, not in troupe).
  p.body_limit(bytes.size());
  // Not eager: Boost 1.74's eager `put` goes on into the body after the head refused it as over
  // the body limit (the error is dropped, string_body reserves the Content-Length). One part
  // per `put`, the loop below feeds the rest.
  beast::error_code ec;
  bool head_seen = false;
  while (!bytes.empty() && !p.is_done()) {
    auto n = p.put(net::buffer(bytes.data(), bytes.size()), ec);
    bytes.remove_prefix(n);
    if (p.is_header_done() && !head_seen) {
      // The head's, as a sink sees it: a chunked body's trailer may add fields later.
      ref.content_type = std::string(p.get()[http::field::content_type]);
      head_seen = true;
    }
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
  static auto inline_pool = make_pool(false);
  static auto strand_pool = make_pool(true);
  if (size == 0) {
    return 0;
  }
  auto& pool = data[0] & 1 ? strand_pool : inline_pool;
  std::string_view answer{reinterpret_cast<const char*>(data) + 1, size - 1};
  // The rest of the first byte splits the answer in two writes the exchange reads apart (0:
  // one write): a head split over reads is parsed in parts, its first bytes consumed before
  // the rest arrives.
  auto split = answer.size() * (data[0] >> 1) / 128;
  auto ref = parse_reference(answer);

  upstream_call call;
  call.method = http::verb::post;
  call.target = "/generate";
  call.body = R"({"text":"fuzz"})";
  call.deadline = std::chrono::steady_clock::now() + std::chrono::seconds{5};
  auto body = call.body;
  auto sink = std::make_shared<collect_sink>(sink_limit);
  bool finished = false;
  exchange_result r;
  int calls = 0;
  upstream_exchange::start(pool, call, sink, [&](exchange_result res) {
    ++calls;
    r = std::move(res);
    finished = true;
  });
  settle();
  // The worker has the whole request (head, then the body), answers, and closes.
  FUZZ_CHECK(worker_end() && !finished);
  auto& worker = *worker_end();
  auto request = worker.received();
  auto head_end = request.find("\r\n\r\n");
  FUZZ_CHECK(head_end != std::string_view::npos);
  FUZZ_CHECK(request.substr(head_end + 4) == body);
  if (split > 0) {
    worker.write(answer.substr(0, split));
    settle();
  }
  worker.write(answer.substr(split));
  worker.close();
  settle();
  worker_end().reset();
  FUZZ_CHECK(finished);

  if (ref.complete && ref.body.size() <= sink_limit) {
    FUZZ_CHECK(r.status == exchange_status::ok);
    FUZZ_CHECK(r.http_status == ref.status);
    FUZZ_CHECK(sink->content_type() == ref.content_type); // the head as the sink read it
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
  // Nothing of the exchange outlives the input: no connection is kept (the pool keeps none).
  FUZZ_CHECK(pool->open_connections() == 0 && pool->idle_connections() == 0);
  return 0;
}
