#pragma once

#include "actors/policy.hpp"
#include "actors/registry.hpp"
#include "cluster/refusals.hpp"
#include "cluster/tls_files.hpp"
#include "protocol/type_ids.hpp"
#include "services/cluster_view.hpp"
#include "services/metrics.hpp"
#include "services/response_affinity.hpp"

#include <caf/actor_system.hpp>
#include <caf/node_id.hpp>
#include <caf/typed_actor.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace troupe::cluster {

/// What peers send each other: one msgpack-encoded cluster message (protocol/cluster_wire.hpp).
/// This is the interface published on the cluster port (cluster/peer_endpoint.hpp); it stays the
/// same across versions (the payload is versioned instead), so nodes of adjacent versions link
/// and talk.
using peer_actor = caf::typed_actor<
    /// A cluster message from a peer.
    caf::reacts_to<gossip_atom, std::string>>;

/// What the node dials peers with: CAF's middleman actor (plain or OpenSSL), or a fake in
/// tests. Replies with the node reached, the actor published there and its interface.
using dialer_actor =
    caf::typed_actor<caf::replies_to<caf::connect_atom, std::string, std::uint16_t>::with<
        caf::node_id, caf::strong_actor_ptr, std::set<std::string>>>;

/// The cluster node of a gateway: links to its peers, replicates the registry's writes to them
/// and merges theirs, reports this node's per-worker load and sums theirs into each worker's
/// `remote_in_flight`, tracks who is up, suspect or down, and keeps the state file. It is never
/// reachable from the network: its endpoint (the published actor) hands it what peers send, and
/// it speaks to peers as the endpoint.
/// Of each pair of nodes one dials the other (CAF's OpenSSL module breaks a link when a second
/// connection between the same two nodes opens). A peer is a member from its hello on; what it
/// sends before is refused and counted.
using node_actor = caf::typed_actor<
    /// What `peer` sent, as the endpoint accepted it.
    caf::reacts_to<gossip_atom, peer_actor, std::string>,
    /// The endpoint this node speaks as (sent once, by `make_node`).
    caf::reacts_to<endpoint_atom, peer_actor>,
    /// A new snapshot of the fleet (from the registry).
    caf::reacts_to<publish_atom, actors::fleet_ptr>,
    /// Records the registry wrote itself: sent to the peers at once. Answered once they are
    /// durable: a peer confirmed them, or (no peer linked) the state file holds them (fsync'd),
    /// or the node keeps no state at all; an error when no peer confirmed them in time and
    /// there is no state file.
    caf::replies_to<changes_atom, actors::record_batch>::with<std::string>,
    /// Time to report load, expire silent members and redial (sent to itself).
    caf::reacts_to<tick_atom>,
    /// A policy's picks placed new prefix blocks (`actors::prefix_sink`): sent on at once.
    caf::reacts_to<prefix_atom>,
    /// A policy asks the owner of a prompt's prefix group where its pick goes
    /// (`actors::placement_delegate`): sent to that member, its answer relayed.
    caf::replies_to<placement_atom, protocol::placement_ask>::with<protocol::placement_answer>,
    /// Time to write the state file (sent to itself).
    caf::reacts_to<persist_atom>,
    /// Leave the cluster: say goodbye to the peers, save the state file, stop.
    caf::reacts_to<stop_atom>,
    /// The node's state as JSON, for the admin endpoint.
    caf::replies_to<inspect_atom>::with<std::string>,
    /// Its mailbox size alone (the inspector's periodic gauge refresh).
    caf::replies_to<inspect_atom, mailbox_atom>::with<std::uint64_t>>;

