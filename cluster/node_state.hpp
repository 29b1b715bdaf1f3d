#pragma once

// The cluster node's state and the functions its behaviour (node.cpp) is made of, one concern
// per file: node_send.cpp (what goes to peers), node_receive.cpp (what comes from them, and who
// counts as a member), node_dial.cpp (linking), node_status.cpp (what the node shows).
// Internal to cluster/.

#include "cluster/dial_table.hpp"
#include "cluster/frame_guard.hpp"
#include "cluster/join_snapshot.hpp"
#include "cluster/membership.hpp"
#include "cluster/node.hpp"
#include "cluster/peer_endpoint.hpp"
#include "cluster/placement.hpp"
#include "cluster/prefix_gossip.hpp"
#include "cluster/response_gossip.hpp"
#include "cluster/sync_limits.hpp"

#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>
#include <functional>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <set>
#include <string>
#include <unordered_map>

namespace troupe::cluster {

struct node_state {
  static inline const char* name = "cluster_node";

  node_config cfg;
  node_deps deps;
  peer_actor endpoint;                  ///< What peers see as this node (set once at start).
  std::shared_ptr<endpoint_switch> off; ///< Closes the endpoint when the node stops.
  std::uint64_t incarnation = 0;
  member_table members{member_table::timing{}};
  std::map<std::string, peer_actor> links;           ///< Verified members, by name.
  std::map<caf::actor_addr, std::string> dialed;     ///< Actors reached by a dial: address.
  std::map<std::string, caf::actor_addr> dial_links; ///< The reverse: address to actor.
  /// Addresses this node leaves to the peer there to dial (one connection per pair: see
  /// node_dial.cpp), and since when it has waited.
  std::map<std::string, caf::actor_clock::time_point> awaiting;
  std::set<caf::actor_addr> greeted; ///< Links this node sent hello + state.
  /// Actors this node dialed whose hello has not come on their link yet, and when this node last
  /// asked for it (node_rejoin.cpp).
  std::map<caf::actor_addr, std::pair<peer_actor, caf::actor_clock::time_point>> unanswered;
  /// Members whose link this node lost, by name: that link's actor and the member's
  /// incarnation, and when this node last asked it to greet again (node_rejoin.cpp).
  struct lost_link {
    caf::actor_addr actor;
    std::uint64_t incarnation = 0;
    caf::actor_clock::time_point asked{};
  };
  std::map<std::string, lost_link> lost_links;
  /// Members this node greeted again on their asking, and when (once per keepalive each).
  std::map<std::string, caf::actor_clock::time_point> regreeted;
  std::set<std::string> full_sync_due;               ///< Members waiting for a whole registry.
  std::map<std::string, unsigned> digest_mismatches; ///< Consecutive, per member.
  /// A second live node with a member's name (another incarnation, another link): refused
  /// while the member is up; admitted (as the member restarted) once it is down.
  struct duplicate {
    peer_actor actor;
    protocol::cluster_message hello;
    std::string member_address;
    std::chrono::system_clock::time_point since;
  };
  std::map<std::string, duplicate> duplicates; ///< By name.
  /// Peers calling themselves by this node's name: their cluster address, by actor.
  std::map<caf::actor_addr, std::pair<std::string, std::chrono::system_clock::time_point>>
      own_name_clashes;
  dial_table dials{dial_table::settings{}};
  sync_limits syncs{std::chrono::milliseconds{1000}};
  std::set<std::string> peer_interface; ///< What a peer's cluster port must publish.
  actors::fleet_ptr fleet;
  std::uint64_t seq = 0;
  std::uint64_t sync_seq = 0; ///< Numbers this node's whole-registry syncs.
  /// Every worker's live state, by id (the current snapshot's): received loads touch only the
  /// workers they name.
  std::unordered_map<std::string, std::shared_ptr<actors::worker_live>> live_by_id;
  std::unordered_map<std::string, int> last_sent_loads; ///< As of report `seq`.
  std::set<std::string> whole_load_due; ///< Members that asked for a whole load report.
  std::uint64_t load_reports_sent = 0;
  std::uint64_t load_deltas_sent = 0;
  std::uint64_t load_entries_sent = 0;
  caf::actor_clock::time_point last_report{};
  /// Writes of this node waiting for a peer's confirmation.
  struct unconfirmed {
    std::vector<std::pair<std::string, std::uint64_t>> records; ///< (id, version).
    caf::typed_response_promise<std::string> promise;
    caf::actor_clock::time_point deadline;
  };
  std::vector<unconfirmed> unconfirmed_writes;
  /// Writes waiting for the next save of the state file (which starts when none runs).
  std::vector<caf::typed_response_promise<std::string>> save_waiters;
  bool saving_for_waiters = false;
  std::uint64_t writes_confirmed_by_peer = 0;
  std::uint64_t writes_confirmed_by_file = 0;
  std::uint64_t writes_unconfirmed = 0; ///< Answered with an error (no peer, no state file).
  bool persist_pending = false;
  std::uint64_t persisted_digest = 0;
  bool persisted_once = false;
  bool stopping = false;
  frames_refused frames_seen;      ///< The frame guard's counts already taken into `refusals`.
  prefix_gossip_state prefix;      ///< The shared prefix view (prefix_gossip.cpp).
  response_gossip_state responses; ///< The shared Responses affinity (response_gossip.cpp).
  join_snapshot_state snapshots;   ///< What members linked anew are told (join_snapshot.cpp).
  placement_state placement;       ///< Placement by owner (placement.cpp).

