#pragma once

// The cluster node's part in the shared Responses affinity (docs/cluster.md, "Responses
// affinity"): every gossip tick it drains the ids this node's relays saw created
// (services::response_affinity's outbox) and sends them, split to fit the message cap, to the
// members whose hello says they read them; what members send is remembered for the workers
// this node serves. State and counters here; the functions work on the node
// (cluster/node_state.hpp). Internal to cluster/.

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

namespace troupe::cluster {

struct response_gossip_state {
  std::set<std::string> readers; ///< Members whose hello says they read response updates.

  // -- counters (inspect) --
  std::uint64_t updates_sent = 0;
  std::uint64_t updates_received = 0;
  std::uint64_t ids_sent = 0; ///< Once per id, whatever the number of members.
  std::uint64_t ids_received = 0;
  std::uint64_t unknown_worker = 0;      ///< Received for a worker this node does not serve.
  std::uint64_t too_large = 0;           ///< Ids too long for a message.
  std::uint64_t without_affinity = 0;    ///< Updates received while this node keeps none.
  std::uint64_t left_for_snapshots = 0;  ///< Ids learned while no member read them.
  std::uint64_t outbox_dropped_seen = 0; ///< The affinity's count already in the metrics.
};

/// Ids taken from the outbox per gossip tick at most (the rest wait for the next tick).
inline constexpr std::size_t response_ids_per_tick = 8192;

} // namespace troupe::cluster
