#pragma once

#include "protocol/type_ids.hpp"
#include "services/metrics.hpp"

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/typed_actor.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace troupe::actors {

/// What every long-lived actor answers: its own state as one JSON object with at least
/// `kind`, `name`, `id` and `mailbox_size`, and its mailbox size alone.
using inspectable_actor = caf::typed_actor<
    /// The actor's state as JSON.
    caf::replies_to<inspect_atom>::with<std::string>,
    /// The number of messages in the actor's mailbox: what the periodic gauge refresh asks,
    /// so that it costs each actor a few hundred instructions instead of a JSON document.
    caf::replies_to<inspect_atom, mailbox_atom>::with<std::uint64_t>>;

/// Knows the long-lived actors of a node and reads their state for the admin endpoint and the
/// mailbox gauges. Reading never blocks anyone: each actor is asked with a message, at most
/// `max_outstanding` at a time, each with a timeout, and asks for the same actor are merged, so
/// a stuck actor costs one timeout and one message however often the admin page refreshes.
/// The periodic gauge refresh asks for the mailbox size only (`inspect_atom, mailbox_atom`),
/// after any full inspection waiting, and not at all for an actor whose full inspection is
/// pending (that one updates the gauge).
using inspector_actor = caf::typed_actor<
    /// Registers a long-lived actor (`kind`, `name`, handle); the inspector monitors it and
    /// forgets it when it terminates.
    caf::reacts_to<add_atom, std::string, std::string, caf::actor>,
    /// Forgets the actor with this id (a removed worker's proxy).
    caf::reacts_to<remove_atom, caf::actor_id>,
    /// Every registered actor, inspected now: a JSON array of summaries (`id`, `kind`, `name`,
    /// `status`, `mailbox_size`, `summary`: the scalar fields of the actor's own state).
    caf::replies_to<list_atom>::with<std::string>,
    /// The registered actors of the given kinds (every kind when empty; the inspector's own
    /// kind is `inspector`), at most `limit` of them in id order (0: all), inspected now: the
    /// listing as above, how many actors are registered (the inspector included) and how
    /// many are of those kinds. Only the listed ones are asked.
    caf::replies_to<list_atom, std::vector<std::string>,
                    std::uint64_t>::with<std::string, std::uint64_t, std::uint64_t>,
    /// One actor's full state (`state`: its whole answer), or `not_found`.
    caf::replies_to<inspect_atom, caf::actor_id>::with<std::string>,
    /// The inspector's own state.
    caf::replies_to<inspect_atom>::with<std::string>,
    /// Time to refresh the mailbox gauges (sent to itself).
    caf::reacts_to<refresh_atom>>;

/// Settings of the inspector.
struct inspector_config {
  std::chrono::milliseconds timeout{1000}; ///< Per actor: no answer by then is `timeout`.
  std::size_t max_outstanding = 16;        ///< Inspections in flight at once.
  /// Between refreshes of `troupe_actor_mailbox_size`; zero: only when the admin asks.
  std::chrono::milliseconds refresh_interval{std::chrono::seconds{15}};
};

/// Spawns the inspector of a node. `m` (may be null) receives mailbox sizes.
inspector_actor make_inspector(caf::actor_system& sys, inspector_config cfg,
                               std::shared_ptr<services::metrics> m);

/// Registers `actor` with `inspector` (no-op when either is invalid). `Handle` is any typed
/// handle whose interface includes `inspectable_actor`'s.
template <class Handle>
void register_with(const inspector_actor& inspector, std::string kind, std::string name,
                   const Handle& actor) {
  static_assert(std::is_convertible_v<Handle, inspectable_actor>,
                "a registered actor must answer inspect_atom with a JSON string");
  if (inspector && actor) {
    caf::anon_send(inspector, add_atom_v, std::move(kind), std::move(name),
                   caf::actor_cast<caf::actor>(actor));
  }
}

/// Deregisters `actor` from `inspector` (no-op when either is invalid).
template <class Handle>
void deregister_from(const inspector_actor& inspector, const Handle& actor) {
  if (inspector && actor) {
    caf::anon_send(inspector, remove_atom_v, actor->id());
  }
}

} // namespace troupe::actors
