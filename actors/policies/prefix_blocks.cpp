#include "actors/policies/prefix_blocks.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace troupe::actors {

void prefix_block_hashes(std::string_view text, std::size_t block_bytes,
                         std::vector<std::uint64_t>& out) {
  out.clear();
  if (block_bytes == 0) {
    return;
  }
  // The first seed depends on the block size: chains of different sizes never match.
  XXH64_hash_t h = 0x9e3779b97f4a7c15ull ^ block_bytes;
  for (std::size_t at = 0; at + block_bytes <= text.size(); at += block_bytes) {
    h = XXH3_64bits_withSeed(text.data() + at, block_bytes, h);
    out.push_back(h);
  }
}

} // namespace troupe::actors
