#pragma once

#include "actors/policies/prefix_index.hpp"
#include "protocol/cluster_wire.hpp"

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace troupe::actors {

/// Counts of a policy's shared prefix view, for metrics and /admin.
struct prefix_view_stats {
  std::size_t blocks = 0;      ///< Blocks held (a block two workers hold counts twice).
  std::size_t distinct = 0;    ///< Distinct hashes held.
  std::uint64_t evicted = 0;   ///< Blocks evicted by the limits, since start.
  std::uint64_t merged = 0;    ///< Hashes merged from peers' updates, since start.
  std::uint64_t unknown = 0;   ///< Hashes of peers' updates for workers this policy lacks.
  std::uint64_t dropped = 0;   ///< Hashes of this node's picks that did not fit a tick.
  std::uint64_t recorded = 0;  ///< Hashes of this node's picks handed to the cluster node.
  std::size_t block_bytes = 0; ///< The view's block size.
};

/// What the cluster node takes from a policy each gossip tick: the hashes its picks recorded
/// since the last time, and its counts.
struct prefix_drain {
  protocol::prefix_update update;
  prefix_view_stats stats;
};

/// The cache-aware policy's picture of what every worker holds across the cluster
/// (docs/cluster.md, "Shared prefix view"): a `prefix_index` of chained block hashes fed by this
/// node's picks and by the updates of the other nodes, and the hashes this node's picks recorded
/// since the last gossip tick (each (worker, block) once per tick, at most `max_pending`).
/// The radix tree stays the picture of this node's own prompts; the view adds the matches the
/// tree cannot know.
class shared_prefix_view {
public:
  using tenant = prefix_index::tenant;

  struct settings {
    std::size_t block_bytes = 128;
    std::size_t max_blocks_per_worker = 65536;
    std::size_t max_blocks = std::size_t{1} << 20;
    std::size_t max_pending = 32768;
  };

  explicit shared_prefix_view(const settings& s);

  /// Hashes the prompt of the pick at hand; `match`, `record` and `rank` work on it.
  void hash(std::string_view text);

  /// The prompt at hand is one another node hashed (a placement ask: its `chain` and rank
  /// seed `head`); `match`, `record` and `rank` work on it.
  void use(const std::vector<std::uint64_t>& chain, std::uint64_t head);

  /// The prompt at hand's chained block hashes, first block first.
  const std::vector<std::uint64_t>& chain() const noexcept { return chain_; }

  /// The prompt at hand's rank seed (the same on every node; it also names the prompt's
  /// owner, docs/cluster.md "Placement by owner").
  std::uint64_t head() const noexcept { return head_; }

  /// The view's block size.
  std::size_t block_bytes() const noexcept { return s_.block_bytes; }

  /// Widens the tree's answer (`matched` bytes, held by `holders`) by the view's, over the
  /// tenants `eligible` accepts: when one holds more of the prompt per the view, it and its
  /// peers at that length become the holders; those holding as much as the tree's holders join
  /// them (at most `max_holders` in all). Returns the longest match of both.
  std::size_t widen(std::size_t matched, const std::function<bool(tenant)>& eligible,
                    std::vector<tenant>& holders, std::size_t max_holders = SIZE_MAX);

  /// Appends to `holders` (up to `max_holders` in all) the tenants `eligible` accepts that
  /// hold the view's longest match of the prompt; returns its bytes.
  std::size_t add_holders(const std::function<bool(tenant)>& eligible, std::vector<tenant>& holders,
                          std::size_t max_holders);

  /// Bytes of the prompt each tenant `eligible` accepts holds per the view, told to
  /// `held(t, bytes)` (tenants holding none of it are not told); returns the most. O(the
  /// holders of the blocks matched).
  std::size_t match_each(const std::function<bool(tenant)>& eligible,
                         const std::function<void(tenant, std::size_t)>& held);

  /// This node sent the prompt hashed last to tenant `t`, worker `id`. Blocks the view did not
  /// know `t` to hold are fresh (a placement other nodes should hear of at once, `has_fresh`);
  /// the others only refresh what the members know, and wait for the gossip tick.
  void record(tenant t, const std::string& id);

  /// True when a pick recorded fresh blocks since the last `take`.
  bool has_fresh() const noexcept { return fresh_count_ > 0; }

  /// A peer's update. `tenant_of` gives the tenant of a worker this policy serves, or nullptr.
  void merge(const protocol::prefix_update& u,
             const std::function<const tenant*(const std::string&)>& tenant_of);

  /// Moves what this node's picks recorded since the last call into `out`, with the counts:
  /// everything (a gossip tick), or with `fresh_only` only the fresh blocks (a placement told
  /// at once; the refreshes wait for the tick).
  void take(prefix_drain& out, bool fresh_only);

  /// Worker `id` (tenant `t`) left the fleet.
  void remove(tenant t, const std::string& id);

  /// Bytes of prompt the view believes `t` holds (its blocks times the block size).
  std::size_t bytes(tenant t) const noexcept { return index_.blocks(t) * s_.block_bytes; }

  /// A rank of worker `id` for the prompt hashed last, the same on every node: ties between
  /// equally empty workers go to the lowest rank, so nodes that see a new prefix at the same
  /// moment tend to send it to the same worker.
  std::uint64_t rank(const std::string& id) const noexcept;

  prefix_view_stats stats() const;

  nlohmann::json describe() const;

private:
  /// Appends the holders `index_.match` left in `scratch_` that `holders` lacks.
  void join(std::vector<tenant>& holders, std::size_t max_holders) const;

  settings s_;
  prefix_index index_;
  std::vector<std::uint64_t> chain_; ///< The prompt at hand, as block hashes.
  std::uint64_t head_ = 0;           ///< Hash of its first bytes (512, or its blocks).
  /// What this node's picks recorded since the last take, by worker id: refreshes, and fresh
  /// blocks (new to the worker, per the view).
  std::unordered_map<std::string, std::vector<std::uint64_t>> pending_, fresh_;
  /// (tenant, hash) pairs recorded since the last whole take, mixed: each goes out once a tick.
  std::unordered_set<std::uint64_t> pending_seen_;
  std::size_t pending_count_ = 0; ///< Hashes in `pending_` and `fresh_`.
  std::size_t fresh_count_ = 0;   ///< Hashes in `fresh_`.
  std::vector<tenant> scratch_;   ///< Holders of the view's longest match.
  std::uint64_t merged_ = 0;
  std::uint64_t unknown_ = 0;
  std::uint64_t dropped_ = 0;
  std::uint64_t recorded_ = 0;
};

} // namespace troupe::actors
