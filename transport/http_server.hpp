#pragma once

#include "transport/connection_stats.hpp"
#include "transport/flow_control.hpp"
#include "transport/http_types.hpp"
#include "transport/reply_channel.hpp"

#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace troupe::transport {

/// How a request arrived: whole, or cut short by a limit the server enforces. Only `complete`
/// requests have their body; the others carry what was read of the head (at least the method
/// and target when the request line arrived, to find the route's error format) and the
/// connection closes after the answer.
enum class inbound_status {
  complete,          ///< Header and body read.
  payload_too_large, ///< The body exceeds the limit; only the header was read.
  header_too_large,  ///< The head exceeds `server_options::header_limit` (431).
  too_many_headers,  ///< The head has more than `server_options::max_header_fields` (431).
  header_timeout,    ///< The head was not complete within `server_options::header_timeout` (408).
};

/// The HTTP status that answers a request cut short with `status` (`complete`: 200).
http::status status_of(inbound_status status) noexcept;

/// Called on the connection's strand for each request. The handler answers through `reply`,
/// now or later, from any thread.
using request_handler =
    std::function<void(request&& req, inbound_status status, std::shared_ptr<reply_channel> reply)>;

/// Settings of an HTTP/1.1 server.
struct server_options {
  std::string host = "127.0.0.1";             ///< Address to bind.
  std::uint16_t port = 0;                     ///< Port to bind; 0 picks a free one.
  std::size_t body_limit = 512 * 1024 * 1024; ///< Largest request body accepted.
  std::chrono::seconds idle_timeout{75};      ///< Keep-alive connection idle limit.
  std::size_t max_pipelined = 16;             ///< Requests read ahead on one connection.
  /// A strand per connection. With one io thread, false: replies from that thread (the actors
  /// run there) are then written inline instead of posted.
  bool use_strands = true;
  /// High-water mark of a connection's unwritten response bytes: above it, the producer of the
  /// stream (`reply_channel::set_flow_source`) is paused; at half of it, resumed.
  std::size_t stream_buffer_bytes = 1024 * 1024;
  /// Where connections add up what they hold for slow clients; none: not counted.
  std::shared_ptr<client_flow_stats> flow_stats = nullptr;
  /// How long a write to the client may go without progress (no part of it written: the client
  /// reads nothing) before the connection drops the client as if it had left; 0: never.
  std::chrono::milliseconds write_timeout{0};
  /// A request head must be complete this long after its first byte arrived (the first head of
  /// a connection, and its TLS handshake: after the connection was accepted); else 408 and the
  /// connection closes (a connection that sent nothing is closed without an answer). 0: no
  /// limit of its own (the idle timeout still bounds a connection that sends nothing).
  std::chrono::milliseconds header_timeout{0};
  std::size_t header_limit = 64 * 1024; ///< Largest request head in bytes; beyond: 431.
  std::size_t max_header_fields = 0;    ///< Most header fields of a head; beyond: 431. 0: any.
  /// Connections open at once; a connection accepted beyond is closed at once. 0: no limit.
  std::size_t max_connections = 0;
  /// Where the server counts connections and refused heads; none: counted privately.
  std::shared_ptr<connection_stats> conn_stats = nullptr;
  /// Serve HTTPS with this context (`make_server_tls_context`); null: plain HTTP.
  std::shared_ptr<boost::asio::ssl::context> tls = nullptr;
};

/// An HTTP/1.1 keep-alive server: accepts connections and hands every request to a handler.
class http_server {
public:
  /// A server on `ioc` that will call `handler` for every request.
  http_server(net::io_context& ioc, server_options opts, request_handler handler);
  ~http_server();

  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  /// Binds and starts accepting. Fails with the bind error (address in use, ...).
  boost::system::error_code start();

  /// The bound port (useful when the options asked for port 0).
  std::uint16_t port() const noexcept;

  /// Stops accepting new connections; open connections finish their current exchange.
  void stop();

private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

} // namespace troupe::transport
