#include "actors/policies/flat_map.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

using troupe::actors::flat_map;

namespace {

/// `m` and the reference answer the same for `k`: present or not, and with the same value.
template <class Key>
void agrees(const flat_map<Key, std::uint32_t>& m,
            const std::unordered_map<Key, std::uint32_t>& ref, Key k) {
  auto* got = m.find(k);
  auto it = ref.find(k);
  REQUIRE((got != nullptr) == (it != ref.end()));
  if (got) {
    REQUIRE(*got == it->second);
  }
}

/// 60,000 random inserts, removals and lookups of keys `draw` gives, on `m` and the reference
/// alike, the two compared at every step.
template <class Key, class Draw>
void churn(flat_map<Key, std::uint32_t>& m, std::unordered_map<Key, std::uint32_t>& ref,
           std::mt19937_64& rng, Draw draw) {
  for (int step = 0; step < 60000; ++step) {
    Key k = draw();
    switch (rng() % 4) {
    case 0:
    case 1: {
      auto v = static_cast<std::uint32_t>(rng());
      m.insert_or_assign(k, v);
      ref[k] = v;
      break;
    }
    case 2:
      REQUIRE(m.erase(k) == (ref.erase(k) == 1));
      break;
    default:
      agrees(m, ref, k);
    }
    REQUIRE(m.size() == ref.size());
  }
}

} // namespace

TEST_CASE("flat map, pointer keys: agrees with std::unordered_map under random churn") {
  // Keys from one array, as entries of one allocation would be: neighbours in memory, the case
  // where a weak hash would pile them into one probe chain.
  std::vector<int> pool(3000);
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    std::mt19937_64 rng{seed};
    std::uniform_int_distribution<std::size_t> pick{0, pool.size() - 1};
    flat_map<const int*, std::uint32_t> m;
    std::unordered_map<const int*, std::uint32_t> ref;
    churn(m, ref, rng, [&] { return &pool[pick(rng)]; });
    // Every key, present or not, answers as the reference does.
    for (const auto& x : pool) {
      agrees(m, ref, &x);
    }
    m.clear();
    CHECK(m.empty());
    CHECK(m.find(&pool[0]) == nullptr);
    m.insert_or_assign(&pool[0], 7);
    REQUIRE(m.find(&pool[0]));
    CHECK(*m.find(&pool[0]) == 7);
  }
}

TEST_CASE("flat map, pointer keys: an empty map finds nothing and erases nothing") {
  flat_map<const int*, int> m;
  int x = 0;
  CHECK(m.find(&x) == nullptr);
  CHECK_FALSE(m.erase(&x));
  m.prefetch(&x); // no slots yet: must not touch memory
  CHECK(m.size() == 0);
}

TEST_CASE("flat map, pointer keys: removing every key in any order leaves it empty and usable") {
  std::vector<int> pool(500);
  flat_map<const int*, int> m;
  for (std::size_t i = 0; i < pool.size(); ++i) {
    m.insert_or_assign(&pool[i], static_cast<int>(i));
  }
  std::vector<std::size_t> order(pool.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  std::shuffle(order.begin(), order.end(), std::mt19937_64{9});
  for (std::size_t n = 0; n < order.size(); ++n) {
    REQUIRE(m.erase(&pool[order[n]]));
    // The keys not removed yet are all still reachable (no hole cut a probe chain).
    for (std::size_t r = n + 1; r < order.size(); r += 37) {
      REQUIRE(m.find(&pool[order[r]]));
      REQUIRE(*m.find(&pool[order[r]]) == static_cast<int>(order[r]));
    }
  }
  CHECK(m.empty());
  m.insert_or_assign(&pool[3], 3);
  CHECK(*m.find(&pool[3]) == 3);
}

TEST_CASE("flat map, integer keys: agrees with std::unordered_map under random churn") {
  // Dense small keys (worker tenants are indices 0, 1, 2, ...), and the largest values short of
  // the empty key.
  for (std::uint64_t seed : {4u, 5u}) {
    std::mt19937_64 rng{seed};
    std::uniform_int_distribution<std::uint32_t> dense{0, 4999};
    flat_map<std::uint32_t, std::uint32_t> m;
    std::unordered_map<std::uint32_t, std::uint32_t> ref;
    auto key = [&] {
      auto k = dense(rng);
      return rng() % 50 == 0 ? flat_map<std::uint32_t, std::uint32_t>::empty_key - 1 - k % 3 : k;
    };
    churn(m, ref, rng, key);
    for (std::uint32_t k = 0; k < 5000; ++k) {
      agrees(m, ref, k);
    }
  }
}

TEST_CASE("flat map, integer keys: key 0 is a key like any other") {
  flat_map<std::uint32_t, int> m;
  CHECK(m.find(0) == nullptr);
  m.insert_or_assign(0, 5);
  REQUIRE(m.find(0));
  CHECK(*m.find(0) == 5);
  CHECK(m.erase(0));
  CHECK(m.find(0) == nullptr);
  CHECK(m.empty());
}
