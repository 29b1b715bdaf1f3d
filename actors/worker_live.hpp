#pragma once

#include "protocol/worker.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace troupe::actors {

/// What health checks say about a worker.
enum class health_state : std::uint8_t {
  unknown,   ///< Not checked yet (or models not discovered yet): not routable.
  healthy,   ///< Passing checks.
  unhealthy, ///< Failing checks.
};

/// Circuit-breaker position of a worker.
enum class breaker_state : std::uint8_t {
  closed,    ///< Requests flow.
  open,      ///< Too many failures: no requests until the timeout passes.
  half_open, ///< Probing: requests flow; failures reopen, successes close.
};

std::string_view to_string(health_state s) noexcept;
std::string_view to_string(breaker_state s) noexcept;

/// What a worker said about itself when its proxy discovered it: the engine it runs
/// (`/v1/models` `owned_by`: `vllm` or `sglang`) and, for vLLM, its KV connector and engine id
/// (`/get_server_info` `kv_transfer_config`, where the engine shows it). Used where the
/// registration left them unset.
struct worker_report {
  std::optional<protocol::engine_runtime> runtime;
  protocol::kv_connector connector = protocol::kv_connector::unset;
  std::string kv_engine_id;
};

/// The live state of one worker. Its proxy and its channel write it; policies, endpoints and the
/// cluster read it without asking (atomics: the hot path takes no message and no lock for it).
struct worker_live {
  std::atomic<int> in_flight{0}; ///< Requests this node has at the worker now.
  /// Requests the other cluster members have at the worker, as they last reported (the
  /// cluster node writes it; zero when the node runs alone).
  std::atomic<int> remote_in_flight{0};
  std::atomic<health_state> health{health_state::unknown};
  std::atomic<breaker_state> breaker{breaker_state::closed};
  std::atomic<std::uint64_t> requests{0}; ///< Requests dispatched, ever.
  std::atomic<std::uint64_t> failures{0}; ///< Requests that failed at the worker, ever.
  /// What the worker reported about itself (its proxy writes it once, at discovery).
  std::atomic<std::shared_ptr<const worker_report>> report;

  /// True when a policy may pick the worker.
  bool routable() const noexcept {
    return health.load(std::memory_order_relaxed) == health_state::healthy &&
           breaker.load(std::memory_order_relaxed) != breaker_state::open;
  }

  /// The fleet-wide load: this node's requests in flight plus the other members'.
  int load() const noexcept {
    return in_flight.load(std::memory_order_relaxed) +
           remote_in_flight.load(std::memory_order_relaxed);
  }

  /// This node's own requests in flight.
  int local_load() const noexcept { return in_flight.load(std::memory_order_relaxed); }

  /// The other members' requests in flight, as they last reported.
  int remote_load() const noexcept { return remote_in_flight.load(std::memory_order_relaxed); }
};

} // namespace troupe::actors
