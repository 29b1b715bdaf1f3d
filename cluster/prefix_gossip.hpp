#pragma once

// The cluster node's part in the shared prefix view (docs/cluster.md, "Shared prefix view"):
// every gossip tick (and at once when a pick placed new blocks) it takes from each cache_aware
// policy the block hashes its picks recorded, sends them (within the tick's byte budget) to the
// members that keep a view of the same block size, and hands what members send to the policies.
// State and counters here; the functions work on the node (cluster/node_state.hpp). Internal to
// cluster/.

#include "actors/policy.hpp"
#include "cluster/prefix_log.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace troupe::cluster {

struct prefix_gossip_state {
  std::map<std::string, std::uint32_t> peer_block_bytes; ///< What each member's hello said.
  std::vector<bool>
      asking; ///< By policy (`node_deps::prefix_policies`): a drain is on its way back.
  std::vector<actors::prefix_view_stats>
      views;              ///< By policy (`node_deps::prefix_policies`): its last counts.
  std::size_t budget = 0; ///< Bytes left to send this tick.
  prefix_log log;         ///< This node's recent placements, for members linked anew.

  // -- counters (inspect) --
  std::uint64_t updates_sent = 0;
  std::uint64_t updates_received = 0;
  std::uint64_t bytes_sent = 0; ///< Message bytes times the members each went to.
  std::uint64_t bytes_received = 0;
  std::uint64_t hashes_sent = 0;
  std::uint64_t hashes_received = 0;
  std::uint64_t hashes_dropped = 0;     ///< Over a tick's budget (here or in a policy).
  std::uint64_t fresh_drains = 0;       ///< Placements taken and sent at once.
  std::uint64_t fresh_deferred = 0;     ///< Placements left for the tick (budget, no peer).
  std::uint64_t refused_block_size = 0; ///< Updates of another block size.
  std::uint64_t without_view = 0;       ///< Updates received while no policy keeps a view.
  std::uint64_t other_role = 0;         ///< Updates of a role no policy here has.
};

} // namespace troupe::cluster
