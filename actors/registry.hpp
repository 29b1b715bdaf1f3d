#pragma once

#include "actors/fleet.hpp"
#include "actors/inspector.hpp"
#include "actors/worker_proxy.hpp"
#include "protocol/cluster_wire.hpp"

#include <boost/asio/io_context.hpp>
#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace troupe::actors {

/// Registration records, for replication between nodes. A local message type: peers exchange
/// records msgpack-encoded (protocol/cluster_wire.hpp), never as CAF values.
using record_batch = std::vector<protocol::worker_record>;

} // namespace troupe::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::actors::record_batch)

namespace troupe::actors {

/// Receives every fleet snapshot the registry publishes (policies, cluster node).
using fleet_listener = caf::typed_actor<
    /// A new snapshot of the fleet.
    caf::reacts_to<publish_atom, fleet_ptr>>;

/// Receives what the cluster replicates (the cluster node): every fleet snapshot, and every
/// write this node's registry makes itself (registrations, removals, discovered model cards).
using replication_listener = caf::typed_actor<
    /// A new snapshot of the fleet.
    caf::reacts_to<publish_atom, fleet_ptr>,
    /// Records this node just wrote. Answers once they are durable (where, in words: a peer
    /// confirmed them, or the state file holds them), or with an error when they could not be
    /// made so in time. The registry answers `POST /workers` and `DELETE` only then.
    caf::replies_to<changes_atom, record_batch>::with<std::string>>;

/// The fleet: workers, their proxies and model cards. Publishes an immutable snapshot to a
/// `fleet_view` and to its listeners on every change. Every registration is a record with a
/// version (last writer wins by version, then node name) and removals leave tombstones, so
/// registries of several nodes converge whatever order they learn the records in.
using registry_actor = caf::typed_actor<
    /// Registers a worker and spawns its proxy; replies with the new id once the registration
    /// is durable (its replication listeners confirmed it). Fails with `bad_request` (invalid
    /// spec), `conflict` (url registered already) or what a listener answered (the worker then
    /// stays registered here).
    caf::replies_to<add_atom, protocol::worker_spec>::with<std::string>,
    /// Removes a worker (its proxy drains, then stops); replies whether the id existed, once
    /// the removal is durable (as a registration).
    caf::replies_to<remove_atom, std::string>::with<bool>,
    /// A proxy discovered its worker's models.
    caf::reacts_to<models_atom, std::string, std::vector<std::string>>,
    /// Records written elsewhere (by a peer, or restored from the state file): each one newer
    /// than what this node holds replaces it, spawning or draining proxies as needed. Replies
    /// with the records taken (the cluster node relays them).
    caf::replies_to<merge_atom, record_batch>::with<record_batch>,
    /// Every record, tombstones included (full syncs, the state file).
    caf::replies_to<records_atom>::with<record_batch>,
    /// Adds a replication listener; it gets the current snapshot at once.
    caf::reacts_to<subscribe_atom, replication_listener>,
    /// Drains every worker proxy and stops (node shutdown).
    caf::reacts_to<stop_atom>,
    /// Tells the listeners about the current snapshot (sent to itself after writes).
    caf::reacts_to<publish_atom>,
    /// The registry's state as JSON, for the admin endpoint.
    caf::replies_to<inspect_atom>::with<std::string>,
    /// Its mailbox size alone (the inspector's periodic gauge refresh).
    caf::replies_to<inspect_atom, mailbox_atom>::with<std::uint64_t>>;

/// Spawns the registry. Snapshots go to `view` and to `listeners`; the proxies it spawns are
/// registered with `inspector` (when valid) and deregistered when their worker is removed.
/// `node_name` signs the records this node writes.
registry_actor make_registry(caf::actor_system& sys, boost::asio::io_context& ioc,
                             std::shared_ptr<fleet_view> view,
                             std::vector<fleet_listener> listeners, worker_proxy_config cfg,
                             inspector_actor inspector = {}, std::string node_name = {});

/// The id a worker gets from its URL: the same on every node, so that nodes registering the
/// same URL register the same worker. `salt` > 0 picks another id when two URLs collide.
std::string worker_id_for(std::string_view url, unsigned salt = 0);

} // namespace troupe::actors