/// Settings of a cluster node.
struct node_config {
  std::string name;               ///< This node's name (unique in the cluster).
  std::string api_address;        ///< Where clients reach this node's API (announced).
  std::string cluster_address;    ///< Where peers reach this node's cluster port (announced).
  bool networked = true;          ///< False: no peers, the node only keeps the state file.
  bool tls = false;               ///< Links are mutually authenticated TLS: api keys travel.
  tls_files tls_identity;         ///< With `tls`: for diagnosing a failed handshake.
  std::vector<std::string> seeds; ///< host:port of members to link to.
  std::chrono::milliseconds gossip_interval{100}; ///< Load reports at most this often.
  std::chrono::milliseconds keepalive{1000};      ///< A load report at least this often.
  std::chrono::milliseconds suspect_after{2500};  ///< Silence before a member is suspect.
  std::chrono::milliseconds down_after{6000};     ///< Silence before it is down.
  std::chrono::milliseconds reconnect_min{500};   ///< First redial delay; doubles up to max.
  std::chrono::milliseconds reconnect_max{5000};
  std::chrono::milliseconds connect_timeout{5000}; ///< One dial attempt, handshake included.
  /// Of each pair of nodes, the one whose cluster address sorts first dials; the other dials
  /// only when no link came for this long (the peer does not know it, say).
  std::chrono::milliseconds passive_dial_after{10000};
  /// Whole registries go to one member at most this often (and are taken from one at most
  /// twice as often).
  std::chrono::milliseconds full_sync_interval{1000};
  unsigned max_dial_failures = 8;                   ///< A learned address failing this often goes.
  std::size_t max_learned_addresses = 64;           ///< Learned addresses dialed at most.
  std::size_t max_message_bytes = 8u * 1024 * 1024; ///< Larger gossip is refused, not decoded.
  /// A write of this node waits this long for a peer's confirmation; then it is saved to the
  /// state file (when there is one) or answered with an error.
  std::chrono::milliseconds ack_timeout{2000};
  /// Records versioned further ahead of this node's clock are refused.
  std::chrono::milliseconds max_version_ahead{60000};
  std::string state_file;                       ///< Empty: the registry is not persisted.
  std::chrono::milliseconds persist_delay{200}; ///< Writes are batched this long.
  /// The shared prefix view's block size (told to peers in the hello); 0: no view.
  std::uint32_t prefix_block_bytes = 0;
  /// Bytes of prefix hashes sent per gossip tick, all policies together.
  std::size_t prefix_max_bytes_per_tick = 256 * 1024;
  /// A member linked anew is sent (cluster/join_snapshot.hpp) the newest this many blocks this
  /// node's picks placed (0: none)...
  std::size_t prefix_snapshot_blocks = 65536;
  /// A policy's placement ask fails when its answer takes longer (the policy decided itself).
  std::chrono::milliseconds placement_timeout{50};
  /// ... and the newest this many Responses affinity ids this node knows (0: none) ...
  std::size_t response_snapshot_ids = 100000;
  /// ... once its registry matches this node's, or after this long whatever it holds.
  std::chrono::milliseconds snapshot_wait{2000};
};

/// What the node works with.
struct node_deps {
  actors::registry_actor registry;
  std::shared_ptr<services::cluster_view> view; ///< Where the node publishes its status.
  std::shared_ptr<services::metrics> metrics;   ///< May be null.
  dialer_actor dialer;                          ///< Null when not networked.
  std::shared_ptr<refusal_counts> refusals = std::make_shared<refusal_counts>();
  /// When set, each dial gets a dialer of its own from here (cluster/dialer.hpp: its own
  /// thread and timeout, so one address that drops packets never delays the others), and
  /// `dialer` is not used.
  std::function<dialer_actor()> new_dialer;
  /// The cache_aware policies whose shared prefix view the node carries (name = role).
  std::vector<std::pair<std::string, actors::policy_actor>> prefix_policies;
  /// This node's Responses affinity, shared with the members that read it (null: not shared).
  std::shared_ptr<services::response_affinity> responses;
};

/// A spawned node and the actor to publish on the cluster port.
struct node_handles {
  node_actor node;
  peer_actor endpoint;
};

/// Spawns the node and its endpoint: the node subscribes to the registry and, when networked,
/// dials the seeds. Publishing the endpoint on the cluster port is the caller's part
/// (cluster/cluster.hpp).
node_handles make_node(caf::actor_system& sys, node_config cfg, node_deps deps);

} // namespace troupe::cluster
