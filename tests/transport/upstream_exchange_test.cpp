#include "tests/transport/loopback.hpp"
#include "transport/collect_sink.hpp"
#include "transport/upstream_exchange.hpp"

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <future>
#include <map>
#include <mutex>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>

using namespace troupe;
using namespace troupe::transport;
using test::io_thread;

namespace {

/// A worker: echoes the target; "/close" answers with Connection: close; "/slow" never answers;
/// "/sse" streams events.
struct fake_worker {
  explicit fake_worker(io_thread& io)
      : server_ioc(io.ioc),
        server(io.ioc, server_options{"127.0.0.1", 0, 1 << 20, std::chrono::seconds{1}, 16},
               [this](request&& req, inbound_status, std::shared_ptr<reply_channel> reply) {
                 ++requests;
                 {
                   std::lock_guard guard{mx};
                   auto& seen = heads.emplace_back();
                   for (auto& f : req) {
                     seen.emplace(std::string(f.name_string()), std::string(f.value()));
                   }
                 }
                 if (req.target() == "/slow") {
                   held.push_back(reply);
                   return;
                 }
                 if (req.target() == "/late") {
                   // Answers after 400 ms.
                   auto timer = std::make_shared<boost::asio::steady_timer>(
                       server_ioc, std::chrono::milliseconds(400));
                   timer->async_wait([timer, reply](boost::system::error_code) {
                     response res{http::status::ok, 11};
                     res.body() = R"({"late":true})";
                     reply->respond(std::move(res));
                   });
                   return;
                 }
                 if (req.target() == "/sse") {
                   reply->begin_stream(200, {{"content-type", "text/event-stream"}});
                   reply->write_chunk("data: a\n\n");
                   reply->write_chunk("data: b\n\n");
                   return reply->end_stream();
                 }
                 response res{http::status::ok, 11};
                 res.set(http::field::content_type, "application/json");
                 res.set("x-seen-id", std::string(req["x-request-id"]));
                 res.body() = "{\"target\":\"" + std::string(req.target()) + "\"}";
                 if (req.target() == "/close") {
                   res.keep_alive(false);
                 }
                 reply->respond(std::move(res));
               }) {
    REQUIRE_FALSE(server.start());
  }
  /// The header fields of every request received, by lower-case name.
  std::vector<std::multimap<std::string, std::string>> received_heads() {
    std::lock_guard guard{mx};
    return heads;
  }

