#pragma once

#include "transport/http_types.hpp"
#include "transport/lazy_deadline.hpp"
#include "transport/tls.hpp"

#include <atomic>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#ifdef TROUPE_MEMORY_STREAM_SESSIONS
#include "transport/memory_stream.hpp"

#include <functional>
#endif

namespace troupe::transport {

/// One keep-alive connection to an upstream worker: plain TCP, or TLS over TCP (in a fuzz
/// build also an in-memory stream, see `upstream_pool::dial_memory`).
struct upstream_connection {
  /// A strand of the io_context, or (one io thread) the io_context's own executor.
  using executor_type = net::any_io_executor;
  /// (Spelled out: the member `tcp()` hides the namespace's `tcp` in here.)
  using tcp_socket = net::ip::tcp::socket;
  using stream_type = std::variant<tcp_socket, tls_stream
#ifdef TROUPE_MEMORY_STREAM_SESSIONS
                                   ,
                                   memory_stream
#endif
                                   >;

  /// A plain connection when `tls` is null, else a TLS one using that context.
  upstream_connection(executor_type ex, net::ssl::context* tls)
      : strand(ex), deadline(ex), stream(make_stream(std::move(ex), tls)) {}

#ifdef TROUPE_MEMORY_STREAM_SESSIONS
  /// A connection over an in-memory stream, connected from the start.
  upstream_connection(executor_type ex, memory_stream s)
      : strand(ex), deadline(ex), stream(std::move(s)) {}
#endif

  /// The TCP layer (connect, socket options); a connection over TCP only.
  tcp_socket& tcp() {
    if (auto* plain = std::get_if<tcp_socket>(&stream)) {
      return *plain;
    }
    return std::get<tls_stream>(stream).next_layer();
  }

  /// Ends the pending operations (with `operation_aborted`).
  void cancel() {
    if (over_tcp()) {
      beast::error_code ignored;
      tcp().cancel(ignored);
      return;
    }
    close();
  }

  /// Closes the connection, without a TLS close_notify.
  void close() {
    if (over_tcp()) {
      beast::error_code ignored;
      tcp().shutdown(net::socket_base::shutdown_both, ignored);
      tcp().close(ignored);
      return;
    }
#ifdef TROUPE_MEMORY_STREAM_SESSIONS
    std::get<memory_stream>(stream).close();
#endif
  }

  /// Calls `f` with the stream HTTP is read from and written to (`tcp::socket` or `tls_stream`).
  template <class F> decltype(auto) visit(F&& f) {
    return std::visit(std::forward<F>(f), stream);
  }

  /// True for a TLS connection.
  bool secure() const noexcept {
    return stream.index() == 1;
  }

  /// True for a connection over TCP (with or without TLS).
  bool over_tcp() const noexcept {
    return stream.index() <= 1;
  }

  executor_type strand; ///< Every operation on `stream` runs here (a strand with >1 io thread).
  /// The deadline of the exchange using the connection: one timer for all its operations (the
  /// stream itself never expires).
  lazy_deadline deadline;
  stream_type stream;
  beast::flat_buffer buffer;
  bool connected = false; ///< The socket is connected (and, with TLS, the handshake done).
  bool reused = false;    ///< Taken from the idle list: the server may have closed it meanwhile.
  std::chrono::steady_clock::time_point idle_since; ///< When it was returned to the pool.

private:
  static stream_type make_stream(executor_type ex, net::ssl::context* tls) {
    if (tls) {
      return stream_type{std::in_place_index<1>, std::move(ex), *tls};
    }
    return stream_type{std::in_place_index<0>, std::move(ex)};
  }
};

/// The keep-alive connections to one worker (`host:port`). Thread-safe.
class upstream_pool : public std::enable_shared_from_this<upstream_pool> {
public:
  using connection_ptr = std::unique_ptr<upstream_connection>;

  /// A pool for `host:port` keeping at most `max_idle` idle connections; its connections use
  /// TLS with `tls` (verifying the server's certificate for `host`, sending it as SNI) when
  /// it is set.
  /// `use_strands` false (one io thread) runs connections on the io_context's executor, so work
  /// dispatched from that thread runs inline instead of being posted.
  upstream_pool(net::io_context& ioc, std::string host, std::uint16_t port, std::size_t max_idle,
                std::shared_ptr<net::ssl::context> tls = nullptr, bool use_strands = true);

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

  /// True when connections use TLS.
  bool secure() const noexcept { return tls_ != nullptr; }

  /// The Host header: `host:port`, the port left out when it is the scheme's default (made
  /// once: every request sends it).
  const std::string& authority() const noexcept { return authority_; }
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

#ifdef TROUPE_MEMORY_STREAM_SESSIONS
  /// Fuzz builds: new connections are in-memory streams `dial(executor)` makes, connected at
  /// once (the worker is whoever holds the other end). Set before the first `acquire`.
  void dial_memory(std::function<memory_stream(net::any_io_executor)> dial) {
    dial_ = std::move(dial);
  }
#endif

private:
  net::io_context& ioc_;
  std::string host_;
  std::uint16_t port_;
  std::size_t max_idle_;
  std::shared_ptr<net::ssl::context> tls_;
  bool use_strands_;
  std::string authority_;
  mutable std::mutex mx_;
  std::vector<connection_ptr> idle_;
  std::vector<tcp::endpoint> endpoints_;
  std::atomic<std::size_t> open_{0};
#ifdef TROUPE_MEMORY_STREAM_SESSIONS
  std::function<memory_stream(net::any_io_executor)> dial_;
#endif
};

} // namespace troupe::transport
