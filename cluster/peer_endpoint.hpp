#pragma once

#include "cluster/node.hpp"
#include "cluster/refusals.hpp"

#include <atomic>
#include <caf/actor_system.hpp>
#include <memory>

namespace troupe::cluster {

/// Closes an endpoint: from then on it drops everything. A flag in this process, which no
/// message from the network can set.
struct endpoint_switch {
  std::atomic<bool> closed{false};
};

/// Makes the actor published on the cluster port: the only one of a node that the network
/// reaches. It passes each gossip message, with its sender, to `node`, and refuses (counting
/// into `refusals`) a message without a sender, one larger than `max_message_bytes`, and any
/// other kind of message. It is not a scheduled actor but a gate with no mailbox and no
/// behaviour: nothing a peer sends can stop it (CAF makes an exit message with reason `kill`
/// fatal to any scheduled actor, and a peer can send one, or link to it and die). It lives
/// until the last handle to it goes; `off` closes it.
peer_actor make_peer_endpoint(caf::actor_system& sys, node_actor node,
                              std::size_t max_message_bytes,
                              std::shared_ptr<refusal_counts> refusals,
                              std::shared_ptr<endpoint_switch> off);

} // namespace troupe::cluster