  // -- counters (inspect) --
  std::uint64_t messages_in = 0;
  std::uint64_t messages_out = 0;
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
  std::uint64_t cpu_ns = 0;          ///< Thread CPU time of the main handlers (cpu_meter.hpp).
  std::uint64_t greetings_asked = 0; ///< Hellos sent with `again` (node_rejoin.cpp).
  std::uint64_t regreets = 0;        ///< Greetings sent again because a member asked.
  std::string last_decode_error;
  std::uint64_t full_syncs_sent = 0;
  std::uint64_t full_syncs_received = 0;
  std::uint64_t records_received = 0;
  std::uint64_t relays = 0;        ///< Batches of merged records sent on to other members.
  std::uint64_t keys_withheld = 0; ///< Api keys left out of what went to peers (plain links).
  std::uint64_t records_too_large = 0;
  std::uint64_t saves = 0;
  std::string last_save_error;
};

using node_self = node_actor::stateful_pointer<node_state>;

/// The actor clock's now (the test coordinator's in tests).
inline caf::actor_clock::time_point steady_now(node_self self) {
  return self->clock().now();
}

/// The wall clock in ms since the epoch.
std::int64_t wall_ms();

// -- node_durable.cpp --

/// Answers `records` (a write of this node, just sent to the peers) once it is durable.
caf::result<std::string> confirm_write(node_self self, const actors::record_batch& records);

/// Member `from` holds these records now.
void on_ack(node_self self, const std::string& from, const protocol::cluster_ack& a);

/// Writes whose confirmation is overdue (or can no longer come) fall back on the state file.
void expire_unconfirmed(node_self self);

/// Writes the state file soon (a batch of changes), unless it holds the registry already.
void maybe_persist(node_self self);

/// Writes the state file now (fsync'd, as its directory), then calls `then` with success.
void save(node_self self, std::function<void(bool)> then);

// -- node_send.cpp --

/// Sends records to every linked member but those named in `except` (a write of this node, or
/// records it merged and relays).
void broadcast_records(node_self self, actors::record_batch records,
                       const std::set<std::string>& except = {});

/// Sends one message to one linked member.
void send_to(node_self self, const peer_actor& to, const protocol::cluster_message& m);

/// Broadcasts one message to every linked member.
void broadcast(node_self self, const protocol::cluster_message& m);

/// An envelope from this node.
protocol::cluster_message envelope(node_self self);

/// Greets a new link once: hello (`again`: asking for the peer's, see `cluster_hello`), then
/// the whole registry (when the limits allow; later otherwise).
void greet(node_self self, const std::string& name, const peer_actor& to, bool again = false);

/// Sends this node's hello to `to` (`again`: asking for the peer's hello).
void send_hello(node_self self, const peer_actor& to, bool again = false);

/// Sends the whole registry to member `name` now, or as soon as the limits allow.
void request_full_sync(node_self self, const std::string& name);

/// Sends the whole registries that were due and are allowed now.
void send_due_full_syncs(node_self self);

/// This node's load report to every member (when it changed, or at the keepalive): a delta to
/// those that read deltas, a whole report to the others and to those that asked for one.
void report_load(node_self self);

/// A whole load report (as of the last one sent) to one link.
void send_whole_load(node_self self, const peer_actor& to);
/// Sends `bytes` (an encoded message) to `to`, counted.
void send_encoded(node_self self, const peer_actor& to, std::string bytes);

// -- prefix_gossip.cpp --

/// Sets up the shared prefix view's state and makes this node the policies' prefix sink.
void start_prefix_gossip(node_self self);

/// Takes the policies' recorded prefix hashes and sends them to the members keeping a view.
void gossip_prefixes(node_self self);

/// A policy (the current sender) placed new prefix blocks: take and send them now.
void on_fresh_prefixes(node_self self);

/// A member's hello: whether (and with which block size) it keeps a shared prefix view.
void prefix_peer_hello(node_self self, const std::string& from, const protocol::cluster_hello& h);

/// A member's prefix update, for the policies.
void on_prefix_update(node_self self, const std::string& from, protocol::prefix_update& u,
                      std::size_t bytes);

/// The shared prefix view's part of `/admin/actors`.
nlohmann::json prefix_gossip_status(const node_state& st);

// -- placement.cpp --

/// True when this node answers placement asks (it keeps a shared prefix view): its hello says so.
bool answers_placement(const node_state& st);

/// A member's hello: whether it answers placement asks.
void placement_peer_hello(node_self self, const std::string& from,
                          const protocol::cluster_hello& h);

/// Tells the policies the owners of prefix groups when they changed (members up, down, linked).
void update_placement_owners(node_self self);

/// A policy's ask: sent to its owner; the answer comes back through the promise.
caf::result<protocol::placement_answer> delegate_placement(node_self self,
                                                           protocol::placement_ask& ask);

/// A member's ask: decided by the policy of its role, answered to the member.
void on_placement_ask(node_self self, const std::string& from, protocol::placement_ask& ask);

/// A member's answer to an ask of this node.
void on_placement_answer(node_self self, const std::string& from,
                         const protocol::placement_answer& a);

/// Asks whose answer is overdue, or whose owner went down, fail (the policy decided already).
void expire_placements(node_self self);

/// Placement by owner's part of `/admin/actors`.
nlohmann::json placement_status(const node_state& st);

// -- response_gossip.cpp --

/// Sends the ids this node learned since the last tick to the members that read them.
void gossip_responses(node_self self);

/// A member's hello: whether it reads response updates.
void response_peer_hello(node_self self, const std::string& from, const protocol::cluster_hello& h);

/// A member's response update: remembered for the workers this node serves.
void on_response_update(node_self self, const std::string& from, protocol::response_update& u);

/// The shared Responses affinity's part of `/admin/actors`.
nlohmann::json response_gossip_status(const node_state& st);

// -- join_snapshot.cpp --

/// Member `name` linked anew (a verified link): it is owed a snapshot.
void snapshot_due(node_self self, const std::string& name);

/// A load report of member `from`: its snapshot goes once its registry digest is ours.
void snapshot_on_load(node_self self, const std::string& from, std::uint64_t registry_digest);

/// Snapshots whose wait for the member's registry is over go now.
void send_due_snapshots(node_self self);

/// Member `name` is down: it is owed nothing (a new link owes it anew).
void snapshot_forget(node_self self, const std::string& name);

/// A member's snapshot brought these (counted, and into the metrics).
void snapshot_received(node_self self, std::uint64_t response_ids, std::uint64_t prefix_blocks);

/// The snapshots' part of `/admin/actors`.
nlohmann::json join_snapshot_status(const node_state& st);

// -- node_receive.cpp --

/// What `sender` sent (the endpoint let it through).
void on_gossip(node_self self, const peer_actor& sender, std::string& bytes);

/// Member `name` is gone (link lost, left, silent).
void member_down(node_self self, const std::string& name, std::string reason);

/// The link of `peer` closed: whatever it was refused for (a duplicate name) is over.
void forget_refused(node_self self, const caf::actor_addr& peer);

// -- node_rejoin.cpp --

/// This node dialed `peer` (and sent its hello asking for the peer's): until the peer's hello
/// comes on that link, `ask_unanswered` asks again.
void await_hello(node_self self, const peer_actor& peer);

/// Sends the hello asking for theirs again to dialed actors that have not said hello on their
/// link, at most once per `suspect_after` each.
void ask_unanswered(node_self self);

/// `sender` is member `name`'s verified link now: nothing more to ask of it.
void link_verified(node_self self, const std::string& name, const peer_actor& sender);

/// Member `name`'s verified link `actor` is gone from this node.
void link_lost(node_self self, const std::string& name, const caf::actor_addr& actor);

/// A message refused as before its hello on this link: when, over TLS, it comes from the very
/// actor and incarnation of member `msg.from`'s lost link, asks that actor to greet again (at
/// most once per keepalive). Anyone else gets nothing.
void ask_lost_member(node_self self, const peer_actor& sender,
                     const protocol::cluster_message& msg);

/// A hello asking for this node's (`again`) came on member `name`'s verified link: greets it
/// again (hello, whole load report, whole registry as the limits allow), once per keepalive.
void greet_again(node_self self, const std::string& name, const peer_actor& sender);

// -- node_dial.cpp --

/// Dials every address that is due.
void dial_all(node_self self);

/// The link a dial made to `peer` is gone (the peer's node stopped, or the connection closed).
void dial_lost(node_self self, const caf::actor_addr& peer);

/// True when the member at `address` is linked (it dialed us, or we it).
bool linked(const node_state& st, const std::string& address);

/// The link to the node at `address` is gone: wait for it (or dial it) afresh.
void address_lost(node_self self, const std::string& address);

// -- node_status.cpp --

/// Publishes the cluster view (admin, metrics).
void publish_status(node_self self);

/// Writes the peers' summed load into the live state of the workers whose sum changed.
void apply_remote_loads(node_self self);

/// Writes it into every worker's live state (a new fleet snapshot).
void apply_all_remote_loads(node_self self);

/// Takes the frame guard's new refusals into the counts (and logs them).
void take_frame_refusals(node_self self);

/// The node's state for `/admin/actors`.
nlohmann::json inspect_state(node_self self);

} // namespace troupe::cluster
