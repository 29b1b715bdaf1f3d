#pragma once

#include <boost/asio/io_context.hpp>
#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>
#include <memory>
#include <string>
#include <vector>

#include "actors/fleet.hpp"
#include "actors/inspector.hpp"
#include "actors/worker_proxy.hpp"

namespace troupe::actors {

/// Receives every fleet snapshot the registry publishes (policies, cluster node).
using fleet_listener = caf::typed_actor<
    /// A new snapshot of the fleet.
    caf::reacts_to<publish_atom, fleet_ptr>>;

/// The fleet: workers, their proxies and model cards. Publishes an immutable snapshot to a
/// `fleet_view` and to its listeners on every change.
using registry_actor = caf::typed_actor<
    /// Registers a worker and spawns its proxy; replies with the new id. Fails with
    /// `bad_request` (invalid spec) or `conflict` (url registered already).
    caf::replies_to<add_atom, protocol::worker_spec>::with<std::string>,
    /// Removes a worker (its proxy drains, then stops); replies whether the id existed.
    caf::replies_to<remove_atom, std::string>::with<bool>,
    /// A proxy discovered its worker's models.
    caf::reacts_to<models_atom, std::string, std::vector<std::string>>,
    /// Drains every worker proxy and stops (node shutdown).
    caf::reacts_to<stop_atom>,
    /// The registry's state as JSON, for the admin endpoint.
    caf::replies_to<inspect_atom>::with<std::string>>;

/// Spawns the registry. Snapshots go to `view` and to `listeners`; the proxies it spawns are
/// registered with `inspector` (when valid) and deregistered when their worker is removed.
registry_actor make_registry(caf::actor_system& sys, boost::asio::io_context& ioc,
                             std::shared_ptr<fleet_view> view,
                             std::vector<fleet_listener> listeners, worker_proxy_config cfg,
                             inspector_actor inspector = {});

} // namespace troupe::actors
