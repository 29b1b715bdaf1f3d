#pragma once

#include "actors/fleet.hpp"
#include "actors/policies/policy_config.hpp"
#include "actors/registry.hpp"

#include <array>
#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::actors {

/// The prompt of a request for the cache-aware policy: the raw JSON of its prompt-bearing
/// fields (`protocol::find_prompt`), viewed in place, and what keeps those bytes alive while
/// a policy reads them. No copy: a request's body is not touched while it waits for a worker.
struct prompt_ref {
  std::shared_ptr<const void> owner;
  std::array<std::string_view, 2> parts; ///< System text first; unused parts are empty.
};

/// What a request asks a policy for.
struct selection {
  std::string model; ///< Empty: any model.
  protocol::worker_type role = protocol::worker_type::regular;
  std::vector<std::string> exclude; ///< Workers that failed this request already.
  std::string routing_key;          ///< Session affinity key, when given (`routing_key`).
  prompt_ref prompt;                ///< The prompt, for cache-aware selection; may be empty.
  /// The provider whose API the request speaks (`protocol::api_provider`). Credentials never
  /// cross providers: when the workers serving the model belong to more than one provider
  /// (a worker without one is a provider of its own), only those of this provider are
  /// eligible, or the self-hosted ones when this provider has none of them.
  protocol::provider_kind provider = protocol::provider_kind::none;
  std::string prefer; ///< A worker to pick when it is eligible (it stores the request's state).
};

/// Selection state for one role (regular, prefill or decode): the strategy (round robin
/// cursor, ...) and the fleet snapshot it picks from.
using policy_actor = caf::typed_actor<
    /// Picks a worker; fails with `model_not_found` or `no_worker_available`.
    caf::replies_to<select_atom, selection>::with<worker_entry_ptr>,
    /// A new fleet snapshot from the registry.
    caf::reacts_to<publish_atom, fleet_ptr>,
    /// The policy's state as JSON, for the admin endpoint.
    caf::replies_to<inspect_atom>::with<std::string>>;

/// Spawns a policy using strategy `strategy_name` (see `strategy_names()`) for workers of
/// `role`, tuned by `cfg`. Fails at start-up on an unknown name.
policy_actor make_policy(caf::actor_system& sys, const std::string& strategy_name,
                         protocol::worker_type role, const policy_config& cfg = {});

/// Names of the selection strategies.
std::vector<std::string> strategy_names();

/// The names `--policy` accepts: `strategy_names()` and smg's spelling `consistent_hashing`.
std::vector<std::string> accepted_strategy_names();

} // namespace troupe::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::actors::selection)
