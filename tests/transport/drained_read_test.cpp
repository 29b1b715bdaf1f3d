#include "transport/drained_read.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <optional>
#include <string>

using namespace troupe::transport;
using namespace std::chrono_literals;
using boost::system::error_code;

namespace {

/// A connected loopback pair: `reader` on the io_context's own executor (or another one),
/// `writer` written to with blocking calls.
struct socket_pair {
  explicit socket_pair(net::io_context& ioc) : socket_pair(ioc, ioc.get_executor()) {}
  socket_pair(net::io_context& ioc, net::any_io_executor reader_ex)
      : reader(std::move(reader_ex)), writer(ioc) {
    connect();
  }
  /// A new connection into the same two socket objects (closed first, if open).
  void connect() {
    reader.close();
    writer.close();
    tcp::acceptor acceptor{writer.get_executor(), {net::ip::make_address("127.0.0.1"), 0}};
    writer.connect(acceptor.local_endpoint());
    acceptor.accept(reader);
  }
  void send(const std::string& s) { net::write(writer, net::buffer(s)); }

  tcp::socket reader;
  tcp::socket writer;
};

/// One read's outcome, once its handler ran.
struct read_result {
  error_code ec;
  std::string bytes;
};

/// Starts a drained read of up to `room` bytes into `out`.
void start_read(tcp::socket& s, std::size_t room, std::optional<read_result>& out,
                std::string& buf) {
  buf.assign(room, '\0');
  async_read_drained(s, net::buffer(buf), [&out, &buf](error_code ec, std::size_t n) {
    out = read_result{ec, buf.substr(0, n)};
  });
}

/// Runs `ioc` until `done` holds or `limit` passes; true when it holds.
template <class Pred>
bool run_until(net::io_context& ioc, std::chrono::milliseconds limit, Pred done) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < end) {
    ioc.restart();
    ioc.run_for(5ms);
  }
  return done();
}

/// Lets the reactor take the readiness events pending now, with no read waiting for them.
void idle_reactor(net::io_context& ioc) {
  auto guard = net::make_work_guard(ioc);
  ioc.restart();
  ioc.run_for(30ms);
}

/// A drained read of up to `room` bytes, run to its end (within 2 s).
read_result read_now(net::io_context& ioc, tcp::socket& s, std::size_t room = 64) {
  std::optional<read_result> r;
  std::string buf;
  start_read(s, room, r, buf);
  REQUIRE(run_until(ioc, 2s, [&] { return r.has_value(); }));
  return *r;
}

/// The peer's `last` bytes and its FIN arrive before the next read (their event taken while no
/// read waits): that read returns the bytes, the one after it the end of the stream.
void check_last_bytes_then_end(net::io_context& ioc, socket_pair& p, const std::string& last) {
  p.send(last);
  p.writer.shutdown(tcp::socket::shutdown_send);
  idle_reactor(ioc);
  CHECK(read_now(ioc, p.reader).bytes == last);
  CHECK(read_now(ioc, p.reader).ec == net::error::eof);
}

} // namespace

TEST_CASE("a drained read returns the bytes already there", "[drained_read]") {
  net::io_context ioc{1};
  socket_pair p{ioc};
  p.send("hello");
  auto r = read_now(ioc, p.reader);
  CHECK_FALSE(r.ec);
  CHECK(r.bytes == "hello");
}

TEST_CASE("bytes sent after a read emptied the socket reach the next read", "[drained_read]") {
  net::io_context ioc{1};
  socket_pair p{ioc};
  p.send("a");
  CHECK(read_now(ioc, p.reader).bytes == "a"); // takes "a" and leaves the socket empty

  std::optional<read_result> r;
  std::string buf;
  start_read(p.reader, 64, r, buf); // waits for readiness, without trying first
  CHECK_FALSE(run_until(ioc, 30ms, [&] { return r.has_value(); }));
  p.send("b");
  REQUIRE(run_until(ioc, 2s, [&] { return r.has_value(); }));
  CHECK_FALSE(r->ec);
  CHECK(r->bytes == "b");
}

TEST_CASE("bytes that arrive while no read waits are read by the next one", "[drained_read]") {
  // The case a lost wake-up would hang: the socket's readiness event comes and goes while no
  // read is queued, after a read that emptied the socket told the reactor not to try first.
  net::io_context ioc{1};
  socket_pair p{ioc};
  p.send("a");
  read_now(ioc, p.reader);

  p.send("b");
  idle_reactor(ioc); // the event for "b" is taken here, with no read waiting
  auto r = read_now(ioc, p.reader);
  CHECK_FALSE(r.ec);
  CHECK(r.bytes == "b");
}

TEST_CASE("a read that fills its buffer lets the next one take the rest at once",
          "[drained_read]") {
  net::io_context ioc{1};
  socket_pair p{ioc};
  p.send("0123456789");
  idle_reactor(ioc); // no later event will announce these bytes
  std::string got;
  for (int i = 0; i < 3; ++i) {
    auto r = read_now(ioc, p.reader, 4);
    CHECK_FALSE(r.ec);
    got += r.bytes;
    idle_reactor(ioc);
  }
  CHECK(got == "0123456789");
}

