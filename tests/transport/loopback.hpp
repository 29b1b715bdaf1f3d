#pragma once

// A real server on a loopback port, run by a background io thread, for transport tests.

#include "transport/http_server.hpp"

#include <boost/asio/io_context.hpp>
#include <memory>
#include <thread>

namespace troupe::test {

/// An io_context running on its own thread until destruction.
class io_thread {
public:
  io_thread() : guard_(ioc.get_executor()), thread_([this] { ioc.run(); }) {}
  ~io_thread() {
    guard_.reset();
    ioc.stop();
    thread_.join();
  }
  boost::asio::io_context ioc;

private:
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::thread thread_;
};

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
