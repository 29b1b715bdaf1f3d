#pragma once

#include <cstddef>
#include <vector>

namespace troupe::actors {

/// What the cache-aware score knows of one candidate. The matched length comes from whatever
/// holds the picture of the workers' caches (this node's radix tree today; a cluster-wide
/// index of prefix hashes later): the score does not care.
struct cache_candidate {
  std::size_t matched = 0;    ///< Bytes of the prompt's head the worker is believed to hold.
  int load = 0;               ///< Requests in flight at it, fleet-wide.
  std::size_t tree_bytes = 0; ///< Bytes of text it is believed to hold (room, for ties).
};

/// Troupe's cache-aware choice: the candidate with the highest
///
///     matched bytes − load_weight × mean prompt bytes × requests in flight
///
/// i.e. the prefill it saves weighed against the work queued in front of the request there
/// (each request in flight taken as a mean prompt's worth, the policy's running mean): a
/// popular prefix spreads over workers once its holder is ~`1 / load_weight` requests ahead,
/// instead of taking every request until a fixed imbalance threshold (smg's 64). Ties: the
/// less loaded, then the one holding less text (more room), then the first.
std::size_t best_by_score(const std::vector<cache_candidate>& cands, double mean_prompt_bytes,
                          double load_weight);

} // namespace troupe::actors
