#pragma once

#include <chrono>
#include <cstddef>

namespace troupe::actors {

/// Settings of the selection strategies that have any (flags: docs/configuration.md, "Routing";
/// behaviour: docs/policies.md). Defaults are smg's.
struct policy_config {
  // -- cache_aware --
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
};

} // namespace troupe::actors
