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
  /// Of `load`, the requests other cluster nodes reported at it. A report is up to a gossip
  /// interval old, so some of them may have ended: see `stale_margin` below.
  int remote = 0;
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
///
/// In a cluster, the holders of the longest match count up to `stale_margin` of their `remote`
/// requests as ended: other nodes' requests are known from load reports up to a gossip
/// interval old, and a conversation's next turn (sent the moment its last one ended) usually
/// enters another node before the report that the last turn ended: on the very worker that
/// holds the conversation. Counted as they are, such reports make nodes give up affinity on
/// load that is gone, each to a different worker (docs/performance.md, "Spills on stale
/// loads"). The holder still gives way once it is that many requests further ahead. Alone
/// (`remote` 0), or with a margin of 0, the score is as above.
std::size_t best_by_score(const std::vector<cache_candidate>& cands, double mean_prompt_bytes,
                          double load_weight, int stale_margin = 0);

} // namespace troupe::actors
