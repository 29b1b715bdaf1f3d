#include "actors/policies/radix_tree.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

using troupe::actors::radix_tree;

namespace {

std::vector<char> only(std::initializer_list<radix_tree::tenant> ts) {
  std::vector<char> e(8, 0);
  for (auto t : ts) {
    e[t] = 1;
  }
  return e;
}

std::size_t match(const radix_tree& tree, std::string_view text, std::vector<char> eligible,
                  std::vector<radix_tree::tenant>* holders = nullptr) {
  std::vector<radix_tree::tenant> h;
  auto n = tree.match(text, eligible, h);
  std::sort(h.begin(), h.end());
  if (holders) {
    *holders = h;
  }
  return n;
}

constexpr std::size_t unbounded = SIZE_MAX;

} // namespace

TEST_CASE("radix tree: matches the longest prefix any eligible tenant holds") {
  radix_tree tree;
  tree.insert("the quick brown fox", 0, unbounded);
  tree.insert("the quick red fox", 1, unbounded);
  tree.insert("a lazy dog", 1, unbounded);
  std::vector<radix_tree::tenant> h;
  CHECK(match(tree, "the quick brown cat", only({0, 1}), &h) == 16);
  CHECK(h == std::vector<radix_tree::tenant>{0});
  CHECK(match(tree, "the quick ", only({0, 1}), &h) == 10);
  CHECK(h == std::vector<radix_tree::tenant>{0, 1});
  // Tenant 0 is not eligible: tenant 1's shorter match is the answer.
  CHECK(match(tree, "the quick brown cat", only({1}), &h) == 10);
  CHECK(h == std::vector<radix_tree::tenant>{1});
  CHECK(match(tree, "zebra", only({0, 1}), &h) == 0);
  CHECK(h.empty());
  CHECK(match(tree, "a lazy dog", only({0}), &h) == 0);
  CHECK(h.empty());
}

TEST_CASE("radix tree: agrees with brute force on random texts (no eviction)") {
  std::mt19937 rng{7};
  auto random_text = [&] {
    std::string s(std::uniform_int_distribution<int>{0, 12}(rng), 'a');
    for (auto& c : s) {
      c = static_cast<char>('a' + std::uniform_int_distribution<int>{0, 2}(rng));
    }
    return s;
  };
  radix_tree tree;
  std::vector<std::vector<std::string>> texts(3);
  for (int round = 0; round < 300; ++round) {
    auto t = static_cast<radix_tree::tenant>(rng() % 3);
    auto s = random_text();
    tree.insert(s, t, unbounded);
    texts[t].push_back(s);
    // A tenant's bytes are the distinct non-empty prefixes of its texts (each edge once).
    for (radix_tree::tenant u = 0; u < 3; ++u) {
      std::set<std::string> prefixes;
      for (auto& x : texts[u]) {
        for (std::size_t n = 1; n <= x.size(); ++n) {
          prefixes.insert(x.substr(0, n));
        }
      }
      REQUIRE(tree.size(u) == prefixes.size());
    }
    auto query = random_text();
    std::vector<char> eligible{static_cast<char>(rng() % 2), static_cast<char>(rng() % 2),
                               static_cast<char>(rng() % 2)};
    std::size_t best = 0;
    std::vector<radix_tree::tenant> expected;
    std::vector<std::size_t> each(3, 0);
    for (radix_tree::tenant u = 0; u < 3; ++u) {
      if (!eligible[u]) {
        continue;
      }
      std::size_t longest = 0;
      for (auto& x : texts[u]) {
        auto m = std::mismatch(query.begin(), query.end(), x.begin(), x.end());
        longest = std::max(longest, static_cast<std::size_t>(m.first - query.begin()));
      }
      each[u] = longest;
      if (longest > best) {
        best = longest;
        expected = {u};
      } else if (longest == best && longest > 0) {
        expected.push_back(u);
      }
    }
    std::vector<radix_tree::tenant> holders;
    INFO("query '" << query << "' round " << round);
    REQUIRE(match(tree, query, eligible, &holders) == best);
    REQUIRE(holders == expected);
    std::vector<std::size_t> lengths;
    tree.match_each(query, eligible, lengths);
    REQUIRE(lengths == each); // every eligible tenant's own longest match, 0 for the others
  }
}