  boost::asio::io_context& server_ioc;
  http_server server;
  std::atomic<int> requests{0};
  std::vector<std::shared_ptr<reply_channel>> held;
  std::mutex mx;
  std::vector<std::multimap<std::string, std::string>> heads;
};

struct outcome {
  exchange_result result;
  std::shared_ptr<collect_sink> sink;
};

/// A GET of `target`, due within `deadline` from now.
upstream_call get_call(std::string target, std::chrono::milliseconds deadline,
                       header_block headers = {}) {
  upstream_call call;
  call.method = http::verb::get;
  call.target = std::move(target);
  call.headers = std::move(headers);
  call.deadline = std::chrono::steady_clock::now() + deadline;
  return call;
}

outcome run(std::shared_ptr<upstream_pool> pool, std::string target,
            std::chrono::milliseconds deadline = std::chrono::seconds(5),
            std::function<void(upstream_exchange&)> after_start = {},
            header_block headers = {{"x-request-id", "rid-1"}}) {
  auto call = get_call(std::move(target), deadline, std::move(headers));
  auto sink = std::make_shared<collect_sink>(1 << 20);
  std::promise<exchange_result> p;
  auto ex = upstream_exchange::start(pool, std::move(call), sink,
                                     [&p](exchange_result r) { p.set_value(std::move(r)); });
  if (after_start) {
    after_start(*ex);
  }
  auto f = p.get_future();
  REQUIRE(f.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  return {f.get(), sink};
}

} // namespace

TEST_CASE("an exchange delivers the response and reuses its connection") {
  io_thread io;
  fake_worker w{io};
  auto pool = std::make_shared<upstream_pool>(io.ioc, "127.0.0.1", w.server.port(), 8);
  auto first = run(pool, "/one");
  CHECK(first.result.status == exchange_status::ok);
  CHECK(first.result.http_status == 200);
  CHECK(first.sink->body() == R"({"target":"/one"})");
  CHECK(first.result.head_received);
  auto second = run(pool, "/two");
  CHECK(second.result.status == exchange_status::ok);
  CHECK(pool->open_connections() == 1);
  CHECK(pool->idle_connections() == 1);
}

TEST_CASE("a response with Connection: close does not return its connection to the pool") {
  io_thread io;
  fake_worker w{io};
  auto pool = std::make_shared<upstream_pool>(io.ioc, "127.0.0.1", w.server.port(), 8);
  CHECK(run(pool, "/close").result.status == exchange_status::ok);
  CHECK(pool->idle_connections() == 0);
  CHECK(pool->open_connections() == 0);
}

TEST_CASE("an idle connection the worker closed is replaced without an error") {
  io_thread io;
  fake_worker w{io};
  auto pool = std::make_shared<upstream_pool>(io.ioc, "127.0.0.1", w.server.port(), 8);
  CHECK(run(pool, "/a").result.status == exchange_status::ok);
  // The fake worker's idle timeout is 1 s: its side of the pooled connection closes.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  auto again = run(pool, "/b");
  CHECK(again.result.status == exchange_status::ok);
  CHECK(again.sink->body() == R"({"target":"/b"})");
}

TEST_CASE("connecting to a closed port fails as connect_failed") {
  io_thread io;
  std::uint16_t port;
  {
    boost::asio::ip::tcp::acceptor a{io.ioc, {boost::asio::ip::make_address("127.0.0.1"), 0}};
    port = a.local_endpoint().port();
  }
  auto pool = std::make_shared<upstream_pool>(io.ioc, "127.0.0.1", port, 8);
  auto r = run(pool, "/x");
  CHECK(r.result.status == exchange_status::connect_failed);
  CHECK_FALSE(r.result.head_received);
}

/// Takes every file descriptor the process may still open (under a soft limit lowered to
/// at most 1024), as a gateway at its `ulimit -n` is; gives them back when it goes.
struct descriptors_exhausted {
  descriptors_exhausted() {
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
    auto low = saved;
    low.rlim_cur = std::min<rlim_t>(saved.rlim_cur, 1024);
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
    held.reserve(low.rlim_cur);
    for (int fd; (fd = ::dup(STDERR_FILENO)) >= 0;) {
      held.push_back(fd);
    }
  }
  ~descriptors_exhausted() {
    for (int fd : held) {
      ::close(fd);
    }
    ::setrlimit(RLIMIT_NOFILE, &saved);
  }
  rlimit saved{};
  std::vector<int> held;
};

TEST_CASE("a gateway out of file descriptors fails as no_resources, not as the worker's "
          "connect_failed, and connects again once one is free") {
  io_thread io;
  fake_worker w{io};
  auto pool = std::make_shared<upstream_pool>(io.ioc, "127.0.0.1", w.server.port(), 8);
  // The first exchange resolves the address; its connection is not kept (Connection: close).
  REQUIRE(run(pool, "/close").result.status == exchange_status::ok);
  REQUIRE(pool->idle_connections() == 0);
  std::promise<exchange_result> p;
  auto done = p.get_future();
  bool ended = false;
  {
    // No Catch assertion in here: a sanitizer build's checks of them need descriptors too.
    descriptors_exhausted full;
    upstream_exchange::start(pool, get_call("/x", std::chrono::seconds(5)),
                             std::make_shared<collect_sink>(1 << 20),
                             [&p](exchange_result r) { p.set_value(std::move(r)); });
    ended = done.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  }
  REQUIRE(ended);
  auto r = done.get();
  CHECK(r.status == exchange_status::no_resources);
  CHECK(r.detail.find("Too many open files") != std::string::npos);
  CHECK_FALSE(r.head_received);
  CHECK(w.requests == 1); // nothing reached the worker
  auto again = run(pool, "/y");
  CHECK(again.result.status == exchange_status::ok);
  CHECK(again.sink->body() == R"({"target":"/y"})");
}

TEST_CASE("only the gateway's own shortages count as out of resources") {
  namespace errc = boost::asio::error;
  CHECK(out_of_local_resources(errc::no_descriptors)); // EMFILE
  namespace sys = boost::system::errc;
  CHECK(out_of_local_resources(sys::make_error_code(sys::too_many_files_open_in_system)));
  CHECK(out_of_local_resources(sys::make_error_code(sys::address_not_available))); // no port
  CHECK(out_of_local_resources(errc::no_buffer_space));
  CHECK_FALSE(out_of_local_resources(errc::connection_refused));
  CHECK_FALSE(out_of_local_resources(errc::host_unreachable));
  CHECK_FALSE(out_of_local_resources(errc::operation_aborted));
  CHECK_FALSE(out_of_local_resources({}));
}

TEST_CASE("a worker that does not answer in time fails as timeout") {
  io_thread io;
  fake_worker w{io};
  auto pool = std::make_shared<upstream_pool>(io.ioc, "127.0.0.1", w.server.port(), 8);
  auto r = run(pool, "/slow", std::chrono::milliseconds(200));
  CHECK(r.result.status == exchange_status::timeout);
  CHECK(pool->open_connections() == 0);
}

TEST_CASE("a kept-alive connection's next exchange has its own deadline, not the last one's") {
  io_thread io;
  fake_worker w{io};
  auto pool = std::make_shared<upstream_pool>(io.ioc, "127.0.0.1", w.server.port(), 8);
  // The connection's timer is armed for the first exchange's deadline, 250 ms away...
  CHECK(run(pool, "/a", std::chrono::milliseconds(250)).result.status == exchange_status::ok);
  // ...and rings while the second, due in 5 s, waits 400 ms for its answer: it must re-arm.
  auto r = run(pool, "/late", std::chrono::seconds(5));
  CHECK(r.result.status == exchange_status::ok);
  CHECK(r.sink->body() == R"({"late":true})");
  CHECK(pool->open_connections() == 1); // the same connection, kept
}

TEST_CASE("a reused connection ends an exchange at its deadline when it is sooner than the last") {
  io_thread io;
  fake_worker w{io};
  auto pool = std::make_shared<upstream_pool>(io.ioc, "127.0.0.1", w.server.port(), 8);
  CHECK(run(pool, "/a", std::chrono::seconds(30)).result.status == exchange_status::ok);
  auto t0 = std::chrono::steady_clock::now();
  auto r = run(pool, "/slow", std::chrono::milliseconds(200));
  auto took = std::chrono::steady_clock::now() - t0;
  CHECK(r.result.status == exchange_status::timeout);
  CHECK(took < std::chrono::seconds(5)); // not the first exchange's 30 s
  CHECK(pool->open_connections() == 0);
}

TEST_CASE("an exchange whose deadline passed before it started fails as timeout at once") {
  io_thread io;
  fake_worker w{io};
  auto pool = std::make_shared<upstream_pool>(io.ioc, "127.0.0.1", w.server.port(), 8);
  auto r = run(pool, "/a", std::chrono::milliseconds(-1));
  CHECK(r.result.status == exchange_status::timeout);
  CHECK(w.requests == 0);
}

TEST_CASE("cancel aborts an exchange in flight") {
  io_thread io;
  fake_worker w{io};
  auto pool = std::make_shared<upstream_pool>(io.ioc, "127.0.0.1", w.server.port(), 8);
  auto r = run(pool, "/slow", std::chrono::seconds(10), [](upstream_exchange& ex) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ex.cancel();
  });
  CHECK(r.result.status == exchange_status::cancelled);
  CHECK(pool->open_connections() == 0);
}

