#pragma once

// What a member that just linked is told of the past (docs/cluster.md, "A node that joins
// late"): the Responses affinity ids this node knows and the prefix blocks its own picks placed
// recently, sent once per new verified link, split to fit the message cap. A snapshot waits
// until the member's registry holds this node's workers (its load report carries the same
// registry digest) so that it can take them, or at most `snapshot_wait`. State and counters
// here; the functions work on the node (cluster/node_state.hpp). Internal to cluster/.

#include <caf/actor_clock.hpp>
#include <cstdint>
#include <map>
#include <string>

namespace troupe::cluster {

struct join_snapshot_state {
  /// Members linked anew that are owed a snapshot, and when it goes whatever their registry.
  std::map<std::string, caf::actor_clock::time_point> due;

  // -- counters (inspect) --
  std::uint64_t snapshots_sent = 0;     ///< Members sent one (whatever it held).
  std::uint64_t sent_unsynced = 0;      ///< Of those, sent at the deadline, registries differing.
  std::uint64_t messages_sent = 0;      ///< Messages the snapshots took.
  std::uint64_t bytes_sent = 0;         ///< Their bytes.
  std::uint64_t response_ids_sent = 0;  ///< Ids in them.
  std::uint64_t prefix_blocks_sent = 0; ///< (worker, block) pairs in them.
  std::uint64_t too_large = 0;          ///< Ids or blocks left out: too long for a message.
  std::uint64_t messages_received = 0;
  std::uint64_t response_ids_received = 0;  ///< Ids taken (their worker served here).
  std::uint64_t prefix_blocks_received = 0; ///< Hashes handed to the policies.
};

} // namespace troupe::cluster
