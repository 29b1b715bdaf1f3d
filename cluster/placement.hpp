#pragma once

// The cluster node's part in placement by owner (docs/cluster.md, "Placement by owner"): it
// tells its cache_aware policies which nodes own prefix groups (this one and the members whose
// hello says they answer, that keep a view of the same block size and are up), sends a policy's
// ask to the owner and relays the answer back, and hands members' asks to the policy of their
// role. State and counters here; the functions work on the node (cluster/node_state.hpp).
// Internal to cluster/.

#include "protocol/cluster_wire.hpp"

#include <caf/actor_clock.hpp>
#include <caf/typed_response_promise.hpp>
#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace troupe::cluster {

struct placement_state {
  std::set<std::string> answering; ///< Members whose hello says they answer asks.
  std::vector<std::string> owners; ///< The members last told to the policies (sorted).
  bool told = false;               ///< The policies were told once.
  /// Asks of this node's policies on their way to an owner, by id.
  struct pending {
    caf::typed_response_promise<protocol::placement_answer> promise;
    std::string member;
    caf::actor_clock::time_point sent;
  };
  std::unordered_map<std::uint64_t, pending> asks;
  std::uint64_t next_id = 0;

  // -- counters (inspect) --
  std::uint64_t delegated = 0;   ///< Asks sent to an owner.
  std::uint64_t relayed = 0;     ///< Their answers, back to the policy.
  std::uint64_t late = 0;        ///< Answers that came after the ask's timeout.
  std::uint64_t expired = 0;     ///< Asks no answer came for (or whose owner went down).
  std::uint64_t unreachable = 0; ///< Asks for an owner that is not linked, or not up.
  std::uint64_t answered = 0;    ///< Asks of members this node answered as owner.
  std::uint64_t undecided = 0;   ///< Of those, with no worker (no policy of the role, ...).
  double rtt_sum_ms = 0;         ///< Over `relayed`.
  double rtt_max_ms = 0;
};

} // namespace troupe::cluster
