#pragma once

#include "apps/troupe-sim/room_board.hpp"
#include "transport/http_server.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace troupe::sim {

/// The bootstrap server of a prefill worker (SGLang runs one on `--disaggregation-bootstrap-port`
/// for its decode peers). Here it answers whether a room's prefill is done:
///
/// `GET /bootstrap/rooms/{room}?wait_ms=N` → 200 `{"room","state":"ready"}` as soon as the room
/// is ready, or after N ms (at most 10 s) 404 `{"room","state":"pending"|"unknown"}`: a bounded
/// long poll. `GET /health` → 200.
class bootstrap_server {
public:
  /// A server on `host:port` answering from `board`.
  bootstrap_server(net::io_context& ioc, std::string host, std::uint16_t port, room_board& board);

  /// Binds and starts accepting; the bind error, if any.
  boost::system::error_code start();

  /// The bound port.
  std::uint16_t port() const noexcept { return server_.port(); }

  /// Stops accepting.
  void stop() { server_.stop(); }

  /// Longest long poll granted.
  static constexpr std::int64_t max_wait_ms = 10000;

private:
  void handle(transport::request&& req, std::shared_ptr<transport::reply_channel> reply);

  room_board& board_;
  transport::http_server server_;
};

} // namespace troupe::sim
