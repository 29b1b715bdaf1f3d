#include "tests/transport/eventually.hpp"
#include "tests/transport/loopback.hpp"
#include "transport/flow_control.hpp"
#include "transport/http_server.hpp"
#include "transport/upstream_exchange.hpp"

#include <atomic>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>

using namespace troupe;
using namespace troupe::transport;
using test::eventually;
using test::io_thread;

namespace {

using namespace std::chrono_literals;

// -- the client's side: a connection pauses the producer of its stream --

constexpr std::size_t chunk_size = 16 * 1024;

/// Chunk `i` of a stream: its number, then filler, `chunk_size` bytes.
std::string numbered_chunk(std::size_t i) {
  auto s = std::to_string(i) + ":";
  s.resize(chunk_size, static_cast<char>('a' + i % 26));
  return s;
}

/// A producer that writes numbered chunks into a reply while it is not paused, as an upstream
/// exchange relays a worker's stream. Runs on the server's io thread.
class pump final : public flow_source, public std::enable_shared_from_this<pump> {
public:
  pump(net::io_context& ioc, std::shared_ptr<reply_channel> reply, std::size_t chunks)
      : ioc_(ioc), reply_(std::move(reply)), chunks_(chunks) {}

  void start() {
    reply_->set_flow_source(weak_from_this());
    reply_->begin_stream(200, {{"content-type", "text/event-stream"}});
    run();
  }

  void pause() override {
    paused = true;
    ++pauses;
  }

  void resume() override {
    paused = false;
    ++resumes;
    net::post(ioc_, [self = shared_from_this()] { self->run(); });
  }

  std::atomic<bool> paused{false};
  std::atomic<int> pauses{0};
  std::atomic<int> resumes{0};
  std::atomic<std::size_t> produced{0}; ///< Chunks handed to the reply.

private:
  void run() {
    while (!paused && produced < chunks_) {
      reply_->write_chunk(numbered_chunk(produced++));
    }
    if (produced == chunks_ && !ended_) {
      ended_ = true;
      reply_->end_stream();
    }
  }

  net::io_context& ioc_;
  std::shared_ptr<reply_channel> reply_;
  std::size_t chunks_;
  bool ended_ = false;
};

/// A client with a small receive buffer that has asked for `GET /s`, and reads nothing yet.
tcp::socket small_window_client(net::io_context& ioc, unsigned short port) {
  tcp::socket sock{ioc};
  sock.open(tcp::v4());
  sock.set_option(net::socket_base::receive_buffer_size(16 * 1024));
  sock.connect({net::ip::make_address("127.0.0.1"), port});
  net::write(sock, net::buffer(std::string{"GET /s HTTP/1.1\r\nHost: x\r\n\r\n"}));
  return sock;
}

} // namespace

TEST_CASE("a client that stops reading pauses the producer of its stream until it reads again") {
  // 32 MiB: far more than the socket buffers between server and client can absorb.
  constexpr std::size_t chunks = 2048;
  constexpr std::size_t high_water = 256 * 1024;
  io_thread io;
  auto stats = std::make_shared<client_flow_stats>();
  std::shared_ptr<pump> producer;
  std::mutex mx;
  server_options opts;
  opts.use_strands = false; // the producer runs on the io thread, as the gateway's actors do
  opts.stream_buffer_bytes = high_water;
  opts.flow_stats = stats;
  http_server server{io.ioc, opts,
                     [&](request&&, inbound_status, std::shared_ptr<reply_channel> r) {
                       std::lock_guard guard{mx};
                       producer = std::make_shared<pump>(io.ioc, std::move(r), chunks);
                       producer->start();
                     }};
  REQUIRE_FALSE(server.start());

  net::io_context client_ioc;
  auto sock = small_window_client(client_ioc, server.port());

  // The client reads nothing: once the socket buffers are full, the queue passes the mark and
  // the producer stays paused, far from the end of its stream.
  auto get = [&] {
    std::lock_guard guard{mx};
    return producer;
  };
  REQUIRE(eventually([&] { return get() && get()->paused && stats->paused == 1; }));
  auto p = get();
  CHECK(p->produced < chunks);
  CHECK(stats->pauses >= 1);
  CHECK(static_cast<std::size_t>(stats->queued_bytes) <= high_water + chunk_size);

  // Reading again resumes the producer; every chunk arrives, in order.
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(boost::none);
  http::read(sock, buffer, parser);
  auto& body = parser.get().body();
  REQUIRE(body.size() == chunks * chunk_size);
  bool in_order = true;
  for (std::size_t i = 0; i < chunks && in_order; ++i) {
    in_order = std::string_view{body}.substr(i * chunk_size, chunk_size) == numbered_chunk(i);
  }
  CHECK(in_order);
  CHECK(p->resumes >= 1);
  CHECK(eventually([&] { return stats->paused == 0 && stats->queued_bytes == 0; }));
}

