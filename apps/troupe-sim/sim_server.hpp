#pragma once

#include "transport/http_server.hpp"
#include "transport/http_types.hpp"
#include "transport/reply_channel.hpp"

#include <cstdint>
#include <functional>
#include <memory>

namespace troupe::sim {

namespace net = transport::net;

/// The way back to the client of one request: `transport::reply_channel` plus what a worker that
/// misbehaves on purpose needs, dropping the connection in the middle of a response. Calls must
/// come from the thread running the server's io_context (the simulator has one).
class sim_reply : public transport::reply_channel {
public:
  /// Closes the connection once the bytes already handed over are sent, without ending the
  /// response: a streamed body lacks its last chunk, an unanswered request gets nothing.
  virtual void abort() = 0;
};

/// Called for each request, on the io_context's thread.
using sim_handler = std::function<void(transport::request&& req, transport::inbound_status status,
                                       std::shared_ptr<sim_reply> reply)>;

/// An HTTP/1.1 keep-alive server for a single-threaded io_context. It follows
/// `transport::http_server` (same options, same reply contract, pipelined requests answered in
/// order, a disconnect noticed while a response is pending) and adds `sim_reply::abort`, which
/// the transport's reply channel cannot express. Writes queued together go out in one
/// gathered write, so an instant worker answers in one syscall.
class sim_server {
public:
  /// A server on `ioc` calling `handler` for every request.
  sim_server(net::io_context& ioc, transport::server_options opts, sim_handler handler);
  ~sim_server();

  sim_server(const sim_server&) = delete;
  sim_server& operator=(const sim_server&) = delete;

  /// Binds and starts accepting; the bind error, if any.
  boost::system::error_code start();

  /// The bound port.
  std::uint16_t port() const noexcept;

  /// Stops accepting; open connections finish what they are doing.
  void stop();

private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

} // namespace troupe::sim
