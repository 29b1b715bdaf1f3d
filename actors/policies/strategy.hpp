#pragma once

#include "actors/fleet.hpp"
#include "actors/policies/policy_config.hpp"
#include "actors/policies/selection.hpp"

#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

namespace troupe::actors {

/// How a policy picks one worker among the routable candidates of a request.
class strategy {
public:
  virtual ~strategy() = default;

  /// The name `--policy` uses.
  virtual std::string_view name() const noexcept = 0;

  /// An index into `candidates`, which is non-empty and holds routable workers only.
  virtual std::size_t pick(const std::vector<const worker_entry*>& candidates,
                           const selection& sel) = 0;

  /// A new fleet snapshot; the policy serves workers of `role`. Strategies with per-worker
  /// state drop that of the workers that left.
  virtual void on_fleet(const fleet_snapshot& fleet, protocol::worker_type role) {}

  /// The strategy's own state for the admin endpoint (cursor, ...).
  virtual nlohmann::json describe() const = 0;
};

/// Each worker in turn.
std::unique_ptr<strategy> make_round_robin();

/// A uniformly random worker.
std::unique_ptr<strategy> make_random();

/// The less loaded of two random workers (load = requests in flight).
std::unique_ptr<strategy> make_power_of_two();

/// Prefix-cache affinity: the worker that already holds most of the prompt, while the load is
/// balanced (docs/policies.md).
std::unique_ptr<strategy> make_cache_aware(const policy_config& cfg);

/// A hash ring over the workers keyed by the request's routing key; power of two without a key
/// (docs/policies.md).
std::unique_ptr<strategy> make_consistent_hash();

/// The strategy named `name` (smg's `consistent_hashing` is `consistent_hash`), or nullptr.
std::unique_ptr<strategy> make_strategy(std::string_view name, const policy_config& cfg = {});

} // namespace troupe::actors