TEST_CASE("a client that keeps up never pauses its stream") {
  io_thread io;
  auto stats = std::make_shared<client_flow_stats>();
  std::shared_ptr<pump> producer;
  server_options opts;
  opts.use_strands = false;
  opts.flow_stats = stats;
  http_server server{io.ioc, opts,
                     [&](request&&, inbound_status, std::shared_ptr<reply_channel> r) {
                       producer = std::make_shared<pump>(io.ioc, std::move(r), 16);
                       producer->start();
                     }};
  REQUIRE_FALSE(server.start());
  test::test_client c{server.port()};
  c.send(test::make_request(http::verb::get, "/s"));
  auto res = c.read();
  CHECK(res.body().size() == 16 * chunk_size);
  CHECK(stats->pauses == 0);
  CHECK(eventually([&] { return stats->queued_bytes == 0; }));
}

TEST_CASE("a client that reads nothing for the write timeout is dropped as gone") {
  io_thread io;
  auto stats = std::make_shared<client_flow_stats>();
  std::shared_ptr<pump> producer;
  std::shared_ptr<reply_channel> reply;
  std::promise<void> disconnected;
  std::mutex mx;
  server_options opts;
  opts.use_strands = false;
  opts.stream_buffer_bytes = 256 * 1024;
  opts.flow_stats = stats;
  opts.write_timeout = 200ms;
  http_server server{io.ioc, opts,
                     [&](request&&, inbound_status, std::shared_ptr<reply_channel> r) {
                       std::lock_guard guard{mx};
                       reply = r;
                       reply->on_disconnect([&] { disconnected.set_value(); });
                       producer = std::make_shared<pump>(io.ioc, std::move(r), 2048);
                       producer->start();
                     }};
  REQUIRE_FALSE(server.start());

  net::io_context client_ioc;
  auto sock = small_window_client(client_ioc, server.port());

  // The client reads nothing: once the buffers are full its writes make no progress, and the
  // connection gives it up as if it had left.
  REQUIRE(disconnected.get_future().wait_for(10s) == std::future_status::ready);
  CHECK(stats->write_timeouts == 1);
  {
    std::lock_guard guard{mx};
    CHECK(reply->stopped_reading());
    CHECK(producer->produced < 2048);
  }
  CHECK(eventually([&] { return stats->paused == 0 && stats->queued_bytes == 0; }));

  // What the client reads now is cut short: the connection was reset, the stream never ends.
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(boost::none);
  boost::system::error_code ec;
  http::read(sock, buffer, parser, ec);
  CHECK(ec);
  CHECK_FALSE(parser.is_done());
}

// -- the worker's side: a paused exchange reads nothing until resumed --