TEST_CASE("radix tree: a prefix all tenants hold is stored once") {
  radix_tree tree;
  std::string system(1000, 's');
  tree.insert(system + "hello", 0, unbounded);
  tree.insert(system + "world", 1, unbounded);
  tree.insert(system + "hello", 1, unbounded);
  CHECK(tree.node_count() == 3); // the shared prefix, "hello", "world"
  CHECK(tree.size(0) == 1005);
  CHECK(tree.size(1) == 1010);
}

TEST_CASE("radix tree: over budget, the least recently used text goes first") {
  radix_tree tree;
  tree.insert("aaaaa", 0, 10);
  tree.insert("bbbbb", 0, 10);
  tree.insert("ccccc", 0, 10);
  CHECK(tree.size(0) == 10);
  CHECK(match(tree, "aaaaa", only({0})) == 0);
  CHECK(match(tree, "bbbbb", only({0})) == 5);
  tree.insert("bbbbb", 0, 10); // used again: now newer than ccccc
  tree.insert("ddddd", 0, 10);
  CHECK(match(tree, "ccccc", only({0})) == 0);
  CHECK(match(tree, "bbbbb", only({0})) == 5);
  CHECK(match(tree, "ddddd", only({0})) == 5);
  CHECK(tree.node_count() == 2);
}

TEST_CASE("radix tree: eviction takes leaves, never a prefix something longer needs") {
  radix_tree tree;
  tree.insert("abcdef", 0, unbounded);
  tree.insert("abcxyz", 0, unbounded);
  tree.evict(0, 6);
  CHECK(tree.size(0) == 6);
  CHECK(match(tree, "abcdef", only({0})) == 3);
  CHECK(match(tree, "abcxyz", only({0})) == 6);
  tree.evict(0, 2);
  CHECK(tree.size(0) == 0); // "abc" is one edge: it goes whole
  CHECK(tree.node_count() == 0);
}

TEST_CASE("radix tree: one tenant's eviction leaves the others' text alone") {
  radix_tree tree;
  tree.insert("shared prefix, then one", 0, unbounded);
  tree.insert("shared prefix, then two", 1, unbounded);
  tree.evict(0, 0);
  CHECK(tree.size(0) == 0);
  CHECK(tree.size(1) == 23);
  CHECK(match(tree, "shared prefix, then two", only({0, 1})) == 23);
  CHECK(match(tree, "shared prefix, then one", only({0})) == 0);
}

TEST_CASE("radix tree: a text longer than the budget keeps its head") {
  radix_tree tree;
  tree.insert("0123456789", 0, unbounded);
  tree.insert("01234abcdefghij", 0, 8);
  CHECK(tree.size(0) <= 8);
  CHECK(match(tree, "01234", only({0})) == 5);
}

TEST_CASE("radix tree: removing a tenant frees what only it held") {
  radix_tree tree;
  tree.insert("common start / tenant zero", 0, unbounded);
  tree.insert("common start / tenant one", 1, unbounded);
  auto marks = tree.mark_count();
  tree.remove(0);
  CHECK(tree.size(0) == 0);
  CHECK(tree.size(1) == 25);
  CHECK(tree.mark_count() < marks);
  CHECK(match(tree, "common start / tenant one", only({0, 1})) == 25);
  tree.remove(1);
  CHECK(tree.node_count() == 0);
  CHECK(tree.mark_count() == 0);
  tree.insert("again", 0, unbounded); // freed marks are reused
  CHECK(match(tree, "again", only({0})) == 5);
}