TEST_CASE("the end of the stream after an emptied socket is reported", "[drained_read]") {
  net::io_context ioc{1};
  socket_pair p{ioc};
  p.send("a");
  read_now(ioc, p.reader);

  std::optional<read_result> r;
  std::string buf;
  start_read(p.reader, 64, r, buf);
  p.writer.shutdown(tcp::socket::shutdown_send);
  REQUIRE(run_until(ioc, 2s, [&] { return r.has_value(); }));
  CHECK(r->ec == net::error::eof);
}

TEST_CASE("closing the socket aborts a waiting drained read", "[drained_read]") {
  net::io_context ioc{1};
  socket_pair p{ioc};
  p.send("a");
  read_now(ioc, p.reader);

  std::optional<read_result> r;
  std::string buf;
  start_read(p.reader, 64, r, buf);
  CHECK_FALSE(run_until(ioc, 20ms, [&] { return r.has_value(); }));
  p.reader.close();
  REQUIRE(run_until(ioc, 2s, [&] { return r.has_value(); }));
  CHECK(r->ec == net::error::operation_aborted);
}

TEST_CASE("a socket on a strand reads through asio's own read, inside its strand",
          "[drained_read]") {
  // Boost 1.74's any_executor::target does not check the type: a strand must not pass for the
  // io_context's executor, or its handler would run outside the strand (with several io
  // threads, two handlers of one connection at once).
  net::io_context ioc{1};
  auto strand = net::make_strand(ioc);
  socket_pair p{ioc, strand};
  for (std::string piece : {"x", "y"}) {
    p.send(piece);
    std::optional<read_result> r;
    bool in_strand = false;
    std::string buf(64, '\0');
    async_read_drained(p.reader, net::buffer(buf), [&](error_code ec, std::size_t n) {
      in_strand = strand.running_in_this_thread();
      r = read_result{ec, buf.substr(0, n)};
    });
    REQUIRE(run_until(ioc, 2s, [&] { return r.has_value(); }));
    CHECK_FALSE(r->ec);
    CHECK(r->bytes == piece);
    CHECK(in_strand);
  }
}

TEST_CASE("an end of stream that came with the last bytes is seen by the next read",
          "[drained_read]") {
  // The peer's last bytes and its FIN arrive before the read: the read returns the bytes (fewer
  // than it had room for), and no later event will announce the FIN. The next read must try at
  // once (EPOLLRDHUP told the reactor), not wait for readiness.
  net::io_context ioc{1};
  socket_pair p{ioc};
  p.send("x"); // a first read registers the socket for EPOLLRDHUP
  read_now(ioc, p.reader);
  check_last_bytes_then_end(ioc, p, "last");
}

TEST_CASE("a socket object given a new connection has it watched for the peer's close too",
          "[drained_read]") {
  // A socket remembers that its descriptor is registered for EPOLLRDHUP; a new descriptor in
  // the same socket object (accepted, connected or assigned again) must be registered anew, or
  // a FIN that came with its last bytes would go unseen and the next read would wait forever.
  net::io_context ioc{1};
  socket_pair p{ioc};
  p.send("x"); // the first descriptor registered
  read_now(ioc, p.reader);

  p.connect(); // the same socket object, a new descriptor
  p.send("y");
  read_now(ioc, p.reader);
  check_last_bytes_then_end(ioc, p, "last");
}

TEST_CASE("bytes and their end of stream in one event, on a fresh socket, are both read",
          "[drained_read]") {
  net::io_context ioc{1};
  socket_pair p{ioc};
  check_last_bytes_then_end(ioc, p, "only");
}

TEST_CASE("a reset that came with the last bytes is seen by the next read", "[drained_read]") {
  net::io_context ioc{1};
  socket_pair p{ioc};
  p.send("x");
  read_now(ioc, p.reader);

  p.send("gone");
  p.writer.set_option(net::socket_base::linger(true, 0));
  p.writer.close(); // a reset
  idle_reactor(ioc);
  // Until an error, every read completes at once (the bytes first, where the kernel keeps them).
  read_result r;
  for (int i = 0; i < 3; ++i) {
    r = read_now(ioc, p.reader);
    if (r.ec) {
      break;
    }
    CHECK(r.bytes == "gone");
  }
  CHECK(r.ec);
}

TEST_CASE("the peer's close is still seen after asio re-registered the socket for a write",
          "[drained_read]") {
  // asio changes a socket's epoll registration when a write must wait for room (EPOLLOUT); that
  // change must keep EPOLLRDHUP, or a FIN that came with the last bytes would go unseen.
  net::io_context ioc{1};
  socket_pair p{ioc};
  p.send("x");
  read_now(ioc, p.reader);

  std::string big(8 << 20, 'z'); // more than the socket buffers take: the write waits
  bool wrote = false;
  net::async_write(p.reader, net::buffer(big), [&](error_code, std::size_t) { wrote = true; });
  CHECK_FALSE(run_until(ioc, 30ms, [&] { return wrote; }));

  check_last_bytes_then_end(ioc, p, "bye");
  p.reader.close();
  run_until(ioc, 2s, [&] { return wrote; });
}
