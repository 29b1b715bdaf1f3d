#pragma once

#include "actors/gateway_config.hpp"
#include "actors/gateway_services.hpp"
#include "cluster/node.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <memory>

namespace troupe::cluster {

/// Whether a node with these settings runs a cluster node: it has a cluster port (and peers),
/// or only a state file to keep.
bool wanted(const actors::gateway_config& cfg);

/// Prepares the actor system of a clustered node: loads CAF's middleman with heartbeats and a
/// connection timeout (a hung peer is dropped, not only a dead one), CAF's OpenSSL module with
/// the node's certificate, key and CA when TLS is on, and bounds the BASP frames peers may
/// send (cluster/frame_guard.hpp). Call before the actor system is built, with settings that
/// passed `check_settings`. Does nothing without a cluster port: a node alone loads no
/// networking and runs exactly as without the cluster layer.
void configure(caf::actor_system_config& sys_cfg, const actors::gateway_config& cfg);

/// The cluster side of a gateway node: restores the state file, runs the node actor and
/// publishes its endpoint on the cluster port.
class runtime {
public:
  /// A runtime for the node whose services are `svc` (its registry, metrics, inspector).
  runtime(caf::actor_system& sys, actors::services_ptr svc);
  ~runtime();

  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  /// Restores the state file into the registry, spawns the node actor and publishes its
  /// endpoint on the cluster port (with TLS when configured). Publishing blocks until the port
  /// is bound: call it before the io threads run. Throws `std::runtime_error` when the port
  /// cannot be bound.
  void start();

  /// Leaves the cluster: the peers are told, the state file is written, the node stops.
  void stop();

  /// The cluster port (the configured one, or the one picked for port 0); 0 when not networked.
  std::uint16_t port() const;

private:
  caf::actor_system& sys_;
  actors::services_ptr svc_;
  node_handles node_;
  std::uint16_t port_ = 0;
};

} // namespace troupe::cluster
