#include "actors/policies/prefix_blocks.hpp"
#include "actors/policies/prefix_index.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace troupe::actors;

namespace {

std::vector<std::uint64_t> chain(std::string_view text, std::size_t block = 4) {
  std::vector<std::uint64_t> out;
  prefix_block_hashes(text, block, out);
  return out;
}

/// Touches `c` for `t` deepest block first, as the shared view records a pick.
void hold(prefix_index& ix, prefix_index::tenant t, const std::vector<std::uint64_t>& c) {
  for (auto it = c.rbegin(); it != c.rend(); ++it) {
    ix.touch(t, *it);
  }
}

} // namespace

TEST_CASE("prefix blocks: a hash covers its block and every block before it") {
  auto a = chain("abcdefghij"); // two whole blocks, "ij" left out
  auto b = chain("abcdefgXij");
  auto c = chain("abXdefghij");
  REQUIRE(a.size() == 2);
  CHECK(a[0] == b[0]);
  CHECK(a[1] != b[1]);
  CHECK(a[0] != c[0]);
  CHECK(a[1] != c[1]); // same second block, different first: a different chain
  CHECK(chain("abc").empty());
  CHECK(chain("abcdefgh", 0).empty());
  // The block size seeds the chain: the same text in blocks of 8 starts elsewhere.
  CHECK(chain("abcdefgh", 8)[0] != chain("abcdefgh", 4)[1]);
  // Fixed across builds and nodes (XXH3): a known value guards against a silent change.
  CHECK(chain("abcdefgh", 4) ==
        std::vector<std::uint64_t>{0x981d65acaf6d5929ull, 0xecac05c483e34973ull});
}

TEST_CASE("prefix index: each tenant's matched blocks are counted from the chain's start") {
  prefix_index ix{{}};
  auto p = chain("system-prompt-ABCD-user-1");    // 6 blocks, "1" left out
  auto q = chain("system-prompt-ABCD-user-2xyz"); // p's 6 blocks, then "2xyz"
  hold(ix, 0, p);
  hold(ix, 1, chain("system-prompt-"));
  std::vector<char> eligible{1, 1, 1};
  std::vector<std::size_t> blocks;
  hold(ix, 2, chain("system-prompt-ABCD-user-1xyz")); // p's 6 blocks, then "1xyz"
  CHECK(ix.match_each(q, eligible, blocks) == 6);     // up to "...user-": the 7th blocks differ
  CHECK(blocks == std::vector<std::size_t>{6, 3, 6});
  eligible[0] = 0;
  eligible[2] = 0;
  CHECK(ix.match_each(q, eligible, blocks) == 3);
  CHECK(blocks == std::vector<std::size_t>{0, 3, 0});
  // A tenant holding a later block but not an earlier one matches only up to the gap.
  prefix_index gap{{}};
  gap.touch(0, p[0]);
  gap.touch(0, p[2]);
  CHECK(gap.match_each(p, {1}, blocks) == 1);
}

TEST_CASE("prefix index: a tenant beyond its limit loses its least recently used blocks, chain "
          "ends first") {
  prefix_index ix{{4, 100}};
  auto a = chain("aaaabbbbcccc"); // 3 blocks
  auto b = chain("xxxxyyyyzzzz");
  hold(ix, 0, a);
  CHECK(ix.blocks(0) == 3);
  hold(ix, 0, b); // 6 > 4: a's two deepest blocks go
  CHECK(ix.blocks(0) == 4);
  CHECK(ix.evicted() == 2);
  CHECK(ix.holds(0, a[0]));
  CHECK_FALSE(ix.holds(0, a[1]));
  CHECK_FALSE(ix.holds(0, a[2]));
  std::vector<std::size_t> blocks;
  CHECK(ix.match_each(a, {1}, blocks) == 1);
  CHECK(ix.match_each(b, {1}, blocks) == 3);
  // Touching refreshes: a's first block is now the most recent, b's last the oldest.
  ix.touch(0, a[0]);
  ix.touch(0, 42);
  CHECK(ix.holds(0, a[0]));
  CHECK_FALSE(ix.holds(0, b[2]));
}

TEST_CASE("prefix index: the total limit evicts the index's least recently used blocks") {
  prefix_index ix{{100, 5}};
  hold(ix, 0, chain("aaaabbbbcccc"));
  hold(ix, 1, chain("aaaabbbbcccc")); // the same hashes, another tenant: marks count
  CHECK(ix.size() == 5);
  CHECK(ix.distinct() == 3);
  CHECK(ix.blocks(0) == 2); // its deepest block was the oldest of all
  CHECK(ix.blocks(1) == 3);
  ix.remove(1);
  CHECK(ix.size() == 2);
  CHECK(ix.blocks(1) == 0);
  CHECK(ix.distinct() == 2);
  std::vector<std::size_t> blocks;
  CHECK(ix.match_each(chain("aaaabbbbcccc"), {1, 1}, blocks) == 2);
  CHECK(blocks == std::vector<std::size_t>{2, 0});
}

TEST_CASE("prefix index: a tenant that is not eligible never matches, however much it holds") {
  prefix_index ix{{}};
  auto p = chain("0123456789abcdef");
  hold(ix, 3, p);
  std::vector<std::size_t> blocks;
  CHECK(ix.match_each(p, {1, 1}, blocks) == 0); // tenant 3 is past the eligible vector
  CHECK(blocks == std::vector<std::size_t>{0, 0});
  CHECK(ix.match_each(p, {0, 0, 0, 1}, blocks) == 4);
}
