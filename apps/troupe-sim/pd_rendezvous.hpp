#pragma once

#include "transport/http_types.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace troupe::transport {
class upstream_pool;
} // namespace troupe::transport

namespace troupe::sim {

namespace net = transport::net;

/// A room a decode worker must see ready before it writes tokens.
struct rendezvous_target {
  std::string host;   ///< The prefill's bootstrap host.
  std::uint16_t port; ///< Its bootstrap port.
  std::string room;   ///< The room.
};

/// How a rendezvous ended.
struct rendezvous_result {
  std::size_t met = 0;       ///< Rooms confirmed ready.
  std::size_t timed_out = 0; ///< Rooms not confirmed in time (non-zero: the rendezvous failed).
  std::string detail;        ///< Why, for the error message and the log.

  /// Every room was confirmed.
  bool ok() const noexcept { return timed_out == 0; }
};

/// A rendezvous in progress.
class rendezvous {
public:
  virtual ~rendezvous() = default;
  /// Stops waiting; the callback will not be called.
  virtual void cancel() = 0;
};

/// The decode side of the PD handshake: asks each target's bootstrap server whether its room
/// is ready, with bounded long polls (`GET /bootstrap/rooms/{room}?wait_ms=...`) repeated until a
/// deadline. A bootstrap server that cannot be reached yet is retried every 20 ms. Keeps one
/// keep-alive connection pool per bootstrap server. Runs on one io_context thread.
class rendezvous_client {
public:
  /// A client on `ioc`.
  explicit rendezvous_client(net::io_context& ioc);
  ~rendezvous_client();

  rendezvous_client(const rendezvous_client&) = delete;
  rendezvous_client& operator=(const rendezvous_client&) = delete;

  /// Waits until every target is ready or `timeout` passes, then calls `done` once. Keep the
  /// handle while waiting.
  std::shared_ptr<rendezvous> await(std::vector<rendezvous_target> targets,
                                    std::chrono::milliseconds timeout,
                                    std::function<void(rendezvous_result)> done);

  /// Longest single poll.
  static constexpr std::chrono::milliseconds poll_limit{2000};

private:
  class session;
  std::shared_ptr<transport::upstream_pool> pool_for(const std::string& host, std::uint16_t port);

  net::io_context& ioc_;
  std::map<std::string, std::shared_ptr<transport::upstream_pool>> pools_;
};

} // namespace troupe::sim