TEST_CASE("with writes deferred to the end of the pass, exchanges deliver and reuse; one "
          "cancelled before its write went out never reaches the worker") {
  io_thread io{test::deferring_writes(2)};
  fake_worker w{io};
  auto pool = std::make_shared<upstream_pool>(io.ioc, "127.0.0.1", w.server.port(), 8);
  auto first = run(pool, "/one");
  CHECK(first.result.status == exchange_status::ok);
  CHECK(first.sink->body() == R"({"target":"/one"})");
  auto second = run(pool, "/sse");
  CHECK(second.result.status == exchange_status::ok);
  CHECK(second.sink->body() == "data: a\n\ndata: b\n\n");
  CHECK(pool->open_connections() == 1);
  // Started and cancelled in one handler of the io thread, while its write waits for the pass.
  std::promise<exchange_result> p;
  boost::asio::post(io.ioc, [&] {
    auto ex = upstream_exchange::start(pool, get_call("/three", std::chrono::seconds(5)),
                                       std::make_shared<collect_sink>(1024),
                                       [&p](exchange_result r) { p.set_value(std::move(r)); });
    ex->cancel();
  });
  auto f = p.get_future();
  REQUIRE(f.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(f.get().status == exchange_status::cancelled);
  CHECK(w.requests == 2);
  CHECK(run(pool, "/four").result.status == exchange_status::ok); // the pool goes on
}

TEST_CASE("a deadline that passes while the request waits for the end of the pass ends the "
          "exchange as timeout, unsent") {
  io_thread io{test::deferring_writes(32)};
  fake_worker w{io};
  auto pool = std::make_shared<upstream_pool>(io.ioc, "127.0.0.1", w.server.port(), 8);
  REQUIRE(run(pool, "/warm").result.status == exchange_status::ok); // an idle connection
  std::promise<exchange_result> p;
  boost::asio::post(io.ioc, [&] {
    upstream_exchange::start(pool, get_call("/late", std::chrono::milliseconds(2)),
                             std::make_shared<collect_sink>(1024),
                             [&p](exchange_result r) { p.set_value(std::move(r)); });
    // The rest of a long pass: the deadline's timer is due before the pass's writes go out.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  });
  auto f = p.get_future();
  REQUIRE(f.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(f.get().status == exchange_status::timeout);
  CHECK(w.requests == 1); // only the warm-up reached the worker
}

TEST_CASE("a streamed body arrives in pieces and completes") {
  io_thread io;
  fake_worker w{io};
  auto pool = std::make_shared<upstream_pool>(io.ioc, "127.0.0.1", w.server.port(), 8);
  auto r = run(pool, "/sse");
  CHECK(r.result.status == exchange_status::ok);
  CHECK(r.sink->content_type() == "text/event-stream");
  CHECK(r.sink->body() == "data: a\n\ndata: b\n\n");
}

TEST_CASE("request headers given by the caller reach the worker") {
  io_thread io;
  fake_worker w{io};
  auto pool = std::make_shared<upstream_pool>(io.ioc, "127.0.0.1", w.server.port(), 8);
  auto r = run(pool, "/h", std::chrono::seconds(5), {},
               {{"x-request-id", "rid-7"},
                {"Authorization", "Bearer k"},
                {"x-routing-key", "a"},
                {"x-routing-key", "b"},
                {"Host", "elsewhere"}});
  REQUIRE(r.result.status == exchange_status::ok);
  auto heads = w.received_heads();
  REQUIRE(heads.size() == 1);
  auto values = [&](const std::string& name) {
    std::vector<std::string> out;
    auto [from, to] = heads[0].equal_range(name);
    for (auto it = from; it != to; ++it) {
      out.push_back(it->second);
    }
    return out;
  };
  CHECK(values("x-request-id") == std::vector<std::string>{"rid-7"});
  CHECK(values("Authorization") == std::vector<std::string>{"Bearer k"});
  CHECK(values("x-routing-key") == std::vector<std::string>{"a", "b"}); // both, in order
  // The Host is the exchange's own, whatever the caller gave.
  CHECK(values("Host") == std::vector<std::string>{"127.0.0.1:" + std::to_string(w.server.port())});
  // The worker saw it: it echoes the id in its answer.
  CHECK(r.sink->body() == R"({"target":"/h"})");
}

namespace {

/// A worker on a raw socket: reads one request, then writes `parts` with a pause between them.
struct scripted_worker {
  explicit scripted_worker(std::vector<std::string> parts)
      : acceptor(ioc, {boost::asio::ip::make_address("127.0.0.1"), 0}),
        thread([this, parts = std::move(parts)] {
          boost::asio::ip::tcp::socket s{ioc};
          acceptor.accept(s);
          boost::asio::streambuf in;
          boost::asio::read_until(s, in, "\r\n\r\n");
          for (auto& part : parts) {
            boost::asio::write(s, boost::asio::buffer(part));
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
          }
          boost::system::error_code ignored;
          s.shutdown(boost::asio::socket_base::shutdown_send, ignored);
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }) {}
  ~scripted_worker() { thread.join(); }
  std::uint16_t port() const { return acceptor.local_endpoint().port(); }

  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor acceptor;
  std::thread thread;
};

/// One exchange with a scripted worker writing `parts`; the pool's open connections after it.
std::pair<outcome, std::size_t> run_scripted(io_thread& io, std::vector<std::string> parts) {
  scripted_worker w{std::move(parts)};
  auto pool = std::make_shared<upstream_pool>(io.ioc, "127.0.0.1", w.port(), 8);
  auto r = run(pool, "/x");
  return {r, pool->open_connections()};
}

} // namespace

TEST_CASE("a body that arrives partly with the head and partly later is read whole") {
  io_thread io;
  SECTION("by Content-Length") {
    auto [r, open] =
        run_scripted(io, {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", "world"});
    CHECK(r.result.status == exchange_status::ok);
    CHECK(r.sink->body() == "helloworld");
    CHECK(r.result.body_bytes == 10);
    CHECK(open == 1); // kept alive
  }
  SECTION("chunked, a chunk's framing cut between two reads") {
    auto [r, open] =
        run_scripted(io, {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3",
                          "\r\nabc\r\n0\r\n\r\n"});
    CHECK(r.result.status == exchange_status::ok);
    CHECK(r.sink->body() == "helloabc");
  }
  SECTION("until the worker closes, without a length") {
    auto [r, open] =
        run_scripted(io, {"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nfirst,", "second"});
    CHECK(r.result.status == exchange_status::ok);
    CHECK(r.sink->body() == "first,second");
    CHECK(open == 0);
  }
  SECTION("a whole answer in one write, more body than the head's read took at once") {
    std::string body(100000, 'x');
    auto [r, open] = run_scripted(io, {"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + body});
    CHECK(r.result.status == exchange_status::ok);
    CHECK(r.sink->body() == body);
  }
}
