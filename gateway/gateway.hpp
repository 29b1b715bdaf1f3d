#pragma once

#include "actors/gateway_config.hpp"
#include "actors/gateway_services.hpp"

#include <boost/asio/io_context.hpp>
#include <caf/actor_system.hpp>
#include <functional>
#include <memory>

namespace troupe::gateway {

/// A gateway node: its long-lived actors, its HTTP server and its lifecycle.
class gateway {
public:
  gateway(caf::actor_system& sys, boost::asio::io_context& ioc, actors::gateway_config cfg);
  ~gateway();

  gateway(const gateway&) = delete;
  gateway& operator=(const gateway&) = delete;

  /// Spawns the actors, registers the configured workers and starts listening. Throws
  /// `std::runtime_error` for a bad configuration or a port that cannot be bound.
  void start();

  /// Stops accepting, lets requests in flight finish (up to the grace period), stops the
  /// actors, then calls `done` on an io thread.
  void shutdown(std::function<void()> done);

  /// The HTTP port (the configured one, or the one picked for port 0).
  std::uint16_t port() const;

  /// The node's services (fleet view, actors, settings).
  actors::services_ptr services() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace troupe::gateway
