#pragma once

// A real server on a loopback port, run by a background io thread, for transport tests.

#include "transport/http_server.hpp"
#include "transport/io_loop.hpp"

#include <boost/asio/io_context.hpp>
#include <memory>
#include <thread>

namespace troupe::test {

/// An io_context running on its own thread until destruction: `io_context::run`, or the
/// gateway's io loop with `opts` (e.g. every write deferred to the end of its pass).
class io_thread {
public:
  io_thread() : guard_(ioc.get_executor()), thread_([this] { ioc.run(); }) {}
  explicit io_thread(transport::busy_poll_options opts)
      : guard_(ioc.get_executor()),
        thread_([this, opts = std::move(opts)] { transport::run_io_loop(ioc, opts, stats_); }) {}
  ~io_thread() {
    guard_.reset();
    ioc.stop();
    thread_.join();
  }
  boost::asio::io_context ioc;

private:
  transport::io_loop_stats stats_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::thread thread_;
};

/// Loop options under which every write a handler starts waits for the end of its pass, sent
/// every `batch` handlers (transport/send_phase.hpp).
inline transport::busy_poll_options deferring_writes(std::size_t batch = 2) {
  transport::busy_poll_options opts{std::chrono::microseconds{0}, [] { return true; }};
  opts.send_batch = batch;
  opts.busy_pass = 0;
  return opts;
}

/// A blocking HTTP client connection for tests.
struct test_client {
  explicit test_client(std::uint16_t port) : socket(ioc) {
    socket.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  }

  void send_raw(const std::string& bytes) {
    boost::asio::write(socket, boost::asio::buffer(bytes));
  }

  void send(transport::request req) {
    req.prepare_payload();
    transport::http::write(socket, req);
  }

  transport::response read() {
    transport::response res;
    transport::http::read(socket, buffer, res);
    return res;
  }

  boost::asio::io_context ioc;
  transport::tcp::socket socket;
  transport::beast::flat_buffer buffer;
};

inline transport::request make_request(transport::http::verb method, std::string target,
                                       std::string body = {}) {
  transport::request req{method, target, 11};
  req.set(transport::http::field::host, "localhost");
  req.body() = std::move(body);
  return req;
}

} // namespace troupe::test