namespace {

/// A worker whose stream sends one event and then waits for the test to go on.
struct held_stream_worker {
  explicit held_stream_worker(io_thread& io)
      : server(io.ioc, server_options{"127.0.0.1", 0, 1 << 20, std::chrono::seconds{5}, 16},
               [this](request&&, inbound_status, std::shared_ptr<reply_channel> reply) {
                 reply->begin_stream(200, {{"content-type", "text/event-stream"}});
                 reply->write_chunk("data: first\n\n");
                 held.set_value(std::move(reply));
               }) {
    REQUIRE_FALSE(server.start());
  }
  http_server server;
  std::promise<std::shared_ptr<reply_channel>> held;
};

/// Keeps what it is given; pauses its source at the first piece of the body.
class pausing_sink final : public response_sink {
public:
  void on_source(std::weak_ptr<flow_source> source) override { source_ = std::move(source); }
  bool on_head(const response_head&) override { return true; }
  bool on_body(std::string_view piece) override {
    std::lock_guard guard{mx_};
    body_.append(piece);
    if (!paused_) {
      paused_ = true;
      if (auto s = source_.lock()) {
        s->pause();
      }
    }
    return true;
  }
  void on_complete() override {}

  std::string body() const {
    std::lock_guard guard{mx_};
    return body_;
  }
  std::shared_ptr<flow_source> source() const { return source_.lock(); }

private:
  mutable std::mutex mx_;
  std::weak_ptr<flow_source> source_;
  std::string body_;
  bool paused_ = false;
};

struct paused_exchange {
  explicit paused_exchange(io_thread& io, std::chrono::milliseconds deadline = 10s)
      : worker(io),
        pool(std::make_shared<upstream_pool>(io.ioc, "127.0.0.1", worker.server.port(), 8)) {
    upstream_call call;
    call.method = http::verb::get;
    call.target = "/stream";
    call.deadline = std::chrono::steady_clock::now() + deadline;
    exchange = upstream_exchange::start(pool, std::move(call), sink,
                                        [this](exchange_result r) { done.set_value(r); });
    auto f = worker.held.get_future();
    REQUIRE(f.wait_for(5s) == std::future_status::ready);
    held = f.get();
  }

  exchange_result result() {
    auto f = done.get_future();
    REQUIRE(f.wait_for(10s) == std::future_status::ready);
    return f.get();
  }

  held_stream_worker worker;
  std::shared_ptr<upstream_pool> pool;
  std::shared_ptr<pausing_sink> sink = std::make_shared<pausing_sink>();
  std::promise<exchange_result> done;
  std::shared_ptr<upstream_exchange> exchange;
  std::shared_ptr<reply_channel> held; ///< The worker's side of the stream.
};

} // namespace

TEST_CASE("the exchange is its sink's flow source") {
  io_thread io;
  paused_exchange p{io};
  REQUIRE(eventually([&] { return !p.sink->body().empty(); }));
  CHECK(p.sink->source() == p.exchange);
  p.exchange->cancel();
  CHECK(p.result().status == exchange_status::cancelled);
}

TEST_CASE("a paused exchange still ends at its deadline, closing the worker's connection") {
  io_thread io;
  paused_exchange p{io, 300ms};
  auto r = p.result();
  CHECK(r.status == exchange_status::timeout);
  CHECK(r.detail.find("not reading") != std::string::npos);
  CHECK(p.sink->body() == "data: first\n\n");
  CHECK(p.pool->open_connections() == 0);
}

TEST_CASE("cancelling a paused exchange ends it and closes the worker's connection") {
  io_thread io;
  paused_exchange p{io};
  REQUIRE(eventually([&] { return !p.sink->body().empty(); }));
  p.exchange->cancel();
  CHECK(p.result().status == exchange_status::cancelled);
  CHECK(p.pool->open_connections() == 0);
}

TEST_CASE("a resumed exchange reads the rest of the body") {
  io_thread io;
  paused_exchange p{io};
  REQUIRE(eventually([&] { return !p.sink->body().empty(); }));
  p.held->write_chunk("data: second\n\n");
  p.held->end_stream();
  p.exchange->resume();
  CHECK(p.result().status == exchange_status::ok);
  CHECK(p.sink->body() == "data: first\n\ndata: second\n\n");
}
