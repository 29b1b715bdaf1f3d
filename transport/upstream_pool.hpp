#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/strand.hpp>

#include "transport/http_types.hpp"

namespace troupe::transport {

/// One keep-alive connection to an upstream worker.
struct upstream_connection {
  using executor_type = net::strand<net::io_context::executor_type>;

  explicit upstream_connection(executor_type ex) : strand(ex), stream(std::move(ex)) {}

  executor_type strand; ///< Every operation on `stream` runs here.
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  bool connected = false; ///< The socket is connected.
  bool reused = false;    ///< Taken from the idle list: the server may have closed it meanwhile.
};

/// The keep-alive connections to one worker (`host:port`). Thread-safe.
class upstream_pool : public std::enable_shared_from_this<upstream_pool> {
public:
  using connection_ptr = std::unique_ptr<upstream_connection>;

  /// A pool for `host:port` keeping at most `max_idle` idle connections.
  upstream_pool(net::io_context& ioc, std::string host, std::uint16_t port, std::size_t max_idle);

  /// An idle connection that still looks alive, or a new unconnected one.
  connection_ptr acquire();

  /// A new unconnected connection whose operations run on `ex`.
  connection_ptr fresh(upstream_connection::executor_type ex);

  /// Returns a connection whose last exchange ended cleanly with keep-alive.
  void release(connection_ptr conn);

  /// Counts a connection that has just connected.
  void note_connected(upstream_connection& conn) noexcept;

  /// Counts a connection that will not come back (closed after an error or `Connection: close`).
  void discard(connection_ptr conn);

  /// Closes every idle connection (the worker is being removed).
  void close_idle();

  const std::string& host() const noexcept { return host_; }
  std::uint16_t port() const noexcept { return port_; }
  net::io_context& io_context() noexcept { return ioc_; }

  /// Resolved endpoints of the worker, or empty before the first resolution.
  std::vector<tcp::endpoint> endpoints() const;

  /// Remembers resolved endpoints (cleared by `forget_endpoints` after a connect failure).
  void set_endpoints(std::vector<tcp::endpoint> eps);
  void forget_endpoints();

  /// Connections open (in use and idle).
  std::size_t open_connections() const noexcept { return open_.load(std::memory_order_relaxed); }

  /// Idle connections kept for reuse.
  std::size_t idle_connections() const;

private:
  net::io_context& ioc_;
  std::string host_;
  std::uint16_t port_;
  std::size_t max_idle_;
  mutable std::mutex mx_;
  std::vector<connection_ptr> idle_;
  std::vector<tcp::endpoint> endpoints_;
  std::atomic<std::size_t> open_{0};
};

} // namespace troupe::transport
