#include "apps/troupe-sim/prefix_cache.hpp"

#include <algorithm>

namespace troupe::sim {

prefix_cache::prefix_cache(std::size_t block_tokens, std::size_t capacity_blocks)
    : block_tokens_(std::max<std::size_t>(block_tokens, 1)), capacity_(capacity_blocks) {
  index_.reserve(std::min<std::size_t>(capacity_, 1 << 16));
}

std::vector<std::uint64_t> prefix_cache::block_keys(std::span<const token_id> tokens) const {
  std::vector<std::uint64_t> keys;
  const std::size_t full = tokens.size() / block_tokens_;
  keys.reserve(full);
  std::uint64_t key = 0x6a09e667f3bcc908ULL;
  for (std::size_t b = 0; b < full; ++b) {
    auto block = tokens.subspan(b * block_tokens_, block_tokens_);
    key = mix64(key, hash_tokens(block));
    keys.push_back(key);
  }
  return keys;
}

std::size_t prefix_cache::leading_hits(const std::vector<std::uint64_t>& keys) const {
  std::size_t hit = 0;
  while (hit < keys.size() && index_.count(keys[hit]) != 0) {
    ++hit;
  }
  return hit;
}

std::size_t prefix_cache::cached_tokens(std::size_t hit_blocks,
                                        std::size_t prompt_tokens) const noexcept {
  if (prompt_tokens == 0) {
    return 0;
  }
  return std::min(hit_blocks * block_tokens_, prompt_tokens - 1);
}

std::size_t prefix_cache::peek(std::span<const token_id> tokens) const {
  if (capacity_ == 0) {
    return 0;
  }
  return cached_tokens(leading_hits(block_keys(tokens)), tokens.size());
}

std::size_t prefix_cache::admit(std::span<const token_id> tokens) {
  if (capacity_ == 0) {
    return 0;
  }
  auto keys = block_keys(tokens);
  const std::size_t hit = leading_hits(keys);
  hits_ += hit;
  misses_ += keys.size() - hit;
  // Deepest block first, so the root ends up most recently used and leaves are evicted first.
  for (auto it = keys.rbegin(); it != keys.rend(); ++it) {
    if (auto found = index_.find(*it); found != index_.end()) {
      lru_.splice(lru_.begin(), lru_, found->second);
    } else {
      lru_.push_front(*it);
      index_.emplace(*it, lru_.begin());
    }
  }
  while (index_.size() > capacity_) {
    index_.erase(lru_.back());
    lru_.pop_back();
  }
  return cached_tokens(hit, tokens.size());
}

void prefix_cache::clear() noexcept {
  index_.clear();
  lru_.clear();
}

} // namespace troupe::sim
