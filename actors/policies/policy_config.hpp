#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace troupe::actors {

/// Settings of the selection strategies that have any (flags: docs/configuration.md, "Routing";
/// behaviour: docs/policies.md). Defaults are smg's.
struct policy_config {
  // -- cache_aware --
  /// `score` (Troupe's: prefill saved against the queue, docs/policies.md) or `smg` (smg's
  /// thresholds: follow the longest match until the load is imbalanced).
  std::string cache_aware_mode = "score";
  /// `score` mode: a request in flight weighs this many mean prompts against the bytes a
  /// worker already holds.
  double cache_aware_load_weight = 0.25;
  /// `score` mode in a cluster: of the requests other nodes reported at a holder of the
  /// longest match, up to this many count as ended (reports are a gossip interval old;
  /// `best_by_score`). 0: reports count as they are.
  int cache_aware_stale_margin = 4;
  /// Candidates of a large group a pick looks at besides the holders of the prompt's longest
  /// match (a random sample; all of a group this small or smaller), and the most holders it
  /// looks at. Troupe's own (smg looks at every worker): a pick costs the same with 4 workers or
  /// 4,000 (docs/policies.md).
  std::size_t cache_aware_sample = 8;
  /// Smallest share of a prompt a worker must already hold for the request to follow it.
  double cache_threshold = 0.3;
  /// Load is imbalanced when the busiest worker has more than this many requests in flight
  /// above the idlest...
  std::size_t balance_abs_threshold = 64;
  /// ...and more than this many times the idlest's.
  double balance_rel_threshold = 1.5;
  /// Bytes of prompt text remembered per worker; least recently used text beyond is evicted.
  std::size_t max_tree_size = std::size_t{1} << 26;
  /// smg's periodic eviction sweep. Accepted for smg launch lines and shown by /admin/actors;
  /// Troupe trims a worker's text on every insert, so no sweep is needed.
  std::chrono::seconds eviction_interval{120};

  // -- least_load --
  /// smg's KV-pressure weight, throughput and mean prefill: terms of its score that need
  /// engine load reports. Accepted and shown; without reports smg's score is the queue length,
  /// which is what Troupe uses (docs/policies.md).
  double least_load_kv_pressure_weight = 0.15;
  double least_load_default_throughput = 2000;
  std::uint32_t least_load_mean_prefill_tokens = 1024;
  /// Skip workers with this many requests in flight; 0: never.
  std::uint32_t least_load_max_waiting_requests = 0;

  // -- prefix_hash --
  /// Tokens of the prompt's head hashed (four bytes of prompt each: the prompt is not
  /// tokenized in the gateway).
  std::size_t prefix_token_count = 256;
  /// A worker is overloaded above max(load_factor x mean load, mean + abs threshold).
  double prefix_hash_load_factor = 1.25;
  std::size_t prefix_hash_balance_abs_threshold = 10;
  /// Token positions where engines keep reusable prefix state: the deepest one the prompt
  /// reaches is hashed first (shared with smg's cache_aware hash index).
  std::vector<std::size_t> cache_boundaries;

  // -- manual --
  /// A routing key unused this long is forgotten.
  std::chrono::seconds max_idle{14400};
  /// How a new key picks its worker: random, min_load, min_group or delegate.
  std::string assignment_mode = "random";
  /// Keys remembered at most (least recently used forgotten first): bounds memory whatever
  /// the clients send. Troupe's own bound; smg has none.
  std::size_t max_routing_keys = 1'000'000;

  // -- bucket --
  /// How often the length ranges are fitted to the traffic of the last such interval.
  std::chrono::seconds bucket_adjust_interval{5};

  // -- cache_aware in a cluster: the shared prefix view (docs/cluster.md) --
  /// Block size of the shared prefix view; 0: none (a node alone, or turned off).
  std::size_t prefix_block_bytes = 0;
  /// Blocks the view remembers per worker; least recently used ones beyond are evicted.
  std::size_t prefix_max_blocks_per_worker = 65536;
  /// Blocks the view remembers for all workers of the policy together.
  std::size_t prefix_max_blocks = std::size_t{1} << 20;
  /// Hashes this node's picks may leave waiting for the next gossip tick; more are dropped.
  std::size_t prefix_max_pending = 32768;
  /// Placement by owner (docs/cluster.md): `off`, `first` (a prompt no worker holds enough of
  /// is placed by one node, the placer, for the cluster) or `all` (every pick of a prompt is
  /// placed by the owner of its prefix group).
  std::string cluster_placement = "first";
  /// How long a pick waits for the owner's answer before it decides itself.
  std::chrono::milliseconds placement_timeout{50};
  /// How long an owner counts a worker it chose for another node as one more request in
  /// flight there (until that node's load report covers it: about a gossip interval).
  std::chrono::milliseconds placement_reserve{100};
};

} // namespace troupe::actors
