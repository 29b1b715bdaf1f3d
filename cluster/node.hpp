#pragma once

#include "actors/registry.hpp"
#include "protocol/type_ids.hpp"
#include "services/cluster_view.hpp"
#include "services/metrics.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace troupe::cluster {

/// What peers send each other: one msgpack-encoded cluster message (protocol/cluster_wire.hpp).
/// This is the interface published on the cluster port; it stays the same across versions (the
/// payload is versioned instead), so nodes of adjacent versions link and talk.
using peer_actor = caf::typed_actor<
    /// A cluster message from a peer.
    caf::reacts_to<gossip_atom, std::string>>;

/// The cluster node of a gateway: links to its peers over CAF's middleman, replicates the
/// registry's writes to them and merges theirs, reports this node's per-worker load and sums
/// theirs into each worker's `remote_in_flight`, tracks who is up, suspect or down, and keeps
/// the state file. Messages other than `gossip_atom` are taken from this node only.
using node_actor = peer_actor::extend<
    /// A new snapshot of the fleet (from the registry).
    caf::reacts_to<publish_atom, actors::fleet_ptr>,
    /// Records the registry wrote itself: sent to the peers at once.
    caf::reacts_to<changes_atom, actors::record_batch>,
    /// Time to report load, expire silent members and redial (sent to itself).
    caf::reacts_to<tick_atom>,
    /// Time to write the state file (sent to itself).
    caf::reacts_to<persist_atom>,
    /// Leave the cluster: say goodbye to the peers, save the state file, stop.
    caf::reacts_to<stop_atom>,
    /// The node's state as JSON, for the admin endpoint.
    caf::replies_to<inspect_atom>::with<std::string>>;

/// Settings of a cluster node.
struct node_config {
  std::string name;               ///< This node's name (unique in the cluster).
  std::string api_address;        ///< Where clients reach this node's API (announced).
  std::string cluster_address;    ///< Where peers reach this node's cluster port (announced).
  bool networked = true;          ///< False: no peers, the node only keeps the state file.
  std::vector<std::string> seeds; ///< host:port of members to link to.
  std::chrono::milliseconds gossip_interval{100}; ///< Load reports at most this often.
  std::chrono::milliseconds keepalive{1000};      ///< A load report at least this often.
  std::chrono::milliseconds suspect_after{2500};  ///< Silence before a member is suspect.
  std::chrono::milliseconds down_after{6000};     ///< Silence before it is down.
  std::chrono::milliseconds reconnect_min{500};   ///< First redial delay; doubles up to max.
  std::chrono::milliseconds reconnect_max{5000};
  std::chrono::milliseconds connect_timeout{5000}; ///< One dial attempt, handshake included.
  std::string state_file;                          ///< Empty: the registry is not persisted.
  std::chrono::milliseconds persist_delay{200};    ///< Writes are batched this long.
};

/// What the node works with.
struct node_deps {
  actors::registry_actor registry;
  std::shared_ptr<services::cluster_view> view; ///< Where the node publishes its status.
  std::shared_ptr<services::metrics> metrics;   ///< May be null.
};

/// Spawns the node: it subscribes to the registry and, when networked, dials the seeds.
/// Publishing it on the cluster port is the caller's part (cluster/cluster.hpp).
node_actor make_node(caf::actor_system& sys, node_config cfg, node_deps deps);

} // namespace troupe::cluster