TEST_CASE("radix tree: memory stays bounded by the budget under a stream of prompts") {
  std::mt19937 rng{11};
  radix_tree tree;
  const std::string system = "You are a helpful assistant. ";
  for (int i = 0; i < 3000; ++i) {
    std::string text = system;
    auto n = std::uniform_int_distribution<int>{20, 200}(rng);
    for (int k = 0; k < n; ++k) {
      text.push_back(static_cast<char>('a' + rng() % 26));
    }
    auto t = static_cast<radix_tree::tenant>(i % 2);
    tree.insert(text, t, 2000);
    REQUIRE(tree.size(t) <= 2000);
  }
  // Each mark covers at least one byte of some tenant's budget; each node holds a mark.
  CHECK(tree.mark_count() <= 4000);
  CHECK(tree.node_count() <= tree.mark_count());
  CHECK(match(tree, system, only({0, 1})) == system.size());
}

TEST_CASE("radix tree: many tenants on one prefix agree with brute force under churn") {
  // 40 tenants over a three-letter alphabet: the shared nodes carry more marks than the tree
  // scans (so their by-tenant index is built and kept through removals and splits).
  constexpr radix_tree::tenant tenants = 40;
  std::mt19937 rng{11};
  auto random_text = [&] {
    std::string s(std::uniform_int_distribution<int>{1, 10}(rng), 'a');
    for (auto& c : s) {
      c = static_cast<char>('a' + std::uniform_int_distribution<int>{0, 2}(rng));
    }
    return s;
  };
  radix_tree tree;
  std::vector<std::vector<std::string>> texts(tenants);
  for (int round = 0; round < 2000; ++round) {
    auto t = static_cast<radix_tree::tenant>(rng() % tenants);
    if (rng() % 10 == 0) {
      tree.remove(t);
      texts[t].clear();
    } else {
      auto s = random_text();
      tree.insert(s, t, unbounded);
      texts[t].push_back(s);
    }
    auto query = random_text();
    std::vector<radix_tree::tenant> asked;
    std::vector<char> eligible(tenants, 0);
    for (radix_tree::tenant u = 0; u < tenants; ++u) {
      if (rng() % 4 == 0) {
        asked.push_back(u);
        eligible[u] = 1;
      }
    }
    std::vector<std::size_t> expected(tenants, 0);
    for (auto u : asked) {
      for (auto& x : texts[u]) {
        auto m = std::mismatch(query.begin(), query.end(), x.begin(), x.end());
        expected[u] = std::max(expected[u], static_cast<std::size_t>(m.first - query.begin()));
      }
    }
    INFO("query '" << query << "' round " << round);
    std::vector<std::size_t> listed(tenants, 0);
    std::vector<int> told(tenants, 0);
    tree.match_each(query, asked, [&](radix_tree::tenant u, std::size_t n) {
      listed[u] = n;
      ++told[u];
    });
    REQUIRE(listed == expected);
    for (radix_tree::tenant u = 0; u < tenants; ++u) {
      REQUIRE(told[u] == (expected[u] > 0 ? 1 : 0)); // once each, and only holders
    }
    std::vector<std::size_t> by_scan;
    tree.match_each(query, eligible, by_scan);
    REQUIRE(by_scan == expected);
    if (round % 100 == 0) {
      for (radix_tree::tenant u = 0; u < tenants; ++u) {
        std::set<std::string> prefixes;
        for (auto& x : texts[u]) {
          for (std::size_t n = 1; n <= x.size(); ++n) {
            prefixes.insert(x.substr(0, n));
          }
        }
        REQUIRE(tree.size(u) == prefixes.size());
      }
    }
  }
  for (radix_tree::tenant u = 0; u < tenants; ++u) {
    tree.remove(u);
  }
  CHECK(tree.node_count() == 0);
  CHECK(tree.mark_count() == 0);
}
