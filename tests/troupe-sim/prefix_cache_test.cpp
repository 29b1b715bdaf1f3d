#include "apps/troupe-sim/prefix_cache.hpp"

#include <catch2/catch.hpp>
#include <numeric>

using namespace troupe::sim;

namespace {

// `n` distinct tokens starting at `first`.
std::vector<token_id> run(std::size_t n, token_id first = 1000) {
  std::vector<token_id> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

} // namespace

TEST_CASE("a repeated prompt is served from the cache, block by block", "[prefix_cache]") {
  prefix_cache cache{4, 100};
  auto prompt = run(10); // two full blocks and a partial one
  CHECK(cache.admit(prompt) == 0);
  CHECK(cache.blocks() == 2);
  CHECK(cache.misses() == 2);
  CHECK(cache.admit(prompt) == 8);
  CHECK(cache.hits() == 2);
  CHECK(cache.blocks() == 2);
}

TEST_CASE("the whole prompt is never reported cached", "[prefix_cache]") {
  prefix_cache cache{4, 100};
  auto prompt = run(8); // exactly two blocks
  cache.admit(prompt);
  CHECK(cache.admit(prompt) == 7);
  CHECK(cache.admit({}) == 0);
}

TEST_CASE("blocks are chained: a block counts only behind the same prefix", "[prefix_cache]") {
  prefix_cache cache{4, 100};
  auto a = run(8);
  cache.admit(a);
  // Same second block behind a different first block: no hit at all.
  auto b = a;
  b[0] = 1;
  CHECK(cache.peek(b) == 0);
  CHECK(cache.admit(b) == 0);
  // A longer prompt sharing the first block only.
  auto c = a;
  c[5] = 2;
  c.resize(12, 7);
  CHECK(cache.peek(c) == 4);
  CHECK(cache.block_keys(a)[0] == cache.block_keys(c)[0]);
  CHECK(cache.block_keys(a)[1] != cache.block_keys(c)[1]);
}

TEST_CASE("peek does not change the cache", "[prefix_cache]") {
  prefix_cache cache{4, 100};
  auto prompt = run(12);
  CHECK(cache.peek(prompt) == 0);
  CHECK(cache.blocks() == 0);
  CHECK(cache.misses() == 0);
}

TEST_CASE("capacity bounds the cache, least recently used first", "[prefix_cache]") {
  prefix_cache cache{2, 4};
  auto a = run(4, 100); // 2 blocks
  auto b = run(4, 200); // 2 blocks
  auto c = run(4, 300); // 2 blocks
  cache.admit(a);
  cache.admit(b);
  CHECK(cache.blocks() == 4);
  cache.admit(a); // a is now more recent than b
  cache.admit(c); // evicts b
  CHECK(cache.blocks() == 4);
  CHECK(cache.peek(a) == 3);
  CHECK(cache.peek(c) == 3);
  CHECK(cache.peek(b) == 0);
}

TEST_CASE("eviction takes a prompt's deepest blocks first", "[prefix_cache]") {
  prefix_cache cache{2, 4};
  auto a = run(8, 100); // 4 blocks: fills the cache
  cache.admit(a);
  auto b = run(2, 500); // 1 block: one of a's must go
  cache.admit(b);
  // a keeps its first three blocks, still a usable prefix.
  CHECK(cache.peek(a) == 6);
}

TEST_CASE("a prompt longer than the cache keeps its prefix", "[prefix_cache]") {
  prefix_cache cache{2, 3};
  auto a = run(20, 100); // 10 blocks
  cache.admit(a);
  CHECK(cache.blocks() == 3);
  CHECK(cache.peek(a) == 6);
}

TEST_CASE("clear forgets blocks, keeps counters; capacity 0 disables", "[prefix_cache]") {
  prefix_cache cache{4, 100};
  auto prompt = run(8);
  cache.admit(prompt);
  cache.admit(prompt);
  cache.clear();
  CHECK(cache.blocks() == 0);
  CHECK(cache.hits() == 2);
  CHECK(cache.admit(prompt) == 0);

  prefix_cache off{4, 0};
  off.admit(prompt);
  CHECK(off.admit(prompt) == 0);
  CHECK(off.blocks() == 0);
}
