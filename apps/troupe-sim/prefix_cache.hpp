#pragma once

#include "apps/troupe-sim/tokenizer.hpp"

#include <cstddef>
#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

namespace troupe::sim {

/// A worker's KV prefix cache, as far as timing and usage reports can tell: prompts are cut into
/// blocks of `block_tokens` tokens; block i is keyed by a hash chained over blocks 0..i, so a
/// block is reused only behind the very same prefix. Bounded by `capacity_blocks`, least recently
/// used first; a prompt's deeper blocks are evicted before its shallower ones (leaves before the
/// root, as a radix cache does), so what survives is always a usable prefix.
class prefix_cache {
public:
  /// A cache of at most `capacity_blocks` blocks (0 disables caching).
  prefix_cache(std::size_t block_tokens, std::size_t capacity_blocks);

  /// Admits a prompt: counts its leading cached blocks, inserts (or refreshes) all its full
  /// blocks, evicts beyond capacity. Returns the prompt tokens served from the cache: the leading
  /// cached blocks, but never the whole prompt (an engine computes at least its last token).
  std::size_t admit(std::span<const token_id> tokens);

  /// The tokens `admit` would report as cached, without changing the cache.
  std::size_t peek(std::span<const token_id> tokens) const;

  /// Forgets every block (`POST /flush_cache`); the hit and miss counters stay.
  void clear() noexcept;

  /// Blocks held now.
  std::size_t blocks() const noexcept { return index_.size(); }

  /// Blocks found by `admit` since start.
  std::uint64_t hits() const noexcept { return hits_; }

  /// Full blocks `admit` did not find since start.
  std::uint64_t misses() const noexcept { return misses_; }

  /// Tokens per block.
  std::size_t block_tokens() const noexcept { return block_tokens_; }

  /// Largest number of blocks held.
  std::size_t capacity_blocks() const noexcept { return capacity_; }

  /// The chained keys of the full blocks of `tokens` (block i's key covers blocks 0..i).
  std::vector<std::uint64_t> block_keys(std::span<const token_id> tokens) const;

private:
  using lru_list = std::list<std::uint64_t>; // front: most recently used

  std::size_t leading_hits(const std::vector<std::uint64_t>& keys) const;
  std::size_t cached_tokens(std::size_t hit_blocks, std::size_t prompt_tokens) const noexcept;

  std::size_t block_tokens_;
  std::size_t capacity_;
  lru_list lru_;
  std::unordered_map<std::uint64_t, lru_list::iterator> index_;
  std::uint64_t hits_ = 0;
  std::uint64_t misses_ = 0;
};

} // namespace troupe::sim
