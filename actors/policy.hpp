#pragma once

#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>
#include <string>
#include <vector>

#include "actors/fleet.hpp"
#include "actors/registry.hpp"

namespace troupe::actors {

/// What a request asks a policy for.
struct selection {
  std::string model;                                 ///< Empty: any model.
  protocol::worker_type role = protocol::worker_type::regular;
  std::vector<std::string> exclude;                  ///< Workers that failed this request already.
  std::string routing_key;                           ///< Session affinity key, when given.
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
/// `role`. Fails at start-up on an unknown name.
policy_actor make_policy(caf::actor_system& sys, const std::string& strategy_name,
                         protocol::worker_type role);

/// Names of the selection strategies, as `--policy` accepts them.
std::vector<std::string> strategy_names();

} // namespace troupe::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::actors::selection)
