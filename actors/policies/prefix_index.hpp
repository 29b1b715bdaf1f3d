#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

namespace troupe::actors {

/// Which worker ("tenant") holds which prefix blocks, by chained block hash
/// (`prefix_block_hashes`): the shared prefix view of a cluster (docs/cluster.md). Fed by this
/// node's picks and by what the other nodes' picks recorded, so it knows what each worker was
/// sent wherever the request entered. It sits beside the radix tree, which knows this node's
/// prompts byte by byte; the index knows everybody's at block granularity.
///
/// Every tenant keeps its blocks in least-recently-used order, and the index keeps all of them
/// in one more such list: beyond `limits::per_tenant` blocks a tenant loses its least recently
/// used ones, beyond `limits::total` the index loses its least recently used ones. Each costs
/// O(1) per block; the bounds hold at every moment.
///
/// Single-threaded: one policy actor owns it.
class prefix_index {
public:
  using tenant = std::uint32_t;

  struct limits {
    std::size_t per_tenant = 65536; ///< Blocks one tenant may hold.
    std::size_t total = 1u << 20;   ///< Blocks (marks) all tenants together may hold.
  };

  explicit prefix_index(limits lim);

  /// Records that `t` holds the block `hash` now (its most recently used), then evicts beyond
  /// the limits. True when `t` did not hold it.
  bool touch(tenant t, std::uint64_t hash);

  /// For each tenant `eligible(t)` accepts that holds the chain's first block: how many
  /// leading blocks of `chain` it holds, told to `held(t, blocks)` once (tenants holding none
  /// are not told). Returns the most any holds. O(the holders of the blocks matched), whatever
  /// the number of tenants: no array over all tenants is filled or cleared.
  std::size_t match_each(const std::vector<std::uint64_t>& chain,
                         const std::function<bool(tenant)>& eligible,
                         const std::function<void(tenant, std::size_t)>& held);

  /// As above for the tenants `eligible` (indexed by tenant; missing entries are not eligible)
  /// accepts, into `blocks` (indexed by tenant, resized to `eligible`'s size; 0 for the others).
  std::size_t match_each(const std::vector<std::uint64_t>& chain, const std::vector<char>& eligible,
                         std::vector<std::size_t>& blocks);

  /// The most leading blocks of `chain` an eligible tenant holds; `holders` is cleared and
  /// receives (at most `max_holders` of) the eligible tenants holding that many.
  std::size_t match(const std::vector<std::uint64_t>& chain,
                    const std::function<bool(tenant)>& eligible, std::vector<tenant>& holders,
                    std::size_t max_holders = SIZE_MAX);

  /// True when `t` holds `hash`.
  bool holds(tenant t, std::uint64_t hash) const;

  /// Forgets all `t` holds (a worker that left the fleet).
  void remove(tenant t);

  /// Blocks `t` holds.
  std::size_t blocks(tenant t) const noexcept;

  /// Blocks all tenants hold together (a block two tenants hold counts twice).
  std::size_t size() const noexcept { return all_.count; }

  /// Distinct hashes held.
  std::size_t distinct() const noexcept { return by_hash_.size(); }

  /// Blocks evicted so far (by either limit).
  std::uint64_t evicted() const noexcept { return evicted_; }

  const limits& bounds() const noexcept { return lim_; }

private:
  static constexpr std::uint32_t nil = UINT32_MAX;

  struct mark {
    std::uint64_t hash = 0;
    tenant owner = 0;
    std::uint32_t prev = nil, next = nil;   ///< The owner's LRU list (prev: more recent).
    std::uint32_t gprev = nil, gnext = nil; ///< The index's LRU list.
    std::uint32_t same = nil;               ///< The next mark of the same hash.
  };

  struct lru {
    std::uint32_t head = nil; ///< Most recently used.
    std::uint32_t tail = nil; ///< Least recently used.
    std::size_t count = 0;
  };

  lru& list_of(tenant t);
  std::uint32_t find(std::uint64_t hash, tenant t) const;
  void link_front(std::uint32_t m);
  void unlink(std::uint32_t m);
  void drop(std::uint32_t m);

  limits lim_;
  std::unordered_map<std::uint64_t, std::uint32_t> by_hash_; ///< First mark of each hash.
  std::vector<mark> marks_;
  std::vector<std::uint32_t> free_;
  std::vector<lru> tenants_;
  lru all_;
  std::uint64_t evicted_ = 0;
  std::vector<std::uint32_t> reach_; ///< Scratch of `match_each`, by tenant: nil between calls.
  std::vector<tenant> met_;          ///< Scratch of `match_each`: the tenants it met.
};

} // namespace troupe::actors
