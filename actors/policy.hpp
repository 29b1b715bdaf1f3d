#pragma once

#include "actors/fleet.hpp"
#include "actors/policies/placement_owner.hpp"
#include "actors/policies/policy_config.hpp"
#include "actors/policies/selection.hpp"
#include "actors/policies/shared_prefix_view.hpp"
#include "actors/registry.hpp"

#include <atomic>
#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <caf/typed_actor.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace troupe::actors {

/// Where a policy keeping a shared prefix view says that its picks placed blocks new to their
/// worker: the cluster node, which takes them at once rather than at its next gossip tick.
/// Said once until the next take.
using prefix_sink = caf::typed_actor<caf::reacts_to<prefix_atom>>;

/// Where a policy asks the owner of a prompt's prefix group to place a pick (docs/cluster.md,
/// "Placement by owner"): the cluster node, which sends the ask to `placement_ask::owner` and
/// relays the answer; an error when that member cannot be asked (not linked, not up).
using placement_delegate = caf::typed_actor<
    caf::replies_to<placement_atom, protocol::placement_ask>::with<protocol::placement_answer>>;

/// Who owns prefix groups as the cluster node sees it now, and where to ask them.
struct placement_setup {
  placement_delegate delegate;
  placement_owners owners; ///< This node and the members that answer asks.
};

/// Selection state for one role (regular, prefill or decode): the strategy (round robin
/// cursor, ...) and the fleet snapshot it picks from.
using policy_actor = caf::typed_actor<
    /// Picks a worker; fails with `model_not_found` or `no_worker_available`.
    caf::replies_to<select_atom, selection>::with<worker_entry_ptr>,
    /// A new fleet snapshot from the registry.
    caf::reacts_to<publish_atom, fleet_ptr>,
    /// The policy's state as JSON, for the admin endpoint.
    caf::replies_to<inspect_atom>::with<std::string>,
    /// Its mailbox size alone (the inspector's periodic gauge refresh).
    caf::replies_to<inspect_atom, mailbox_atom>::with<std::uint64_t>,
    /// The shared prefix view (docs/cluster.md): what this node's picks recorded since the
    /// last time, for the cluster node to send (empty, with no counts, for policies without a
    /// view). With `true`, only the blocks new to their worker (the rest waits for a tick).
    caf::replies_to<prefix_atom, bool>::with<prefix_drain>,
    /// Another node's picks, for the shared prefix view.
    caf::reacts_to<prefix_atom, protocol::prefix_update>,
    /// Who to tell when picks placed new blocks (the cluster node, once at start).
    caf::reacts_to<prefix_atom, prefix_sink>,
    /// As the owner of the ask's prefix group: where another node's pick goes (placement by
    /// owner, docs/cluster.md); an empty worker when this policy cannot tell.
    caf::replies_to<placement_atom, protocol::placement_ask>::with<protocol::placement_answer>,
    /// Who owns prefix groups now (from the cluster node, as members come and go).
    caf::reacts_to<placement_atom, placement_setup>>;

class strategy;

/// A policy's picks so far (its actor's and its direct picker's).
struct pick_counts {
  std::atomic<std::uint64_t> picks{0};
  std::atomic<std::uint64_t> targeted{0}; ///< Picks an X-SMG-Target-Worker header made.
  std::atomic<std::uint64_t> refused{0};  ///< Selections that found no worker they may use.
};

/// Selection without a message, for a policy whose strategy may pick on any thread
/// (`strategy::concurrent`: round_robin, random, power_of_two): a request picks at once from
/// the fleet view's snapshot, with the policy actor's own strategy (one round-robin cursor for
/// both), and its answers and errors are the actor's. A selection naming a target worker
/// (X-SMG-Target-Worker) still goes to the actor.
class direct_picker {
public:
  direct_picker(std::shared_ptr<strategy> strat, std::shared_ptr<pick_counts> counts,
                std::shared_ptr<const fleet_view> fleet);

  /// The pick for `sel` (a worker, or `model_not_found` / `no_worker_available`), or nothing
  /// when `sel` needs the policy actor.
  std::optional<caf::expected<worker_entry_ptr>> pick(const selection& sel) const;

private:
  std::shared_ptr<strategy> strat_;
  std::shared_ptr<pick_counts> counts_;
  std::shared_ptr<const fleet_view> fleet_;
};

/// A policy actor and, when its strategy allows one, its direct picker (else null).
struct policy_link {
  policy_actor actor;
  std::shared_ptr<const direct_picker> picker;
};

/// Spawns a policy using strategy `strategy_name` (see `strategy_names()`) for workers of
/// `role`, tuned by `cfg`. Fails at start-up on an unknown name. With `fleet` (the view
/// requests read) and a concurrent strategy, it comes with a direct picker.
policy_link make_policy_link(caf::actor_system& sys, const std::string& strategy_name,
                             protocol::worker_type role, const policy_config& cfg,
                             std::shared_ptr<const fleet_view> fleet);

/// The same without a direct picker.
policy_actor make_policy(caf::actor_system& sys, const std::string& strategy_name,
                         protocol::worker_type role, const policy_config& cfg = {});

/// Names of the selection strategies.
std::vector<std::string> strategy_names();

/// The names `--policy` accepts: `strategy_names()` and smg's spelling `consistent_hashing`.
std::vector<std::string> accepted_strategy_names();

} // namespace troupe::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::actors::prefix_drain)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::protocol::prefix_update)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::protocol::placement_ask)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::protocol::placement_answer)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::actors::placement_setup)
