#pragma once

#include "actors/messages.hpp"
#include "actors/worker_channel.hpp"
#include "actors/worker_live.hpp"
#include "protocol/worker.hpp"
#include "transport/tls.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace troupe::actors {

/// Receives what a worker proxy learns about its worker (the registry implements it).
using worker_listener = caf::typed_actor<
    /// The worker's model ids were discovered (from `/v1/models` or `/get_model_info`).
    caf::reacts_to<models_atom, std::string, std::vector<std::string>>>;

/// One actor per worker: owns its upstream connection pool, health checks and circuit breaker.
/// Requests reach the worker through its channel (`worker_channel`), not through messages to
/// the proxy; the channel tells the proxy what the breaker and a drain must know.
using worker_proxy_actor = caf::typed_actor<
    /// A request's exchange ended in a way the breaker must count: a failure (with the failure
    /// streak it made), or any outcome while half-open (sent by the worker's channel).
    caf::reacts_to<outcome_atom, transport::exchange_result, unsigned>,
    /// The last request in flight ended while the proxy drains or stops (sent by the channel).
    caf::reacts_to<idle_atom>,
    /// A health check's or a discovery's exchange ended (sent by the exchange itself).
    caf::reacts_to<done_atom, std::uint64_t, transport::exchange_result>,
    /// Time for a health check (sent to itself).
    caf::reacts_to<health_atom>,
    /// The circuit breaker's open period (of the given generation) is over (sent to itself).
    caf::reacts_to<breaker_atom, std::uint64_t>,
    /// The worker was removed: policies stop picking it, but a request routed to it before
    /// that still arrives and is served. Health checks stop, idle connections close once no
    /// exchange is in flight, and the proxy ends when nothing refers to it any more.
    caf::reacts_to<drain_atom>,
    /// Finish the exchanges in flight, then stop (node shutdown).
    caf::reacts_to<stop_atom>,
    /// The proxy's state as JSON, for the admin endpoint.
    caf::replies_to<inspect_atom>::with<std::string>,
    /// Its mailbox size alone (the inspector's periodic gauge refresh).
    caf::replies_to<inspect_atom, mailbox_atom>::with<std::uint64_t>>;

/// Health-check and circuit-breaker settings of worker proxies.
struct worker_proxy_config {
  std::chrono::milliseconds health_interval{std::chrono::seconds{60}}; ///< Between checks.
  /// Each interval moved by up to this share of itself either way (see `jittered`): workers
  /// registered together are not checked together.
  double health_jitter = 0.1;
  std::chrono::milliseconds health_timeout{std::chrono::seconds{5}}; ///< Per check.
  std::string health_endpoint = "/health"; ///< Path probed on self-hosted workers.
  unsigned health_failure_threshold = 3;   ///< Failed checks before unhealthy.
  unsigned health_success_threshold = 2;   ///< Passed checks before healthy again.
  bool cb_enabled = true;                  ///< False: the breaker never opens.
  unsigned cb_failure_threshold = 10;      ///< Consecutive failed requests that open the breaker.
  unsigned cb_success_threshold = 3;       ///< Successes in half-open that close it.
  std::chrono::milliseconds cb_timeout{std::chrono::seconds{60}}; ///< Open before half-open.
  std::size_t max_idle_connections = 256; ///< Idle keep-alive connections kept per worker.
  bool use_strands = true;                ///< False with one io thread (see upstream_pool).
  /// TLS client context of `https` workers (system trust store plus `--upstream-ca-file`);
  /// made with the defaults when unset.
  std::shared_ptr<boost::asio::ssl::context> tls;
};

/// A worker's proxy and the channel requests reach the worker through.
struct worker_link {
  worker_proxy_actor proxy;
  worker_channel_ptr channel;
};

/// Spawns the proxy of worker `id`. It discovers the worker's models (unless the spec names
/// one), checks its health, reports to `listener`, and publishes its live state in `live`.
worker_link make_worker_proxy(caf::actor_system& sys, boost::asio::io_context& ioc, std::string id,
                              protocol::checked_spec spec, std::shared_ptr<worker_live> live,
                              worker_listener listener, worker_proxy_config cfg);

} // namespace troupe::actors
